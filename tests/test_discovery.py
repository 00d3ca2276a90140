"""Finding Claude Code's memory folder for a repository (its encoded project path)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_note
from memlane import Memory
from memlane.store import claude_memory_dir, discover_claude_memory, encode_project_path, git_root


@pytest.mark.parametrize("path, encoded", [
    ("/Users/alice/my_app.v2", "-Users-alice-my-app-v2"),
    ("/home/bob/src/프로젝트", "-home-bob-src-----"),  # each non-ASCII letter becomes one "-"
    ("/home/zoë/app", "-home-zo--app"),
    ("/srv/a  b", "-srv-a--b"),  # runs are not collapsed
    ("/work/.claude/x", "-work--claude-x"),
    ("/a/b-c_d.e", "-a-b-c-d-e"),
    ("C:\\Users\\me\\repo", "C--Users-me-repo"),
    ("/Repo123/ABC", "-Repo123-ABC"),
])
def test_encode_project_path(path, encoded):
    assert encode_project_path(path) == encoded


def test_encode_project_path_accepts_a_path():
    assert encode_project_path(Path("/Users/alice/my_app.v2")) == "-Users-alice-my-app-v2"


def make_repo(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "src" / "pkg").mkdir(parents=True)
    return root


def test_git_root_with_a_git_dir(tmp_path):
    repo = make_repo(tmp_path / "repo")
    assert git_root(repo) == repo
    assert git_root(repo / "src" / "pkg") == repo


def test_git_root_outside_a_repository(tmp_path):
    assert git_root(tmp_path) is None


@pytest.mark.parametrize("relative", [False, True], ids=["absolute-gitdir", "relative-gitdir"])
def test_git_root_of_a_worktree_is_the_main_tree(tmp_path, relative):
    main = make_repo(tmp_path / "main")
    (main / ".git" / "worktrees" / "feature").mkdir(parents=True)
    worktree = tmp_path / "wt" / "feature"
    (worktree / "sub").mkdir(parents=True)
    gitdir = main / ".git" / "worktrees" / "feature"
    target = Path("../../main/.git/worktrees/feature") if relative else gitdir
    (worktree / ".git").write_text(f"gitdir: {target}\n")
    (gitdir / "gitdir").write_text(f"{worktree / '.git'}\n")  # the back pointer git writes
    assert git_root(worktree / "sub") == main


def test_git_root_of_a_submodule_is_the_submodule(tmp_path):
    main = make_repo(tmp_path / "main")
    (main / ".git" / "modules" / "lib").mkdir(parents=True)
    sub = main / "lib"
    sub.mkdir()
    (sub / ".git").write_text("gitdir: ../.git/modules/lib\n")
    assert git_root(sub) == sub


def test_discover_claude_memory_with_claude_config_dir(tmp_path, monkeypatch):
    config_dir = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    repo = make_repo(tmp_path / "my_app.v2")
    assert discover_claude_memory(repo) is None  # not created yet
    memory = config_dir / "projects" / encode_project_path(repo) / "memory"
    memory.mkdir(parents=True)
    assert claude_memory_dir(repo) == memory
    assert discover_claude_memory(repo / "src" / "pkg") == memory
    assert discover_claude_memory(tmp_path) is None  # not in a repository


def test_worktrees_share_the_main_trees_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    main = make_repo(tmp_path / "main")
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    (main / ".git" / "worktrees" / "wt" / "gitdir").write_text(f"{worktree / '.git'}\n")
    memory = claude_memory_dir(main)
    memory.mkdir(parents=True)
    assert discover_claude_memory(worktree) == memory


def test_memory_reads_user_store_and_claude_code_folder_without_writing(tmp_path, sealed_env):
    """No explicit stores: the user store and the discovered Claude Code folder are used, the
    project (Claude Code) note wins a name conflict, and the Claude Code folder is not written."""
    repo = make_repo(tmp_path / "repo")
    cc = claude_memory_dir(repo)
    write_note(cc, "feedback_tabs.md", "---\nname: indent_style\ndescription: this repo indents with tabs\n"
                                       "type: feedback\n---\nTabs, width 8.\n")
    user_store = sealed_env / "data" / "memlane" / "user"
    write_note(user_store, "indent_style.md", "---\nname: indent_style\ndescription: indent with four spaces\n"
                                              "type: user\n---\nFour spaces.\n")
    write_note(user_store, "user_shell.md", "---\nname: user_shell\ndescription: the user's shell is fish\n"
                                            "type: user\n---\nfish shell.\n")
    before = sorted(p.name for p in cc.iterdir())
    with Memory(embedder="none", cwd=repo / "src") as mem:
        assert {(s.scope, s.read_only, s.label) for s in mem.specs} == {
            ("user", False, "user store"), ("project", False, "claude-code")}  # written only by add, never by recall
        assert [(h["name"], h["scope"]) for h in mem.recall("indent style")] == [("indent_style", "project")]
        assert [h["name"] for h in mem.recall("fish shell")] == ["user_shell"]
        assert Path(mem.index_path).parent != cc
    assert sorted(p.name for p in cc.iterdir()) == before


def test_claude_code_discovery_can_be_turned_off(tmp_path, sealed_env):
    repo = make_repo(tmp_path / "repo")
    claude_memory_dir(repo).mkdir(parents=True)
    (sealed_env / "config" / "memlane").mkdir(parents=True)
    (sealed_env / "config" / "memlane" / "config.toml").write_text("[stores]\nclaude_code = false\n")
    with Memory(embedder="none", cwd=repo) as mem:
        assert [s.label for s in mem.specs] == []


def test_the_users_own_setting_moves_the_folder_and_a_repositorys_does_not(tmp_path, monkeypatch):
    """``autoMemoryDirectory`` in the user's settings is where Claude Code keeps the notes; the same
    key in the repository's committed settings is not followed (a cloned repository must not point
    memlane at another of the user's folders); ``$CLAUDE_CODE_PROJECT_DIR_NAME`` renames the project."""
    home, config = tmp_path / "home", tmp_path / "home" / ".claude"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.delenv("CLAUDE_CODE_PROJECT_DIR_NAME", raising=False)
    repo = make_repo(tmp_path / "repo")
    default = config / "projects" / encode_project_path(repo) / "memory"
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text('{"autoMemoryDirectory": "%s"}' % (home / "private"))
    assert claude_memory_dir(repo) == default  # the repository's setting is not followed
    config.mkdir(parents=True)
    for value, expected in (("~/notes/memory", home / "notes" / "memory"), (str(tmp_path / "abs"), tmp_path / "abs"),
                            ("relative/dir", default), (7, default)):
        (config / "settings.json").write_text(json.dumps({"autoMemoryDirectory": value}))
        assert claude_memory_dir(repo) == expected, value
    (config / "settings.json").write_text("{not json")
    assert claude_memory_dir(repo) == default
    (config / "settings.json").write_text("{}")
    monkeypatch.setenv("CLAUDE_CODE_PROJECT_DIR_NAME", "shared-name")
    assert claude_memory_dir(repo) == config / "projects" / "shared-name" / "memory"
    monkeypatch.setenv("CLAUDE_CODE_PROJECT_DIR_NAME", "../../escape")
    assert claude_memory_dir(repo) == default
    moved = home / "notes" / "memory"
    write_note(moved, "feedback_deploys.md", "---\nname: deploys\ndescription: when deploying on fridays\n"
                                             "type: feedback\n---\nNo deploys after 3pm on Fridays.\n")
    (config / "settings.json").write_text(json.dumps({"autoMemoryDirectory": "~/notes/memory"}))
    assert discover_claude_memory(repo) == moved


