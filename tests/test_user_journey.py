"""A Claude Code user's journey, end to end through the CLI and the hooks, in a fake HOME with two
git repositories: a project note written in A never reaches B (recall, both hooks, MCP); ``add``
works before ``init`` and lands in A's Claude Code memory folder with its MEMORY.md line; the
advice's UPDATE and SUPERSEDE apply to such a note; another program editing MEMORY.md during
``add`` loses no line; the install puts no machine path in a committed file and uninstall leaves
the repository as it was; ``doctor`` names a broken config; ``--k`` is checked; every command's
help speaks to users."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memlane.adapters.cli import build_parser
from memlane.adapters.cli import main as cli
from memlane.adapters.hook import run_hook
from memlane.store.discovery import claude_memory_dir
from memlane.store.memory_index import parse_memory_index
from test_write import TOPICS

GO_PIN = ["--name", "go_toolchain_pin", "--type", "project", "--description", "when upgrading Go in go.mod",
          "--body", "Stay on Go 1.22 until the CI image moves to 1.23; the build image pins the toolchain."]
PROMPT = "I want to upgrade golang in go.mod"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def world(tmp_path, sealed_env, monkeypatch):
    repos = {}
    for name in ("A", "B"):
        root = tmp_path / name
        root.mkdir()
        git(root, "init", "-q")
        git(root, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init")
        repos[name] = root
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    return {"home": sealed_env, **repos}


def run(args, cwd, monkeypatch, capsys):
    monkeypatch.chdir(cwd)
    code = cli([*args])
    out = capsys.readouterr()
    return code, out.out, out.err


def hook(event, cwd, prompt=PROMPT, session="s1"):
    out = io.StringIO()
    payload = {"session_id": session, "cwd": str(cwd), "prompt": prompt, "hook_event_name": "UserPromptSubmit",
               "source": "startup"}
    assert run_hook(event, stdin=io.StringIO(json.dumps(payload)), stdout=out, embedder="none") == 0
    return out.getvalue()


def test_a_project_note_from_A_never_reaches_B(world, monkeypatch, capsys):
    code, out, _ = run(["add", *GO_PIN, "--embedder", "none"], world["A"], monkeypatch, capsys)
    assert code == 0 and "written:" in out  # before any `memlane init`
    folder = claude_memory_dir(world["A"])
    note = folder / "project_go_toolchain_pin.md"
    assert note.is_file()
    assert [line.file for line in parse_memory_index((folder / "MEMORY.md").read_text())] == [note.name]
    assert not (world["home"] / "data" / "memlane" / "user").exists()  # the user store got nothing

    code, out, _ = run(["recall", PROMPT, "--json", "--embedder", "none"], world["A"], monkeypatch, capsys)
    assert "go_toolchain_pin" in [r["name"] for r in json.loads(out)["results"]]
    assert "go_toolchain_pin" in hook("user-prompt-submit", world["A"])
    assert "go_toolchain_pin" in hook("session-start", world["A"], session="s2")

    run(["add", "--name", "release_train", "--type", "project", "--description", "when cutting a release",
         "--body", "Releases leave on Tuesdays from the release branch.", "--embedder", "none"], world["B"],
        monkeypatch, capsys)
    code, out, _ = run(["recall", PROMPT, "--json", "--embedder", "none"], world["B"], monkeypatch, capsys)
    assert code == 0 and "go_toolchain_pin" not in out
    assert "go_toolchain_pin" not in hook("user-prompt-submit", world["B"], session="b1")
    assert "go_toolchain_pin" not in hook("session-start", world["B"], session="b2")
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from memlane.adapters.mcp_server import Engine

    engine = Engine(None, "none", None, str(world["B"]))
    assert "go_toolchain_pin" not in json.dumps(engine.recall(PROMPT, depth="summary", k=10))
    engine = Engine(None, "none", None, str(world["A"]))
    assert "go_toolchain_pin" in json.dumps(engine.recall(PROMPT, depth="summary", k=10))


def test_mcp_remember_writes_to_the_scope_of_the_note(world):
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    from memlane.adapters.mcp_server import Engine

    engine = Engine(None, "none", None, str(world["A"]))
    engine.remember("go_toolchain_pin", "when upgrading Go in go.mod", "Stay on Go 1.22 for now.", type="project")
    engine.remember("prefers_short_answers", "when answering the user", "Keep answers short.", type="user")
    assert (claude_memory_dir(world["A"]) / "project_go_toolchain_pin.md").is_file()
    assert (world["home"] / "data" / "memlane" / "user" / "user_prefers_short_answers.md").is_file()
    assert not claude_memory_dir(world["B"]).exists()


def test_update_and_supersede_apply_to_a_claude_code_note(world, monkeypatch, capsys):
    folder = claude_memory_dir(world["A"])
    run(["add", *GO_PIN, "--embedder", "none"], world["A"], monkeypatch, capsys)
    code, out, _ = run(["add", "--name", "go_pin_lint", "--type", "project", "--description",
                        "when upgrading Go in go.mod", "--body", "Stay on Go 1.22 until the CI image moves; "
                        "golangci-lint 1.59 also breaks on 1.23 generics, bump it in the same PR.",
                        "--embedder", "none", "--apply"], world["A"], monkeypatch, capsys)
    assert code == 0 and out.startswith("UPDATE")
    text = (folder / "project_go_toolchain_pin.md").read_text()
    assert "Stay on Go 1.22 until the CI image moves to 1.23" in text and "Update (" in text and "golangci" in text

    run(["add", "--name", "web_installs", "--type", "feedback", "--description", "when installing the web app's "
         "packages", "--body", "Use pnpm for installs in the web app; the lockfile is pnpm-lock.yaml.",
         "--embedder", "none"], world["A"], monkeypatch, capsys)
    code, out, _ = run(["add", "--name", "web_installs_npm", "--type", "feedback", "--description",
                        "when installing the web app's packages", "--body", "Never use pnpm for installs in the web "
                        "app; use npm, the lockfile is package-lock.json.", "--embedder", "none", "--apply"],
                       world["A"], monkeypatch, capsys)
    assert code == 0 and out.startswith("SUPERSEDE"), out
    new = (folder / "feedback_web_installs_npm.md").read_text()
    assert "supersedes:" in new and "web_installs" in new
    assert (folder / "feedback_web_installs.md").is_file()  # nothing is ever deleted
    lines = [line.file for line in parse_memory_index((folder / "MEMORY.md").read_text())]
    assert lines == ["project_go_toolchain_pin.md", "feedback_web_installs.md", "feedback_web_installs_npm.md"]

    code, _, _ = run(["link", "--suggest", "go_toolchain_pin", "--apply", "--embedder", "none"], world["A"],
                     monkeypatch, capsys)
    assert code == 0
    code, out, _ = run(["archive", "web_installs", "--embedder", "none"], world["A"], monkeypatch, capsys)
    assert code == 0 and "archived" in out
    code, out, _ = run(["restore", "web_installs", "--embedder", "none"], world["A"], monkeypatch, capsys)
    assert code == 0


def test_another_program_editing_memory_md_during_add_loses_no_line(world):
    folder = claude_memory_dir(world["A"])
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("- [Seed](project_seed.md) — when seeding\n")
    (folder / "project_seed.md").write_text("---\nname: seed\ndescription: when seeding\ntype: project\n---\nseed\n")
    stop, theirs = threading.Event(), []

    def claude_code():  # appends its own lines in place, as Claude Code does, without memlane's lock
        n = 0
        while not stop.is_set():
            with open(folder / "MEMORY.md", "a", encoding="utf-8") as handle:
                handle.write(f"- [Theirs {n}](project_theirs_{n}.md) — written by Claude Code\n")
            theirs.append(f"project_theirs_{n}.md")
            n += 1
            time.sleep(0.01)

    editor = threading.Thread(target=claude_code)
    editor.start()
    env = {**os.environ}
    try:
        procs = [subprocess.Popen([sys.executable, "-m", "memlane", "add", "--name", f"note_{n}", "--type", "project",
                                   "--description", f"when {topic}", "--body", body, "--embedder", "none"],
                                  cwd=world["A"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for n, (topic, body) in enumerate(TOPICS[:4])]
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        stop.set()
        editor.join()
    assert all(p.returncode == 0 and "written:" in out for p, (out, _) in zip(procs, results)), results
    files = [line.file for line in parse_memory_index((folder / "MEMORY.md").read_text())]
    assert sorted(files) == sorted(["project_seed.md", *theirs, *(f"project_note_{n}.md" for n in range(4))])


def test_install_is_team_safe_and_uninstall_leaves_the_repository_as_it_was(world, monkeypatch, capsys, tmp_path):
    repo = world["A"]
    code, _, _ = run(["install", "claude"], repo, monkeypatch, capsys)
    assert code == 0 and (repo / ".claude" / "settings.local.json").is_file()
    assert git(repo, "status", "--porcelain") == ""  # this machine's settings: git does not even see them
    code, _, _ = run(["install", "claude", "--shared"], repo, monkeypatch, capsys)
    committed = (repo / ".claude" / "settings.json").read_text()
    assert str(tmp_path) not in committed and sys.prefix not in committed and "memlane-hook " in committed
    assert git(repo, "status", "--porcelain").strip() == "?? .claude/"
    for args in (["uninstall", "claude", "--shared"], ["uninstall", "claude"]):
        assert run(args, repo, monkeypatch, capsys)[0] == 0
    assert git(repo, "status", "--porcelain", "--ignored") == ""  # nothing left, not even an ignored file
    assert not (repo / ".claude").exists()


def test_doctor_diagnoses_a_broken_config(world, monkeypatch, capsys):
    config = world["home"] / "config" / "memlane" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[retrieve]\nk = 0\n")
    code, out, err = run(["doctor"], world["A"], monkeypatch, capsys)
    assert code == 1 and f"where: {config}" in out and "retrieve.k" in out and not err
    assert "memory is off" in json.loads(hook("user-prompt-submit", world["A"]))["systemMessage"]


@pytest.mark.parametrize("k, ok", [("0", False), ("-3", False), ("101", False), ("abc", False), ("1", True),
                                   ("100", True)])
def test_k_is_a_whole_number_from_1_to_100(world, monkeypatch, capsys, k, ok):
    run(["add", *GO_PIN, "--embedder", "none"], world["A"], monkeypatch, capsys)
    if ok:
        code, out, _ = run(["recall", PROMPT, "--k", k, "--json", "--embedder", "none"], world["A"], monkeypatch,
                           capsys)
        assert code == 0 and json.loads(out)["results"]
        return
    with pytest.raises(SystemExit) as exit_:
        cli(["recall", PROMPT, "--k", k])
    assert exit_.value.code == 2 and "--k" in capsys.readouterr().err


def test_every_command_has_help_for_users_with_only_its_own_options():
    parser = build_parser()
    top = parser.format_help()
    assert ".py" not in top and "``" not in top
    commands = parser._subparsers._group_actions[0].choices
    with_sources = {"recall", "index", "mcp"}
    for name, sub in commands.items():
        text = sub.format_help()
        assert "example" in text, name
        assert ("--transcripts" in text) == (name in with_sources), name
        assert ".py" not in text and "cli_" not in text, name
