"""When memory cannot work here, the user hears of it: ``memlane doctor`` names each problem (what,
where, how to fix it) and exits 1; a hook still never blocks, but once per session its output
carries a line the user sees and the model does not (``systemMessage``) saying memory is off."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import write_note
from memlane.adapters import hookclient
from memlane.adapters.cli import main as cli
from memlane.adapters.hook import run_hook


@pytest.fixture
def repo(tmp_path, monkeypatch, sealed_env):
    root = tmp_path / "repo"
    (root / ".git" / "info").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def broken_config(sealed_env, text='[retrieve]\nfusion = "bogus"\n'):
    path = sealed_env / "config" / "memlane" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def hook(event, session="s1", cwd=None, agent="claude"):
    out = io.StringIO()
    data = {"session_id": session, "cwd": str(cwd) if cwd else None, "prompt": "how do we deploy?",
            "hook_event_name": "UserPromptSubmit"}
    assert run_hook(event, stdin=io.StringIO(json.dumps(data)), stdout=out, embedder="none", agent=agent) == 0
    return out.getvalue()


@pytest.mark.parametrize("text", ['[retrieve]\nfusion = "bogus"\n', "[retrieve\nfusion = 1\n", "[nope]\nx = 1\n"])
def test_doctor_names_a_broken_config_and_exits_1(repo, sealed_env, capsys, text):
    path = broken_config(sealed_env, text)
    assert cli(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "problem(s) keep memory from working here" in out and f"where: {path}" in out and "fix:" in out
    assert cli(["doctor", "--json"]) == 1
    (problem,) = json.loads(capsys.readouterr().out)["problems"]
    assert problem["where"] == str(path) and "config does not load" in problem["what"]


def test_doctor_on_a_working_setup_exits_0(repo, capsys):
    assert cli(["doctor"]) == 0
    assert "memory works here." in capsys.readouterr().out


def test_doctor_says_when_no_agent_uses_memory_yet(repo, capsys):
    """A new user runs doctor before installing anything: memory works, and nothing would ever ask
    it — doctor says how to give it to an agent, and stops saying so once the hooks are in."""
    assert cli(["doctor"]) == 0
    assert "memory works here. No agent uses it yet: `memlane install claude`" in capsys.readouterr().out
    assert cli(["install", "claude"]) == 0
    capsys.readouterr()
    assert cli(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "memory works here." in out and "No agent uses it" not in out


def test_doctor_beside_a_process_holding_the_index_says_so_at_once(repo, sealed_env, tmp_path, capsys):
    """Another process writing the index (a long `memlane index`, another tool) is no damage: doctor
    does not advise rebuilding it, says the check waited for the lock, and does not wait it out."""
    import sqlite3

    store = tmp_path / "notes"
    write_note(store, "project_a.md", "---\nname: project_a\ndescription: where we deploy\n---\nTo the eu cluster.\n")
    index = tmp_path / "i.sqlite"
    assert cli(["index", "--store", str(store), "--index", str(index), "--embedder", "none"]) == 0
    capsys.readouterr()
    locker = sqlite3.connect(index, isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        started = time.monotonic()
        assert cli(["doctor", "--store", str(store), "--index", str(index), "--embedder", "none"]) == 0
        waited = time.monotonic() - started
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    out = capsys.readouterr().out
    assert "not checked: another process holds the index's lock" in out and "damaged" not in out
    assert "memory works here." in out
    assert waited < 8, waited  # not a speed figure: two checks each waited out the writers' 5 s timeout (~10 s)


def test_doctor_checks_the_index_once_and_names_damage(repo, tmp_path, capsys, monkeypatch):
    """The integrity check reads the whole file: doctor runs it once, and a damaged index is a problem."""
    from memlane.index.sqlite import SQLiteIndex

    checks = []
    monkeypatch.setattr(SQLiteIndex, "check_integrity", lambda self: checks.append(1) or "quick_check: row 3 missing")
    store = tmp_path / "notes"
    write_note(store, "project_a.md", "---\nname: project_a\ndescription: where we deploy\n---\nTo the eu cluster.\n")
    assert cli(["doctor", "--store", str(store), "--index", str(tmp_path / "i.sqlite"), "--embedder", "none"]) == 1
    out = capsys.readouterr().out
    assert "the index is damaged: quick_check: row 3 missing" in out and "integrity quick_check: row 3 missing" in out
    assert len(checks) == 1


def test_doctor_names_a_missing_mount_an_index_it_cannot_keep_and_a_dead_hook(repo, sealed_env, tmp_path, capsys):
    foreign = tmp_path / "not-an-index.sqlite"
    foreign.write_text("a file of the user's")
    broken_config(sealed_env, f'[stores]\nmounts = [{{path = "{tmp_path / "gone"}", scope = "project"}}]\n'
                              f'[index]\npath = "{foreign}"\n')
    settings = repo / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "/old/venv/bin/memlane-hook user-prompt-submit"}]}]}}))
    assert cli(["doctor", "--json"]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    by_where = {p["where"]: p for p in problems}
    assert "does not exist" in by_where[str(tmp_path / "gone")]["what"]
    assert "cannot be written" in by_where[str(foreign)]["what"]
    assert "/old/venv/bin/memlane-hook" in by_where[str(settings)]["what"]
    assert "memlane install claude" in by_where[str(settings)]["fix"]
    assert foreign.read_text() == "a file of the user's"  # diagnosing touched nothing of the user's


def test_a_hook_says_once_per_session_that_memory_is_off(repo, sealed_env):
    path = broken_config(sealed_env)
    first = json.loads(hook("user-prompt-submit", cwd=repo))
    assert "memory is off" in first["systemMessage"] and str(path) in first["systemMessage"]
    assert "memlane doctor" in first["systemMessage"]
    assert "additionalContext" not in first["hookSpecificOutput"]  # nothing for the model
    assert hook("user-prompt-submit", cwd=repo) == ""  # once per session
    assert hook("session-start", cwd=repo) == ""
    again = json.loads(hook("session-start", session="s2", cwd=repo))
    assert again["hookSpecificOutput"]["hookEventName"] == "SessionStart" and "memory is off" in again["systemMessage"]
    assert json.loads(hook("session-start", session="s3", cwd=repo, agent="codex"))["systemMessage"]
    assert hook("session-start", session="s4", cwd=repo, agent="cursor") == "{}"  # Cursor has no such field
    assert "ConfigError" in (sealed_env / "cache" / "hook.log").read_text()


def test_unreadable_hook_input_is_only_logged(repo, sealed_env):
    broken_config(sealed_env)
    out = io.StringIO()
    assert run_hook("user-prompt-submit", stdin=io.StringIO("{not json"), stdout=out, embedder="none") == 0
    assert out.getvalue() == ""


def test_a_hook_for_a_folder_whose_path_is_not_utf8_says_why(repo, sealed_env, tmp_path, monkeypatch, capsys):
    """A store (or repository) whose path has bytes of another encoding: the hook client still finds
    its daemon key, and the hook logs why memory is off instead of exiting without a word."""
    store = tmp_path / os.fsdecode(b"notizen-\xfcbersicht")
    write_note(store, "project_a.md", "---\nname: project_a\ndescription: how we deploy\n---\nmake ship\n")
    payload = {"session_id": "u1", "cwd": str(repo), "prompt": "how do we deploy?"}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(payload)))
    assert hookclient.main(["user-prompt-submit", "--store", str(store), "--no-daemon"]) == 0
    out = capsys.readouterr().out
    assert "additionalContext" not in out and "memory is off" in json.loads(out)["systemMessage"]
    assert "failed, nothing injected" in (sealed_env / "cache" / "hook.log").read_text()


@pytest.mark.parametrize("mistake, said", [(["--store", "/nonexistent/notes"], "--store /nonexistent/notes is not a"),
                                           (["--embedder", "nosuch"], "--embedder 'nosuch' is no model")])
def test_a_mistake_in_the_hook_s_own_command_is_told_once(repo, sealed_env, monkeypatch, capsys, mistake, said):
    """A store the installed command names that is no folder answered nothing, and an embedder
    memlane does not know answered keyword-only, both without a word; and the daemon started for
    them idled (or died) unseen. The user is told once a session, and no daemon is left for it."""
    outs = []
    for session in ("m1", "m1", "m2"):
        payload = {"session_id": session, "cwd": str(repo), "prompt": "how do we deploy?"}
        monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(payload)))
        assert hookclient.main(["user-prompt-submit", *mistake, "--no-daemon"]) == 0
        outs.append(capsys.readouterr().out)
    first, again, other = outs
    assert said in json.loads(first)["systemMessage"] and "additionalContext" not in first
    assert again == "" and said in json.loads(other)["systemMessage"]  # once a session
    daemon = subprocess.run([sys.executable, "-m", "memlane.adapters.daemon", "--root", str(repo), *mistake,
                             "--idle-minutes", "0.5"], capture_output=True, timeout=60)
    assert daemon.returncode == 1  # the daemon stops at once, saying why in the log
    assert said in (sealed_env / "cache" / "hook.log").read_text().split("daemon failed")[-1]


def test_a_store_named_from_home_is_a_folder_to_the_hook_s_check(repo, sealed_env, monkeypatch, capsys):
    """``--store '~/notes'`` (the shell leaves a quoted ``~``): memlane reads it from the home
    folder, and the check of the hook's command called it no folder and turned memory off."""
    write_note(sealed_env / "notes", "deploy.md",
               "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\nDeploy with make ship.\n")
    payload = {"session_id": "h1", "cwd": str(repo), "prompt": "how do we deploy?"}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(payload)))
    assert hookclient.main(["user-prompt-submit", "--store", "~/notes", "--no-daemon"]) == 0
    out = capsys.readouterr().out
    assert "make ship" in out and "systemMessage" not in out


