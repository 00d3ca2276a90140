"""The transcript domain (D1): "have we done this before?" over Claude Code session logs.

A unit is one conversational turn — what the user typed or the assistant answered in words —
read from ``~/.claude/projects/<project>/<session-id>.jsonl`` (format: reference
Claude Code's transcript format). Tool calls, tool results, thinking, slash-command echoes, system
reminders, sidechains (subagents), ``<synthetic>`` messages and bookkeeping lines are not
turns; the lines of one streamed assistant message (same ``message.id``) are one turn.

Sync is by delta: per file we keep its inode, size,
mtime, how far it was read and a fingerprint of that prefix; a grown file is read from where
it stopped, a rewritten or truncated one is indexed again, a vanished one leaves the index.
A torn last line (a writer mid-line) is left for the next refresh.

Ranking is Okapi BM25 (FTS5) blended with IDF-weighted query coverage — the share of the
query's information (sum of IDF of its terms) a turn contains. Coverage is absolute (it does
not depend on the other candidates), so it carries the threshold: a query whose best turn
shares only an incidental word with it returns nothing. A hit comes with ±``window`` turns of
its session.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from ..index.text import fts_match_expression, fts_text, query_terms
from ..guards.privacy import OUTSIDE, PrivacyGate
from ..retrieve.recalled import shorten
from .base import Recalled, index_file, open_index, term_coverage
from .turns import Piece, extract_turn

__all__ = ["TranscriptDomain", "extract_turn", "filter_sql"]

SCHEMA_VERSION = "1"
MAX_TURN_CHARS = 8_000  # a turn's indexed text; a pasted log must not bloat the index
NEIGHBOUR_CHARS = 2_000  # a window turn beside the hit is shown up to this long
FINGERPRINT_BYTES = 65_536  # head and tail of the read prefix that must still match
CANDIDATES = 200
#: activation = coverage ** COVERAGE_POWER * (bm25 / best bm25) ** (1 - COVERAGE_POWER)
#: measured on LoCoMo (600 queries), ranking Recall@10: 0.610 at 0 (BM25 alone), 0.626 at 0.5, 0.628 at 0.75
COVERAGE_POWER = 0.75
#: below it nothing is recalled (R3). On LoCoMo, asking each question of *another* conversation
#: (an unrelated haystack on similar topics) returns 1.8 turns of 10 at 0.35 (6.2 at 0.30 with
#: power 0.5), while the own conversation keeps Recall@10 0.579 of 0.628
MIN_ACTIVATION = 0.35
VECTOR_WEIGHT, KEYWORD_WEIGHT = 0.7, 0.3  # memlane's measured hybrid weights (config.RetrieveConfig)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, root TEXT, inode INTEGER, size INTEGER, mtime_ns INTEGER,
    offset INTEGER, fingerprint TEXT, session TEXT, project TEXT, next_turn INTEGER,
    bad_lines INTEGER);
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY, path TEXT, session TEXT, turn INTEGER, role TEXT, time TEXT, ts REAL,
    project TEXT, cwd TEXT, msg_id TEXT, text TEXT, chars INTEGER, hash TEXT, UNIQUE (path, turn));
CREATE INDEX IF NOT EXISTS turns_msg ON turns (path, msg_id);
CREATE INDEX IF NOT EXISTS turns_session ON turns (session);
CREATE VIRTUAL TABLE IF NOT EXISTS turns_fts USING fts5(
    text, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS vectors (model TEXT, hash TEXT, vec BLOB, PRIMARY KEY (model, hash));
"""

_UNPARSEABLE = object()


