"""L1 recency (ACT-R base level), L3 Darwinian decay, and the hit-log folded into the index:
counting uses, states, deep recall restoring archived notes, status and decay commands."""

from __future__ import annotations

import json
import os
import time

import pytest

from memlane import Memory
from memlane.adapters.cli import main as cli
from memlane.config import LifecycleConfig
from memlane.index import Index
from memlane.index.unit import Unit
from memlane.lifecycle import HitLog
from memlane.lifecycle.activation import DAY, base_level, recency_factor
from memlane.lifecycle.decay import judge, potentiate
from memlane.lifecycle.usage import Usage, recency, unit_states

NOW = 1_800_000_000.0


# -- ACT-R base level and the recency factor ----------------------------------------------------
def test_base_level_rises_with_recency_and_frequency():
    assert base_level([]) is None
    assert base_level([1.0]) > base_level([30.0]) > base_level([365.0])
    assert base_level([1.0, 5.0, 20.0]) > base_level([1.0])
    # uses no longer kept still count, through the approximation
    assert base_level([1.0], older=10, oldest_days=300.0) > base_level([1.0])


def test_recency_factor_is_bounded_and_neutral_without_history():
    assert recency_factor(None, 0.2) == 1.0
    assert recency_factor(base_level([0.0]), 0.2) <= 1.0
    assert 0.8 <= recency_factor(base_level([3650.0]), 0.2) < recency_factor(base_level([30.0]), 0.2)
    assert recency_factor(base_level([30.0]), 0.2) == pytest.approx(0.9)  # the centre of the range
    assert recency_factor(base_level([3650.0]), 0.0) == 1.0


# -- decay ---------------------------------------------------------------------------------------
def test_spaced_references_extend_stability_more_than_massed_ones():
    massed = spaced = 1.0
    for _ in range(5):
        massed = potentiate(massed, 60, gain=0.5, spacing_days=1.0)
        spaced = potentiate(spaced, 7 * DAY, gain=0.5, spacing_days=1.0)
    assert 1.0 < massed < 1.01 and spaced > 3.4


@pytest.mark.parametrize("idle_days, stability, declared, state", [
    (10, 1.0, None, "active"), (31, 1.0, None, "dormant"), (91, 1.0, None, "archived"),
    (91, 2.0, None, "dormant"), (181, 2.0, None, "archived"),
    (1, 1.0, "archived", "archived"), (400, 1.0, "active", "active"),  # the author's status: wins
])
def test_states_follow_idle_time_and_stability(idle_days, stability, declared, state):
    verdict = judge(now=NOW, last_use=NOW - idle_days * DAY, stability=stability, dormant_days=30,
                    archive_days=90, declared=declared)
    assert verdict.state == state and verdict.reason


# -- the hit-log folded into the index ------------------------------------------------------------
@pytest.fixture
def usage(tmp_path, backend):
    index = backend(tmp_path / "i.sqlite")
    index.sync([Unit(uid=f"/m/{n}.md", name=n, path=f"/m/{n}.md", body=n) for n in ("a", "b", "c")])
    log = HitLog(tmp_path / "i.sqlite.hits.jsonl")
    yield Usage(index, log, LifecycleConfig()), log, index
    index.close()


def write(log: HitLog, records: list[tuple[float, str, str | None]]) -> None:
    with open(log.path, "a", encoding="utf-8") as handle:
        for t, name, session in records:
            handle.write(json.dumps({"t": t, "unit": f"/m/{name}.md", "name": name, "session": session}) + "\n")


def refs(index: Index) -> dict[str, int]:
    return {n: row[0] for n in ("a", "b", "c") if (row := index.usage_of(f"/m/{n}.md")) is not None}


def test_a_session_counts_once_and_unsessioned_uses_within_an_hour_count_once(usage):
    use, log, index = usage
    write(log, [(NOW, "a", "s1"), (NOW + 60, "a", "s1"), (NOW + 120, "a", "s2"),  # a: 2 sessions
                (NOW, "b", None), (NOW + 600, "b", None), (NOW + 2 * 3600, "b", None)])  # b: 2 uses
    assert use.consume() == 4
    assert refs(index) == {"a": 2, "b": 2}
    assert use.consume() == 0  # nothing new: nothing re-read


