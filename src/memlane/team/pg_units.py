"""Units and their facts in the PostgreSQL store: incremental sync by content hash (one
transaction per sync, rows in bulk), the reads the pipeline makes by id, path and
name, and the parse cache — the same answers as ``index/units.py`` gives from SQLite."""

from __future__ import annotations

import json
import time
from pathlib import Path
from collections.abc import Callable, Iterable

from ..config import ChunkStrategy
from ..index.chunking import chunk_texts, text_hash
from ..index.storage import SyncReport, UnitFacts
from ..store.links import link_key
from .tokens import tsvectors

_COLUMNS = ("id", "uid", "name", "title", "description", "keywords", "body", "path", "scope", "type", "meta", "hash",
            "indexed_at")
_SELECT = "SELECT " + ", ".join(_COLUMNS) + " FROM units"
_WRITTEN = ("uid", "name", "title", "description", "keywords", "body", "path", "scope", "type", "meta", "hash",
            "indexed_at", "name_key", "file_key", "ntokens", "tsv")
_TYPED = ("team", "uid", "name", "title", "description", "keywords", "body", "path", "scope", "type", "meta:jsonb",
          "hash", "indexed_at:float8", "name_key", "file_key", "ntokens:int", "tsv:tsvector")
BATCH = 500


def _number(field: str) -> str:
    """A numeric meta field, or NULL when it is absent or not a number."""
    return (f"CASE WHEN jsonb_typeof(u.meta -> '{field}') = 'number' THEN (u.meta ->> '{field}')::float8 END")


