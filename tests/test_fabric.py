"""D2 and G3 across domains: the aggregator's buckets and quotas, and one privacy gate that no
domain and no interface gets around.

The privacy test plants one excluded file per domain — a note, a document, a session
transcript, a source file — each holding the same unmistakable token, beside public twins
that say the same thing, and asks for the token through every domain and every interface:
the library, ``memlane recall --domains``, the hook's layers 3 and 4, and MCP ``recall``. The
twins come back (so the test can fail); the excluded files never do."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_note
from memlane import Memory
from memlane.domains.base import Recalled
from memlane.domains.fabric import Fabric, build_fabric
from memlane.guards.privacy import PrivacyGate

TOKEN = "zebraomega"  # one word, so every tokenizer keeps it whole
TOKEN_GHP = "ghp_" + "k3Y" * 12  # a GitHub token pasted into a document
QUERY = f"where is the {TOKEN} rotation procedure"


def _transcript_line(kind, text, session, n):
    line = {"type": kind, "uuid": f"{session}-{n}", "sessionId": session, "isSidechain": False,
            "timestamp": f"2026-11-0{1 + n % 8}T10:00:00Z", "cwd": "/repo",
            "message": {"role": kind, "content": text if kind == "user" else [{"type": "text", "text": text}]}}
    if kind == "assistant":
        line["message"].update({"id": f"m-{session}-{n}", "model": "claude-sonnet-5", "type": "message"})
    return json.dumps(line)


def write_transcript(path: Path, session: str, turns: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(_transcript_line("user" if n % 2 == 0 else "assistant", t, session, n)
                              for n, t in enumerate(turns)) + "\n", encoding="utf-8")


@pytest.fixture
def world(tmp_path):
    """Four domains, each with a public file and an excluded twin; the config excludes '*secret*'."""
    notes, docs, transcripts, code = (tmp_path / d for d in ("notes", "docs", "transcripts", "code"))
    for folder, suffix in ((notes, "public"), (notes, "secret")):
        write_note(folder, f"feedback_{suffix}.md", f"---\nname: {suffix}_rotation\ndescription: when rotating the "
                   f"{TOKEN} keys ({suffix})\ntype: feedback\n---\nThe {TOKEN} rotation procedure ({suffix} copy): "
                   "rotate monthly.\n")
    write_note(notes, "user_private.md", f"---\nname: private_rotation\ndescription: when rotating the {TOKEN} keys "
               f"(private)\ntype: user\nprivate: true\n---\nThe {TOKEN} rotation procedure (private copy).\n")
    for name in ("guide", "secret-guide"):
        write_note(docs, f"{name}.md", f"# Operations\n\n## {TOKEN} rotation procedure\n\nRotate the {TOKEN} keys "
                   f"monthly ({name}).\n\n## Backups\n\nNightly.\n")
    for session in ("public-session", "secret-session"):
        write_transcript(transcripts / "proj" / f"{session}.jsonl", session,
                         [f"how do we do the {TOKEN} rotation procedure?", f"The {TOKEN} rotation procedure is "
                          f"monthly ({session}).", "thanks", "you're welcome"])
    for name in ("rotation", "secret_rotation"):
        write_note(code, f"{name}.py", f"def {TOKEN}_rotation_procedure():\n    \"\"\"Rotate the {TOKEN} keys "
                   f"({name}).\"\"\"\n    return 1\n\n\ndef caller():\n    return {TOKEN}_rotation_procedure()\n")
    config = tmp_path / "config.toml"
    config.write_text('[privacy]\nexclude = ["*secret*"]\n\n[inject]\ndeep = "always"\n\n'
                      f'[domains]\ndocs = ["{docs}"]\ntranscripts = ["{transcripts}"]\ncode = ["{code}"]\n')
    return {"notes": notes, "docs": docs, "transcripts": transcripts, "code": code, "config": config,
            "index": tmp_path / "i.sqlite", "tmp": tmp_path}


def leaks(text: str) -> list[str]:
    return [marker for marker in ("(secret", "secret-guide", "secret-session", "secret_rotation", "private copy")
            if marker in text]


def _memory(world):
    from memlane.config import load_config

    return Memory([world["notes"]], embedder="none", index_path=world["index"],
                  config=load_config(files=[world["config"]]))


def test_every_domain_finds_the_public_twin_and_never_the_excluded_file(world):
    with _memory(world) as memory:
        fabric = build_fabric(memory)
        try:
            assert set(fabric.domains) == {"notes", "knowledge", "transcripts", "code"}
            report = fabric.refresh()
            out = fabric.as_data(fabric.recall_all(QUERY))
        finally:
            fabric.close()
    buckets = {b["domain"]: b for b in out["buckets"]}
    assert set(buckets) == {"notes", "knowledge", "transcripts", "code"}
    for name, bucket in buckets.items():
        assert bucket["results"], f"{name} found nothing"
        assert all(Path(r["path"]).is_absolute() and r["address"] and r["text"] for r in bucket["results"])
    assert not leaks(json.dumps(out)), leaks(json.dumps(out))
    # nothing of them was even read into an index: at most counted as excluded, never listed by name
    assert not leaks(json.dumps({d: {k: v for k, v in r.items() if k != "skipped"} for d, r in report.items()}))


def test_cli_recall_domains(world):
    env = dict(os.environ, MEMLANE_CONFIG=str(world["config"]))
    cmd = [sys.executable, "-m", "memlane.adapters.cli", "recall", QUERY, "--store", str(world["notes"]),
           "--embedder", "none", "--index", str(world["index"]), "--domains", "notes,knowledge,transcripts,code",
           "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {b["domain"] for b in data["buckets"] if b["results"]} == {"notes", "knowledge", "transcripts", "code"}
    assert not leaks(proc.stdout)
    # the same through direct mounts instead of the config
    env.pop("MEMLANE_CONFIG")
    (world["tmp"] / "only_privacy.toml").write_text('[privacy]\nexclude = ["*secret*"]\n')
    env["MEMLANE_CONFIG"] = str(world["tmp"] / "only_privacy.toml")
    mounted = [*cmd[:cmd.index("--domains")], "--docs", str(world["docs"]), "--transcripts",
               str(world["transcripts"]), "--code", str(world["code"]), "--json"]
    proc = subprocess.run(mounted, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert len([b for b in json.loads(proc.stdout)["buckets"] if b["results"]]) == 4 and not leaks(proc.stdout)


def test_the_hook_layers(world):
    env = dict(os.environ, MEMLANE_CONFIG=str(world["config"]))
    payload = json.dumps({"session_id": "f1", "transcript_path": "/none", "cwd": str(world["tmp"]),
                          "hook_event_name": "UserPromptSubmit", "prompt": QUERY})
    cmd = [sys.executable, "-m", "memlane.adapters.cli", "hook", "user-prompt-submit", "--store", str(world["notes"]),
           "--embedder", "none", "--index", str(world["index"])]
    report = json.loads(subprocess.run([*cmd, "--explain"], input=payload, capture_output=True, text=True,
                                       timeout=120, env=env).stdout.split("\n\n", 1)[0])
    assert report["layer"] == "L4" and {s.get("domain") for s in report["shown"]} >= {"knowledge", "transcripts",
                                                                                        "code"}
    out = subprocess.run(cmd, input=payload, capture_output=True, text=True, timeout=120, env=env).stdout
    text = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "guide.md" in text and "public-session" in text and not leaks(text)


def test_mcp_recall_with_domains(world, monkeypatch):
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from memlane.adapters.mcp_server import Engine

    monkeypatch.setenv("MEMLANE_CONFIG", str(world["config"]))
    engine = Engine([str(world["notes"])], "none", str(world["index"]), None)
    out = engine.recall(QUERY, depth="full", k=3, domains=["notes", "knowledge", "transcripts", "code"])
    assert {b["domain"] for b in out["buckets"] if b["results"]} == {"notes", "knowledge", "transcripts", "code"}
    assert not leaks(json.dumps(out))
    # progressive depth across domains: ids first, then get() what was chosen, by the id it came with
    ids = engine.recall(QUERY, depth="ids", k=1, domains=["knowledge", "transcripts", "code"])
    chosen = [b["results"][0]["id"] for b in ids["buckets"]]
    assert {c.split(":", 1)[0] for c in chosen} == {"knowledge", "transcripts", "code"}
    assert all("text" not in b["results"][0] for b in ids["buckets"])
    got = engine.get(chosen, depth="full")
    assert [n["id"] for n in got["notes"]] == chosen and all(TOKEN in n["text"] for n in got["notes"])
    # an excluded unit cannot be fetched by guessing its address either
    secret = ["knowledge:secret-guide.md#Operations/zebraomega rotation procedure", "code:secret_rotation.caller:6",
              "transcripts:session secret-session turn 2"]
    assert engine.get(secret + chosen[:1])["unknown"] == secret


class _Leaky:
    """A domain that ignores the gate: the aggregator must still drop what it returns."""

    name = "knowledge"

    def refresh(self):
        return {}

    def recall(self, query, k, *, filters=None):
        return [Recalled.of_domain("knowledge", "/docs/secret-plan.md", "secret-plan.md#Plan", "the plan", 0.9),
                Recalled.of_domain("knowledge", "/docs/plan.md", "plan.md#Plan", "the public plan; token " + TOKEN_GHP, 0.5)]

    def close(self):
        pass


class _Dense:
    """A keyword-dense domain: many strong hits for anything."""

    name = "code"

    def refresh(self):
        return {}

    def recall(self, query, k, *, filters=None):
        return [Recalled.of_domain("code", f"/src/m{n}.py", f"m{n}.f", "def f(): ...", 0.99) for n in range(k)]

    def close(self):
        pass


class _Failing:
    name = "transcripts"

    def refresh(self):
        raise OSError("disk gone")

    def recall(self, query, k, *, filters=None):
        raise OSError("disk gone")

    def close(self):
        pass


def test_the_aggregator_gates_every_hit_shares_the_ceiling_and_survives_a_failing_domain():
    fabric = Fabric({"knowledge": _Leaky(), "code": _Dense(), "transcripts": _Failing()},
                    PrivacyGate(("*secret*",)), ceiling=6)
    out = fabric.as_data(fabric.recall_all("plan"))
    assert out["quota"] == 2
    buckets = {b["domain"]: b for b in out["buckets"]}
    assert [r["path"] for r in buckets["knowledge"]["results"]] == ["/docs/plan.md"]
    hit = buckets["knowledge"]["results"][0]
    assert TOKEN_GHP not in hit["text"] and "[redacted secret]" in hit["text"] and hit["meta"]["redacted"]
    assert len(buckets["code"]["results"]) == 2  # dense, but held to its quota
    assert "disk gone" in buckets["transcripts"]["error"] and buckets["transcripts"]["results"] == []
    assert [b["domain"] for b in out["buckets"]] == ["code", "knowledge", "transcripts"]  # by own activation
    assert "error" in fabric.refresh()["transcripts"]
