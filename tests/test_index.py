"""The SQLite index (I1): incremental sync, WAL, many processes, self-healing, locks and
unwritable locations. The index is derived: whatever happens to it, recall still works."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import STORE_NOTES, write_note
from memlane import Config, Memory
from memlane.index import Index, Unit
from memlane.associate.build import GRAPH_VERSION
from memlane.index.schema import MIGRATIONS

N_STORE = len(STORE_NOTES)


def rows_indexed_at(index) -> dict[str, float]:
    return {row["name"]: row["indexed_at"] for row in index.units_by_id(index.all_ids()).values()}


# -- incremental sync --------------------------------------------------------------------
def test_incremental_sync(memory, store):
    first = memory.refresh()
    assert (first["added"], first["updated"], first["removed"], first["unchanged"]) == (N_STORE, 0, 0, 0)
    stamps = rows_indexed_at(memory.index)

    again = memory.refresh()
    assert (again["added"], again["updated"], again["removed"], again["unchanged"]) == (0, 0, 0, N_STORE)
    assert rows_indexed_at(memory.index) == stamps  # unchanged rows were not rewritten

    path = store / "user_role.md"
    path.write_text(path.read_text().replace("Keep answers short.", "Keep answers short; no emoji."))
    (store / "reference_linear_board.md").unlink()
    write_note(store, "project_new.md", "---\nname: project_new\ndescription: a brand-new note\n---\nnew\n")
    changed = memory.refresh()
    assert (changed["added"], changed["updated"], changed["removed"], changed["unchanged"]) == (1, 1, 1, N_STORE - 2)
    assert memory.show("reference_linear_board") == []
    assert memory.show("user_role")[0]["body"].endswith("no emoji.")
    assert memory.recall("emoji")[0]["name"] == "user_role"


def test_editing_one_note_parses_only_that_note(store, tmp_path, monkeypatch):
    import memlane.store.scan as scan

    calls = []
    real_parse = scan.parse_note
    monkeypatch.setattr(scan, "parse_note", lambda text, **kw: calls.append(kw["rel"]) or real_parse(text, **kw))
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        mem.refresh()
    assert len(calls) == N_STORE
    calls.clear()
    note = store / "user_role.md"
    note.write_text(note.read_text() + "\nOne more line.\n")
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:  # a new process, same index
        report = mem.refresh()
        assert mem.show("user_role")[0]["body"].endswith("One more line.")
        assert mem.show("release_checklist")[0]["title"] == "Release checklist"  # MEMORY.md title kept
    assert calls == ["user_role.md"] and report["updated"] == 1


def test_a_changed_memory_md_hook_updates_its_note(memory, store):
    memory.refresh()
    index_md = store / "MEMORY.md"
    index_md.write_text(index_md.read_text().replace("where infrastructure bugs go", "where outages are filed"))
    report = memory.refresh()
    assert (report["updated"], report["unchanged"]) == (1, N_STORE - 1)
    assert [h["name"] for h in memory.recall("where are outages filed")] == ["reference_linear_board"]


def test_deleting_the_index_loses_nothing(store, tmp_path):
    path = tmp_path / "i.sqlite"
    def drop_scores(results):  # scores move a little: the hit-log (kept) now says the notes were used
        return [{k: v for k, v in r.as_dict().items() if k != "score"} for r in results]

    with Memory([store], embedder="none", index_path=path) as mem:
        before = mem.recall("postgres upgrade", depth="full")
    path.unlink()
    with Memory([store], embedder="none", index_path=path) as mem:
        assert drop_scores(mem.recall("postgres upgrade", depth="full")) == drop_scores(before)


def test_index_sync_report(tmp_path, backend):
    idx = backend(tmp_path / "i.sqlite")
    a, b = Unit(uid="a", name="a", body="alpha"), Unit(uid="b", name="b", body="beta")
    r = idx.sync([a, b])
    assert (r.added, r.changed) == (2, 2)
    r = idx.sync([Unit(uid="c", name="c", body="gamma")], prune=False)
    assert (r.added, r.removed) == (1, 0)
    assert idx.counts()["units"] == 3
    r = idx.sync([a])
    assert (r.unchanged, r.removed) == (1, 2)
    assert idx.generation == 3
    idx.close()


def test_schema_is_migrated_once(tmp_path):
    path = tmp_path / "i.sqlite"
    Index(path).conn  # noqa: B018 - opening migrates
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    idx = Index(path)
    assert idx.counts() == {"units": 0, "chunks": 0, "embeddings": 0}  # reopening does not re-run
    idx.close()


def test_an_edit_forgets_its_old_vectors_through_an_index(tmp_path):
    """An edited note's old vectors are found by their text's hash (not a scan of every vector:
    155 ms of a one-note refresh at 100k notes); a vector another note's text still uses stays."""
    from memlane.index.units import FORGET_VECTORS_SQL

    idx = Index(tmp_path / "i.sqlite")
    idx.sync([Unit(uid="a", name="a", body="same words"), Unit(uid="b", name="b", body="same words")])
    idx.sync([Unit(uid="c", name="c", body="other words")], prune=False)
    hashes = {h for (h,) in idx.conn.execute("SELECT hash FROM chunks")}
    idx.store_embeddings("m", sorted(hashes), [[1.0, 0.0]] * len(hashes))
    plan = " ".join(str(row) for row in idx.conn.execute("EXPLAIN QUERY PLAN " + FORGET_VECTORS_SQL, ("x",)))
    assert "INDEX embeddings_hash" in plan and "SCAN embeddings" not in plan
    old_c = {h for (h,) in idx.conn.execute("SELECT hash FROM chunks WHERE unit = (SELECT id FROM units WHERE uid = 'c')")}
    idx.sync([Unit(uid="a", name="a", body="new words"), Unit(uid="c", name="c", body="new words too")], prune=False)
    kept = {h for (h,) in idx.conn.execute("SELECT hash FROM embeddings")}
    assert not old_c & kept  # c's old text is used by no one: its vector is gone
    b_hash = {h for (h,) in idx.conn.execute("SELECT hash FROM chunks WHERE unit = (SELECT id FROM units WHERE uid = 'b')")}
    assert b_hash <= kept  # a's old text is b's too: kept
    idx.close()