def test_only_new_whole_lines_are_read_and_corrupt_ones_skipped(usage):
    use, log, index = usage
    write(log, [(NOW, "a", "s1")])
    with open(log.path, "a", encoding="utf-8") as handle:
        handle.write("{not json}\n")
        handle.write(json.dumps({"t": NOW + 10, "unit": "/m/c.md", "session": "s9"})[:20])  # still being written
    assert use.consume() == 1
    with open(log.path, "a", encoding="utf-8") as handle:  # the writer finishes... a new full line after it
        handle.write("\n" + json.dumps({"t": NOW + 20, "unit": "/m/c.md", "session": "s9"}) + "\n")
    assert use.consume() == 1  # the torn fragment is skipped, the complete line counted
    assert refs(index) == {"a": 1, "c": 1}


def test_rotation_neither_loses_nor_double_counts(usage):
    use, log, index = usage
    write(log, [(NOW, "a", "s1")])
    assert use.consume() == 1
    log.path.replace(f"{log.path}.1")  # rotated after being read
    write(log, [(NOW + 100, "a", "s2")])
    assert use.consume() == 1 and refs(index) == {"a": 2}


def test_a_missing_or_unreadable_hit_log_is_nothing_new(usage, tmp_path):
    use, log, index = usage
    assert use.consume() == 0
    os.mkdir(log.path)  # a directory where the log should be: unreadable, skipped
    assert use.consume() == 0


def test_recency_prefers_the_recently_used(usage):
    use, log, index = usage
    write(log, [(NOW - 2 * DAY, "a", "s1"), (NOW - 1 * DAY, "a", "s2"), (NOW - 200 * DAY, "b", "s3")])
    use.consume()
    ids = {row["name"]: uid for uid, row in index.units_by_id(index.all_ids()).items()}
    found = recency(index, list(ids.values()), weight=0.2, now=NOW)
    assert found[ids["a"]][0] > found[ids["b"]][0] and found[ids["c"]] == (1.0, None, 0)


# -- through Memory: decay, deep recall, status -----------------------------------------------------
def _age(mem: Memory, path, days: float) -> None:
    """Pretend memlane first saw the note ``days`` ago and nothing touched it since."""
    then = time.time() - days * DAY
    os.utime(path, (then, then))
    mem.refresh(embed=False)
    mem.usage.apply([])  # create the usage rows
    mem.index.conn.execute("UPDATE usage SET first_seen = ? WHERE uid = ?", (then, str(path)))


def test_an_idle_note_is_archived_leaves_default_recall_and_comes_back_on_use(store, tmp_path):
    note = store / "project_postgres_upgrade.md"
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        _age(mem, note, 120)
        plan = mem.decay(dry_run=True)
        change = next(c for c in plan["changes"] if c["path"] == str(note))
        assert change["new"] == "archived" and "idle 120 d" in change["reason"]
        ids = {row["path"]: i for i, row in mem.index.units_by_id(mem.index.all_ids()).items()}
        assert ids[str(note)] not in unit_states(mem.index, list(ids.values()))  # a dry run changes nothing
        mem.decay(dry_run=False)
        assert unit_states(mem.index, [ids[str(note)]]) == {ids[str(note)]: "archived"}
        assert "project_postgres_upgrade" not in [r["name"] for r in mem.recall("postgres upgrade")]
        deep = mem.recall("postgres upgrade", include_archived=True, explain=True)
        assert deep[0]["name"] == "project_postgres_upgrade" and deep[0]["explain"]["state"] == "archived"
        assert "project_postgres_upgrade" in [r["name"] for r in mem.recall("postgres upgrade")]  # restored
        assert mem.decay(dry_run=True)["changes"] == []  # and the use keeps it active


def test_the_files_are_never_rewritten(store, tmp_path):
    before = {p: p.read_bytes() for p in store.rglob("*.md")}
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        _age(mem, store / "project_postgres_upgrade.md", 400)
        mem.decay(dry_run=False)
        mem.recall("postgres upgrade", include_archived=True)
    assert {p: p.read_bytes() for p in store.rglob("*.md")} == before


