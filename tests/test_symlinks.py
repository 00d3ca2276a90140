"""Symlinks cross no boundary: a file is read only when its real path lies inside the real root
of its store or mount, and privacy excludes apply to a link's target as much as to the link.

An attacker commits a store (or a docs folder) with links to /etc/passwd-like files outside it,
or a public-looking link to a note the user excluded; every domain and every interface is asked."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_note
from memlane import Memory
from memlane.domains.code import CodeDomain
from memlane.domains.knowledge import KnowledgeDomain
from memlane.domains.transcripts import TranscriptDomain
from memlane.guards.privacy import OUTSIDE, PrivacyGate

LEAK = "root:x:0:0:the leaked system file"


@pytest.fixture
def outside(tmp_path) -> Path:
    folder = tmp_path / "outside"
    write_note(folder, "passwd.md", f"---\nname: passwd\ndescription: deploy credentials for production\n"
                                    f"type: project\n---\n{LEAK}\n")
    (folder / "secret.jsonl").write_text(json.dumps({"type": "user", "message": {"role": "user",
                                                     "content": f"deploy credentials {LEAK}"}}) + "\n")
    (folder / "leak.py").write_text(f'def deploy_credentials():\n    return "{LEAK}"\n')
    return folder


@pytest.fixture
def linked_store(tmp_path, outside) -> Path:
    store = tmp_path / "store"
    write_note(store, "project_deploy.md", "---\nname: project_deploy\ndescription: how production deploys work\n"
                                           "type: project\n---\nDeploys go through the pipeline.\n")
    (store / "project_creds.md").symlink_to(outside / "passwd.md")
    (store / "more").symlink_to(outside)  # a folder link out of the store
    write_note(store, "personal/feedback_diary.md", "---\nname: feedback_diary\ndescription: my private diary "
               "about production deploys\ntype: feedback\n---\nthe diary of deploy credentials\n")
    (store / "feedback_public.md").symlink_to(store / "personal" / "feedback_diary.md")  # inside, but excluded
    return store


def _exclude(sealed_env: Path, *globs: str) -> None:
    path = sealed_env / "config" / "memlane" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"[privacy]\nexclude = {json.dumps(list(globs))}\n")


def test_notes_outside_the_store_are_never_read(linked_store, tmp_path, sealed_env):
    _exclude(sealed_env, "personal/*")
    with Memory([linked_store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        report = mem.refresh()
        found = mem.recall("production deploy credentials", k=10, depth="full")
        stats = mem.stats()
    text = json.dumps([r.as_dict() for r in found])
    assert LEAK not in text and "diary" not in text
    assert [r["name"] for r in found] == ["project_deploy"]
    reasons = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert reasons == {"project_creds.md": OUTSIDE, "more": OUTSIDE}
    assert "file" not in reasons["more"]  # "more" links to a folder: the reason must not call it a file
    assert stats["links_outside"] == 2


def test_the_hook_and_mcp_never_hand_out_a_linked_secret(linked_store, tmp_path, sealed_env):
    _exclude(sealed_env, "personal/*")
    from memlane.adapters.hook import run_hook
    from memlane.adapters.mcp_server import Engine, ToolError

    out = io.StringIO()
    payload = {"session_id": "s", "cwd": str(tmp_path), "prompt": "production deploy credentials diary",
               "transcript_path": "/none"}
    run_hook("user-prompt-submit", stores=[str(linked_store)], embedder="none", index=str(tmp_path / "h.sqlite"),
             stdin=io.StringIO(json.dumps(payload)), stdout=out)
    assert "project_deploy" in out.getvalue() and LEAK not in out.getvalue() and "diary" not in out.getvalue()
    engine = Engine([str(linked_store)], "none", str(tmp_path / "m.sqlite"), str(tmp_path))
    for name in ("passwd", "project_creds", "feedback_diary", "feedback_public"):
        with pytest.raises(ToolError):
            engine.get([name])
        with pytest.raises(ToolError):
            engine.resource("project", name)


def test_recall_domains_cli_never_shows_a_linked_secret(linked_store, tmp_path, sealed_env):
    _exclude(sealed_env, "personal/*")
    docs = tmp_path / "docs"
    write_note(docs, "guide.md", "# Guide\n\n## Deploys\n\nProduction deploys use credentials from the vault.\n")
    (docs / "creds.md").symlink_to(tmp_path / "outside" / "passwd.md")
    (docs / "diary.md").symlink_to(linked_store / "personal" / "feedback_diary.md")
    env = {**os.environ}
    proc = subprocess.run([sys.executable, "-m", "memlane.adapters.cli", "recall", "--json", "--embedder", "none",
                           "--store", str(linked_store), "--docs", str(docs), "--index", str(tmp_path / "c.sqlite"),
                           "production deploys credentials"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    texts = json.dumps([b["results"] for b in out["buckets"]])
    assert "Guide" in texts and LEAK not in proc.stdout and "the diary of" not in proc.stdout


def test_knowledge_reads_only_files_inside_its_mount(tmp_path, outside):
    docs = tmp_path / "docs"
    write_note(docs, "guide.md", "# Guide\n\n## Deploys\n\nProduction deploys use credentials from the vault.\n")
    (docs / "creds.md").symlink_to(outside / "passwd.md")
    (docs / "sub").symlink_to(outside)
    with _closing(KnowledgeDomain([docs], index_path=tmp_path / "k.sqlite")) as domain:
        report = domain.refresh()
        hits = domain.recall("production deploy credentials", 10)
    assert [h.path for h in hits] == [str(docs / "guide.md")]
    assert {Path(s["path"]).name for s in report["skipped"] if s["reason"] == OUTSIDE} == {"creds.md"}


def test_transcripts_outside_their_folder_are_skipped(tmp_path, outside):
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "abc.jsonl").symlink_to(outside / "secret.jsonl")
    with _closing(TranscriptDomain([folder], index_path=tmp_path / "t.sqlite")) as domain:
        report = domain.refresh()
        assert domain.recall("deploy credentials", 5) == []
    assert [s["reason"] for s in report["skipped"]] == [OUTSIDE]


def test_code_outside_the_tree_is_skipped(tmp_path, outside):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "app.py").write_text("def deploy():\n    return 1\n")
    (tree / "vendor").symlink_to(outside)
    (tree / "leak.py").symlink_to(outside / "leak.py")
    with _closing(CodeDomain([tree], index_path=tmp_path / "c.sqlite")) as domain:
        domain.refresh()
        hits = domain.recall("deploy credentials", 10)
    assert LEAK not in json.dumps([h.as_dict() for h in hits])


def test_the_gate_checks_a_links_target(tmp_path):
    root = tmp_path / "root"
    write_note(root, "personal/a.md", "x")
    (root / "b.md").symlink_to(root / "personal" / "a.md")
    gate = PrivacyGate(("personal/*",))
    assert gate.blocks(root / "b.md", root) == "personal/*"
    assert gate.outside(root / "b.md", root) is False
    assert gate.outside(root / "b.md", root / "personal" / "nothing") is True


def test_a_symlink_to_a_note_of_the_same_store_is_not_a_second_note(tmp_path):
    """``ln -s good.md link_to_good.md``: one file, one note — recalled once, no near-duplicate of
    itself, its links counted once; the link is a logged skip. The file itself is kept whatever the
    walk meets first, and a link that is the only way to its file is still read."""
    from memlane.store.scan import scan_folder

    store = tmp_path / "store"
    write_note(store, "good.md", "---\nname: good\ndescription: when deploying the billing service\ntype: feedback"
               "\n---\nDeploy billing after the migration; see [[nowhere_note]].\n")
    write_note(store, "other.md", "---\nname: other\ndescription: when writing release notes\ntype: feedback\n"
               "---\nKeep release notes short.\n")
    (store / "link_to_good.md").symlink_to("good.md")
    write_note(store, "sub/deep.md", "---\nname: deep\ndescription: when rotating the pager\ntype: feedback\n---\nx\n")
    (store / "a_first.md").symlink_to(store / "sub" / "deep.md")  # walked before the file it names
    write_note(store, ".obsidian/kept.md", "---\nname: kept\ndescription: when naming branches\ntype: feedback\n"
               "---\nPrefix branches with the ticket.\n")  # a folder the walk never enters
    (store / "z_alias.md").symlink_to(store / ".obsidian" / "kept.md")
    (store / "y_alias.md").symlink_to(store / ".obsidian" / "kept.md")  # two links, only them: the first by path

    scan = scan_folder(store, "project")
    assert sorted(n.rel for n in scan.notes) == ["good.md", "other.md", "sub/deep.md", "y_alias.md"]
    assert sorted((Path(s.path).name, "a note this folder already holds" in s.reason) for s in scan.skipped) == [
        ("a_first.md", True), ("link_to_good.md", True), ("z_alias.md", True)]
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        assert [r["name"] for r in mem.recall("deploying the billing service", k=5)] == ["good"]
        stats = mem.stats()
        from memlane.write.lint import lint

        findings = lint(mem, checks=["near-duplicates"]).findings
    assert [w["from"] for w in stats["future_writes"]] == ["good"] and stats["links_outside"] == 0
    assert not [f for f in findings if f.check == "near-duplicates"]


class _closing:
    def __init__(self, domain):
        self.domain = domain

    def __enter__(self):
        return self.domain

    def __exit__(self, *exc):
        self.domain.close()