def _epoch(stamp: str | date | datetime | None, *, end_of_day: bool = False) -> float | None:
    """Seconds since the epoch for an ISO date or datetime (naive = UTC); None if unreadable.
    ``end_of_day``: a bare date means the end of that day (for ``until``)."""
    if stamp in (None, ""):
        return None
    if isinstance(stamp, datetime):
        moment = stamp
    elif isinstance(stamp, date):
        moment = datetime(stamp.year, stamp.month, stamp.day)
        moment += timedelta(days=1) if end_of_day else timedelta(0)
    else:
        text = str(stamp).strip().replace("Z", "+00:00")
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if end_of_day and len(text) == 10:  # a bare date: until the end of it
            moment += timedelta(days=1)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def filter_sql(filters: dict | None) -> tuple[str, list]:
    """A WHERE fragment over ``turns t`` (and its parameters) for recall's filters: session (id
    or prefix), since / until (ISO date or datetime, on the turn's time; until a bare date
    includes that day), project (substring of the project folder name or cwd)."""
    clauses, params = [], []
    filters = filters or {}
    unknown = set(filters) - {"session", "since", "until", "project"}
    if unknown:
        raise ValueError(f"unknown transcript filter(s) {sorted(unknown)}; known: session, since, until, project")
    if filters.get("session"):
        clauses.append("t.session LIKE ? ESCAPE '\\'")
        params.append(_like_escape(str(filters["session"])) + "%")
    for key, op in (("since", ">="), ("until", "<")):
        if filters.get(key):
            when = _epoch(filters[key], end_of_day=key == "until")
            if when is None:
                raise ValueError(f"filter {key}: not an ISO date or datetime: {filters[key]!r}")
            clauses.append(f"t.ts {op} ?")
            params.append(when)
    if filters.get("project"):
        clauses.append("(t.project LIKE ? ESCAPE '\\' OR t.cwd LIKE ? ESCAPE '\\')")
        needle = "%" + _like_escape(str(filters["project"])) + "%"
        params += [needle, needle]
    return (" AND ".join(clauses) or "1"), params


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _fingerprint(path: Path, length: int) -> str:
    """A hash of the first ``length`` bytes' head and tail (64 KiB each): a rewrite or a
    truncation shows there, and checking it never re-reads a long transcript whole."""
    digest = hashlib.sha256(str(length).encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(min(length, FINGERPRINT_BYTES)))
        if length > FINGERPRINT_BYTES:
            handle.seek(max(FINGERPRINT_BYTES, length - FINGERPRINT_BYTES))
            digest.update(handle.read(length - handle.tell()))
    return digest.hexdigest()[:32]


