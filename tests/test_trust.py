"""Trust boundaries of a cloned repository: its ``.memlane.toml`` may narrow, never widen, and
memlane never moves, renames or overwrites a file it did not create.

Each test plays the attacker: a repository committed with a hostile config, opened by a user
whose home holds files and settings worth protecting."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from conftest import write_note
from memlane import Memory
from memlane.config import load_config
from memlane.errors import ConfigError
from memlane.index.connection import KEEP_CORRUPT, owned

BASHRC = "# my shell settings\nexport PATH=$HOME/bin:$PATH\n"


def repo_with(tmp_path: Path, config: str) -> Path:
    repo = tmp_path / "cloned"
    (repo / ".git").mkdir(parents=True)
    (repo / ".memlane.toml").write_text(config, encoding="utf-8")
    return repo


def user_config(home: Path, text: str) -> Path:
    path = home / "config" / "memlane" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run_hook_in(repo: Path, event: str, prompt: str = "", *, stores=None) -> str:
    from memlane.adapters.hook import run_hook

    out = io.StringIO()
    payload = {"session_id": "t1", "cwd": str(repo), "hook_event_name": event, "source": "startup",
               "prompt": prompt, "transcript_path": str(repo / "none.jsonl")}
    run_hook("session-start" if event == "SessionStart" else "user-prompt-submit", stores=stores, embedder="none",
             stdin=io.StringIO(json.dumps(payload)), stdout=out)
    return out.getvalue()


# -- the index path -------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["../../.bashrc", "~/.bashrc", "/etc/../{home}/.bashrc"])
def test_a_repository_cannot_name_the_index(tmp_path, sealed_env, path):
    bashrc = sealed_env / ".bashrc"
    bashrc.write_text(BASHRC)
    repo = repo_with(tmp_path, f'[index]\npath = "{path.format(home=sealed_env)}"\n')
    store = repo / "notes"
    write_note(store, "project_a.md", "---\nname: project_a\ndescription: a project fact\ntype: project\n---\nfact\n")
    config = load_config(repo)
    assert config.index.path == ""
    assert any(r["key"] == "index.path" for r in config.refused)
    run_hook_in(repo, "SessionStart", stores=[str(store)])
    assert bashrc.read_text() == BASHRC
    assert not list(sealed_env.glob(".bashrc*corrupt*")) and not (sealed_env / ".bashrc.memlane").exists()


def test_memlane_never_writes_or_moves_a_file_it_did_not_create(tmp_path, store, caplog):
    precious = tmp_path / "places.sqlite"
    with sqlite3.connect(precious) as conn:  # another program's database
        conn.execute("CREATE TABLE bookmarks (url TEXT)")
        conn.execute("INSERT INTO bookmarks VALUES ('https://example.org')")
    before = precious.read_bytes()
    text_file = tmp_path / "notes.txt"
    text_file.write_text(BASHRC)
    for target in (precious, text_file):
        assert not owned(target)
        with Memory([store], embedder="none", index_path=target) as mem:
            names = [r["name"] for r in mem.recall("postgres upgrade")]
        assert names and names[0] == "project_postgres_upgrade"  # answered from an in-memory index
        assert not list(tmp_path.glob(f"{target.name}.corrupt-*"))
    assert precious.read_bytes() == before and text_file.read_text() == BASHRC
    assert "is not a memlane index" in caplog.text


def test_an_index_memlane_created_outside_the_cache_still_heals(tmp_path, store):
    path = tmp_path / "elsewhere" / "i.sqlite"
    with Memory([store], embedder="none", index_path=path) as mem:
        mem.refresh()
    assert (tmp_path / "elsewhere" / "i.sqlite.memlane").is_file()  # memlane's marker: it made this file
    path.write_bytes(b"garbage " * 5000)
    with Memory([store], embedder="none", index_path=path) as mem:
        assert mem.refresh()["healed"]


def test_corrupt_copies_are_capped(tmp_path, store):
    path = tmp_path / "i.sqlite"
    for _ in range(KEEP_CORRUPT + 3):
        with Memory([store], embedder="none", index_path=path) as mem:
            mem.refresh()
        path.write_bytes(b"garbage " * 5000)
    with Memory([store], embedder="none", index_path=path) as mem:
        mem.refresh()
    copies = [p for p in tmp_path.glob("i.sqlite.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(copies) == KEEP_CORRUPT


# -- privacy cannot be loosened -------------------------------------------------------------------
def test_a_repository_cannot_switch_off_the_users_excludes(tmp_path, sealed_env):
    user_config(sealed_env, '[privacy]\nexclude = ["personal/*"]\n')
    repo = repo_with(tmp_path, '[privacy]\nexclude = []\n')
    store = repo / "notes"
    write_note(store, "personal/feedback_diary.md", "---\nname: feedback_diary\ndescription: when the deploy of the "
               "billing service fails\ntype: feedback\n---\nmy diary about billing deploys\n")
    write_note(store, "feedback_billing.md", "---\nname: feedback_billing\ndescription: when deploying the billing "
               "service\ntype: feedback\n---\nDeploy billing behind the flag.\n")
    config = load_config(repo)
    assert config.privacy.exclude == ["personal/*"]
    text = run_hook_in(repo, "UserPromptSubmit", "the billing service deploy fails", stores=[str(store)])
    assert "feedback_billing" in text and "diary" not in text


def test_a_repository_may_add_excludes(tmp_path, sealed_env):
    user_config(sealed_env, '[privacy]\nexclude = ["personal/*"]\n')
    repo = repo_with(tmp_path, '[privacy]\nexclude = ["drafts/*"]\n')
    assert load_config(repo).privacy.exclude == ["personal/*", "drafts/*"]


@pytest.mark.parametrize("entry", ["~/.claude/projects", "/", "../other-project"])
def test_a_repository_cannot_mount_other_projects_transcripts(tmp_path, sealed_env, entry):
    repo = repo_with(tmp_path, f'[domains]\ntranscripts = ["{entry}", "auto"]\n')
    config = load_config(repo)
    assert config.domains.transcripts == ["auto"]
    assert any(r["key"] == "domains.transcripts" for r in config.refused)


def test_a_repository_mounts_only_folders_inside_itself(tmp_path, sealed_env):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "cloned").mkdir()
    (tmp_path / "cloned" / "link-out").symlink_to(outside)  # a symlink out of the repository
    repo = repo_with(tmp_path, f"""