@pytest.mark.parametrize("name", ["C:elsewhere", "D:", "a\\b", "..", "-x/../../y"])
def test_a_project_folder_name_that_is_not_one_plain_name_is_not_followed(tmp_path, monkeypatch, name):
    """``$CLAUDE_CODE_PROJECT_DIR_NAME`` names one folder under ``projects/``: a drive (``C:elsewhere``,
    on Windows a path on that drive, not under ``projects/``), a separator of either system or a
    dot name leads elsewhere, and the repository's own encoded name is used instead."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "home" / ".claude"))
    monkeypatch.setenv("CLAUDE_CODE_PROJECT_DIR_NAME", name)
    repo = make_repo(tmp_path / "repo")
    assert claude_memory_dir(repo) == tmp_path / "home" / ".claude" / "projects" / encode_project_path(repo) / "memory"


def test_a_git_file_naming_another_repositorys_worktree_does_not_make_it_that_repository(tmp_path, monkeypatch):
    """A downloaded folder's ``.git`` file (``gitdir: ../private/.git/worktrees/x``) must not make
    memlane take it for a worktree of the user's other repository, and so read that repository's
    notes into the agent's context (or write there): a worktree counts only when its main repository
    registered it, the back pointer ``<gitdir>/gitdir`` naming this ``.git`` file, as git writes it."""
    config_dir = tmp_path / "claude-config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    private = make_repo(tmp_path / "private")
    memory = config_dir / "projects" / encode_project_path(private) / "memory"
    write_note(memory, "project_secret.md", """
        ---
        name: project_secret
        description: The staging database password rotation schedule
        type: project
        ---
        Rotate the staging database credentials every Friday.
        """)
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    (hostile / ".git").write_text("gitdir: ../private/.git/worktrees/x\n")  # not even there
    assert git_root(hostile) == hostile
    (private / ".git" / "worktrees" / "x").mkdir(parents=True)  # a real worktree of the user's ...
    (private / ".git" / "worktrees" / "x" / "gitdir").write_text(f"{tmp_path / 'x' / '.git'}\n")  # ... elsewhere
    assert git_root(hostile) == hostile
    assert discover_claude_memory(hostile) is None
    assert Memory(cwd=hostile, embedder="none").recall("staging database password") == []


def _session_log(config_dir: Path, folder: str, cwd: str, name: str = "s1") -> Path:
    """A Claude Code session log in ``projects/<folder>`` whose lines record ``cwd``."""
    log = config_dir / "projects" / folder / f"{name}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "summary", "summary": "x"}, {"type": "user", "cwd": cwd, "sessionId": name}]
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return log


def test_repositories_that_share_a_memory_folder_are_found_from_session_logs(tmp_path, monkeypatch):
    """~/src/acme-api and ~/src/acme_api get one Claude Code memory folder: each one's notes reach the other."""
    from memlane.store import sharing_repositories

    config_dir = tmp_path / "cc"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    monkeypatch.delenv("CLAUDE_CODE_PROJECT_DIR_NAME", raising=False)
    dash, under = make_repo(tmp_path / "src" / "acme-api"), make_repo(tmp_path / "src" / "acme_api")
    folder = encode_project_path(dash)
    assert claude_memory_dir(dash) == claude_memory_dir(under)
    _session_log(config_dir, folder, str(dash), "own")
    assert sharing_repositories(dash) == []  # only its own sessions
    (under / "pkg").mkdir()
    _session_log(config_dir, f"{folder}-pkg", str(under / "pkg"), "sub")  # a session started in a subfolder
    assert sharing_repositories(dash) == [str(under)]
    assert sharing_repositories(under) == [str(dash)]
    _session_log(config_dir, f"{folder}-other", str(tmp_path / "src" / "acme-api-other"), "gone")  # not its folder
    (config_dir / "projects" / folder / "bad.jsonl").write_bytes(b"\xff\x00 not json\n")
    _session_log(config_dir, folder, "relative/path", "rel")
    _session_log(config_dir, folder, str(dash).replace("-", "\0"), "nul")  # its name, but no path
    assert sharing_repositories(dash) == [str(under)]
    monkeypatch.setenv("CLAUDE_CODE_PROJECT_DIR_NAME", "acme-dash")  # the user named the folder
    assert sharing_repositories(dash) == []


