"""memlane install / uninstall claude: settings merged, idempotent, reversible, dry-run diffs."""

from __future__ import annotations

import json

import pytest

from memlane.adapters.cli import main as cli
from memlane.adapters.install import InstallError, plan_claude, settings_path

OTHER = {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "other-tool recall",
                                                    "timeout": 5}]}],
                   "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]},
         "permissions": {"allow": ["Bash(ls:*)"]}}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def read(path):
    return json.loads(path.read_text())


def test_install_merges_with_existing_hooks_and_is_idempotent(repo, capsys):
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(OTHER))
    assert cli(["install", "claude"]) == 0
    data = read(settings)
    ups = data["hooks"]["UserPromptSubmit"]
    assert ups[0]["hooks"][0]["command"] == "other-tool recall"  # kept, first
    ours = ups[1]["hooks"][0]
    assert ours["command"].endswith("hook user-prompt-submit") and ours["timeout"] == 10  # seconds
    start = data["hooks"]["SessionStart"][0]
    assert start["matcher"] == "startup|resume|clear|compact" and start["hooks"][0]["command"].endswith("hook session-start")
    assert data["hooks"]["PreToolUse"] == OTHER["hooks"]["PreToolUse"] and data["permissions"] == OTHER["permissions"]
    before = settings.read_text()
    assert cli(["install", "claude"]) == 0 and "nothing to change" in capsys.readouterr().out
    assert settings.read_text() == before
    assert (repo / ".claude" / "settings.json.memlane-backup").exists()


def test_uninstall_restores_the_other_hooks(repo):
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(OTHER))
    cli(["install", "claude", "--statusline"])
    assert read(settings)["statusLine"]["command"].endswith("statusline")
    cli(["uninstall", "claude"])
    assert read(settings) == OTHER


def test_dry_run_prints_a_diff_and_writes_nothing(repo, capsys):
    assert cli(["install", "claude", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would install memlane into" in out and "+    \"UserPromptSubmit\"" in out
    assert not (repo / ".claude" / "settings.json").exists()


def test_a_broken_settings_file_is_not_touched(repo, capsys):
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    assert cli(["install", "claude"]) == 2
    assert "not valid JSON" in capsys.readouterr().err and settings.read_text() == "{ not json"


def test_a_foreign_statusline_is_kept(repo):
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"statusLine": {"type": "command", "command": "my-status.sh"}}))
    with pytest.raises(InstallError, match="already has a statusLine"):
        plan_claude(path, statusline=True, command="/opt/memlane")


def test_user_scope_follows_claude_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    assert settings_path("user") == tmp_path / "cc" / "settings.json"


def test_the_installed_command_is_quoted_and_absolute(tmp_path):
    exe = tmp_path / "my tools" / "memlane"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    change = plan_claude(tmp_path / "settings.json", command=str(exe))
    command = json.loads(change.after)["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == f"'{exe}' hook user-prompt-submit"  # no memlane-hook beside it: the full CLI
    (exe.parent / "memlane-hook").write_text("#!/bin/sh\n")
    change = plan_claude(tmp_path / "settings.json", command=str(exe))
    command = json.loads(change.after)["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == f"'{exe.parent / 'memlane-hook'}' user-prompt-submit"  # the stdlib-only client


def test_codex_and_gemini_get_their_own_files_events_and_units(repo):
    assert cli(["install", "codex"]) == 0
    codex = read(repo / ".codex" / "hooks.json")["hooks"]
    assert codex["UserPromptSubmit"][0]["hooks"][0]["command"].endswith("user-prompt-submit --agent codex")
    assert codex["UserPromptSubmit"][0]["hooks"][0]["timeout"] == 10  # seconds
    assert codex["SessionStart"][0]["matcher"] == "startup|resume|clear"
    assert cli(["install", "gemini"]) == 0
    gemini = read(repo / ".gemini" / "settings.json")["hooks"]
    handler = gemini["BeforeAgent"][0]["hooks"][0]
    assert handler["command"].endswith("user-prompt-submit --agent gemini") and handler["timeout"] == 10_000  # ms
    assert "matcher" not in gemini["SessionStart"][0]  # Gemini matches lifecycle events by exact string
    cli(["uninstall", "gemini"])
    assert not (repo / ".gemini" / "settings.json").read_text().strip() or read(repo / ".gemini" / "settings.json") == {}


def test_gemini_asks_for_no_statusline(repo, capsys):
    assert cli(["install", "gemini", "--statusline"]) == 2
    assert "no statusline" in capsys.readouterr().err


def test_doctor_reports_hooks_and_daemon(repo, capsys):
    cli(["install", "claude"])
    capsys.readouterr()
    assert cli(["doctor", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "project" in data["agents"]["hooks"]["claude"] and data["agents"]["hooks"]["gemini"] == {}
    assert data["agents"]["daemon"]["running"] is False
    assert cli(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "hooks for claude: project" in out and "hooks for codex: not installed" in out and "daemon: not running" in out


def test_cursor_gets_a_session_start_hook_in_its_flat_shape(repo):
    path = repo / ".cursor" / "hooks.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}))
    assert cli(["install", "cursor"]) == 0
    data = read(path)
    assert data["version"] == 1 and data["hooks"]["afterFileEdit"] == [{"command": "./format.sh"}]
    (entry,) = data["hooks"]["sessionStart"]
    assert entry["command"].endswith("session-start --agent cursor") and "beforeSubmitPrompt" not in data["hooks"]
    assert cli(["install", "cursor"]) == 0 and len(read(path)["hooks"]["sessionStart"]) == 1  # idempotent
    from memlane.adapters.install import installed

    assert installed(path)
    cli(["uninstall", "cursor"])
    assert read(path) == {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}