[[stores.mounts]]
path = "team-notes"
[[stores.mounts]]
path = "{outside}"
[[stores.mounts]]
path = "link-out"
[[stores.mounts]]
path = "more"
scope = "user"
[domains]
docs = ["docs", "../outside", "~"]
code = ["auto"]
""")
    config = load_config(repo)
    assert [m.path for m in config.stores.mounts] == [str((repo / "team-notes").resolve())]
    assert config.domains.docs == [str((repo / "docs").resolve())] and config.domains.code == ["auto"]
    refused = {r["key"] for r in config.refused}
    assert {"stores.mounts", "domains.docs"} <= refused


def test_a_repository_may_lower_budgets_but_not_raise_them(tmp_path, sealed_env):
    repo = repo_with(tmp_path, "[inject]\nroom_tokens = 500\nmax_chars = 50000\n[retrieve]\nk = 3\nmin_score = 0.4\n")
    config = load_config(repo)
    assert config.inject.room_tokens == 500 and config.inject.max_chars == 10_000
    assert (config.retrieve.k, config.retrieve.min_score) == (3, 0.4)  # ranking weights are free
    assert [r["key"] for r in config.refused] == ["inject.max_chars"]


def test_a_repository_cannot_widen_how_many_earlier_turns_a_prompt_reads(tmp_path, sealed_env):
    # each earlier turn is read from the transcript and searched with the prompt: a repository's
    # config must not make every short prompt carry a long stretch of the session
    config = load_config(repo_with(tmp_path, "[inject]\ncontext_turns = 100000\n"))
    assert config.inject.context_turns == 1
    assert [r["key"] for r in config.refused] == ["inject.context_turns"]
    assert load_config(repo_with(tmp_path / "b", "[inject]\ncontext_turns = 0\n")).inject.context_turns == 0


@pytest.mark.parametrize("text, key", [
    ('[stores]\nuser_store = "/tmp/evil"\n', "stores.user_store"),
    ("[stores]\nclaude_code = true\n", "stores.claude_code"),
    ('[judge]\ncommand = ["sh", "-c", "curl evil"]\n', "judge.command"),
    ('[judge]\nurl = "http://evil.example/v1"\n', "judge.url"),
    ("[team]\ndsn = \"postgresql://evil@host/db\"\n", "team.dsn"),
    ('[retrieve]\nmin_score = 7\n', "retrieve.min_score"),
    ("[retrieve\nk = ", "(the whole file)"),
])
def test_what_a_repository_may_not_set_is_refused_not_fatal(tmp_path, sealed_env, text, key):
    user_config(sealed_env, "[stores]\nclaude_code = false\n")
    repo = repo_with(tmp_path, text)
    config = load_config(repo)  # never raises for the repository's file
    assert key in {r["key"] for r in config.refused}
    assert config.stores.user_store == "" and config.stores.claude_code is False
    assert config.retrieve.min_score == 0.30


def test_a_repository_naming_an_embedder_not_installed_here_leaves_memory_on(tmp_path, sealed_env):
    """A team's plugin embedder that this clone has not installed (or a typo) is refused like any key
    that does not validate: the user's embedder and the rest of the file apply, memory stays on."""
    user_config(sealed_env, '[embed]\nmodel = "fake"\n')
    repo = repo_with(tmp_path, '[embed]\nmodel = "our-team-embedder"\n[retrieve]\nk = 3\n')
    config = load_config(repo)
    assert (config.embed.model, config.retrieve.k) == ("fake", 3)
    assert [r["key"] for r in config.refused] == ["embed.model"]
    store = repo / "notes"
    write_note(store, "project_a.md", "---\nname: project_a\ndescription: where penguins live\ntype: project\n---\n"
               "Penguins live in the southern hemisphere.\n")
    with Memory([str(store)], cwd=repo) as memory:
        assert [hit.name for hit in memory.recall("where do penguins live")] == ["project_a"]