def test_a_working_hook_says_nothing_to_the_user(repo, sealed_env):
    write_note(sealed_env / "data" / "memlane" / "user", "user_deploy.md",
               "---\nname: user_deploy\ndescription: how we deploy\ntype: user\n---\nDeploy with make ship.\n")
    out = hook("user-prompt-submit", cwd=repo)
    assert out and "systemMessage" not in out


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets only")
def test_a_daemon_whose_config_breaks_tells_the_user_once(repo, sealed_env, tmp_path):
    store = tmp_path / "store"
    write_note(store, "deploy.md", "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\nmake ship\n")
    config = broken_config(sealed_env, "[retrieve]\nfusion = \"hybrid\"\n")
    args = ["--store", str(store), "--embedder", "none", "--index", str(tmp_path / "i.sqlite")]
    root = hookclient.project_root(str(repo))
    key = hookclient.daemon_key(root, [str(store)], "none", str(tmp_path / "i.sqlite"))
    proc = subprocess.Popen([sys.executable, "-m", "memlane.adapters.daemon", "--key", key, "--root", root, *args,
                             "--idle-minutes", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = hookclient.socket_path(key)
    try:
        for _ in range(300):
            if hookclient.ask_daemon(path, "ping") is not None:
                break
            time.sleep(0.05)
        request = json.dumps({"session_id": "d1", "cwd": str(repo), "prompt": "how do we deploy?"})
        assert "deploy" in hookclient.ask_daemon(path, "user-prompt-submit claude", request)
        time.sleep(0.05)
        config.write_text('[retrieve]\nfusion = "bogus"\n')
        answer = hookclient.ask_daemon(path, "user-prompt-submit claude", request)
        assert "memory is off" in json.loads(answer)["systemMessage"]
        assert hookclient.ask_daemon(path, "user-prompt-submit claude", request) == ""
        config.unlink()
        fresh = json.dumps({"session_id": "d3", "cwd": str(repo), "prompt": "how do we deploy?"})
        assert "deploy" in hookclient.ask_daemon(path, "user-prompt-submit claude", fresh)  # fixed: memory is back
        time.sleep(0.05)
        config.write_text('[retrieve]\nfusion = "bogus"\n')  # a config file that did not exist before
        other = json.dumps({"session_id": "d2", "cwd": str(repo), "prompt": "how do we deploy?"})
        assert "memory is off" in json.loads(hookclient.ask_daemon(path, "user-prompt-submit claude", other))[
            "systemMessage"]
    finally:
        hookclient.ask_daemon(path, "stop")
        proc.wait(timeout=30)


def test_a_moment_of_contention_is_not_called_memory_off(sealed_env):
    import sqlite3

    from memlane.adapters.hook import memory_off

    assert memory_off("user-prompt-submit", {"session_id": "t1"}, "claude",
                      sqlite3.OperationalError("database is locked")) == ""
    assert memory_off("user-prompt-submit", {"session_id": "t1"}, "claude", TimeoutError("deadline")) == ""
    assert "memory is off" in memory_off("user-prompt-submit", {"session_id": "t1"}, "claude", OSError("gone"))


@pytest.mark.parametrize("value", ["1", "yes"])
def test_memlane_off_turns_the_hooks_off_for_a_session(repo, sealed_env, monkeypatch, value):
    write_note(sealed_env / "data" / "memlane" / "user", "user_deploy.md",
               "---\nname: user_deploy\ndescription: how we deploy\ntype: user\n---\nDeploy with make ship.\n")
    monkeypatch.setenv("MEMLANE_OFF", value)
    assert hook("user-prompt-submit", cwd=repo) == ""
    proc = subprocess.run([sys.executable, "-m", "memlane.adapters.hookclient", "session-start"], cwd=repo,
                          input=json.dumps({"session_id": "off", "cwd": str(repo)}), capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == ""
    monkeypatch.setenv("MEMLANE_OFF", "0")
    assert "user_deploy" in hook("session-start", cwd=repo)


def test_the_hook_log_keeps_a_line_that_quotes_a_path_not_utf8(sealed_env, tmp_path, monkeypatch, capsys):
    """A folder whose path has bytes of another encoding (no memory folders for it): the hook logs why
    it injects nothing, the bytes escaped, instead of losing the line to a 'Logging error' on stderr."""
    folder = tmp_path / os.fsdecode(b"projekt-\xfcbersicht")
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps({"session_id": "u2", "cwd": str(folder),
                                                              "prompt": "how do we deploy?"})))
    assert hookclient.main(["user-prompt-submit", "--no-daemon"]) == 0
    assert "Logging error" not in capsys.readouterr().err
    assert "no memory folders configured for" in (sealed_env / "cache" / "hook.log").read_text()


def test_doctor_lists_the_hooks_failures_since_the_last_answer(sealed_env):
    """A failure a later hook answer followed (the config fixed since) is past: doctor listed
    it above "memory works here." for a day."""
    from memlane.adapters.doctor import recent_hook_failures

    now = time.strftime("%Y-%m-%d %H:%M:%S")
    failed = f"{now},100 1 memlane: hook user-prompt-submit failed, nothing injected: ConfigError: bad"
    answered = f"{now},200 2 memlane: hook user-prompt-submit: session s1, 2164 chars in 281 ms"
    log = sealed_env / "cache" / "hook.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"{failed}\n{answered}\n", encoding="utf-8")
    assert recent_hook_failures() == []
    log.write_text(f"{answered}\n{failed}\n", encoding="utf-8")
    assert recent_hook_failures() == [failed]


def _prompt_hook(repo, monkeypatch, capsys, session, *argv):
    payload = {"session_id": session, "cwd": str(repo), "prompt": "how do we deploy?"}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(payload)))
    assert hookclient.main(["user-prompt-submit", *argv]) == 0
    return capsys.readouterr().out