def test_a_repository_gone_since_is_not_named(tmp_path, monkeypatch):
    """acme_api renamed to acme-api: its old logs name a path that is gone, and no session of it
    will read the folder again."""
    from memlane.store import sharing_repositories

    config_dir = tmp_path / "cc"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    monkeypatch.delenv("CLAUDE_CODE_PROJECT_DIR_NAME", raising=False)
    dash = make_repo(tmp_path / "acme-api")
    folder = encode_project_path(dash)
    _session_log(config_dir, folder, str(tmp_path / "acme_api"), "a")
    _session_log(config_dir, f"{folder}-x", str(tmp_path / "acme_api" / "x"), "b")
    assert sharing_repositories(dash) == []
    (tmp_path / "acme_api").mkdir()  # a folder outside any repository, there again: its memory is this one
    assert sharing_repositories(dash) == [str(tmp_path / "acme_api")]
    assert sharing_repositories(tmp_path / "nowhere") == []  # no project folders at all


def test_a_session_log_swapped_for_a_fifo_is_passed_over_without_waiting(tmp_path):
    """The scan saw a regular log; by the time it is read it may be a FIFO (the window between the
    two): its open must not wait for a writer that never comes (it held ``memlane doctor`` for good)."""
    import os
    import threading

    from memlane.store.discovery import _logged_cwd

    fifo = tmp_path / "s1.jsonl"
    os.mkfifo(fifo)
    found: list[str | None] = []
    reader = threading.Thread(target=lambda: found.append(_logged_cwd(str(fifo))), daemon=True)
    reader.start()
    reader.join(timeout=30)  # liveness: done at once, or stuck at the open for good
    stuck = reader.is_alive()
    if stuck:  # a writer's end opened and closed lets the stuck open return, so the test ends
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
    assert not stuck, "reading a FIFO named like a session log waited for a writer"
    assert found == [None]


