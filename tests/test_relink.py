"""A large store's link edit (associate/build.py ``relink``): the edited note's own edges are
re-resolved in place — the same edges, markers and in-degrees a whole rebuild stores — and the
whole-graph structure (PageRank, clusters, constellations) is left unsettled until
``settle_graph`` (``memlane index``, the daemon in the background) makes it a rebuild's again.
Whatever ``relink`` cannot vouch for is rebuilt whole, as before."""

from __future__ import annotations

import time

import pytest

import memlane.associate.build as build
from conftest import write_note
from memlane import Memory
from memlane.associate.build import GRAPH_VERSION, UNSETTLED, build_graph


def note(name: str, body: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: about {name}\ntype: project\n{extra}---\n{body}\n"


@pytest.fixture
def store(tmp_path, sealed_env, monkeypatch):
    monkeypatch.setattr(build, "RELINK_FROM", 3)  # a "large" store of a dozen notes
    folder = tmp_path / "store"
    for n in range(12):
        write_note(folder, f"project_n{n}.md", note(f"n{n}", f"Note {n}. See [[n{(n + 1) % 12}]] and [[n{(n + 5) % 12}]]."))
    write_note(folder / "sub", "project_deploy-guide.md", note("deploy guide", "How we deploy."))
    write_note(folder, "project_deploy_guide.md", note("deploy_guide", "The other deploy guide."))
    return folder


def stored(memory) -> dict:
    conn = memory.index.conn
    return {"edges": set(conn.execute("SELECT src, dst, kind FROM edges")),
            "missing": set(conn.execute("SELECT src, target, kind FROM missing_links")),
            "nodes": {u: (d, round(r, 9), c) for u, d, r, c in conn.execute(
                "SELECT unit, in_degree, pagerank, cluster FROM graph_nodes")},
            "constellations": sorted(tuple(g) for g in memory.index.constellation_groups()),
            "graph": memory.index.get_meta("graph")}


def rebuilt(memory) -> dict:
    """What a whole rebuild would store now."""
    data = build_graph(memory.index.link_facts())
    return {"edges": {(e.src, e.dst, e.kind) for e in data.edges}, "missing": set(data.missing),
            "nodes": {u: (d, round(r, 9), c) for u, (d, r, c) in data.nodes.items()},
            "constellations": sorted(tuple(sorted(m)) for m in data.constellations)}


def edit(folder, name: str, body: str) -> None:
    path = folder / f"project_{name}.md"
    path.write_text(note(name, body), encoding="utf-8")
    stat = path.stat()
    import os

    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000))


def test_a_link_edit_relinks_in_place_as_a_rebuild_would(store, tmp_path):
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        before = stored(memory)
        assert before["graph"] == GRAPH_VERSION
        edit(store, "n3", "Note 3. Now see [[n0]], [[deploy guide]], [[N-7]] and [[no such note]]; n9.md too.")
        assert memory.refresh().updated == 1
        now, whole = stored(memory), rebuilt(memory)
        assert now["graph"] == UNSETTLED
        assert now["edges"] == whole["edges"] != before["edges"]  # the new edges, exactly a rebuild's
        assert now["missing"] == whole["missing"]
        assert {u: d for u, (d, _, _) in now["nodes"].items()} == {u: d for u, (d, _, _) in whole["nodes"].items()}
        ids = {name: i for i, name in memory.index.conn.execute("SELECT id, name FROM units")}
        assert (ids["n3"], ids["deploy_guide"], "wiki") in now["edges"]  # its own folder's answers first
        assert (ids["n3"], ids["deploy guide"], "wiki") not in now["edges"]
        assert {u: r for u, (_, r, _) in now["nodes"].items()} == {u: r for u, (_, r, _) in before["nodes"].items()}
        edit(store, "n8", "Note 8, its body edited alone. See [[n9]] and [[n1]].")
        memory.refresh()
        assert stored(memory)["graph"] == UNSETTLED  # an unrelated edit does not rebuild it whole meanwhile
        assert memory.settle_graph()
        settled = stored(memory)
        assert settled["graph"] == GRAPH_VERSION
        assert {k: settled[k] for k in whole} == rebuilt(memory)


def test_a_link_to_a_non_ascii_name_relinks_as_a_rebuild_would(store, tmp_path):
    write_note(store, "project_überblick.md", note("Überblick", "The overview."))
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        edit(store, "n3", "Note 3. See [[ÜBERBLICK]] and [[Straße]].")
        memory.refresh()
        now, whole = stored(memory), rebuilt(memory)
        assert now["graph"] == UNSETTLED  # relinked in place: the keys are matched exactly, case folded
        assert now["edges"] == whole["edges"] and now["missing"] == whole["missing"]
        ids = {name: i for i, name in memory.index.conn.execute("SELECT id, name FROM units")}
        assert (ids["n3"], ids["Überblick"], "wiki") in now["edges"]


