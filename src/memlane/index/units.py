"""Units and their facts in the SQLite index: incremental sync by content hash (one
transaction per sync), the reads the pipeline makes by id, path and name, and the parse cache
that lets a refresh skip notes whose file did not change."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from collections.abc import Callable, Iterable

from ..config import ChunkStrategy
from ..store.note import answer_keys
from .chunking import chunk_texts, text_hash
from .connection import is_corruption
from .schema import WRITES
from .storage import SyncReport, UnitFacts
from .text import fts_text
from .unit import Unit

_COLUMNS = ("id", "uid", "name", "title", "description", "keywords", "body", "path", "scope", "type",
            "meta", "hash", "indexed_at")


#: the private notes and those naming ``paths:``, each read through its partial index (schema
#: migration 8 states the same conditions: SQLite uses such an index only for the very same terms)
PRIVATE_SQL = "SELECT id FROM units WHERE json_extract(meta, '$.private') = 1"
WITH_PATHS_SQL = "SELECT id FROM units WHERE json_array_length(meta, '$.paths') > 0"
#: the vectors of a text no chunk uses any more, for every model (through ``embeddings_hash``)
FORGET_VECTORS_SQL = "DELETE FROM embeddings WHERE hash = ? AND hash NOT IN (SELECT hash FROM chunks)"


class UnitRows:
    """The units table, its full-text rows and chunks (a mixin of ``SQLiteIndex``)."""

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

    def _sync(self, units: list[Unit], strategy: ChunkStrategy, max_chars: int | None, prune: bool,
              progress: Callable[[int, int], None] | None) -> SyncReport:
        report = SyncReport()
        with self.transaction():
            postings_current = self.postings_current()  # before this sync writes
            keys_current = self.unit_keys_current()
            writes_before = self.get_meta(WRITES)
            self._gone_hashes: set[str] = set()  # chunk texts this sync takes away
            rechunked = not self.chunking_holds(strategy, max_chars)
            max_chars = self._chunking(strategy, max_chars)
            existing = self._existing(None if prune else [u.uid for u in units])
            wanted = set()
            changes: dict[int, tuple] = {}  # unit id -> (full-text row before, after)
            for done, unit in enumerate(units, start=1):
                wanted.add(unit.uid)
                current = existing.get(unit.uid)
                if current and current[1] == unit.content_hash:
                    report.unchanged += 1
                else:
                    unit_id, before, after = self._write_unit(unit, current[0] if current else None, strategy,
                                                              max_chars)
                    changes[unit_id] = (changes.get(unit_id, (before,))[0], after)
                    report.updated += bool(current)
                    report.added += not current
                if progress and (done % 50 == 0 or done == len(units)):
                    progress(done, len(units))
            if prune:
                for uid, (uid_id, _) in existing.items():
                    if uid not in wanted:
                        changes[uid_id] = (self._delete_unit(uid_id), None)
                        report.removed += 1
            if report.changed and (prune or rechunked):
                self.conn.execute("DELETE FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)")
            elif report.changed:  # only what these units' old chunks used can have been left unused
                self.conn.executemany(FORGET_VECTORS_SQL, [(h,) for h in sorted(self._gone_hashes)])
            if report.changed or not keys_current:
                self._keep_unit_keys(list(changes) if keys_current else None)
            if report.changed or not postings_current:
                self._keep_postings(changes if postings_current else None)
                self._bump_generation()
            report.writes = (writes_before, self.get_meta(WRITES))
        if report.changed:
            self._vectors.clear()
        return report

    def unit_keys_current(self) -> bool:
        """Whether ``unit_keys`` holds every write to the units (whoever wrote: an older memlane
        moves ``units_changes`` too, through the schema's triggers)."""
        return self.get_meta("unit_keys") == self.get_meta(WRITES)

    def _keep_unit_keys(self, changed: list[int] | None) -> None:
        """Inside a sync: the link keys of the ``changed`` units written anew, or (None) every
        unit's; then marked current."""
        if changed is None:
            self.conn.execute("DELETE FROM unit_keys")
            rows = self.conn.execute("SELECT id, name, path FROM units").fetchall()
        else:
            self._rows_for("DELETE FROM unit_keys WHERE unit IN ({ids})", changed)
            rows = self._rows_for("SELECT id, name, path FROM units WHERE id IN ({ids})", changed)
        self.conn.executemany("INSERT OR IGNORE INTO unit_keys(key, unit) VALUES (?,?)",
                              [(key, uid) for uid, name, path in rows for key in answer_keys(name, path)])
        self.set_meta("unit_keys", self.get_meta(WRITES) or "0")

    def _existing(self, uids: list[str] | None) -> dict[str, tuple[int, str]]:
        """uid -> (unit id, content hash) of every unit, or of ``uids`` only."""
        if uids is None:
            return {uid: (uid_id, h) for uid_id, uid, h in self.conn.execute("SELECT id, uid, hash FROM units")}
        return {uid: (uid_id, h) for uid_id, uid, h in self._rows_by_uid("SELECT id, uid, hash FROM units", uids)}

    def _rows_by_uid(self, select: str, uids: Iterable[str]) -> list[tuple]:
        uids, rows = list(dict.fromkeys(uids)), []
        for start in range(0, len(uids), 400):
            batch = uids[start:start + 400]
            rows += self.conn.execute(f"{select} WHERE uid IN ({','.join('?' * len(batch))})", batch).fetchall()
        return rows

    def _chunk_setting(self, strategy: ChunkStrategy, max_chars: int | None) -> tuple[str, int]:
        if max_chars is None:  # not embedding now: keep the chunking the vectors were made with
            stored = (self.get_meta("chunking") or "").partition(":")
            max_chars = int(stored[2]) if stored[0] == strategy.value and stored[2].isdigit() else 2000
        return f"{strategy.value}:{max_chars}", max_chars

    def chunking_holds(self, strategy: ChunkStrategy | str, max_chars: int | None) -> bool:
        """Whether a sync with this chunking keeps every unit's chunks (else it re-chunks all)."""
        return self.get_meta("chunking") == self._chunk_setting(ChunkStrategy(strategy), max_chars)[0]

    def _chunking(self, strategy: ChunkStrategy, max_chars: int | None) -> int:
        """The chunk length to use; a changed chunking re-chunks everything."""
        setting, max_chars = self._chunk_setting(strategy, max_chars)
        if self.get_meta("chunking") != setting:
            self.conn.execute("DELETE FROM chunks")
            self.conn.execute("UPDATE units SET hash = ''")  # force re-chunking of everything
            self.set_meta("chunking", setting)
        return max_chars

    def _write_unit(self, unit: Unit, unit_id: int | None, strategy: ChunkStrategy,
                    max_chars: int) -> tuple[int, tuple | None, tuple]:
        """Write one unit; returns (its id, its full-text row before (None: new), after)."""
        before = None
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
            before = self._fts_row(unit_id)
            self.conn.execute("DELETE FROM units_fts WHERE rowid = ?", (unit_id,))
            self._gone_hashes.update(h for (h,) in self.conn.execute("SELECT hash FROM chunks WHERE unit = ?",
                                                                     (unit_id,)))
            self.conn.execute("DELETE FROM chunks WHERE unit = ?", (unit_id,))
        name_field = " ".join(p for p in (unit.name, unit.title) if p)
        after = (fts_text(name_field.replace("_", " ").replace("-", " ")), fts_text(unit.fts_description()),
                 fts_text(unit.keywords), fts_text(unit.body))
        self.conn.execute("INSERT INTO units_fts(rowid, name, description, keywords, body) VALUES (?,?,?,?,?)",
                          (unit_id, *after))
        texts = chunk_texts(unit, strategy, max_chars=max_chars)
        self.conn.executemany(
            "INSERT INTO chunks(unit, seq, hash, text) VALUES (?,?,?,?)",
            [(unit_id, seq, text_hash(t), t) for seq, t in enumerate(texts)])
        return unit_id, before, after

    def _delete_unit(self, unit_id: int) -> tuple | None:
        """Delete one unit; returns its full-text row as it was."""
        before = self._fts_row(unit_id)
        self.conn.execute("DELETE FROM units_fts WHERE rowid = ?", (unit_id,))
        self.conn.execute("DELETE FROM chunks WHERE unit = ?", (unit_id,))
        self.conn.execute("DELETE FROM units WHERE id = ?", (unit_id,))
        return before

    def _fts_row(self, unit_id: int) -> tuple | None:
        row = self.conn.execute("SELECT name, description, keywords, body FROM units_fts WHERE rowid = ?",
                                (unit_id,)).fetchone()
        return tuple(row) if row else None

    # -- reads ----------------------------------------------------------------------
    def units_by_id(self, ids: Iterable[int]) -> dict[int, dict]:
        return {row[0]: _row_dict(row) for row in self._rows_for("SELECT * FROM units WHERE id IN ({ids})", ids)}

    def units_by_path(self, paths: Iterable[str]) -> list[dict]:
        paths = list(paths)
        if not paths:
            return []
        marks = ",".join("?" * len(paths))
        return [_row_dict(r) for r in self.conn.execute(f"SELECT * FROM units WHERE path IN ({marks})", paths)]

    def find(self, name_or_path: str) -> list[dict]:
        """Units whose name, file name, relative path or uid equals the argument."""
        from ..store.links import link_key

        rows = self.conn.execute("SELECT * FROM units").fetchall()
        key = link_key(name_or_path)
        return [_row_dict(r) for r in rows if name_or_path in (r[1], r[2])
                or link_key(r[2]) == key or link_key(Path(r[7]).name) == key]

    def all_ids(self) -> list[int]:
        return [r[0] for r in self.conn.execute("SELECT id FROM units")]

    def unit_stamps(self) -> dict[int, float]:
        """Each unit's id and when its row was last written (every write of a unit sets it anew)."""
        return dict(self.conn.execute("SELECT id, indexed_at FROM units"))

    def unit_ids(self, *, types: Iterable[str] | None = None, exclude_scopes: Iterable[str] = ()) -> list[int]:
        """Units of the given types (all when None), outside the given scopes."""
        sql, params = "SELECT id FROM units WHERE 1", []
        if types is not None:
            types = list(types)
            sql += f" AND type IN ({','.join('?' * len(types))})"
            params += types
        for scope in exclude_scopes:
            sql += " AND scope != ?"
            params.append(scope)
        return [i for (i,) in self.conn.execute(sql, params)]

    def has_units(self) -> bool:
        return self.conn.execute("SELECT 1 FROM units LIMIT 1").fetchone() is not None

    def names_of(self, unit_ids: Iterable[int]) -> dict[int, str]:
        return dict(self._rows_for("SELECT id, name FROM units WHERE id IN ({ids})", unit_ids))

    def unit_facts(self, unit_ids: Iterable[int]) -> dict[int, UnitFacts]:
        """What scoring and selection read per unit, in one query (see ``UnitFacts``)."""
        return {row[0]: UnitFacts(*row[1:]) for row in self._rows_for(
            "SELECT u.id, json_extract(u.meta, '$.importance'), json_extract(u.meta, '$.mtime'),"
            " json_extract(u.meta, '$.status'), n.pagerank, g.state, g.recent, g.refs"
            " FROM units u LEFT JOIN graph_nodes n ON n.unit = u.id LEFT JOIN usage g ON g.uid = u.uid"
            " WHERE u.id IN ({ids})", unit_ids)}

    def units_with_paths(self) -> list[int]:
        """Units that declare ``paths:`` globs (kept until the index changes)."""
        return self._cached("units_with_paths", lambda: [i for (i,) in self.conn.execute(WITH_PATHS_SQL)])

    def private_units(self) -> frozenset[int]:
        """Units marked ``private: true`` (kept until the index changes)."""
        return self._cached("private_units", lambda: frozenset(i for (i,) in self.conn.execute(PRIVATE_SQL)))

    def recall_keywords(self) -> list[tuple[int, str, list[str]]]:
        """(unit, scope, its ``recall:`` keywords) for every unit that has some."""
        return self._cached("recall_keywords", lambda: [
            (uid, scope, json.loads(meta or "{}").get("recall", [])) for uid, scope, meta in
            self.conn.execute("SELECT id, scope, meta FROM units WHERE keywords != ''")])

    def counts_by(self, column: str) -> dict[str, int]:
        """How many units per ``type`` or ``scope``."""
        if column not in ("type", "scope"):
            raise ValueError(f"counts_by: {column!r} is not type or scope")
        return dict(self.conn.execute(f"SELECT coalesce({column}, '(none)'), count(*) FROM units GROUP BY 1"))

    # -- the parse cache ------------------------------------------------------------
    def load_parsed(self) -> dict[str, tuple[int, int, str]]:
        return {path: (size, mtime_ns, note) for path, size, mtime_ns, note
                in self.conn.execute("SELECT path, size, mtime_ns, note FROM parsed")}

    def parsed_stats(self) -> dict[str, str]:
        """path -> "size:mtime_ns" of every cached parse (a narrow index: no note is read)."""
        return dict(self.conn.execute("SELECT path, size || ':' || mtime_ns FROM parsed INDEXED BY parsed_stats"))

    def save_parsed_rows(self, fresh: dict[str, tuple[int, int, str]]) -> None:
        """Store newly parsed notes (nothing is forgotten)."""
        with self.transaction():
            self.conn.executemany("INSERT OR REPLACE INTO parsed(path, size, mtime_ns, note) VALUES (?,?,?,?)",
                                  [(path, *row) for path, row in fresh.items()])

    def save_parsed(self, fresh: dict[str, tuple[int, int, str]], seen: set[str]) -> None:
        """Store newly parsed notes and forget paths that are gone."""
        with self.transaction():
            self.conn.executemany("INSERT OR REPLACE INTO parsed(path, size, mtime_ns, note) VALUES (?,?,?,?)",
                                  [(path, *row) for path, row in fresh.items()])
            gone = [(p,) for (p,) in self.conn.execute("SELECT path FROM parsed INDEXED BY parsed_stats")
                    if p not in seen]
            self.conn.executemany("DELETE FROM parsed WHERE path = ?", gone)


def _row_dict(row) -> dict:
    data = dict(zip(_COLUMNS, row))
    data["meta"] = json.loads(data["meta"] or "{}")
    return data