def test_status_and_decay_commands(store, tmp_path, capsys):
    index = tmp_path / "i.sqlite"
    with Memory([store], embedder="none", index_path=index) as mem:
        _age(mem, store / "project_postgres_upgrade.md", 45)
        mem.recall("release checklist", session="s1")
    common = ["--store", str(store), "--embedder", "none", "--index", str(index)]
    assert cli(["status", *common, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["notes"] == 9 and status["most_used"][0]["refs"] == 1
    # the idle note goes dormant; the note whose frontmatter says archived is archived as written
    assert {(c["name"], c["new"]) for c in status["pending_changes"]} == {
        ("project_postgres_upgrade", "dormant"), ("project_jenkins_deploys", "archived")}
    assert cli(["decay", *common, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("would change: 2") and "project_postgres_upgrade: active -> dormant" in out
    assert cli(["decay", *common]) == 0 and capsys.readouterr().out.startswith("changed: 2")
    assert cli(["status", *common]) == 0
    assert "dormant 1, archived 1" in capsys.readouterr().out


def test_the_hit_log_records_every_score_part(store, tmp_path):
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        mem.recall("release the postgres upgrade", session="s1", depth="ids")
        record = next(iter(mem.hit_log.read()))
    assert {"t", "session", "q", "unit", "layer", "depth", "bracket", "parts"} <= set(record)
    assert record["depth"] == "ids" and record["session"] == "s1"
    assert {"relevance", "activation", "importance", "recency", "reached", "bm25_norm", "vector"} <= set(record["parts"])


def test_reading_a_note_with_show_is_a_use(store, tmp_path):
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        _age(mem, store / "project_postgres_upgrade.md", 120)
        mem.decay(dry_run=False)
        assert "project_postgres_upgrade" not in [r["name"] for r in mem.recall("postgres upgrade")]
        mem.show("project_postgres_upgrade")
        assert [r["name"] for r in mem.recall("postgres upgrade")][:1] == ["project_postgres_upgrade"]
        assert next(r for r in mem.hit_log.read() if r["layer"] == "show")["unit"].endswith("postgres_upgrade.md")


def test_a_locked_hit_log_or_index_never_blocks_recall(store, tmp_path, caplog):
    import fcntl
    import logging
    import sqlite3

    from memlane.config import Config

    config = Config()
    config.index.busy_timeout_ms = 50
    path = tmp_path / "i.sqlite"
    with Memory([store], embedder="none", index_path=path, config=config) as mem:
        mem.recall("postgres upgrade")
        with open(f"{mem.hit_log.path}.lock", "a") as lock, open(mem.hit_log.path, "a") as log_file:
            fcntl.flock(lock, fcntl.LOCK_EX)  # a rotation in progress elsewhere
            fcntl.flock(log_file, fcntl.LOCK_EX)
            assert mem.recall("postgres upgrade")
        mem.index.set_meta("lifecycle_at", "0")  # the next recall wants to fold the log and move states
        writer = sqlite3.connect(path, timeout=0.05)
        writer.execute("BEGIN IMMEDIATE")  # ... but another process holds the index's write lock
        try:
            with caplog.at_level(logging.INFO, logger="memlane"):
                assert [r["name"] for r in mem.recall("postgres upgrade", refresh=False)][:1] == [
                    "project_postgres_upgrade"]
        finally:
            writer.rollback()
            writer.close()
        assert "lifecycle not updated this time" in caplog.text
        assert sum(1 for r in mem.hit_log.read() if r["name"] == "project_postgres_upgrade") == 3
        mem.usage.consume()  # the lock is gone: the next fold reads every line written meanwhile
        offsets = json.loads(mem.index.get_meta("hitlog_offsets"))
        assert sum(offsets.values()) == mem.hit_log.path.stat().st_size
        (refs,) = mem.index.conn.execute("SELECT refs FROM usage WHERE uid LIKE '%postgres_upgrade.md'").fetchone()
        assert refs == 1  # three recalls within the hour, no session: one use


def test_parallel_recalls_fold_every_use_exactly_once(store, tmp_path):
    import subprocess
    import sys

    index = tmp_path / "i.sqlite"
    with Memory([store], embedder="none", index_path=index) as mem:
        mem.refresh()
    script = (
        "import sys\nfrom memlane import Memory\n"
        f"with Memory([{str(store)!r}], embedder='none', index_path={str(index)!r}) as mem:\n"
        "    for i in range(10):\n"
        "        mem.recall('postgres upgrade', session=f'{sys.argv[1]}-{i}')\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, f"p{n}"]) for n in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    with Memory([store], embedder="none", index_path=index) as mem:
        mem.usage.consume()
        (refs,) = mem.index.conn.execute(
            "SELECT refs FROM usage WHERE uid LIKE '%project_postgres_upgrade.md'").fetchone()
    assert refs == 4 * 10  # forty sessions, each one use: none lost, none counted twice