def test_private_notes_and_path_notes_are_found_through_their_indexes(tmp_path):
    """A fresh process asks for the private notes before every recall: an index lookup, not a
    read of every note's metadata — and the answers are the scan's."""
    from memlane.index.units import PRIVATE_SQL, WITH_PATHS_SQL

    idx = Index(tmp_path / "i.sqlite")
    idx.sync([Unit(uid="p", name="p", body="x", meta={"private": True}),
              Unit(uid="g", name="g", body="y", meta={"paths": ["src/*.py"]}),
              Unit(uid="n", name="n", body="z", meta={"private": False, "paths": []})])
    for sql, index_name in ((PRIVATE_SQL, "units_private"), (WITH_PATHS_SQL, "units_with_paths")):
        plan = " ".join(str(row) for row in idx.conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert f"INDEX {index_name}" in plan
    names = {row[0]: row[1] for row in idx.conn.execute("SELECT id, name FROM units")}
    assert [names[i] for i in idx.private_units()] == ["p"]
    assert [names[i] for i in idx.units_with_paths()] == ["g"]
    idx.close()


def test_an_index_from_an_older_version_is_upgraded_in_place(store, tmp_path):
    """An index written before the lifecycle and clusters existed (schema 4) gains them on
    open, rebuilds its graph once, and recalls with the whole pipeline."""
    import sqlite3

    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    for number, script in enumerate(MIGRATIONS[:4], start=1):
        for statement in script.split(";\n"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
    conn.execute("INSERT INTO meta(key, value) VALUES ('graph', '3')")
    conn.close()
    with Memory([store], embedder="none", index_path=path) as mem:
        hits = mem.recall("release the postgres upgrade", explain=True)
        assert hits and hits[0]["explain"]["state"] == "active"
        assert mem.index.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert mem.index.get_meta("graph") == GRAPH_VERSION
        assert mem.stats()["clusters"] >= 1


def test_wal_mode_and_busy_timeout(tmp_path):
    idx = Index(tmp_path / "i.sqlite", busy_timeout_ms=1234)
    assert idx.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert idx.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 1234
    with sqlite3.connect(tmp_path / "i.sqlite") as other:  # WAL is a property of the file
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    idx.close()


# -- many processes ----------------------------------------------------------------------
WORKER = """
import json, sys
from memlane import Memory
store, index, embedder = sys.argv[1:4]
out = []
with Memory([store], index_path=index, embedder=embedder) as mem:
    for prompt in ["release the postgres upgrade", "how should I key the CI cache?", "migration lock"] * 2:
        out.append([hit["name"] for hit in mem.recall(prompt)])
print(json.dumps(out))
"""


def test_several_processes_share_one_index(store, tmp_path):
    index = tmp_path / "shared.sqlite"  # not built yet: the processes race to create it
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(store), str(index), mode],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for mode in ["none", "fake", "none", "fake"]]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "error" not in err.lower(), err
        results = json.loads(out)
        assert len(results) == 6
        for got in results:
            assert got, results
        assert results[0][0] == "project_postgres_upgrade"
        assert results[1][0] == "feedback_ci_cache"
        assert results[2][0] == "feedback_migrations_lock"
    with Memory([store], index_path=index, embedder="none") as mem:
        assert mem.refresh()["unchanged"] == N_STORE
        assert mem.index.check_integrity() is None