def test_the_users_own_paths_expand_the_tilde(tmp_path, sealed_env):
    user_config(sealed_env, '[index]\npath = "~/idx/memlane.sqlite"\n[stores]\nuser_store = "~/mine"\n'
                '[[stores.mounts]]\npath = "~/team"\n')
    config = load_config(None)
    assert config.index.path == str(sealed_env / "idx" / "memlane.sqlite")
    assert config.user_store_path() == sealed_env / "mine"
    assert config.stores.mounts[0].path == str(sealed_env / "team")


def test_doctor_lists_what_the_repository_asked_for_and_what_was_refused(tmp_path, sealed_env):
    import subprocess
    import sys

    repo = repo_with(tmp_path, '[index]\npath = "../../.bashrc"\n[retrieve]\nk = 3\n')
    proc = subprocess.run([sys.executable, "-m", "memlane.adapters.cli", "doctor", "--embedder", "none"],
                          cwd=repo, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "this repository's config" in proc.stdout and "refused index.path" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "memlane.adapters.cli", "doctor", "--embedder", "none", "--json"],
                          cwd=repo, capture_output=True, text=True, timeout=120)
    assert [r["key"] for r in json.loads(proc.stdout)["repository_config"]["refused"]] == ["index.path"]


def test_a_huge_repository_config_is_refused_unread(tmp_path, sealed_env, monkeypatch):
    """A repository shipping a 1 GB .memlane.toml (stood in for by a smaller cap) is refused as a whole,
    not read and parsed in every hook; the user's settings apply."""
    import memlane.config as config_module

    monkeypatch.setattr(config_module, "CONFIG_MAX_BYTES", 1_000)
    user_config(sealed_env, "[retrieve]\nk = 4\n")
    repo = repo_with(tmp_path, "[retrieve]\nk = 3\n" + "# padding\n" * 200)
    config = load_config(repo)
    assert config.retrieve.k == 4
    assert [r["key"] for r in config.refused] == ["(the whole file)"]
    assert "larger than 1,000 bytes" in config.refused[0]["reason"]


def test_a_deeply_nested_repository_config_is_refused_not_memory_off(tmp_path, sealed_env):
    """TOML nested past Python's recursion limit (``a = [[[[…]]]]``, well under the size cap) is
    unreadable like a syntax error: refused as a whole, the user's settings apply, memory stays on;
    in the user's own file it is an error that names the file."""
    deep = "[retrieve]\nk = " + "[" * 100_000 + "]" * 100_000 + "\n"
    user_config(sealed_env, "[retrieve]\nk = 4\n")
    config = load_config(repo_with(tmp_path, deep))
    assert config.retrieve.k == 4
    assert [r["key"] for r in config.refused] == ["(the whole file)"]
    user_config(sealed_env, deep)
    with pytest.raises(ConfigError, match="config.toml"):
        load_config(None)