def test_a_note_given_a_new_name_no_longer_answers_to_its_old_one(store, tmp_path):
    write_note(store, "project_alpha.md", note("beta", "Named apart from its file."))
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        (store / "project_alpha.md").write_text(note("gamma", "Named apart from its file."), encoding="utf-8")
        memory.refresh()
        assert {k for (k,) in memory.index.conn.execute(
            "SELECT key FROM unit_keys JOIN units ON units.id = unit WHERE units.name = 'gamma'")} == {
            "gamma", "project-alpha", "alpha"}  # its old name's key is gone (a stale key finds nothing wrong either)
        edit(store, "n3", "Note 3. See [[beta]] and [[gamma]].")
        memory.refresh()
        now, whole = stored(memory), rebuilt(memory)
        assert now["graph"] == UNSETTLED
        assert now["edges"] == whole["edges"] and now["missing"] == whole["missing"]
        ids = {name: i for i, name in memory.index.conn.execute("SELECT id, name FROM units")}
        assert (ids["n3"], "beta", "wiki") in now["missing"] and (ids["n3"], ids["gamma"], "wiki") in now["edges"]


def test_what_another_writer_left_behind_is_made_whole_before_a_relink(store, tmp_path):
    """A writer that keeps neither ``unit_keys`` nor the graph (an older memlane) still moves
    ``units_changes``: the next sync writes every unit's keys again and, the graph being behind the
    notes, the graph is rebuilt whole; the edit after that is relinked, through the keys."""
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        conn = memory.index.conn
        with memory.index.transaction():  # as an older memlane would write: the unit, not its keys
            conn.execute("UPDATE units SET name = 'renamed', path = replace(path, 'project_n7.md', 'renamed.md')"
                         " WHERE name = 'n7'")
        assert not memory.index.unit_keys_current()
        edit(store, "n3", "Note 3. See [[renamed]] and [[n0]].")
        memory.refresh()
        assert memory.index.unit_keys_current()
        now, whole = stored(memory), rebuilt(memory)
        assert now["graph"] == GRAPH_VERSION and now["edges"] == whole["edges"]  # rebuilt whole
        edit(store, "n3", "Note 3. See [[renamed]] and [[n1]].")
        memory.refresh()
        now, whole = stored(memory), rebuilt(memory)
        assert now["graph"] == UNSETTLED and now["edges"] == whole["edges"]
        ids = {name: i for i, name in conn.execute("SELECT id, name FROM units")}
        assert (ids["n3"], ids["renamed"], "wiki") in now["edges"]


def test_a_graph_step_that_failed_after_its_sync_is_made_whole_by_the_next_refresh(store, tmp_path, monkeypatch):
    """The edited notes' sync commits before their graph is stored; when that step fails (a lock
    at that moment), the next refresh finds no note to change — and rebuilds the graph, which is
    behind the notes' count of writes, instead of trusting it (found by a review)."""
    import sqlite3

    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        real, calls = type(memory.index).units_answering, []

        def locked_once(self, keys):
            calls.append(keys)
            if len(calls) == 1:
                raise sqlite3.OperationalError("database is locked")
            return real(self, keys)

        monkeypatch.setattr(type(memory.index), "units_answering", locked_once)
        edit(store, "n3", "Note 3. Now see [[n0]] only.")
        memory.refresh()
        memory.refresh(recheck=True)
        now, whole = stored(memory), rebuilt(memory)
        assert now["edges"] == whole["edges"] and now["missing"] == whole["missing"]
        assert memory.refresh(recheck=True).up_to_date


def test_relink_does_not_trust_link_keys_behind_the_notes(store, tmp_path):
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        uid = memory.index.conn.execute("SELECT uid FROM units WHERE name = 'n3'").fetchone()[0]
        before = memory.index.link_facts_of([uid])
        after = {uid: {"path": before[uid]["path"], "meta": dict(before[uid]["meta"], links=[["n0", "wiki"]])}}
        assert build.relink(memory.index, before, after) is True
        memory.index.set_meta("unit_keys", "behind")
        assert build.relink(memory.index, before, after) is False


@pytest.mark.parametrize("change", ["supersedes", "small store"])
def test_what_relink_cannot_vouch_for_is_rebuilt_whole(store, tmp_path, monkeypatch, change):
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        if change == "supersedes":
            (store / "project_n3.md").write_text(note("n3", "Note 3.", "supersedes: [n4]\n"), encoding="utf-8")
        else:
            monkeypatch.setattr(build, "RELINK_FROM", 10_000)
            edit(store, "n3", "Note 3. See [[n0]].")
        memory.refresh()
        now = stored(memory)
        assert now["graph"] == GRAPH_VERSION
        assert {k: now[k] for k in ("edges", "missing", "nodes", "constellations")} == rebuilt(memory)