# -- corruption ---------------------------------------------------------------------------
def _garbage_everywhere(path: Path) -> None:
    path.write_bytes(b"this is not a database " * 2000)


def _garbage_after_the_header(path: Path) -> None:
    with path.open("r+b") as f:
        f.seek(4096)
        f.write(b"\xde\xad\xbe\xef" * 4096)


def _garbage_in_every_page(path: Path) -> None:
    """Bytes written into every page past the first two: SQLite's error quotes the damaged schema
    as raw bytes, which Python cannot decode (a UnicodeDecodeError, not a DatabaseError)."""
    with path.open("r+b") as f:
        for offset in range(8192, path.stat().st_size, 8192):
            f.seek(offset + 100)
            f.write(b"\xde\xad\xbe\xef" * 64)


def _fts_segments_lost(path: Path) -> None:
    with sqlite3.connect(path) as conn:  # a valid file whose full-text index is broken
        conn.execute("DELETE FROM units_fts_data WHERE id > 10")


@pytest.mark.parametrize("damage", [_garbage_everywhere, _garbage_after_the_header, _garbage_in_every_page,
                                    _fts_segments_lost], ids=["whole-file", "pages", "every-page", "fts-index"])
def test_corrupt_index_heals(store, tmp_path, embedder, damage, caplog):
    path = tmp_path / "i.sqlite"
    with Memory([store], embedder=embedder, index_path=path) as mem:
        expected = [h["name"] for h in mem.recall("release the postgres upgrade")]
    assert expected[0] == "project_postgres_upgrade"
    damage(path)
    with caplog.at_level(logging.WARNING, logger="memlane"):
        with Memory([store], embedder=embedder, index_path=path) as mem:
            assert [h["name"] for h in mem.recall("release the postgres upgrade")] == expected
            assert mem.index.healed
            assert mem.index.check_integrity() is None
    assert list(tmp_path.glob("i.sqlite.corrupt-*")), "the corrupt file is kept for inspection"
    assert "corrupt" in caplog.text


def test_heal_is_reported_by_refresh(store, tmp_path):
    path = tmp_path / "i.sqlite"
    with Memory([store], embedder="none", index_path=path) as mem:
        mem.refresh()
    _garbage_everywhere(path)
    with Memory([store], embedder="none", index_path=path) as mem:
        report = mem.refresh()
    assert report["healed"] is True and report["added"] == N_STORE


# -- locks and unwritable locations ---------------------------------------------------------
def small_timeout() -> Config:
    config = Config()
    config.index.busy_timeout_ms = 50
    return config