def test_one_missing_store_among_several_answers_from_the_rest_and_says_which(repo, sealed_env, tmp_path,
                                                                                 monkeypatch, capsys):
    """``--store a --store gone``: one folder deleted (or mistyped) turned memory off for every
    store of the command. The others answer; the user is told once a session which folder is
    missing (the model is told nothing of it)."""
    write_note(tmp_path / "notes", "deploy.md",
               "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\nDeploy with make ship.\n")
    gone = tmp_path / "gone"
    argv = ["--store", str(tmp_path / "notes"), "--store", str(gone), "--no-daemon"]
    first = json.loads(_prompt_hook(repo, monkeypatch, capsys, "p1", *argv))
    assert "make ship" in first["hookSpecificOutput"]["additionalContext"]
    assert f"--store {gone} is not a folder" in first["systemMessage"]
    assert "memory is off" not in first["systemMessage"] and str(gone) not in first["hookSpecificOutput"]["additionalContext"]
    assert "systemMessage" not in _prompt_hook(repo, monkeypatch, capsys, "p1", *argv)  # told once a session
    other = json.loads(_prompt_hook(repo, monkeypatch, capsys, "p2", *argv))
    assert str(gone) in other["systemMessage"]
    # every store missing: nothing to answer from, memory is off (as for one missing store alone)
    off = json.loads(_prompt_hook(repo, monkeypatch, capsys, "p3", "--store", str(gone), "--store",
                                  str(tmp_path / "gone2"), "--no-daemon"))
    assert "memory is off" in off["systemMessage"] and "additionalContext" not in off["hookSpecificOutput"]