def test_a_session_log_swapped_for_a_fifo_a_writer_holds_or_a_link_is_not_read(tmp_path):
    """A FIFO some process writes to hands over what it is sent, and a link may lead anywhere: neither
    is a session log, whatever the lines it yields say."""
    import os

    from memlane.store.discovery import _logged_cwd

    line = json.dumps({"type": "user", "cwd": str(tmp_path / "elsewhere")}).encode() + b"\n"
    log = tmp_path / "real.jsonl"
    log.write_bytes(line)
    assert _logged_cwd(str(log)) == str(tmp_path / "elsewhere")  # a regular log is read
    (tmp_path / "link.jsonl").symlink_to(log)
    assert _logged_cwd(str(tmp_path / "link.jsonl")) is None
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer holds it, with a log's line waiting in it
    try:
        os.write(held, line)
        assert _logged_cwd(str(fifo)) is None
    finally:
        os.close(held)


def test_doctor_names_a_memory_folder_that_serves_two_repositories(tmp_path, sealed_env, monkeypatch, capsys):
    from memlane.adapters.cli import main as cli
    from memlane.store import sharing_repositories

    config_dir = sealed_env / "claude"
    dash, under = make_repo(tmp_path / "acme-api"), make_repo(tmp_path / "acme_api")
    monkeypatch.chdir(dash)
    claude_memory_dir(dash).mkdir(parents=True)
    assert cli(["doctor"]) == 0
    capsys.readouterr()
    _session_log(config_dir, encode_project_path(dash), str(under))
    assert sharing_repositories(dash) == [str(under)]
    assert cli(["doctor"]) == 1
    out = capsys.readouterr().out
    assert f"also uses for {under}" in out and "CLAUDE_CODE_PROJECT_DIR_NAME" in out


def test_a_session_log_whose_cwd_is_no_path_is_passed_over(tmp_path, monkeypatch):
    """JSON can write a lone surrogate, which no file system name holds: os.path.realpath raised
    UnicodeEncodeError on it, and memlane doctor stopped with a traceback."""
    from memlane.store import sharing_repositories

    config_dir = tmp_path / "cc"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    monkeypatch.delenv("CLAUDE_CODE_PROJECT_DIR_NAME", raising=False)
    dash = make_repo(tmp_path / "acme-api")
    folder = encode_project_path(dash)
    _session_log(config_dir, folder, str(dash).replace("acme-api", "acme\ud800api"), "surrogate")
    assert sharing_repositories(dash) == []
    _session_log(config_dir, folder, str(make_repo(tmp_path / "acme_api")), "other")
    assert sharing_repositories(dash) == [str(tmp_path / "acme_api")]


def test_doctor_shows_a_sharing_repositorys_path_on_one_line(tmp_path, sealed_env, monkeypatch, capsys):
    """A path that encodes to this folder's name may hold a control character: shown escaped."""
    from memlane.adapters.cli import main as cli

    dash, odd = make_repo(tmp_path / "acme-api"), make_repo(tmp_path / "acme\x1bapi")
    monkeypatch.chdir(dash)
    claude_memory_dir(dash).mkdir(parents=True)
    _session_log(sealed_env / "claude", encode_project_path(dash), str(odd))
    assert cli(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "acme\\x1bapi" in out and "\x1b" not in out
