"""Hubs (A4) and constellations (A3) from the link graph."""

from __future__ import annotations

import math

from memlane.associate.structure import constellations, in_degree, pagerank


def test_in_degree_counts_distinct_linkers():
    assert in_degree([1, 2, 3], [(1, 3), (2, 3), (2, 3), (3, 3), (3, 1)]) == {1: 1, 2: 0, 3: 2}


def test_pagerank_ranks_the_hub_first_and_sums_to_one():
    edges = [(n, 1) for n in range(2, 8)] + [(1, 2)]
    ranks = pagerank(range(1, 9), edges)  # node 8 is isolated (dangling)
    assert math.isclose(sum(ranks.values()), 1.0, rel_tol=1e-6)
    assert max(ranks, key=ranks.get) == 1 and ranks[2] > ranks[3] > ranks[8] * 0.99
    assert pagerank([], []) == {}


def test_constellations_are_mutual_link_cliques():
    edges = [(1, 2), (2, 1), (2, 3), (3, 2), (1, 3), (3, 1),  # 1-2-3 all mutual: a constellation
             (3, 4), (4, 3),  # 3-4 mutual but only a pair
             (5, 6), (6, 7), (7, 5),  # a one-way cycle is not a constellation
             (8, 9), (9, 8), (9, 10), (10, 9), (8, 10), (10, 8), (10, 11), (11, 10), (8, 11), (11, 8), (9, 11), (11, 9)]
    assert constellations(edges) == [frozenset({8, 9, 10, 11}), frozenset({1, 2, 3})]
    assert constellations([(1, 1)]) == []


def test_demo_store_constellation_and_hub(tmp_path):
    """The demo store declares one constellation (the three migration rules) and one hub."""
    from memlane import Memory, demo_store_path

    with Memory([demo_store_path()], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        mem.refresh()
        conn = mem.index.conn
        names = dict(conn.execute("SELECT id, name FROM units"))
        edges = conn.execute("SELECT src, dst FROM edges WHERE kind != 'supersedes'").fetchall()
    groups = [{names[i] for i in c} for c in constellations(edges)]
    migrations = {"migrations-lock", "migrations-expand-contract", "migrations-backfill-batches"}
    assert any(migrations <= g for g in groups), groups
    ranks = pagerank(names, edges)
    assert names[max(ranks, key=ranks.get)] == "architecture-overview"