def unsettled_index(store, tmp_path):
    """An index whose graph a link edit left unsettled."""
    index = tmp_path / "i.sqlite"
    with Memory([store], embedder="none", index_path=index) as memory:
        memory.refresh()
        edit(store, "n3", "Note 3. See [[n0]] and [[n6]].")
        memory.refresh()
        assert memory.graph_unsettled()
    return index


def test_memlane_index_settles_the_graph(store, tmp_path, capsys):
    from memlane.adapters.cli import main

    index = unsettled_index(store, tmp_path)
    assert main(["index", "--store", str(store), "--index", str(index), "--embedder", "none"]) == 0
    with Memory([store], embedder="none", index_path=index) as memory:
        assert not memory.graph_unsettled()
        assert {k: v for k, v in stored(memory).items() if k != "graph"} == rebuilt(memory)


def test_the_daemon_settles_the_graph_in_the_background(store, tmp_path):
    from memlane.adapters import daemon

    workspace = daemon.open_workspace(str(tmp_path), [str(store)], "none", str(tmp_path / "i.sqlite"), refresh_s=0.1)
    try:
        edit(store, "n3", "Note 3. See [[n0]] and [[n6]].")
        deadline, settled = time.monotonic() + 20, False
        while time.monotonic() < deadline and not settled:
            time.sleep(0.1)
            with workspace.held() as warm:
                conn = warm.memory.index.conn
                edges = set(conn.execute("SELECT src, dst, kind FROM edges"))
                ids = {name: i for i, name in conn.execute("SELECT id, name FROM units")}
                settled = (ids["n3"], ids["n6"], "wiki") in edges and not warm.memory.graph_unsettled()
        assert settled
        with workspace.held() as warm:
            assert {k: v for k, v in stored(warm.memory).items() if k != "graph"} == rebuilt(warm.memory)
    finally:
        workspace.close()


def test_a_graph_of_an_older_version_is_rebuilt_whole_not_relinked(store, tmp_path):
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        memory.index.set_meta("graph", "4")  # computed by an older memlane
        edit(store, "n3", "Note 3. See [[n0]].")
        memory.refresh()
        assert stored(memory)["graph"] == GRAPH_VERSION


def test_the_settling_process(store, tmp_path):
    import subprocess
    import sys

    index = unsettled_index(store, tmp_path)
    settle = [sys.executable, "-m", "memlane.associate.settle", str(index)]
    assert subprocess.run(settle, timeout=120).returncode == 0
    with Memory([store], embedder="none", index_path=index) as memory:
        assert not memory.graph_unsettled()
        assert {k: v for k, v in stored(memory).items() if k != "graph"} == rebuilt(memory)
    assert subprocess.run(settle, timeout=120).returncode == 0  # nothing to settle: done
    assert subprocess.run(settle[:-1], capture_output=True, timeout=120).returncode == 2


def test_doctor_says_when_the_graph_waits_to_settle(store, tmp_path):
    from memlane.adapters.doctor import check_index

    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        assert not any("hub scores" in p.what for p in check_index(memory)[1])
        edit(store, "n3", "Note 3. See [[n0]].")
        memory.refresh()
        problems = check_index(memory)[1]
        assert any("hub scores" in p.what and "memlane index" in p.fix for p in problems)
        memory.settle_graph()
        assert not any("hub scores" in p.what for p in check_index(memory)[1])


def test_the_settling_process_leaves_a_file_that_is_not_an_index_alone(tmp_path):
    import subprocess
    import sys

    other = tmp_path / "notes.db"
    other.write_bytes(b"someone else's file" * 50)
    proc = subprocess.run([sys.executable, "-m", "memlane.associate.settle", str(other)], capture_output=True,
                          timeout=120)
    assert proc.returncode == 1 and other.read_bytes() == b"someone else's file" * 50


def test_a_graph_another_process_stored_after_this_sync_is_not_rebuilt_again(store, tmp_path, monkeypatch):
    """Process B rebuilt the graph between process A's sync and A's graph step: B's graph holds A's
    notes already, so A stores nothing more (two whole rebuilds at 100k notes would take ~20 s)."""
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        index = memory.index
        writes = index.get_meta("units_changes")
        assert index.get_meta(build.GRAPH_UNITS) == writes  # the graph holds every write so far
        stored_graphs = []
        real = type(index).replace_graph
        monkeypatch.setattr(type(index), "replace_graph", lambda self, g: stored_graphs.append(g) or real(self, g))
        assert build.rebuild_graph(index, True, edited=None, writes=(str(int(writes) - 1), writes)) is False
        assert stored_graphs == []