def test_a_repository_config_linked_out_of_the_repository_is_refused(tmp_path, sealed_env):
    """``.memlane.toml`` as a link to a file elsewhere on this machine is not the repository's
    own settings: refused as a whole, never read; one linked inside the repository is read."""
    user_config(sealed_env, "[retrieve]\nk = 4\n")
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text("[retrieve]\nk = 3\n", encoding="utf-8")
    repo = repo_with(tmp_path, "")
    (repo / ".memlane.toml").unlink()
    (repo / ".memlane.toml").symlink_to(elsewhere)
    config = load_config(repo)
    assert config.retrieve.k == 4 and "outside the repository" in config.refused[0]["reason"]
    (repo / "config").mkdir()
    (repo / "config" / "memlane.toml").write_text("[retrieve]\nk = 3\n", encoding="utf-8")
    (repo / ".memlane.toml").unlink()
    (repo / ".memlane.toml").symlink_to(repo / "config" / "memlane.toml")
    assert load_config(repo).retrieve.k == 3


@pytest.mark.parametrize("swap", ["before the open", "after the open"])
def test_a_repository_config_link_swapped_around_its_open_is_refused(tmp_path, sealed_env, monkeypatch, swap):
    """A repository's ``.memlane.toml`` linked to a file inside it, swapped for a link out of it
    just before the open (a check made before the open passed), or linked out at the open and
    swapped back just after it (a check made after the open would pass): the file read is judged,
    so neither reads the file outside."""
    import os

    from memlane import config as config_module

    user_config(sealed_env, "[retrieve]\nk = 4\n")
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text("[retrieve]\nk = 3\n", encoding="utf-8")
    repo = repo_with(tmp_path, "")
    inside = repo / "config.toml"
    inside.write_text("[retrieve]\nk = 5\n", encoding="utf-8")
    link = repo / ".memlane.toml"
    link.unlink()

    def point(target):
        (repo / "next").symlink_to(target)
        os.replace(repo / "next", link)

    point(inside if swap == "before the open" else elsewhere)
    real_open = os.open

    def racing_open(path, flags, *args):
        if str(path) != str(link):
            return real_open(path, flags, *args)
        if swap == "before the open":
            point(elsewhere)
            return real_open(path, flags, *args)
        fd = real_open(path, flags, *args)
        point(inside)
        return fd

    monkeypatch.setattr(config_module.os, "open", racing_open)
    config = load_config(repo)
    assert config.retrieve.k == 4 and "outside the repository" in config.refused[0]["reason"]


def test_a_repository_config_swapped_for_a_pipe_after_its_check_is_refused_not_waited_on(tmp_path, sealed_env,
                                                                                         monkeypatch):
    """Between ``is_file`` and the read the file can become a pipe (a link swapped): it is opened
    without waiting and refused once open. Opened as before, this test waits at ``open`` for a
    writer that never comes, as a hook would have, holding the agent's prompt."""
    import os

    user_config(sealed_env, "[retrieve]\nk = 4\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    target = repo / ".memlane.toml"
    os.mkfifo(target)
    is_file = Path.is_file
    monkeypatch.setattr(Path, "is_file", lambda self: self == target or is_file(self))  # the check saw a file
    config = load_config(repo)
    assert config.retrieve.k == 4
    assert config.refused == [{"key": "(the whole file)", "reason": "unreadable: not a regular file"}]


@pytest.mark.parametrize("kind", ["device", "folder", "dangling"])
def test_a_repository_config_that_is_not_a_regular_file_is_refused_and_said(tmp_path, sealed_env, kind):
    """A ``.memlane.toml`` linked to ``/dev/zero``, a folder of that name or a dangling link: not
    read, and listed as refused (``memlane doctor`` says so) rather than left out without a word."""
    import os

    user_config(sealed_env, "[retrieve]\nk = 4\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    target = repo / ".memlane.toml"
    if kind == "device":
        os.symlink("/dev/zero", target)
    elif kind == "folder":
        target.mkdir()
    else:
        os.symlink(repo / "gone.toml", target)
    config = load_config(repo)
    assert config.retrieve.k == 4
    assert config.refused == [{"key": "(the whole file)", "reason": "unreadable: not a regular file"}]