class UnitRows:
    """The units table, its full text and chunks (a mixin of ``PostgresStorage``)."""

    # -- sync ---------------------------------------------------------------------
    def sync(self, units: Iterable, *, strategy: ChunkStrategy | str = ChunkStrategy.WHOLE,
             max_chars: int | None = 2000, prune: bool = True,
             progress: Callable[[int, int], None] | None = None) -> SyncReport:
        """Make the namespace hold exactly ``units`` (``prune=False`` only adds and updates)."""
        units = list(units)
        strategy = ChunkStrategy(strategy)
        report = SyncReport()
        with self.transaction():
            max_chars = self._chunking(strategy, max_chars)
            if prune:
                rows = self._rows("SELECT id, uid, hash FROM units WHERE team = %s", (self.namespace,))
            else:
                rows = self._rows("SELECT id, uid, hash FROM units WHERE team = %s AND uid = ANY(%s)",
                                  (self.namespace, [u.uid for u in units]))
            existing = {uid: (unit_id, h) for unit_id, uid, h in rows}
            todo, wanted = [], set()
            for unit in units:
                wanted.add(unit.uid)
                current = existing.get(unit.uid)
                if current and current[1] == unit.content_hash:
                    report.unchanged += 1
                else:
                    todo.append((unit, current[0] if current else None))
                    report.updated += bool(current)
                    report.added += not current
            gone = [unit_id for uid, (unit_id, _) in existing.items() if uid not in wanted] if prune else []
            report.removed = len(gone)
            rewritten = [unit_id for _, unit_id in todo if unit_id is not None]
            old_hashes = [h for (h,) in self._rows("SELECT DISTINCT hash FROM chunks WHERE team = %s AND unit = ANY(%s)",
                                                   (self.namespace, rewritten + gone))] if rewritten or gone else []
            if gone:
                self._run("DELETE FROM units WHERE team = %s AND id = ANY(%s)", (self.namespace, gone))
            for start in range(0, len(todo), BATCH):
                self._write_units(todo[start:start + BATCH], strategy, max_chars)
                if progress:
                    progress(min(start + BATCH, len(todo)), len(todo))
            if report.changed:
                if old_hashes:
                    self._run("DELETE FROM embeddings e WHERE e.team = %(t)s AND e.hash = ANY(%(h)s) AND NOT EXISTS"
                              " (SELECT 1 FROM chunks c WHERE c.team = %(t)s AND c.hash = e.hash)",
                              {"t": self.namespace, "h": old_hashes})
                self._store_text_stats()
                self._bump_generation()
                self._bump_generation("units_generation")  # the link graph follows the units, not the vectors
        if report.changed:
            self._derived.clear()
        return report

    def _chunking(self, strategy: ChunkStrategy, max_chars: int | None) -> int:
        """The chunk length to use; a changed chunking re-chunks everything."""
        if max_chars is None:  # not embedding now: keep the chunking the vectors were made with
            stored = (self.get_meta("chunking") or "").partition(":")
            max_chars = int(stored[2]) if stored[0] == strategy.value and stored[2].isdigit() else 2000
        setting = f"{strategy.value}:{max_chars}"
        if self.get_meta("chunking") != setting:
            self._run("DELETE FROM chunks WHERE team = %s", (self.namespace,))
            self._run("UPDATE units SET hash = '' WHERE team = %s", (self.namespace,))
            self.set_meta("chunking", setting)
        return max_chars

    def _write_units(self, batch: list, strategy: ChunkStrategy, max_chars: int) -> None:
        now = time.time()
        texts = tsvectors([unit for unit, _ in batch])
        rows = {}
        counts = {}
        for (unit, unit_id), (tsv, ntokens, tf) in zip(batch, texts):
            rows[unit.uid] = (unit.uid, unit.name, unit.title, unit.description, unit.keywords, unit.body, unit.path,
                              unit.scope, unit.type, json.dumps(unit.meta, ensure_ascii=False, default=str),
                              unit.content_hash, now, link_key(unit.name), link_key(Path(unit.path).name), ntokens,
                              tsv)
            counts[unit.uid] = (tf, ntokens)
        updates = [(unit, unit_id) for unit, unit_id in batch if unit_id is not None]
        if updates:
            sets = ", ".join(f"{c} = %s" for c in _WRITTEN)
            self._many(f"UPDATE units SET {sets} WHERE id = %s", [rows[u.uid] + (unit_id,) for u, unit_id in updates])
            for table in ("chunks", "postings"):
                self._run(f"DELETE FROM {table} WHERE team = %s AND unit = ANY(%s)",
                          (self.namespace, [unit_id for _, unit_id in updates]))
        fresh = [unit for unit, unit_id in batch if unit_id is None]
        if fresh:
            self._insert("units", _TYPED, ((self.namespace,) + rows[u.uid] for u in fresh))
        ids = dict(self._rows("SELECT uid, id FROM units WHERE team = %s AND uid = ANY(%s)",
                              (self.namespace, [unit.uid for unit, _ in batch])))
        self._insert("chunks", ("team", "unit:bigint", "seq:int", "hash", "text"),
                   ((self.namespace, ids[unit.uid], seq, text_hash(t), t) for unit, _ in batch
                    for seq, t in enumerate(chunk_texts(unit, strategy, max_chars=max_chars))))
        self._insert("postings", ("team", "lexeme", "unit:bigint", "a:int", "b:int", "c:int", "d:int", "ntokens:int"),
                     ((self.namespace, lexeme, ids[uid], *per_field, ntokens) for uid, (tf, ntokens) in counts.items()
                      for lexeme, per_field in tf.items()), batch=5000)

    def _store_text_stats(self) -> None:
        """N and the total token count, for BM25's IDF and average document length."""
        n, tokens = self._one("SELECT count(*), coalesce(sum(ntokens), 0) FROM units WHERE team = %s",
                              (self.namespace,))
        self.set_meta("fts_stats", f"{n}:{tokens}")

    def text_stats(self) -> tuple[int, int]:
        n, _, tokens = (self.get_meta("fts_stats") or "0:0").partition(":")
        return int(n), int(tokens or 0)

    # -- reads ----------------------------------------------------------------------
    def units_by_id(self, ids: Iterable[int]) -> dict[int, dict]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._rows(f"{_SELECT} WHERE team = %s AND id = ANY(%s)", (self.namespace, ids))
        return {row[0]: _row_dict(row) for row in rows}

    def units_by_path(self, paths: Iterable[str]) -> list[dict]:
        paths = list(paths)
        if not paths:
            return []
        return [_row_dict(r) for r in self._rows(f"{_SELECT} WHERE team = %s AND path = ANY(%s) ORDER BY id",
                                                 (self.namespace, paths))]

    def find(self, name_or_path: str) -> list[dict]:
        """Units whose name, file name, relative path or uid equals the argument."""
        key = link_key(name_or_path)
        rows = self._rows(f"{_SELECT} WHERE team = %(t)s AND (uid = %(v)s OR name = %(v)s"
                          " OR (%(k)s <> '' AND (name_key = %(k)s OR file_key = %(k)s))) ORDER BY id",
                          {"t": self.namespace, "v": name_or_path, "k": key})
        return [_row_dict(r) for r in rows]

    def all_ids(self) -> list[int]:
        return [i for (i,) in self._rows("SELECT id FROM units WHERE team = %s ORDER BY id", (self.namespace,))]

    def unit_ids(self, *, types: Iterable[str] | None = None, exclude_scopes: Iterable[str] = ()) -> list[int]:
        sql, params = "SELECT id FROM units WHERE team = %s", [self.namespace]
        if types is not None:
            sql += " AND type = ANY(%s)"
            params.append(list(types))
        excluded = list(exclude_scopes)
        if excluded:
            sql += " AND scope <> ALL(%s)"
            params.append(excluded)
        return [i for (i,) in self._rows(sql + " ORDER BY id", params)]

    def has_units(self) -> bool:
        return self._one("SELECT 1 FROM units WHERE team = %s LIMIT 1", (self.namespace,)) is not None

    def names_of(self, unit_ids: Iterable[int]) -> dict[int, str]:
        ids = list(dict.fromkeys(unit_ids))
        if not ids:
            return {}
        return dict(self._rows("SELECT id, name FROM units WHERE team = %s AND id = ANY(%s)", (self.namespace, ids)))

    def unit_facts(self, unit_ids: Iterable[int]) -> dict[int, UnitFacts]:
        ids = list(dict.fromkeys(unit_ids))
        if not ids:
            return {}
        rows = self._rows(
            f"SELECT u.id, {_number('importance')}, {_number('mtime')}, u.meta ->> 'status', n.pagerank, g.state,"
            " g.recent, g.refs FROM units u LEFT JOIN graph_nodes n ON n.unit = u.id"
            " LEFT JOIN usage g ON g.team = u.team AND g.uid = u.uid WHERE u.team = %s AND u.id = ANY(%s)",
            (self.namespace, ids))
        return {row[0]: UnitFacts(*row[1:]) for row in rows}

    def units_with_paths(self) -> list[int]:
        return self._cached("units_with_paths", lambda: [i for (i,) in self._rows(
            "SELECT id FROM units WHERE team = %s AND jsonb_typeof(meta -> 'paths') = 'array'"
            " AND jsonb_array_length(meta -> 'paths') > 0 ORDER BY id", (self.namespace,))])

    def private_units(self) -> frozenset[int]:
        return self._cached("private_units", lambda: frozenset(i for (i,) in self._rows(
            "SELECT id FROM units WHERE team = %s AND meta -> 'private' = 'true'::jsonb", (self.namespace,))))

    def recall_keywords(self) -> list[tuple[int, str, list[str]]]:
        return self._cached("recall_keywords", lambda: [
            (i, scope, kws if isinstance(kws, list) else []) for i, scope, kws in self._rows(
                "SELECT id, scope, meta -> 'recall' FROM units WHERE team = %s AND keywords <> '' ORDER BY id",
                (self.namespace,))])

    def counts_by(self, column: str) -> dict[str, int]:
        if column not in ("type", "scope"):
            raise ValueError(f"counts_by: {column!r} is not type or scope")
        return dict(self._rows(f"SELECT coalesce({column}, '(none)'), count(*) FROM units WHERE team = %s GROUP BY 1",
                               (self.namespace,)))

    def name_keys(self) -> dict[str, list[int]]:
        """link_key of every unit's name -> its units (the team scope's shadowing reads it)."""
        def load():
            out: dict[str, list[int]] = {}
            for unit_id, key in self._rows("SELECT id, name_key FROM units WHERE team = %s", (self.namespace,)):
                out.setdefault(key, []).append(unit_id)
            return out
        return self._cached("name_keys", load)

    # -- the parse cache ------------------------------------------------------------
    def load_parsed(self) -> dict[str, tuple[int, int, str]]:
        return {path: (size, mtime_ns, note) for path, size, mtime_ns, note in self._rows(
            "SELECT path, size, mtime_ns, note FROM parsed WHERE team = %s", (self.namespace,))}

    def save_parsed(self, fresh: dict[str, tuple[int, int, str]], seen: set[str]) -> None:
        with self.transaction():
            self._many("INSERT INTO parsed (team, path, size, mtime_ns, note) VALUES (%s, %s, %s, %s, %s)"
                       " ON CONFLICT (team, path) DO UPDATE SET size = EXCLUDED.size, mtime_ns = EXCLUDED.mtime_ns,"
                       " note = EXCLUDED.note", [(self.namespace, path, *row) for path, row in fresh.items()])
            self._run("DELETE FROM parsed WHERE team = %s AND NOT (path = ANY(%s))", (self.namespace, list(seen)))


def _row_dict(row) -> dict:
    data = dict(zip(_COLUMNS, row))
    meta = data["meta"]
    data["meta"] = meta if isinstance(meta, dict) else json.loads(meta or "{}")
    return data
