"""G3: ``private: true`` notes are the user's own — the local CLI shows them, no hook layer
hands them to an agent — and files matching ``privacy.exclude`` are never read at all.

Each test tries to reach the protected note through every way the engine has of bringing a
note in: the prompt's own match, a link from a public note (spreading), a constellation, a
``paths:`` trigger, deep search, session start and divergent recall."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import write_note
from memlane import Memory
from memlane.config import ConfigError, load_config

SECRET = "the staging root password rotates on fridays"


@pytest.fixture
def private_store(tmp_path):
    store = tmp_path / "store"
    # the private note is the best match for the prompt, links to and from public notes (a
    # constellation of three), declares a paths: trigger, and is of type user (layer 1)
    write_note(store, "user_staging_access.md", f"""---
name: user_staging_access
description: How the user reaches the staging database and when its password rotates
type: user
private: true
paths: ["deploy/staging/*"]
---
{SECRET}; see [[feedback_staging_db]] and [[project_staging]].
""")
    write_note(store, "feedback_staging_db.md", """---
name: feedback_staging_db
description: Reach the staging database through the bastion, never directly
type: feedback
---
Use the bastion for the staging database. See [[user_staging_access]] and [[project_staging]].
""")
    write_note(store, "project_staging.md", """---
name: project_staging
description: The staging database is rebuilt every night from a masked dump
type: project
---
Rebuilt nightly. See [[user_staging_access]] and [[feedback_staging_db]].
""")
    return store


def hook(store, index, event, prompt="how do I reach the staging database password?", *extra, cwd=None):
    payload = {"session_id": "p1", "transcript_path": "/none", "cwd": str(cwd or store), "source": "startup",
               "hook_event_name": "UserPromptSubmit" if event == "user-prompt-submit" else "SessionStart",
               "prompt": prompt}
    cmd = [sys.executable, "-m", "memlane.adapters.cli", "hook", event, "--store", str(store),
           "--embedder", "none", "--index", str(index), *extra]
    proc = subprocess.run(cmd, input=json.dumps(payload), capture_output=True, text=True, timeout=120,
                          env=os.environ.copy())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_local_cli_shows_a_private_note_marked_private(private_store, tmp_path):
    with Memory([private_store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        results = mem.recall("staging database password rotation", k=3)
        assert results[0]["name"] == "user_staging_access" and results[0]["private"] is True
        assert "private" not in next(r for r in results if r["name"] == "feedback_staging_db")
        assert SECRET in mem.show("user_staging_access")[0]["body"]


def test_recall_and_show_mark_a_private_note_private_in_their_text_too(private_store, tmp_path):
    """docs/agents.md: ``memlane recall`` and ``show`` print a private note "(marked `private`)" —
    in the text a person reads, not only in ``--json``."""
    base = [sys.executable, "-m", "memlane.adapters.cli"]
    where = ["--store", str(private_store), "--embedder", "none", "--index", str(tmp_path / "i.sqlite")]

    def run(*args):
        proc = subprocess.run([*base, *args, *where], capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    out = run("recall", "--k", "3", "staging database password rotation")
    [line] = [line for line in out.splitlines() if line.startswith("1. ")]
    assert "(user note, " in line and ", private)" in line
    public = [line for line in out.splitlines() if line.startswith(("2. ", "3. "))]
    assert public and not any("private" in line for line in public)
    for depth in ("ids", "index"):
        lines = run("recall", "--k", "3", "--depth", depth, "staging database password rotation").splitlines()
        assert [("(private)" in line) for line in lines if line.strip()] == [True, False, False]
    assert "private)" in run("show", "user_staging_access").splitlines()[0]
    assert "private" not in run("show", "feedback_staging_db").splitlines()[0]


@pytest.mark.parametrize("prompt", [
    "how do I reach the staging database password?",  # the private note is the best match
    "what is the bastion rule for the staging database?",  # ... reached by links, constellation
    "edit deploy/staging/run.sh",  # ... its paths: trigger
])
def test_no_hook_layer_injects_a_private_note(private_store, tmp_path, prompt):
    index = tmp_path / "i.sqlite"
    out = hook(private_store, index, "user-prompt-submit", prompt)
    # (public notes may name it in their own [[links]]; its text and file never appear)
    assert out and SECRET not in out and "user_staging_access.md" not in out
    report = json.loads(hook(private_store, index, "user-prompt-submit", prompt, "--explain").split("\n\n", 1)[0])
    assert "user_staging_access.md" not in json.dumps(report)
    assert "user_staging_access" not in [name for layer in report["layers"].values() for name in layer["recalled"]]


def test_deep_search_and_session_start_skip_it_too(private_store, tmp_path):
    (tmp_path / "config.toml").write_text('[inject]\ndeep = "always"\n')
    os.environ["MEMLANE_CONFIG"] = str(tmp_path / "config.toml")
    try:
        index = tmp_path / "i.sqlite"
        out = hook(private_store, index, "user-prompt-submit")
        assert "feedback_staging_db.md" in out and SECRET not in out
        out = hook(private_store, index, "session-start")
        assert "project_staging.md" in out and SECRET not in out and "user_staging_access.md" not in out
    finally:
        del os.environ["MEMLANE_CONFIG"]


def test_agent_facing_recall_never_returns_it_whatever_the_mode(private_store, tmp_path):
    with Memory([private_store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        for kwargs in ({}, {"include_archived": True}, {"divergent": True}, {"k": 1}):
            names = [r["name"] for r in mem.recall("staging database password bastion", include_private=False,
                                                    **kwargs)]
            assert names and "user_staging_access" not in names, kwargs


def test_excluded_files_are_never_read(tmp_path):
    store = tmp_path / "store"
    write_note(store, "feedback_public.md", "---\nname: feedback_public\ndescription: Deploys go through CI\n"
               "type: feedback\n---\nAll deploys go through CI.\n")
    write_note(store, "personal/diary.md", "---\nname: diary\ndescription: deploy diary\n---\nDeploy diary: "
               f"{SECRET}.\n")
    write_note(store, "feedback_keys.secret.md", "---\nname: feedback_keys\ndescription: deploy keys\n---\n"
               f"Deploy keys: {SECRET}.\n")
    config_file = tmp_path / "config.toml"
    config_file.write_text('[privacy]\nexclude = ["personal/*", "*.secret.md"]\n')
    config = load_config(files=[config_file])
    index = tmp_path / "i.sqlite"
    with Memory([store], embedder="none", index_path=index, config=config) as mem:
        report = mem.refresh()
        assert report["notes"] == 1 and report["excluded"] == 2 and report["skipped"] == []
        assert [r["name"] for r in mem.recall("deploy diary keys password", k=5)] == ["feedback_public"]
        assert mem.show("diary") == [] and mem.show("feedback_keys") == []
        assert mem.stats()["excluded"] == 2
    # nothing of the excluded files reached the index file on disk
    assert SECRET.encode() not in index.read_bytes()
    # narrowing the exclusion later brings the file in (the settings are part of the file stamp)
    config.privacy.exclude = ["*.secret.md"]
    with Memory([store], embedder="none", index_path=index, config=config) as mem:
        assert "diary" in [r["name"] for r in mem.recall("deploy diary", k=5)]


def test_a_bad_exclude_setting_is_a_clear_error(tmp_path):
    config_file = tmp_path / "config.toml"
    config_file.write_text('[privacy]\nexclude = "personal/*"\n')
    with pytest.raises(ConfigError, match="privacy.exclude must be an array of strings"):
        load_config(files=[config_file])


def test_exclude_pattern_forms(tmp_path):
    from pathlib import Path

    from memlane.guards.privacy import excluded_by

    root = Path("/m")
    assert excluded_by(["**/diary.md"], root / "diary.md", "diary.md") == "**/diary.md"
    assert excluded_by(["**/diary.md"], root / "a/b/diary.md", "a/b/diary.md") == "**/diary.md"
    assert excluded_by(["personal/*"], root / "personal/x/y.md", "personal/x/y.md") == "personal/*"
    assert excluded_by(["/m/secret/*"], root / "secret/k.md", "secret/k.md") == "/m/secret/*"
    assert excluded_by(["*.secret.md", " "], root / "keys.md", "keys.md") is None


@pytest.mark.parametrize("flag", ["private: true", "Private: true", "PRIVATE: yes",
                                  "metadata:\n  type: user\n  private: true", "metadata:\n  Private: 'on'",
                                  # failing closed: a value neither true nor false, a line YAML cannot read
                                  "private: y", "private: maybe", "\tprivate: true", "private: true\nname: [broken"])
def test_every_spelling_of_the_private_flag_is_private(tmp_path, flag):
    store = tmp_path / "store"
    write_note(store, "user_keys.md", f"---\nname: user_keys\ndescription: where the deploy keys live\n"
               f"type: user\n{flag}\n---\n{SECRET}\n")
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        assert mem.recall("where do the deploy keys live", include_private=False) == []
        assert mem.recall("where do the deploy keys live")[0]["private"] is True


@pytest.mark.parametrize("flag", ["private: false", "private: no", "private: 0", "private:", ""])
def test_a_note_said_public_or_unsaid_is_recalled(tmp_path, flag):
    store = tmp_path / "store"
    write_note(store, "deploy_keys.md", f"---\nname: deploy_keys\ndescription: where the deploy keys live\n"
               f"type: project\n{flag}\n---\nIn the vault, under deploy/.\n")
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        assert [r["name"] for r in mem.recall("where do the deploy keys live", include_private=False)] == ["deploy_keys"]


def test_an_index_built_by_an_older_reader_is_read_again(tmp_path, monkeypatch):
    import memlane.index.refresh
    import memlane.index.unit
    import memlane.store.note as note_module

    store = tmp_path / "store"
    write_note(store, "user_keys.md", "---\nname: user_keys\ndescription: where the deploy keys live\ntype: user\n"
               f"metadata:\n  private: true\n---\n{SECRET}\n")
    index = tmp_path / "i.sqlite"
    with monkeypatch.context() as older:  # a memlane that read only a top-level `private:`
        older.setattr(note_module, "_flag", lambda fields, meta, name: fields.get(name))
        older.setattr(note_module, "_is_private", lambda value, head, problems: value is True)
        for module in (memlane.index.unit, memlane.index.refresh):
            older.setattr(module, "PARSER_VERSION", "1")
        with Memory([store], embedder="none", index_path=index) as mem:
            assert mem.recall("where do the deploy keys live", include_private=False)  # the old leak
    with Memory([store], embedder="none", index_path=index) as mem:  # the same files, today's reader
        assert mem.recall("where do the deploy keys live", include_private=False) == []