@pytest.mark.parametrize("before", ["stale", "never-built", "not-embedded"])
def test_locked_index_still_recalls(store, tmp_path, embedder, before, caplog):
    """Another process holds the write lock past our busy timeout: recall answers anyway.
    stale: built, then a note changed; never-built: the file is being created by the other
    process; not-embedded: built by a keyword-only process (chunks without vectors)."""
    path = tmp_path / "i.sqlite"
    if before != "never-built":
        with Memory([store], embedder=embedder if before == "stale" else "none", index_path=path) as mem:
            mem.refresh()
    if before == "stale":
        note = store / "user_role.md"
        note.write_text(note.read_text() + "\nChanged since the last index.\n")  # so a write is needed
    locker = sqlite3.connect(path, isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        if before == "never-built":
            locker.execute("CREATE TABLE placeholder(x)")
        with caplog.at_level(logging.WARNING, logger="memlane"):
            with Memory([store], embedder=embedder, index_path=path, config=small_timeout()) as mem:
                hits = mem.recall("release the postgres upgrade")
        assert hits and hits[0]["name"] == "project_postgres_upgrade"
        needs_write = before != "not-embedded" or embedder != "none"  # else the index is current: no lock needed
        assert ("locked" in caplog.text) == needs_write
    finally:
        locker.execute("ROLLBACK")
        locker.close()


def test_unwritable_index_location_falls_back_to_memory(store, tmp_path, embedder, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("I am a regular file, not a folder")
    with caplog.at_level(logging.WARNING, logger="memlane"):
        with Memory([store], embedder=embedder, index_path=blocker / "sub" / "i.sqlite") as mem:
            hits = mem.recall("release the postgres upgrade", explain=True)
            assert mem.index_path == ":memory:"
            report = mem.refresh()
            assert report["index_problem"] is None and report["unchanged"] == N_STORE
    assert hits[0]["name"] == "project_postgres_upgrade"
    if embedder == "fake":
        assert hits[0]["explain"]["cosine"] is not None  # the in-memory index is embedded too
    assert "in-memory" in caplog.text
    assert blocker.read_text() == "I am a regular file, not a folder"


def test_unwritable_cache_dir_falls_back_to_memory(store, tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "cache_is_a_file"
    blocker.write_text("")
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(blocker))
    with caplog.at_level(logging.WARNING, logger="memlane"):
        with Memory([store], embedder="none") as mem:
            assert [h["name"] for h in mem.recall("postgres upgrade")] == ["project_postgres_upgrade"]
    assert "in-memory" in caplog.text


def test_default_index_lives_in_the_cache_dir(store, sealed_env):
    with Memory([store], embedder="none") as mem:
        mem.refresh()
        path = Path(mem.index_path)
    assert path.parent == sealed_env / "cache" / "index" and path.is_file()
    with Memory([store], embedder="none") as again:  # same store set, same index
        assert again.index_path == str(path)
    other = store.parent / "other"
    other.mkdir()
    with Memory([store, other], embedder="none") as different:
        assert different.index_path != str(path)
    assert os.listdir(store).count("MEMORY.md") == 1 and not list(store.glob("*.sqlite*"))


def test_a_paths_field_that_is_not_a_list_is_stored_not_mistaken_for_corruption(tmp_path):
    """Notes read from files always carry a list; another writer (the API, a domain) may not."""
    idx = Index(tmp_path / "i.sqlite")
    idx.sync([Unit(uid="s", name="s", body="x", meta={"paths": "src/*.py"}),
              Unit(uid="l", name="l", body="y", meta={"paths": ["src/*.py"]})])
    assert not idx.healed and idx.counts()["units"] == 2
    names = {row[0]: row[1] for row in idx.conn.execute("SELECT id, name FROM units")}
    assert [names[i] for i in idx.units_with_paths()] == ["l"]
    idx.close()


def test_a_new_index_and_its_folder_are_the_users_alone(store, tmp_path):
    """The index holds every note's text, private notes and unredacted secrets included."""
    index = tmp_path / "fresh" / "cache" / "i.sqlite"
    with Memory([store], embedder="none", index_path=index) as memory:
        memory.refresh()
    assert stat.S_IMODE(index.stat().st_mode) == 0o600
    assert stat.S_IMODE(index.parent.stat().st_mode) == 0o700
    for extra in (index.with_name("i.sqlite-wal"), index.with_name("i.sqlite-shm")):
        if extra.exists():  # SQLite gives them its file's mode
            assert stat.S_IMODE(extra.stat().st_mode) & 0o077 == 0


def test_an_older_index_readable_by_others_becomes_the_users_alone(store, tmp_path):
    """An index made before memlane created it 0600 (or copied with other modes) is tightened
    when it is next opened, its WAL files too."""
    index = tmp_path / "old.sqlite"
    with Memory([store], embedder="none", index_path=index) as memory:
        memory.refresh()
    for name in (index, index.with_name("old.sqlite-wal")):
        if name.exists():
            os.chmod(name, 0o644)
    with Memory([store], embedder="none", index_path=index) as memory:
        memory.refresh()
    for name in (index, index.with_name("old.sqlite-wal"), index.with_name("old.sqlite-shm")):
        if name.exists():
            assert stat.S_IMODE(name.stat().st_mode) == 0o600, name


def test_the_screening_verdicts_and_the_hit_log_are_the_users_alone(store, tmp_path):
    """Beside the index: the guard's verdicts (they quote notes) and the hit-log, new or older."""
    from memlane.inject.layers import user_prompt

    index = tmp_path / "v.sqlite"
    payload = {"session_id": "v1", "prompt": "deploy the billing service", "transcript_path": None}
    with Memory([store], embedder="none", index_path=index, cwd=tmp_path) as memory:
        user_prompt(memory, payload)
    verdicts, hits = Path(f"{index}.screened"), memory.hit_log.path
    assert verdicts.exists() and stat.S_IMODE(verdicts.stat().st_mode) == 0o600
    for name in (verdicts, hits):
        if name.exists():
            os.chmod(name, 0o644)
    code = ("import sys; from memlane import Memory; from memlane.inject.layers import user_prompt\n"
            "with Memory([sys.argv[1]], embedder='none', index_path=sys.argv[2]) as m:\n"
            "    user_prompt(m, {'session_id': 'v2', 'prompt': 'deploy the billing service', 'transcript_path': None})")
    subprocess.run([sys.executable, "-c", code, str(store), str(index)], check=True, timeout=120)  # a new process
    for name in (verdicts, hits):
        if name.exists():
            assert stat.S_IMODE(name.stat().st_mode) == 0o600, name


@pytest.mark.parametrize("how", ["recall", "refresh-then-recall"])  # the second as the CLI does it
def test_a_locked_index_is_waited_for_once_not_once_per_way_of_refreshing(store, tmp_path, monkeypatch, caplog, how):
    """An edited note is refreshed alone first; when the index is locked that sync waits the busy
    timeout, and neither the complete refresh behind it nor the hit-log's fold after it may wait
    for the same lock again (the documented wait is one busy timeout)."""
    from memlane.index.sqlite import SQLiteIndex

    path = tmp_path / "i.sqlite"
    with Memory([store], embedder="none", index_path=path) as mem:
        mem.refresh()
    note = store / "user_role.md"
    note.write_text(note.read_text() + "\nChanged since the last index.\n")
    waits = []
    real = SQLiteIndex.transaction

    def counted(self):
        waits.append(self.path)
        return real(self)

    monkeypatch.setattr(SQLiteIndex, "transaction", counted)
    locker = sqlite3.connect(path, isolation_level=None)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        with caplog.at_level(logging.WARNING, logger="memlane"):
            with Memory([store], embedder="none", index_path=path, config=small_timeout()) as mem:
                if how == "refresh-then-recall":
                    mem.refresh()
                hits = mem.recall("release the postgres upgrade", refresh=how == "recall")
                assert hits[0]["name"] == "project_postgres_upgrade"
        assert "locked" in caplog.text
        assert waits.count(str(path)) == 1, waits
    finally:
        locker.execute("ROLLBACK")
        locker.close()
