"""Associative recall through Memory (A1–A6, L1): index membership edges, clusters,
constellations recalled atomically, divergent mode, paths, and the graph's bad inputs — link
cycles, self-links, a note linking to hundreds, a supersedes loop, one name in two scopes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_note
from memlane import Memory, demo_store_path
from memlane.associate.divergent import personalized_pagerank, remote_associates
from memlane.associate.graph import resolve_links
from memlane.associate.structure import clusters
from memlane.config import Config
from memlane.store import StoreSpec


def note(name: str, description: str, body: str = "", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: feedback\n{extra}---\n{body}\n"


def edges_of(mem: Memory, kind: str | None = None) -> set[tuple[str, str, str]]:
    rows = mem.index.conn.execute(
        "SELECT s.name, d.name, e.kind FROM edges e JOIN units s ON s.id = e.src JOIN units d ON d.id = e.dst"
        + (" WHERE e.kind = ?" if kind else ""), (kind,) if kind else ()).fetchall()
    return set(rows)


# -- A1: index membership --------------------------------------------------------------------------
def test_notes_filed_under_one_memory_md_heading_are_linked(tmp_path):
    for name in ("a", "b", "c", "d"):
        write_note(tmp_path, f"{name}.md", note(name, f"note {name}"))
    (tmp_path / "MEMORY.md").write_text("# Rules\n- [A](a.md) — a\n- [B](b.md) — b\n\n## Projects\n"
                                        "- [C](c.md) — c\n- [D](d.md) — d\n", encoding="utf-8")
    with Memory([tmp_path], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        mem.refresh()
        assert edges_of(mem, "index") == {("a", "b", "index"), ("b", "a", "index"),
                                          ("c", "d", "index"), ("d", "c", "index")}


@pytest.mark.parametrize("index_md", [
    "- [A](a.md) — a\n- [B](b.md) — b\n",  # no headings: a flat list says nothing about grouping
    "# All\n- [A](a.md) — a\n- [B](b.md) — b\n",  # one section: the same
])
def test_a_flat_memory_md_makes_no_membership_edges(tmp_path, index_md):
    for name in ("a", "b"):
        write_note(tmp_path, f"{name}.md", note(name, f"note {name}"))
    (tmp_path / "MEMORY.md").write_text(index_md, encoding="utf-8")
    with Memory([tmp_path], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        mem.refresh()
        assert edges_of(mem, "index") == set()


# -- structure -----------------------------------------------------------------------------------
def test_clusters_are_communities_and_deterministic():
    edges = [(1, 2), (2, 3), (3, 1), (4, 5), (5, 6), (6, 4), (3, 4)]
    labels = clusters(range(1, 8), edges)
    assert labels[1] == labels[2] == labels[3] and labels[4] == labels[5] == labels[6]
    assert labels[1] != labels[4] and labels[7] == 7  # an isolated note is its own cluster
    assert clusters(range(1, 8), edges) == labels


def test_personalized_pagerank_restarts_at_the_seeds():
    adjacency = {1: [(2, "wiki")], 2: [(1, "wiki"), (3, "wiki")], 3: [(2, "wiki")], 4: []}
    ranks = personalized_pagerank(adjacency, {1: 1.0}, damping=0.85, nodes={1, 2, 3, 4})
    assert ranks[1] > ranks[3] > 0 and ranks.get(4, 0.0) == 0.0
    assert sum(ranks.values()) == pytest.approx(1.0, abs=1e-6)


def test_remote_associates_come_from_other_clusters_with_their_path():
    adjacency = {1: [(2, "wiki")], 2: [(1, "wiki"), (3, "wiki")], 3: [(2, "wiki"), (4, "wiki")], 4: [(3, "wiki")]}
    found = remote_associates(adjacency, {1: 0.9, 2: 0.2}, chosen=[1, 2], clusters={1: 1, 2: 1, 3: 3, 4: 3},
                              min_score=0.1, damping=0.85, limit=2)
    assert [node for node, _, _ in found] == [3, 4]
    assert found[1][2] == [(2, "seed"), (3, "wiki"), (4, "wiki")]  # the shortest chain from a seed


# -- the demo store: constellations, divergent mode, paths ---------------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    with Memory([demo_store_path()], embedder="none",
                index_path=tmp_path_factory.mktemp("demo") / "i.sqlite") as mem:
        mem.refresh()
        yield mem


MIGRATIONS = {"migrations-lock", "migrations-expand-contract", "migrations-backfill-batches"}


def test_a_constellation_is_recalled_atomically(demo):
    results = demo.recall("set lock_timeout before ALTER TABLE", k=1, explain=True)
    names = [r["name"] for r in results]
    assert names[0] == "migrations-lock" and set(names) == MIGRATIONS  # k=1, but the set comes whole
    companions = [r for r in results[1:]]
    assert all(r["reached"].endswith("constellation with [[migrations-lock]]") for r in companions)


def test_constellations_can_be_turned_off(demo):
    config = Config()
    config.associate.constellations = False
    with Memory([demo_store_path()], embedder="none", index_path=demo.index_path, config=config) as mem:
        assert [r["name"] for r in mem.recall("set lock_timeout before ALTER TABLE", k=1)] == ["migrations-lock"]


def test_every_result_says_how_it_was_reached(demo):
    for prompt in ("what went wrong on May 20th and what changed in our deploy rules",
                   "upload resume token background task"):
        for r in demo.recall(prompt, explain=True):
            assert r["reached"].startswith(("seed", "via [[", "constellation with [[")), r["reached"]
            assert r["explain"]["path"] or r["reached"] == "seed"


def test_divergent_mode_adds_remote_associates_from_other_clusters(demo):
    prompt = "the upload resume token is lost when the background task is killed"
    convergent = demo.recall(prompt)
    divergent = demo.recall(prompt, divergent=True)
    extra = [r for r in divergent if r["path"] not in {c["path"] for c in convergent}]
    assert [r["name"] for r in divergent[: len(convergent)]] == [r["name"] for r in convergent]
    assert 1 <= len(extra) <= Config().associate.divergent_remote
    clusters_of = demo.index.clusters()
    ids = {row["path"]: i for i, row in demo.index.units_by_id(demo.index.all_ids()).items()}
    home = {clusters_of[ids[r["path"]]] for r in convergent}
    assert all(clusters_of[ids[r["path"]]] not in home for r in extra)
    assert all(r["reached"].startswith("remote, from the cluster of [[") for r in extra)


def test_stats_report_hubs_constellations_and_clusters(demo):
    stats = demo.stats(refresh=False)
    assert stats["hubs"][0]["name"] == "architecture-overview"
    assert any(MIGRATIONS <= set(group) for group in stats["constellations"])
    assert 1 < stats["clusters"] < stats["counts"]["units"] and stats["supersedes_loops"] == []


# -- bad input -----------------------------------------------------------------------------------------
def test_cycles_self_links_and_a_note_linking_to_hundreds(tmp_path):
    write_note(tmp_path, "a.md", note("a", "alpha rule about caches", "see [[b]] and [[a]]"))  # self-link
    write_note(tmp_path, "b.md", note("b", "beta rule about caches", "see [[c]]"))
    write_note(tmp_path, "c.md", note("c", "gamma rule about caches", "see [[a]]"))  # a -> b -> c -> a
    names = [f"leaf{n}" for n in range(300)]
    for name in names:
        write_note(tmp_path, f"{name}.md", note(name, f"leaf note {name} about widgets"))
    write_note(tmp_path, "hub.md", note("hub", "index of every leaf about widgets",
                                        " ".join(f"[[{n}]]" for n in names)))
    with Memory([tmp_path], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        mem.refresh()
        edges = edges_of(mem, "wiki")
        assert ("a", "a", "wiki") not in edges and {("a", "b", "wiki"), ("b", "c", "wiki"), ("c", "a", "wiki")} <= edges
        assert sum(1 for s, _, _ in edges if s == "hub") == 300
        cycle = mem.recall("alpha rule about caches", explain=True)
        assert cycle[0]["name"] == "a" and len(cycle) <= 5
        widgets = mem.recall("leaf note about widgets", explain=True)
        assert 1 <= len(widgets) <= 5  # bounded: the hub's fan spreads next to nothing to each leaf
        hub_share = [r["explain"]["activation"] for r in widgets if r["name"].startswith("leaf")]
        assert all(share < 0.05 for share in hub_share)


def test_a_supersedes_loop_demotes_neither_note(tmp_path):
    write_note(tmp_path, "old.md", note("old", "deploy with the blue green script", extra="supersedes: [new]\n"))
    write_note(tmp_path, "new.md", note("new", "deploy with the canary script", extra="supersedes: [old]\n"))
    write_note(tmp_path, "v1.md", note("v1", "release with the legacy tagging tool"))
    write_note(tmp_path, "v2.md", note("v2", "release with the new tagging tool", extra="supersedes: [v1]\n"))
    with Memory([tmp_path], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        for prompt, name in (("blue green deploy", "old"), ("canary deploy", "new")):
            top = mem.recall(prompt, explain=True)[0]
            assert top["name"] == name and not any("superseded" in n for n in top["explain"]["notes"])
        assert [r["name"] for r in mem.recall("release tagging tool")] == ["v2"]  # a plain chain still demotes
        assert sorted(mem.stats()["supersedes_loops"]) == ["new", "old"]


def test_one_name_in_two_scopes_links_to_the_narrower(tmp_path):
    user, project = tmp_path / "user", tmp_path / "project"
    write_note(user, "style.md", note("style", "user wide code style: tabs"))
    write_note(project, "style.md", note("style", "project code style: four spaces"))
    write_note(project, "review.md", note("review", "before a code review, check formatting", "see [[style]]"))
    specs = [StoreSpec(user, "user"), StoreSpec(project, "project")]
    with Memory(specs, embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        mem.refresh()
        rows = mem.index.conn.execute(
            "SELECT d.path FROM edges e JOIN units s ON s.id = e.src JOIN units d ON d.id = e.dst"
            " WHERE s.name = 'review'").fetchall()
        assert [Path(p).parent.name for (p,) in rows] == ["project"]


def test_broken_and_future_links_are_never_traversed():
    units = [{"id": 1, "name": "a", "path": "/s/a.md", "meta": {"links": [["not-written-yet", "wiki"],
                                                                          ["docs/guide.md", "markdown"]]}}]
    graph = resolve_links(units)
    assert graph.edges == [] and graph.missing == [(1, "not-written-yet", "wiki")]


def test_cli_divergent_deep_and_explain_paths(capsys):
    from memlane.adapters.cli import main as cli

    args = ["recall", "--demo", "--embedder", "none"]
    assert cli([*args, "--explain", "what went wrong on May 20th and what changed in our deploy rules"]) == 0
    out = capsys.readouterr().out
    assert "score: relevance" in out and "path: " in out
    assert cli([*args, "--json", "--divergent", "the upload resume token is lost when the task is killed"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert any(r["reached"].startswith("remote") for r in results)
    assert cli([*args, "--json", "--deep", "upload resume token"]) == 0
    assert json.loads(capsys.readouterr().out)["results"]
    assert cli(["stats", "--demo", "--embedder", "none"]) == 0
    out = capsys.readouterr().out
    assert "clusters of linked notes:" in out and "-> [[sync-conflict-policy-v2]]" in out


def test_a_constellation_member_the_prompt_never_reached_still_comes(tmp_path):
    write_note(tmp_path, "a.md", note("a", "rotate the signing key yearly", "goes with [[b]] and [[c]]"))
    write_note(tmp_path, "b.md", note("b", "keep two keys valid during rollover", "goes with [[a]] and [[c]]"))
    write_note(tmp_path, "c.md", note("c", "announce the new fingerprint", "goes with [[a]] and [[b]]"))
    write_note(tmp_path, "d.md", note("d", "unrelated note about lunch orders"))
    with Memory([tmp_path], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        results = mem.recall("signing key rotation", k=1, explain=True)
        assert [r["name"] for r in results][0] == "a" and {r["name"] for r in results} == {"a", "b", "c"}
        mem.usage.apply([])
        mem.index.conn.execute("UPDATE usage SET state = 'archived' WHERE uid LIKE '%/c.md'")
        assert {r["name"] for r in mem.recall("signing key rotation", k=1, refresh=False)} == {"a", "b"}


def test_notes_without_links_are_no_cluster_of_linked_notes(tmp_path):
    from memlane import Memory

    store = tmp_path / "notes"
    store.mkdir()
    for n in range(4):
        (store / f"n{n}.md").write_text(f"---\nname: n{n}\ndescription: note {n}\n---\nbody {n}\n")
    (store / "a.md").write_text("---\nname: a\ndescription: a\n---\nsee [[b]]\n")
    (store / "b.md").write_text("---\nname: b\ndescription: b\n---\nsee [[a]]\n")
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        assert mem.stats()["clusters"] == 1