def transcript_files(root: Path) -> list[Path]:
    """The session files of a root: the file itself, a project folder's ``*.jsonl``, or those of
    every project folder of ``~/.claude/projects`` (subagent logs are sidechains: not read)."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    found = set(root.glob("*.jsonl")) | set(root.glob("*/*.jsonl"))
    return sorted(p for p in found if p.is_file() and "subagents" not in p.parts[-3:])


# -- the domain ---------------------------------------------------------------------------------
def _create(conn: sqlite3.Connection) -> None:
    version = None
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
        version = (conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() or [None])[0]
    if version != SCHEMA_VERSION:  # the index is derived: a new layout is a rebuild
        for table in ("files", "turns", "turns_fts", "vectors", "meta"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.executescript(_SCHEMA)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))


class TranscriptDomain:
    """Claude Code transcripts, indexed by turn, recalled with a window of their session."""

    name = "transcripts"

    def __init__(self, roots: list[Path], *, gate: PrivacyGate = PrivacyGate(),
                 index_path: Path | str | None = None, embedder=None, window: int = 2,
                 min_activation: float = MIN_ACTIVATION):
        from ..config import cache_home

        self.roots = [Path(r).expanduser().resolve() for r in roots]
        self.gate, self.embedder, self.window = gate, embedder, max(0, int(window))
        self.min_activation = min_activation
        self.index_path = str(index_path if index_path is not None
                              else index_file(cache_home(), "transcripts", self.roots))
        self._conn: sqlite3.Connection | None = None
        self._matrix: tuple | None = None  # (key, ids, vectors) for the vector leg

    # -- storage ------------------------------------------------------------------------------
    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = open_index(self.index_path, _create)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "TranscriptDomain":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- refresh ------------------------------------------------------------------------------
    def refresh(self) -> dict:
        """Bring the index in line with the transcripts; returns {files, sessions, turns_added,
        turns_removed, files_changed, excluded (files the privacy gate keeps out, by count only),
        skipped: [{path, reason}], seconds}."""
        started = time.perf_counter()
        report = {"files": 0, "sessions": 0, "turns_added": 0, "turns_removed": 0, "files_changed": 0,
                  "excluded": 0, "skipped": [], "seconds": 0.0}
        seen: set[str] = set()
        for root in self.roots:
            files = transcript_files(root)
            if not files:
                reason = "not found" if not root.exists() else "no transcripts (*.jsonl) in it"
                report["skipped"].append({"path": str(root), "reason": reason})
            base = root if root.is_dir() else root.parent
            for path in files:
                if self.gate.outside(path, base):
                    report["skipped"].append({"path": str(path), "reason": OUTSIDE})
                    continue
                blocked = self.gate.blocks(path, base)
                if blocked:  # counted, never named: an excluded file's name stays in its scope too (G3)
                    report["excluded"] += 1
                    continue
                seen.add(str(path))
                report["files"] += 1
                self._sync_file(path, base, report)
        for (path,) in self.conn.execute("SELECT path FROM files").fetchall():
            if path not in seen:  # deleted, moved out of the roots, or now excluded
                report["turns_removed"] += self._forget(path)
        report["sessions"] = self.conn.execute("SELECT count(DISTINCT session) FROM turns").fetchone()[0]
        report["seconds"] = round(time.perf_counter() - started, 4)
        return report

    def _forget(self, path: str) -> int:
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            removed = self._delete_turns(path)
            conn.execute("DELETE FROM files WHERE path = ?", (path,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._matrix = None
        return removed

    def _delete_turns(self, path: str) -> int:
        ids = [r[0] for r in self.conn.execute("SELECT id FROM turns WHERE path = ?", (path,))]
        for start in range(0, len(ids), 500):
            batch = ids[start:start + 500]
            marks = ",".join("?" * len(batch))
            self.conn.execute(f"DELETE FROM turns_fts WHERE rowid IN ({marks})", batch)
            self.conn.execute(f"DELETE FROM turns WHERE id IN ({marks})", batch)
        return len(ids)

    def _sync_file(self, path: Path, root: Path, report: dict) -> None:
        try:
            stat = path.stat()
        except OSError as exc:
            report["skipped"].append({"path": str(path), "reason": f"unreadable: {exc.strerror or exc}"})
            return
        if self._unchanged(path, stat) is True:
            return
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = self._unchanged(path, stat)  # again under the write lock: another process may have synced it
            if row is True:
                conn.execute("COMMIT")
                return
            start, next_turn, bad_before = 0, 1, 0
            if row and row[0] == stat.st_ino and stat.st_size >= row[3] and _fingerprint(path, row[3]) == row[4]:
                start, next_turn, bad_before = row[3], row[5], row[6]  # grown: read only the new part
            elif row:
                report["turns_removed"] += self._delete_turns(str(path))  # rewritten or truncated
            offset, next_turn, added, bad = self._read_from(path, start, next_turn)
            conn.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                         (str(path), str(root), stat.st_ino, stat.st_size, stat.st_mtime_ns, offset,
                          _fingerprint(path, offset), path.stem, path.parent.name, next_turn, bad_before + bad))
            conn.execute("COMMIT")
        except OSError as exc:
            conn.execute("ROLLBACK")
            report["skipped"].append({"path": str(path), "reason": f"unreadable: {exc.strerror or exc}"})
            return
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if offset > start or start == 0:
            report["files_changed"] += 1
        report["turns_added"] += added
        if bad:
            report["skipped"].append({"path": str(path), "reason": f"{bad} unparseable line(s) skipped"})
        if added:
            self._matrix = None

    def _unchanged(self, path: Path, stat):
        """True when the file is as last indexed, else its ``files`` row (None if new)."""
        row = self.conn.execute("SELECT inode, size, mtime_ns, offset, fingerprint, next_turn, bad_lines"
                                " FROM files WHERE path = ?", (str(path),)).fetchone()
        if row and (row[0], row[1], row[2]) == (stat.st_ino, stat.st_size, stat.st_mtime_ns):
            return True
        return row

    def _read_from(self, path: Path, start: int, next_turn: int) -> tuple[int, int, int, int]:
        """Index the complete lines after byte ``start``; returns (bytes consumed up to,
        next turn number, turns added, unparseable lines)."""
        offset, added, bad = start, 0, 0
        with open(path, "rb") as handle:
            handle.seek(start)
            for raw in handle:
                complete = raw.endswith(b"\n")
                try:
                    record = json.loads(raw.decode("utf-8", "replace")) if raw.strip() else None
                except (ValueError, RecursionError):
                    record = _UNPARSEABLE
                if not complete and (record is _UNPARSEABLE or not isinstance(record, (dict, type(None)))):
                    break  # a torn last line: a writer is mid-line; read it next time
                if record is _UNPARSEABLE:
                    record, bad = None, bad + 1
                offset += len(raw)
                piece = extract_turn(record) if record is not None else None
                if piece is None:
                    if record is not None and not isinstance(record, dict):
                        bad += 1
                    continue
                if self._store_piece(path, piece, next_turn):
                    next_turn, added = next_turn + 1, added + 1
        return offset, next_turn, added, bad

    def _store_piece(self, path: Path, piece: Piece, turn: int) -> bool:
        """Add ``piece`` as turn ``turn``, or fold it into the turn of the same streamed
        message; True when a new turn was added."""
        conn = self.conn
        if piece.msg_id:
            same = conn.execute("SELECT id, text, chars FROM turns WHERE path = ? AND msg_id = ?",
                                (str(path), piece.msg_id)).fetchone()
            if same:
                if piece.text not in same[1]:  # a re-emitted block adds nothing
                    self._write_text(same[0], same[1] + "\n\n" + piece.text, same[2] + 2 + len(piece.text))
                return False
        text = piece.text[:MAX_TURN_CHARS]
        cursor = conn.execute(
            "INSERT INTO turns (path, session, turn, role, time, ts, project, cwd, msg_id, text, chars, hash)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (str(path), path.stem, turn, piece.role, piece.time, _epoch(piece.time), path.parent.name, piece.cwd,
             piece.msg_id, text, len(piece.text), _sha(text)))
        conn.execute("INSERT INTO turns_fts (rowid, text) VALUES (?, ?)", (cursor.lastrowid, fts_text(text)))
        return True

    def _write_text(self, turn_id: int, text: str, chars: int) -> None:
        text = text[:MAX_TURN_CHARS]
        self.conn.execute("UPDATE turns SET text = ?, chars = ?, hash = ? WHERE id = ?",
                          (text, chars, _sha(text), turn_id))
        self.conn.execute("DELETE FROM turns_fts WHERE rowid = ?", (turn_id,))
        self.conn.execute("INSERT INTO turns_fts (rowid, text) VALUES (?, ?)", (turn_id, fts_text(text)))

    # -- recall -------------------------------------------------------------------------------
    def recall(self, query: str, k: int = 5, *, filters: dict | None = None) -> list[Recalled]:
        """At most ``k`` turns above the threshold, best first, each with its window; a turn
        inside an earlier hit's window is folded into it, overlapping windows are clipped."""
        scored = self.rank(query, filters=filters)
        scored = [(tid, act, why) for tid, act, why in scored if act >= self.min_activation]
        return self._with_windows(scored, k)

    def rank(self, query: str, *, filters: dict | None = None, limit: int = CANDIDATES) -> list[tuple]:
        """(turn id, activation, why) for the candidate turns, best first, no threshold."""
        terms = query_terms(query)
        if not terms:
            return []  # no content word ("thanks!"): nothing to recall (R3)
        where, params = filter_sql(filters)
        keyword = self._keyword_leg(terms, where, params, limit)
        vector = self._vector_leg(query, where, params, limit) if self.embedder is not None else {}
        out = []
        for tid in set(keyword) | set(vector):
            kw, why = keyword.get(tid, (0.0, ""))
            if tid in vector:
                cos, leg = vector[tid]
                act = (VECTOR_WEIGHT * leg + KEYWORD_WEIGHT * kw) / (VECTOR_WEIGHT + KEYWORD_WEIGHT)
                why = f"{why}; cosine {cos:.2f}".lstrip("; ")
            else:
                act = kw  # no vector for it: the keyword leg alone, never 0 (R1)
            out.append((tid, act, why))
        out.sort(key=lambda item: (-item[1], item[0]))
        return out[:limit]

    def _keyword_leg(self, terms: list[str], where: str, params: list, limit: int) -> dict[int, tuple]:
        """BM25 blended with IDF-weighted coverage of the query (module docstring)."""
        conn = self.conn
        rows = conn.execute(
            "SELECT f.rowid, -bm25(turns_fts) FROM turns_fts f JOIN turns t ON t.id = f.rowid"
            f" WHERE turns_fts MATCH ? AND {where} ORDER BY bm25(turns_fts) LIMIT ?",
            [fts_match_expression(terms), *params, limit]).fetchall()
        if not rows:
            return {}
        total = conn.execute("SELECT count(*) FROM turns").fetchone()[0]
        weights, matched = term_coverage(conn, "turns_fts", total, terms, [r[0] for r in rows])
        mass = sum(weights.values()) or 1.0
        best = max(r[1] for r in rows) or 1.0
        out = {}
        for tid, score in rows:
            coverage = sum(weights[t] for t in matched[tid]) / mass
            act = coverage ** COVERAGE_POWER * (max(score, 0.0) / best) ** (1 - COVERAGE_POWER)
            out[tid] = (act, f"matched {', '.join(matched[tid]) or '-'} (coverage {coverage:.2f}, bm25 {score:.2f})")
        return out

    def _vector_leg(self, query: str, where: str, params: list, limit: int) -> dict[int, tuple]:
        """Cosine over the turns' embeddings (embedded lazily on first recall, cached by text
        hash), calibrated on the embedder's own scale; (cosine, calibrated) per turn."""
        import numpy as np

        from ..retrieve.fusion import calibrate_cosine

        ids, matrix = self._vectors()
        if not len(ids):
            return {}
        qvec = np.asarray(self.embedder.embed_query(query[: self.embedder.max_chars]), dtype=np.float32)
        sims = matrix @ qvec
        if where != "1":
            allowed = {r[0] for r in self.conn.execute(f"SELECT t.id FROM turns t WHERE {where}", params)}
            sims = np.where(np.isin(ids, list(allowed)), sims, -2.0)
        floor = self.embedder.min_cosine
        strong = max(self.embedder.strong_cosine, floor + 1e-6)
        top = np.argsort(-sims, kind="stable")[:limit]
        return {int(ids[i]): (float(sims[i]), calibrate_cosine(float(sims[i]), floor, strong))
                for i in top if sims[i] >= floor}

    def _vectors(self):
        import numpy as np

        conn, model = self.conn, self.embedder.name
        key = conn.execute("SELECT count(*), max(id) FROM turns").fetchone()
        if self._matrix is not None and self._matrix[0] == key:
            return self._matrix[1], self._matrix[2]
        pending = conn.execute("SELECT DISTINCT t.hash, t.text FROM turns t LEFT JOIN vectors v"
                               " ON v.hash = t.hash AND v.model = ? WHERE v.hash IS NULL", (model,)).fetchall()
        for start in range(0, len(pending), 32):
            batch = pending[start:start + 32]
            vecs = self.embedder.embed_batch([t[: self.embedder.max_chars] for _, t in batch], is_query=False)
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?)",
                             [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for (h, _), v in zip(batch, vecs)])
        rows = conn.execute("SELECT t.id, v.vec FROM turns t JOIN vectors v ON v.hash = t.hash AND v.model = ?"
                            " ORDER BY t.id", (model,)).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        matrix = (np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows]) if rows
                  else np.zeros((0, self.embedder.dim), dtype=np.float32))
        self._matrix = (key, ids, matrix)
        return ids, matrix

    # -- windows ------------------------------------------------------------------------------
    def _with_windows(self, scored: list[tuple], k: int) -> list[Recalled]:
        hits: list[Recalled] = []
        taken: dict[str, list[list[int]]] = {}  # path -> [first, last] of windows already returned
        rows = self._turn_rows([tid for tid, _, _ in scored])
        files = {}
        for tid, act, why in scored:
            if len(hits) >= k:
                break
            row = rows.get(tid)
            if row is None:
                continue
            path = row["path"]
            if path not in files:
                files[path] = self.conn.execute("SELECT root FROM files WHERE path = ?", (path,)).fetchone()
            if files[path] is None or self.gate.blocks(path, files[path][0]):
                continue  # never leak a file the gate blocks, even if the index is stale
            turn = row["turn"]
            windows = taken.setdefault(path, [])
            holder = next((h for h in hits
                           if h.path == path and h.meta["window"][0] <= turn <= h.meta["window"][1]), None)
            if holder is not None:
                holder.meta.setdefault("also_matched", []).append(turn)
                continue
            first, last = max(1, turn - self.window), turn + self.window
            for lo, hi in windows:  # clip so no turn is returned twice
                if hi < turn:
                    first = max(first, hi + 1)
                elif lo > turn:
                    last = min(last, lo - 1)
            hit = self._hit(row, act, why, first, last)
            windows.append(hit.meta["window"])
            hits.append(hit)
        return hits

    def _turn_rows(self, ids: list[int]) -> dict[int, dict]:
        cols = ("id", "path", "session", "turn", "role", "time", "project", "cwd", "text", "chars")
        out = {}
        for start in range(0, len(ids), 500):
            batch = ids[start:start + 500]
            marks = ",".join("?" * len(batch))
            for r in self.conn.execute(f"SELECT {', '.join(cols)} FROM turns WHERE id IN ({marks})", batch):
                out[r[0]] = dict(zip(cols, r))
        return out

    def _hit(self, row: dict, activation: float, why: str, first: int, last: int) -> Recalled:
        around = self.conn.execute("SELECT turn, role, text, chars FROM turns WHERE path = ? AND turn BETWEEN ? AND ?"
                                   " ORDER BY turn", (row["path"], first, last)).fetchall()
        lines = []
        for turn, role, text, chars in around:
            if turn == row["turn"]:
                shown = text + (f"\n[… {chars - len(text)} more characters not indexed]" if chars > len(text) else "")
                lines.append(f"» {role}: {shown}")
            else:
                cut = text[:NEIGHBOUR_CHARS]
                more = chars - len(cut)
                lines.append(f"{role}: {cut}" + (f" [… {more} more characters]" if more > 0 else ""))
        window = [around[0][0], around[-1][0]] if around else [row["turn"], row["turn"]]
        first_line = row["text"].strip().splitlines()[0] if row["text"].strip() else ""
        meta = {"session": row["session"], "turn": row["turn"], "role": row["role"], "time": row["time"],
                "project": row["project"], "cwd": row["cwd"], "window": window}
        if row["chars"] > len(row["text"]):
            meta["truncated"] = {"indexed_chars": len(row["text"]), "chars": row["chars"]}
        return Recalled.of_domain(domain=self.name, path=row["path"], address=f"session {row['session']} turn {row['turn']}",
                         text="\n".join(lines), activation=round(min(1.0, max(0.0, activation)), 4),
                         title=f"{row['role']}: {shorten(first_line, 80)}", why=why, meta=meta)

    def fetch(self, address: str) -> Recalled | None:
        """The turn at ``address`` ("session <id> turn <n>") with its window, or None."""
        parts = address.split()
        if len(parts) != 4 or parts[0] != "session" or parts[2] != "turn" or not parts[3].isdigit():
            return None
        cols = ("id", "path", "session", "turn", "role", "time", "project", "cwd", "text", "chars")
        found = self.conn.execute(f"SELECT {', '.join(cols)} FROM turns WHERE session = ? AND turn = ?",
                                  (parts[1], int(parts[3]))).fetchone()
        if found is None:
            return None
        row = dict(zip(cols, found))
        if self.gate.blocks(row["path"]):
            return None
        return self._hit(row, 1.0, "fetched by address", max(1, row["turn"] - self.window), row["turn"] + self.window)

    # -- introspection ------------------------------------------------------------------------
    def stats(self) -> dict:
        conn = self.conn
        return {"files": conn.execute("SELECT count(*) FROM files").fetchone()[0],
                "sessions": conn.execute("SELECT count(DISTINCT session) FROM turns").fetchone()[0],
                "turns": conn.execute("SELECT count(*) FROM turns").fetchone()[0],
                "bad_lines": conn.execute("SELECT coalesce(sum(bad_lines), 0) FROM files").fetchone()[0]}
