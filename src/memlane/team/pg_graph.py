"""The link graph and usage in the PostgreSQL store: what ``associate/`` computes, kept whole
by ``replace_graph`` and read by recall's hot path (cached until the namespace changes); one
usage row per note with its lifecycle state — the same answers as ``index/graph_store.py`` and
``index/usage_store.py`` give from SQLite."""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..index.storage import GraphData, LifecycleRow


def _ids(unit_ids: Iterable[int]) -> list[int]:
    return list(dict.fromkeys(int(u) for u in unit_ids))


class GraphRows:
    """Edges and graph structure (a mixin of ``PostgresStorage``)."""

    def link_facts(self) -> list[dict]:
        rows = self._rows("SELECT id, name, path, scope, meta -> 'links', meta -> 'supersedes', meta ->> 'index_section',"
                          " meta ->> 'store', meta -> 'superseded_by' FROM units WHERE team = %s ORDER BY id",
                          (self.namespace,))
        return [{"id": i, "name": n, "path": p, "scope": s,
                 "meta": {"links": links or [], "supersedes": sup or [], "index_section": section, "store": store,
                          "superseded_by": by or []}}
                for i, n, p, s, links, sup, section, store, by in rows]

    def stored_structure(self) -> tuple[set[tuple[int, int, str]], set[int], str | None]:
        edges = set(self._rows("SELECT src, dst, kind FROM edges WHERE team = %s", (self.namespace,)))
        nodes = {u for (u,) in self._rows("SELECT unit FROM graph_nodes WHERE team = %s", (self.namespace,))}
        return edges, nodes, self.get_meta("graph")

    def replace_graph(self, graph: GraphData) -> None:
        t = self.namespace
        with self.transaction():
            self.set_meta("superseded", json.dumps(graph.superseded))
            self.set_meta("supersedes_loops", json.dumps(sorted(graph.loops)))
            self._run("DELETE FROM missing_links WHERE team = %s", (t,))
            self._insert("missing_links", ("team", "src:bigint", "target", "kind"), ((t, *m) for m in graph.missing))
            if graph.nodes is not None:
                for table in ("edges", "graph_nodes", "constellations"):
                    self._run(f"DELETE FROM {table} WHERE team = %s", (t,))
                self._insert("edges", ("team", "src:bigint", "dst:bigint", "kind"), ((t, e.src, e.dst, e.kind) for e in graph.edges))
                self._insert("graph_nodes", ("team", "unit:bigint", "in_degree:int", "pagerank:float8", "cluster:bigint"),
                           ((t, n, d, r, c) for n, (d, r, c) in graph.nodes.items()))
                self._insert("constellations", ("team", "id:int", "unit:bigint"),
                           ((t, cid, unit) for cid, members in enumerate(graph.constellations, start=1)
                            for unit in members))
                self.set_meta("graph", graph.version)
            self._bump_generation()
        self._derived.clear()

    def node_count(self) -> int:
        return self._cached("node_count", lambda: self._one("SELECT count(*) FROM graph_nodes WHERE team = %s",
                                                            (self.namespace,))[0])

    def node_info(self, unit_ids: Iterable[int]) -> dict[int, tuple[int, float, int]]:
        return {u: (d, r, c) for u, d, r, c in self._rows(
            "SELECT unit, in_degree, pagerank, cluster FROM graph_nodes WHERE team = %s AND unit = ANY(%s)",
            (self.namespace, _ids(unit_ids)))}

    def constellations_of(self, unit_ids: Iterable[int]) -> list[list[int]]:
        ids = _ids(unit_ids)
        if not ids:
            return []
        groups: dict[int, list[int]] = {}
        for cid, unit in self._rows(
                "SELECT id, unit FROM constellations WHERE team = %(t)s AND id IN"
                " (SELECT id FROM constellations WHERE team = %(t)s AND unit = ANY(%(ids)s)) ORDER BY id, unit",
                {"t": self.namespace, "ids": ids}):
            groups.setdefault(cid, []).append(unit)
        return list(groups.values())

    def constellation_groups(self) -> list[list[int]]:
        groups: dict[int, list[int]] = {}
        for cid, unit in self._rows("SELECT id, unit FROM constellations WHERE team = %s ORDER BY id, unit",
                                    (self.namespace,)):
            groups.setdefault(cid, []).append(unit)
        return list(groups.values())

    def adjacency(self) -> dict[int, list[tuple[int, str]]]:
        def load():
            adjacent: dict[int, list[tuple[int, str]]] = {}
            for src, dst, kind in self._rows("SELECT src, dst, kind FROM edges WHERE team = %s ORDER BY src, dst, kind",
                                             (self.namespace,)):
                adjacent.setdefault(src, []).append((dst, kind))
                adjacent.setdefault(dst, []).append((src, kind))
            return adjacent
        return self._cached("adjacency", load)

    def clusters(self) -> dict[int, int]:
        return self._cached("clusters", lambda: dict(self._rows(
            "SELECT unit, cluster FROM graph_nodes WHERE team = %s ORDER BY unit", (self.namespace,))))

    def cluster_leaders(self) -> dict[int, int]:
        def load():
            leaders: dict[int, tuple[float, int]] = {}
            for unit, cluster, rank in self._rows("SELECT unit, cluster, pagerank FROM graph_nodes WHERE team = %s"
                                                  " ORDER BY unit", (self.namespace,)):
                if cluster not in leaders or (rank, -unit) > (leaders[cluster][0], -leaders[cluster][1]):
                    leaders[cluster] = (rank, unit)
            return {cluster: unit for cluster, (_, unit) in leaders.items()}
        return self._cached("cluster_leaders", load)

    def hubs(self, limit: int = 5) -> list[tuple[int, int, float]]:
        return self._rows("SELECT unit, in_degree, pagerank FROM graph_nodes WHERE team = %s AND in_degree > 0"
                          " ORDER BY pagerank DESC, unit LIMIT %s", (self.namespace, limit))

    def neighbours(self, unit_id: int) -> list[tuple[int, str, str]]:
        return self.neighbours_of([unit_id]).get(unit_id, [])

    def neighbours_of(self, unit_ids: Iterable[int]) -> dict[int, list[tuple[int, str, str]]]:
        ids = _ids(unit_ids)
        out: dict[int, list[tuple[int, str, str]]] = {}
        if not ids:
            return out
        for unit, other, kind, direction in self._rows(
                "SELECT src, dst, kind, 'out' FROM edges WHERE team = %(t)s AND src = ANY(%(ids)s)"
                " UNION ALL SELECT dst, src, kind, 'in' FROM edges WHERE team = %(t)s AND dst = ANY(%(ids)s)",
                {"t": self.namespace, "ids": ids}):
            out.setdefault(unit, []).append((other, kind, direction))
        return out

    def missing_links(self) -> list[tuple[int, str, str]]:
        return self._rows("SELECT src, target, kind FROM missing_links WHERE team = %s ORDER BY src",
                          (self.namespace,))


