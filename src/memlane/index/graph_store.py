"""The link graph as the SQLite index keeps it: edges, future-write markers, hubs, clusters and
constellations, written whole by ``replace_graph`` (``associate/`` computes them from the
units' links) and read by recall's hot path (cached until the index changes)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from .storage import GraphData


class GraphStore:
    """Edges and graph structure (a mixin of ``SQLiteIndex``)."""

    # -- what associate/ computes the graph from, and stores back ---------------------
    def link_facts(self) -> list[dict]:
        """Each unit's id, name, path, scope and the link facts of its meta (links, supersedes,
        superseded_by, its MEMORY.md section and store)."""
        rows = self.conn.execute(
            "SELECT id, name, path, scope, json_extract(meta, '$.links'), json_extract(meta, '$.supersedes'),"
            " json_extract(meta, '$.index_section'), json_extract(meta, '$.store'),"
            " json_extract(meta, '$.superseded_by') FROM units").fetchall()
        return [_facts(*row) for row in rows]

    def link_facts_of(self, uids: Iterable[str]) -> dict[str, dict]:
        """uid -> ``link_facts``'s entry, for the units of ``uids`` that are stored."""
        rows = self._rows_by_uid(
            "SELECT uid, id, name, path, scope, json_extract(meta, '$.links'), json_extract(meta, '$.supersedes'),"
            " json_extract(meta, '$.index_section'), json_extract(meta, '$.store'),"
            " json_extract(meta, '$.superseded_by') FROM units", uids)
        return {uid: _facts(i, n, p, s, links, sup, section, store, by)
                for uid, i, n, p, s, links, sup, section, store, by in rows}

    def stored_structure(self) -> tuple[set[tuple[int, int, str]], set[int], str | None]:
        """(edges, nodes, graph version) as stored: whether the structure must be recomputed."""
        return (set(self.conn.execute("SELECT src, dst, kind FROM edges")),
                {u for (u,) in self.conn.execute("SELECT unit FROM graph_nodes")}, self.get_meta("graph"))

    def replace_graph(self, graph: GraphData) -> None:
        """Store ``graph`` in one transaction; ``graph.nodes is None`` keeps the stored structure."""
        with self.transaction():
            self.set_meta("superseded", json.dumps(graph.superseded))
            self.set_meta("supersedes_loops", json.dumps(sorted(graph.loops)))
            self.conn.execute("DELETE FROM missing_links")
            self.conn.executemany("INSERT INTO missing_links(src, target, kind) VALUES (?,?,?)", graph.missing)
            if graph.nodes is not None:
                self.conn.execute("DELETE FROM edges")
                self.conn.executemany("INSERT INTO edges(src, dst, kind) VALUES (?,?,?)",
                                      [(e.src, e.dst, e.kind) for e in graph.edges])
                self.conn.execute("DELETE FROM graph_nodes")
                self.conn.execute("DELETE FROM constellations")
                self.conn.executemany("INSERT INTO graph_nodes(unit, in_degree, pagerank, cluster) VALUES (?,?,?,?)",
                                      [(n, d, r, c) for n, (d, r, c) in graph.nodes.items()])
                self.conn.executemany("INSERT INTO constellations(id, unit) VALUES (?,?)",
                                      [(cid, unit) for cid, members in enumerate(graph.constellations, start=1)
                                       for unit in members])
                self.set_meta("graph", graph.version)
            self._bump_generation()

    def units_answering(self, keys: list[str]) -> list[dict] | None:
        """id, name and path of every unit answering to one of the link ``keys``
        (``answer_keys``), through ``unit_keys``; None when that table is behind the units."""
        if not self.unit_keys_current():
            return None
        rows = self._rows_for("SELECT u.id, u.name, u.path FROM unit_keys k JOIN units u ON u.id = k.unit"
                              " WHERE k.key IN ({ids})", keys)
        return list({i: {"id": i, "name": n, "path": p} for i, n, p in rows}.values())

    def replace_links_of(self, src: int, edges: list, missing: list[tuple[int, str, str]],
                         kinds: tuple[str, ...]) -> None:
        """``src``'s edges of ``kinds`` and its future-write markers replaced (inside the
        caller's transaction); the in-degree of every note they pointed or now point at
        recounted as ``build_graph`` counts it."""
        marks = ",".join("?" * len(kinds))
        old = {dst for (dst,) in self.conn.execute(f"SELECT dst FROM edges WHERE src = ? AND kind IN ({marks})",
                                                   (src, *kinds))}
        self.conn.execute(f"DELETE FROM edges WHERE src = ? AND kind IN ({marks})", (src, *kinds))
        self.conn.executemany("INSERT OR IGNORE INTO edges(src, dst, kind) VALUES (?,?,?)",
                              [(e.src, e.dst, e.kind) for e in edges])
        self.conn.execute("DELETE FROM missing_links WHERE src = ?", (src,))
        self.conn.executemany("INSERT INTO missing_links(src, target, kind) VALUES (?,?,?)", missing)
        touched = [(dst,) for dst in old | {e.dst for e in edges}]
        self.conn.executemany(
            "UPDATE graph_nodes SET in_degree = (SELECT count(DISTINCT src) FROM edges WHERE dst = ?1 AND src != dst"
            " AND kind NOT IN ('supersedes', 'index')) WHERE unit = ?1", touched)
        self._bump_generation()

    # -- the queries recall runs ---------------------------------------------------------
    def node_count(self) -> int:
        return self._cached("node_count", lambda: self.conn.execute("SELECT count(*) FROM graph_nodes").fetchone()[0])

    def node_info(self, unit_ids: Iterable[int]) -> dict[int, tuple[int, float, int]]:
        """unit -> (in-degree, PageRank, cluster) for the given units."""
        return {u: (d, r, c) for u, d, r, c in self._rows_for(
            "SELECT unit, in_degree, pagerank, cluster FROM graph_nodes WHERE unit IN ({ids})", unit_ids)}

    def constellations_of(self, unit_ids: Iterable[int]) -> list[list[int]]:
        """Every constellation (clique of mutual links) with a member among ``unit_ids``."""
        ids = list(unit_ids)
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        groups: dict[int, list[int]] = {}
        for cid, unit in self.conn.execute(
                f"SELECT id, unit FROM constellations WHERE id IN (SELECT id FROM constellations WHERE unit IN ({marks}))"
                " ORDER BY id, unit", ids):
            groups.setdefault(cid, []).append(unit)
        return list(groups.values())

    def constellation_groups(self) -> list[list[int]]:
        groups: dict[int, list[int]] = {}
        for cid, unit in self.conn.execute("SELECT id, unit FROM constellations ORDER BY id, unit"):
            groups.setdefault(cid, []).append(unit)
        return list(groups.values())

    def adjacency(self) -> dict[int, list[tuple[int, str]]]:
        """The whole graph, undirected: unit -> [(neighbour, edge kind)] (for divergent recall)."""
        def load():
            adjacent: dict[int, list[tuple[int, str]]] = {}
            for src, dst, kind in self.conn.execute("SELECT src, dst, kind FROM edges"):
                adjacent.setdefault(src, []).append((dst, kind))
                adjacent.setdefault(dst, []).append((src, kind))
            return adjacent
        return self._cached("adjacency", load)

    def clusters(self) -> dict[int, int]:
        return self._cached("clusters", lambda: dict(self.conn.execute("SELECT unit, cluster FROM graph_nodes")))

    def cluster_leaders(self) -> dict[int, int]:
        """cluster -> its most central member (highest PageRank), which names it."""
        def load():
            leaders: dict[int, tuple[float, int]] = {}
            for unit, cluster, rank in self.conn.execute("SELECT unit, cluster, pagerank FROM graph_nodes"):
                if cluster not in leaders or (rank, -unit) > (leaders[cluster][0], -leaders[cluster][1]):
                    leaders[cluster] = (rank, unit)
            return {cluster: unit for cluster, (_, unit) in leaders.items()}
        return self._cached("cluster_leaders", load)

    def hubs(self, limit: int = 5) -> list[tuple[int, int, float]]:
        """(unit, in-degree, PageRank) of the most linked-to units."""
        return self.conn.execute("SELECT unit, in_degree, pagerank FROM graph_nodes WHERE in_degree > 0"
                                 " ORDER BY pagerank DESC, unit LIMIT ?", (limit,)).fetchall()

    def neighbours(self, unit_id: int) -> list[tuple[int, str, str]]:
        """(other unit, edge kind, "out" | "in") for every edge touching ``unit_id``."""
        return self.neighbours_of([unit_id]).get(unit_id, [])

    def neighbours_of(self, unit_ids: Iterable[int]) -> dict[int, list[tuple[int, str, str]]]:
        """``neighbours`` for many units at once."""
        out: dict[int, list[tuple[int, str, str]]] = {}
        for unit, other, kind, direction in self._rows_for(
                "SELECT src, dst, kind, 'out' FROM edges WHERE src IN ({ids})"
                " UNION ALL SELECT dst, src, kind, 'in' FROM edges WHERE dst IN ({ids})", unit_ids):
            out.setdefault(unit, []).append((other, kind, direction))
        return out

    def missing_links(self) -> list[tuple[int, str, str]]:
        """Links to notes that do not exist (future-write markers): (unit, target, kind)."""
        return self.conn.execute("SELECT src, target, kind FROM missing_links ORDER BY src").fetchall()


def _facts(unit_id, name, path, scope, links, supersedes, section, store, superseded_by) -> dict:
    return {"id": unit_id, "name": name, "path": path, "scope": scope,
            "meta": {"links": json.loads(links or "[]"), "supersedes": json.loads(supersedes or "[]"),
                     "index_section": section, "store": store, "superseded_by": json.loads(superseded_by or "[]")}}
