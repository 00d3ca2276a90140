"""The SQLite index (I1): WAL mode, a busy timeout for many hook processes at once,
incremental sync by content hash, and self-healing when the file is corrupt."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .chunking import ChunkStrategy, chunk_texts, text_hash
from .connection import connect, is_corruption, open_healing, set_aside
from .schema import FTS_COLUMNS, migrate
from .text import fts_match_expression, fts_text
from .unit import Unit

log = logging.getLogger("memlane.index")

BUSY_TIMEOUT_MS = 5000
#: bump when what is derived from the units (graph, hubs, constellations) is computed differently:
#: every index then rebuilds it on its next sync
GRAPH_VERSION = "5"
SYNC_BATCH = 500


@dataclass
class SyncReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    healed: bool = False
    skipped_write: str | None = None  # why the index was not written (locked, read-only)

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.removed


@dataclass
class VectorMatrix:
    """All chunk vectors of one model: row i belongs to unit ``unit_ids[i]``."""

    model: str
    unit_ids: "object"  # numpy int64 array
    matrix: "object"  # numpy float32 (n, dim)
    generation: int = 0
    units: "object" = None  # distinct unit ids, in order
    starts: "object" = None  # first row of each unit, or None when one row per unit
    position: dict = field(default_factory=dict)  # unit id -> index into ``units``

    def __post_init__(self) -> None:
        import numpy as np

        ids = self.unit_ids
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.zeros(0, dtype=np.int64)
        self.units = ids[starts]
        self.starts = None if len(starts) == len(ids) else starts
        self.position = {uid: pos for pos, uid in enumerate(self.units.tolist())}


class Index:
    """One SQLite file (or ``:memory:``) holding the units of a store set."""

    def __init__(self, path: Path | str, *, fts_weights: dict[str, float] | None = None,
                 busy_timeout_ms: int = BUSY_TIMEOUT_MS):
        self.path = str(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.fts_weights = {c: 1.0 for c in FTS_COLUMNS} | (fts_weights or {})
        self._conn: sqlite3.Connection | None = None
        self._vectors: dict[str, VectorMatrix] = {}
        self._derived: dict[str, tuple[int, object]] = {}
        self.healed = False
        self.heals = 0

    # -- connection ---------------------------------------------------------------
    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _setup(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)

    def _open(self) -> sqlite3.Connection:
        conn, healed = open_healing(self.path, self._setup, busy_timeout_ms=self.busy_timeout_ms,
                                    probe="SELECT count(*) FROM units")
        if healed:
            self._mark_healed()
        return conn

    def heal(self, exc: BaseException) -> sqlite3.Connection:
        """Move the corrupt file aside (kept for inspection) and start a fresh index."""
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
        set_aside(self.path, exc)
        self._mark_healed()
        self._conn = connect(self.path, self._setup, busy_timeout_ms=self.busy_timeout_ms)
        return self._conn

    def _mark_healed(self) -> None:
        self.healed = True
        self.heals += 1  # a resident process rebuilds at once when this moves (see Memory.refresh)
        self._vectors.clear()
        self._derived.clear()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def check_integrity(self) -> str | None:
        """None when healthy, else the problem found (SQLite quick_check + FTS5 integrity-check)."""
        try:
            row = self.conn.execute("PRAGMA quick_check").fetchone()
            if row and row[0] != "ok":
                return f"quick_check: {row[0]}"
            self.conn.execute("INSERT INTO units_fts(units_fts) VALUES('integrity-check')")
        except sqlite3.DatabaseError as exc:
            return str(exc)
        return None

    # -- metadata -----------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        """Record a value outside any sync (its own small transaction)."""
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def _set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation", "0") or 0)

    # -- sync ---------------------------------------------------------------------
    def sync(self, units: Iterable[Unit], *, strategy: ChunkStrategy | str = ChunkStrategy.WHOLE,
             max_chars: int | None = 2000, prune: bool = True,
             progress: Callable[[int, int], None] | None = None) -> SyncReport:
        """Make the index hold exactly ``units`` (``prune=False`` only adds/updates)."""
        try:
            return self._sync(list(units), ChunkStrategy(strategy), max_chars, prune, progress)
        except sqlite3.DatabaseError as exc:
            if is_corruption(exc) and self.path != ":memory:":
                self.heal(exc)
                report = self._sync(list(units), ChunkStrategy(strategy), max_chars, prune, progress)
                report.healed = True
                return report
            raise

    def _sync(self, units: list[Unit], strategy: ChunkStrategy, max_chars: int, prune: bool,
              progress: Callable[[int, int], None] | None) -> SyncReport:
        report = SyncReport()
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if max_chars is None:  # not embedding now: keep the chunking the vectors were made with
                stored = (self.get_meta("chunking") or "").partition(":")
                max_chars = int(stored[2]) if stored[0] == strategy.value and stored[2].isdigit() else 2000
            setting = f"{strategy.value}:{max_chars}"
            if self.get_meta("chunking") != setting:
                conn.execute("DELETE FROM chunks")
                conn.execute("UPDATE units SET hash = ''")  # force re-chunking of everything
                self._set_meta("chunking", setting)
            existing = {uid: (uid_id, h) for uid_id, uid, h in conn.execute("SELECT id, uid, hash FROM units")}
            wanted = set()
            for done, unit in enumerate(units, start=1):
                wanted.add(unit.uid)
                current = existing.get(unit.uid)
                if current and current[1] == unit.content_hash:
                    report.unchanged += 1
                else:
                    self._write_unit(unit, current[0] if current else None, strategy, max_chars)
                    if current:
                        report.updated += 1
                    else:
                        report.added += 1
                if progress and (done % 50 == 0 or done == len(units)):
                    progress(done, len(units))
            if prune:
                for uid, (uid_id, _) in existing.items():
                    if uid not in wanted:
                        self._delete_unit(uid_id)
                        report.removed += 1
            rebuild = report.changed or self.get_meta("graph") != GRAPH_VERSION
            if rebuild:
                self._rebuild_graph()
                self._set_meta("generation", str(self.generation + 1))
            if report.changed:
                conn.execute("DELETE FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if report.changed:
            self._vectors.clear()
        return report

    def _write_unit(self, unit: Unit, unit_id: int | None, strategy: ChunkStrategy, max_chars: int) -> None:
        row = (unit.uid, unit.name, unit.title, unit.description, unit.keywords, unit.body, unit.path,
               unit.scope, unit.type, json.dumps(unit.meta, ensure_ascii=False, default=str),
               unit.content_hash, time.time())
        if unit_id is None:
            cur = self.conn.execute(
                "INSERT INTO units(uid, name, title, description, keywords, body, path, scope, type, meta,"
                " hash, indexed_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", row)
            unit_id = cur.lastrowid
        else:
            self.conn.execute(
                "UPDATE units SET uid=?, name=?, title=?, description=?, keywords=?, body=?, path=?, scope=?,"
                " type=?, meta=?, hash=?, indexed_at=? WHERE id=?", row + (unit_id,))
            self.conn.execute("DELETE FROM units_fts WHERE rowid = ?", (unit_id,))
            self.conn.execute("DELETE FROM chunks WHERE unit = ?", (unit_id,))
        name_field = " ".join(p for p in (unit.name, unit.title) if p)
        self.conn.execute(
            "INSERT INTO units_fts(rowid, name, description, keywords, body) VALUES (?,?,?,?,?)",
            (unit_id, fts_text(name_field.replace("_", " ").replace("-", " ")), fts_text(unit.fts_description()),
             fts_text(unit.keywords), fts_text(unit.body)))
        texts = chunk_texts(unit, strategy, max_chars=max_chars)
        self.conn.executemany(
            "INSERT INTO chunks(unit, seq, hash, text) VALUES (?,?,?,?)",
            [(unit_id, seq, text_hash(t), t) for seq, t in enumerate(texts)])

    def _rebuild_graph(self) -> None:
        """Recompute every edge and future-write marker (inside the sync transaction); hubs,
        constellations and clusters only when the edges or the notes changed (most edits
        touch neither)."""
        from ..associate.graph import resolve_links

        rows = self.conn.execute(
            "SELECT id, name, path, scope, json_extract(meta, '$.links'), json_extract(meta, '$.supersedes'),"
            " json_extract(meta, '$.index_section'), json_extract(meta, '$.store'),"
            " json_extract(meta, '$.superseded_by') FROM units").fetchall()
        units = [{"id": i, "name": n, "path": p, "scope": s,
                  "meta": {"links": json.loads(links or "[]"), "supersedes": json.loads(sup or "[]"),
                           "index_section": section, "store": store, "superseded_by": json.loads(by or "[]")}}
                 for i, n, p, s, links, sup, section, store, by in rows]
        graph = resolve_links(units)
        self._set_meta("superseded", json.dumps(_superseded_map(units, graph.edges)))
        edges = {(e.src, e.dst, e.kind) for e in graph.edges}
        nodes = [u["id"] for u in units]
        unchanged = (self.get_meta("graph") == GRAPH_VERSION
                     and edges == set(self.conn.execute("SELECT src, dst, kind FROM edges"))
                     and set(nodes) == {u for (u,) in self.conn.execute("SELECT unit FROM graph_nodes")})
        self.conn.execute("DELETE FROM missing_links")
        self.conn.executemany("INSERT INTO missing_links(src, target, kind) VALUES (?,?,?)", graph.missing)
        if unchanged:
            return
        self.conn.execute("DELETE FROM edges")
        self.conn.executemany("INSERT INTO edges(src, dst, kind) VALUES (?,?,?)",
                              [(e.src, e.dst, e.kind) for e in graph.edges])
        self._store_structure(nodes, [(e.src, e.dst) for e in graph.edges if e.kind not in ("supersedes", "index")],
                              [(e.src, e.dst) for e in graph.edges])
        self._set_meta("graph", GRAPH_VERSION)

    def _store_structure(self, nodes: list[int], links: list[tuple[int, int]],
                         all_edges: list[tuple[int, int]]) -> None:
        """Hubs and constellations from the links notes wrote; clusters from every edge."""
        from ..associate.structure import clusters, constellations, in_degree, pagerank

        degree, ranks = in_degree(nodes, links), pagerank(nodes, links)
        community = clusters(nodes, all_edges)
        self.conn.execute("DELETE FROM graph_nodes")
        self.conn.execute("DELETE FROM constellations")
        self.conn.executemany("INSERT INTO graph_nodes(unit, in_degree, pagerank, cluster) VALUES (?,?,?,?)",
                              [(n, degree[n], ranks[n], community[n]) for n in nodes])
        self.conn.executemany("INSERT INTO constellations(id, unit) VALUES (?,?)",
                              [(cid, unit) for cid, members in enumerate(constellations(links, min_size=2), start=1)
                               for unit in members])

    def _cached(self, key: str, load: Callable[[], object]):
        """``load()``'s result, kept until the index changes: for reads on recall's hot path."""
        generation = self.generation
        hit = self._derived.get(key)
        if hit is None or hit[0] != generation:
            hit = self._derived[key] = (generation, load())
        return hit[1]

    def superseded(self) -> dict[int, str]:
        """Units another note supersedes (a ``supersedes`` edge), or that name a ``superseded_by``:
        unit id -> the name of what replaces it."""
        return self._cached("superseded", self._load_superseded)

    def units_with_paths(self) -> list[int]:
        """Units that declare ``paths:`` globs (kept until the index changes)."""
        return self._cached("units_with_paths", lambda: [i for (i,) in self.conn.execute(
            "SELECT id FROM units WHERE json_array_length(json_extract(meta, '$.paths')) > 0")])

    def private_units(self) -> frozenset[int]:
        """Units marked ``private: true`` (G3; kept until the index changes)."""
        return self._cached("private_units", lambda: frozenset(i for (i,) in self.conn.execute(
            "SELECT id FROM units WHERE json_extract(meta, '$.private') = 1")))

    def recall_keywords(self) -> list[tuple[int, str, list[str]]]:
        """(unit, scope, its ``recall:`` keywords) for every unit that has some."""
        return self._cached("recall_keywords", lambda: [
            (uid, scope, json.loads(meta or "{}").get("recall", [])) for uid, scope, meta in
            self.conn.execute("SELECT id, scope, meta FROM units WHERE keywords != ''")])

    def _load_superseded(self) -> dict[int, str]:
        """Computed when the graph is rebuilt (one small row to read, not every note's meta)."""
        return {int(k): v for k, v in json.loads(self.get_meta("superseded") or "{}").items()}

    def supersedes_loops(self) -> list[int]:
        pairs = self.conn.execute("SELECT src, dst FROM edges WHERE kind = 'supersedes'").fetchall()
        return sorted(_on_cycles(pairs))

    def node_count(self) -> int:
        return self._cached("node_count", lambda: self.conn.execute("SELECT count(*) FROM graph_nodes").fetchone()[0])

    def node_info(self, unit_ids: Iterable[int]) -> dict[int, tuple[int, float, int]]:
        """unit -> (in-degree, PageRank, cluster) for the given units."""
        ids = list(unit_ids)
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {u: (d, r, c) for u, d, r, c in self.conn.execute(
            f"SELECT unit, in_degree, pagerank, cluster FROM graph_nodes WHERE unit IN ({marks})", ids)}

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

    def constellation_groups(self) -> list[list[int]]:
        groups: dict[int, list[int]] = {}
        for cid, unit in self.conn.execute("SELECT id, unit FROM constellations ORDER BY id, unit"):
            groups.setdefault(cid, []).append(unit)
        return list(groups.values())

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

    def names_of(self, unit_ids: Iterable[int]) -> dict[int, str]:
        return dict(self._rows_for("SELECT id, name FROM units WHERE id IN ({ids})", unit_ids))

    def unit_facts(self, unit_ids: Iterable[int]) -> dict[int, tuple]:
        """What scoring and selection read per unit, in one query: (declared importance, mtime,
        declared status, PageRank, lifecycle state, recent uses JSON, references)."""
        return {row[0]: row[1:] for row in self._rows_for(
            "SELECT u.id, json_extract(u.meta, '$.importance'), json_extract(u.meta, '$.mtime'),"
            " json_extract(u.meta, '$.status'), n.pagerank, g.state, g.recent, g.refs"
            " FROM units u LEFT JOIN graph_nodes n ON n.unit = u.id LEFT JOIN usage g ON g.uid = u.uid"
            " WHERE u.id IN ({ids})", unit_ids)}

    def _rows_for(self, sql: str, unit_ids: Iterable[int], batch_size: int = 400) -> list[tuple]:
        """Rows of ``sql`` with every ``{ids}`` bound to the unit ids, in batches (SQLite caps
        the number of parameters)."""
        ids = list(dict.fromkeys(unit_ids))
        rows: list[tuple] = []
        for start in range(0, len(ids), batch_size):
            batch = ids[start:start + batch_size]
            marks = ",".join("?" * len(batch))
            rows += self.conn.execute(sql.format(ids=marks), batch * sql.count("{ids}")).fetchall()
        return rows

    def missing_links(self) -> list[tuple[int, str, str]]:
        """Links to notes that do not exist (S5 future-write markers): (unit, target, kind)."""
        return self.conn.execute("SELECT src, target, kind FROM missing_links ORDER BY src").fetchall()

    def _delete_unit(self, unit_id: int) -> None:
        self.conn.execute("DELETE FROM units_fts WHERE rowid = ?", (unit_id,))
        self.conn.execute("DELETE FROM chunks WHERE unit = ?", (unit_id,))
        self.conn.execute("DELETE FROM units WHERE id = ?", (unit_id,))

    # -- the parse cache ------------------------------------------------------------
    def load_parsed(self) -> dict[str, tuple[int, int, str]]:
        return {path: (size, mtime_ns, note) for path, size, mtime_ns, note
                in self.conn.execute("SELECT path, size, mtime_ns, note FROM parsed")}

    def save_parsed(self, fresh: dict[str, tuple[int, int, str]], seen: set[str]) -> None:
        """Store newly parsed notes and forget paths that are gone."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany("INSERT OR REPLACE INTO parsed(path, size, mtime_ns, note) VALUES (?,?,?,?)",
                                  [(path, *row) for path, row in fresh.items()])
            gone = [(p,) for (p,) in self.conn.execute("SELECT path FROM parsed") if p not in seen]
            self.conn.executemany("DELETE FROM parsed WHERE path = ?", gone)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    # -- embeddings -----------------------------------------------------------------
    def pending_chunks(self, model: str) -> list[tuple[str, str]]:
        """(hash, text) of chunks with no vector yet for ``model``, each hash once."""
        return self.conn.execute(
            "SELECT c.hash, min(c.text) FROM chunks c LEFT JOIN embeddings e"
            " ON e.model = ? AND e.hash = c.hash WHERE e.hash IS NULL GROUP BY c.hash", (model,)).fetchall()

    def pending_count(self, model: str) -> int:
        """How many distinct chunk texts still lack a vector for ``model``."""
        return self.conn.execute(
            "SELECT count(DISTINCT c.hash) FROM chunks c LEFT JOIN embeddings e ON e.model = ? AND e.hash = c.hash"
            " WHERE e.hash IS NULL", (model,)).fetchone()[0]

    def store_embeddings(self, model: str, hashes: list[str], vectors) -> None:
        import numpy as np

        rows = [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in zip(hashes, vectors)]
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany("INSERT OR REPLACE INTO embeddings(model, hash, vec) VALUES (?,?,?)", rows)
            self._set_meta("generation", str(self.generation + 1))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self._vectors.pop(model, None)

    def vector_matrix(self, model: str) -> VectorMatrix | None:
        """All vectors of ``model``, loaded on first use and kept until the index changes."""
        import numpy as np

        generation = self.generation
        cached = self._vectors.get(model)
        if cached is not None and cached.generation == generation:
            return cached
        rows = self.conn.execute(
            "SELECT c.unit, e.vec FROM chunks c JOIN embeddings e ON e.model = ? AND e.hash = c.hash"
            " ORDER BY c.unit, c.seq", (model,)).fetchall()
        if not rows:
            return None
        unit_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        vm = VectorMatrix(model, unit_ids, matrix, generation)
        self._vectors[model] = vm
        return vm

    # -- reads ----------------------------------------------------------------------
    def keyword_search(self, terms: list[str], limit: int = 200) -> list[tuple[int, float]]:
        """(unit id, BM25 score, higher = better) for units matching any term: FTS5's Okapi BM25
        with IDF and per-column weights (BM25F-style)."""
        if not terms:
            return []
        weights = ", ".join(str(float(self.fts_weights[c])) for c in FTS_COLUMNS)
        sql = (f"SELECT rowid, -bm25(units_fts, {weights}) AS score FROM units_fts"
               " WHERE units_fts MATCH ? ORDER BY score DESC LIMIT ?")
        return [(r[0], r[1]) for r in self.conn.execute(sql, (fts_match_expression(terms), limit))]

    def units_by_id(self, ids: Iterable[int]) -> dict[int, dict]:
        return {row[0]: self._row_dict(row) for row in self._rows_for("SELECT * FROM units WHERE id IN ({ids})", ids)}

    def units_by_path(self, paths: Iterable[str]) -> list[dict]:
        paths = list(paths)
        if not paths:
            return []
        marks = ",".join("?" * len(paths))
        return [self._row_dict(r) for r in self.conn.execute(f"SELECT * FROM units WHERE path IN ({marks})", paths)]

    def _row_dict(self, row) -> dict:
        cols = ("id", "uid", "name", "title", "description", "keywords", "body", "path", "scope", "type",
                "meta", "hash", "indexed_at")
        data = dict(zip(cols, row))
        data["meta"] = json.loads(data["meta"] or "{}")
        return data

    def find(self, name_or_path: str) -> list[dict]:
        """Units whose name, file name, relative path or uid equals the argument."""
        rows = self.conn.execute("SELECT * FROM units").fetchall()
        from ..store.links import link_key

        key = link_key(name_or_path)
        hits = [self._row_dict(r) for r in rows if name_or_path in (r[1], r[2])
                or link_key(r[2]) == key or link_key(Path(r[7]).name) == key]
        return hits

    def all_ids(self) -> list[int]:
        return [r[0] for r in self.conn.execute("SELECT id FROM units")]

    def counts(self) -> dict[str, int]:
        c = self.conn
        return {
            "units": c.execute("SELECT count(*) FROM units").fetchone()[0],
            "chunks": c.execute("SELECT count(*) FROM chunks").fetchone()[0],
            "embeddings": c.execute("SELECT count(*) FROM embeddings").fetchone()[0],
        }


def _superseded_map(units: list[dict], edges) -> dict[int, str]:
    """unit -> the name of what replaces it: another note ``supersedes`` it, or it names a
    ``superseded_by``. A ``supersedes`` loop (a replaces b, b replaces a) says nothing about
    which is current: notes on a loop are not demoted (``supersedes_loops`` lists them)."""
    names = {u["id"]: u["name"] for u in units}
    pairs = [(e.src, e.dst) for e in edges if e.kind == "supersedes"]
    looped = _on_cycles(pairs)
    out = {dst: names.get(src, str(src)) for src, dst in pairs if dst not in looped}
    for unit in units:
        by = unit["meta"].get("superseded_by") or []
        if by and unit["id"] not in out:
            out[unit["id"]] = ", ".join(map(str, by))
    return out


def _on_cycles(pairs: list[tuple[int, int]]) -> set[int]:
    """Nodes that lie on a directed cycle of ``pairs`` (supersedes chains are short)."""
    forward: dict[int, set[int]] = {}
    for src, dst in pairs:
        forward.setdefault(src, set()).add(dst)
    on_cycle: set[int] = set()
    for start in forward:
        stack, seen = list(forward[start]), set()
        while stack:
            node = stack.pop()
            if node == start:
                on_cycle.add(start)
                break
            if node not in seen:
                seen.add(node)
                stack.extend(forward.get(node, ()))
    return on_cycle