def test_the_daemon_serves_the_stores_that_exist_and_says_which_one_is_missing(repo, sealed_env, tmp_path):
    """The daemon for a command with one missing store serves the others (it had refused to start),
    and says which folder is missing, once a session."""
    from memlane.adapters import daemon

    write_note(tmp_path / "notes", "deploy.md",
               "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\nDeploy with make ship.\n")
    stores = [str(tmp_path / "notes"), str(tmp_path / "gone")]
    daemon.check_hook_command(stores, "none")  # no refusal: the daemon starts
    workspace = daemon.Workspace(stores, "none", str(tmp_path / "i.sqlite"), str(repo))
    try:
        request = json.dumps({"session_id": "w1", "cwd": str(repo), "prompt": "how do we deploy?"})
        first = json.loads(daemon.answer(workspace, "user-prompt-submit", request))
        assert "make ship" in first["hookSpecificOutput"]["additionalContext"]
        assert str(tmp_path / "gone") in first["systemMessage"]
        assert "systemMessage" not in daemon.answer(workspace, "user-prompt-submit", request)
    finally:
        workspace.close()


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets only")
@pytest.mark.parametrize("mistake", ["store", "embedder"])
def test_a_command_the_daemon_refused_spawns_no_daemon_per_prompt(repo, sealed_env, tmp_path, monkeypatch, capsys,
                                                                   mistake):
    """The daemon refuses a command naming only missing stores (or an unknown embedder) and exits
    at once; every later prompt started another. The refusal is remembered for that command and
    its folders as they are: no spawn again until a folder appears (or the command changes)."""
    import subprocess as sp

    spawned, real_popen = [], sp.Popen

    def spawn(cmd, **kwargs):  # the daemon run to its end here: its refusal is on disk before the next prompt
        spawned.append(cmd)
        proc = real_popen([*cmd, "--idle-minutes", "0"], stdin=sp.DEVNULL, stdout=sp.DEVNULL, stderr=sp.DEVNULL,
                          cwd=kwargs.get("cwd"))
        proc.wait(timeout=120)
        return proc  # ended: no daemon left starting
    monkeypatch.setattr(sp, "Popen", spawn)
    folder = tmp_path / "notes"
    argv = ["--store", str(folder)] + (["--embedder", "nosuch"] if mistake == "embedder" else [])
    if mistake == "embedder":
        folder.mkdir()
    outs = [_prompt_hook(repo, monkeypatch, capsys, session, *argv) for session in ("r1", "r1", "r2")]
    assert "systemMessage" in outs[0] and outs[1] == "" and "systemMessage" in outs[2]  # still said, once a session
    assert len(spawned) == 1
    other = argv + ["--index", str(tmp_path / "other.sqlite")]  # another command: its own daemon
    _prompt_hook(repo, monkeypatch, capsys, "r3", *other)
    assert len(spawned) == 2
    if mistake == "store":
        write_note(folder, "deploy.md", "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\nmake ship\n")
        assert "make ship" in _prompt_hook(repo, monkeypatch, capsys, "r4", *argv)
        assert len(spawned) == 3  # the folders changed: a daemon again
        key = hookclient.daemon_key(hookclient.project_root(str(repo)), [str(folder)], None, None)
        assert not os.path.exists(hookclient.refused_path(key))  # the daemon that served forgot the refusal


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets only")
def test_a_broken_settings_file_spawns_no_daemon_per_prompt_until_it_is_edited(repo, sealed_env, tmp_path,
                                                                                monkeypatch, capsys):
    """A settings file that does not parse makes the daemon exit at once; each prompt started
    another. Its refusal is remembered with that file as it is: edited (fixed), a daemon again."""
    import subprocess as sp

    spawned, real_popen = [], sp.Popen

    def spawn(cmd, **kwargs):
        spawned.append(cmd)
        proc = real_popen([*cmd, "--idle-minutes", "0"], stdin=sp.DEVNULL, stdout=sp.DEVNULL, stderr=sp.DEVNULL,
                          cwd=kwargs.get("cwd"))
        proc.wait(timeout=120)
        return proc  # ended: no daemon left starting
    monkeypatch.setattr(sp, "Popen", spawn)
    settings = tmp_path / "settings.toml"
    settings.write_text("[retrieve\nk = 3\n", encoding="utf-8")
    monkeypatch.setenv("MEMLANE_CONFIG", str(settings))
    write_note(tmp_path / "notes", "deploy.md", "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\n"
               "make ship\n")
    argv = ["--store", str(tmp_path / "notes")]
    for session in ("c1", "c1", "c2"):
        _prompt_hook(repo, monkeypatch, capsys, session, *argv)
    assert len(spawned) == 1
    settings.write_text("[retrieve]\nk = 3\n", encoding="utf-8")  # fixed
    assert "make ship" in _prompt_hook(repo, monkeypatch, capsys, "c3", *argv)
    assert len(spawned) == 2