class UsageRows:
    """The ``usage`` rows (a mixin of ``PostgresStorage``)."""

    def usage_of(self, uid: str) -> tuple | None:
        return self._one("SELECT refs, last_ref, recent, stability FROM usage WHERE team = %s AND uid = %s",
                         (self.namespace, uid))

    def record_usage(self, uid: str, *, first_seen: float, refs: int, last_ref: float | None, recent: str,
                     stability: float) -> None:
        self._run("INSERT INTO usage (team, uid, first_seen, state_since, refs, last_ref, recent, stability)"
                  " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (team, uid) DO UPDATE SET"
                  " refs = EXCLUDED.refs, last_ref = EXCLUDED.last_ref, recent = EXCLUDED.recent,"
                  " stability = EXCLUDED.stability",
                  (self.namespace, uid, first_seen, first_seen, refs, last_ref, recent, stability))

    def ensure_usage_rows(self, now: float) -> None:
        self._run("INSERT INTO usage (team, uid, first_seen, state_since) SELECT team, uid, %s, %s FROM units"
                  " WHERE team = %s ON CONFLICT DO NOTHING", (now, now, self.namespace))

    def set_states(self, changes: list[tuple[str, str, float, str]], *, only_if_different: bool = False,
                   only_if_inactive: bool = False) -> int:
        if not changes:
            return 0
        sql = ("UPDATE usage g SET state = c.state, state_since = c.since, reason = c.reason"
               " FROM unnest(%s::text[], %s::text[], %s::float8[], %s::text[]) AS c(uid, state, since, reason)"
               " WHERE g.team = %s AND g.uid = c.uid")
        if only_if_different:
            sql += " AND coalesce(g.state, 'active') <> c.state"
        if only_if_inactive:
            sql += " AND g.state <> 'active'"
        uids, states, since, reasons = (list(col) for col in zip(*changes))
        return self._run(sql, (uids, states, since, reasons, self.namespace))

    def lifecycle_rows(self) -> list[LifecycleRow]:
        return [LifecycleRow(*row) for row in self._rows(
            "SELECT u.uid, u.name, u.path, u.meta ->> 'status',"
            " CASE WHEN jsonb_typeof(u.meta -> 'mtime') = 'number' THEN (u.meta ->> 'mtime')::float8 END,"
            " g.first_seen, g.last_ref, g.stability, g.state, g.refs, g.reason FROM units u"
            " LEFT JOIN usage g ON g.team = u.team AND g.uid = u.uid WHERE u.team = %s ORDER BY u.id",
            (self.namespace,))]
