"""The knowledge domain (S4, D1): any markdown folder — docs, ADRs, a wiki — mounted as a library.

The recall unit is a ``##`` section, returned verbatim: the exact slice of the file from its
heading line to the next heading of the same or a higher level, addressed by its content path
``rel/file.md#Title/Section/Sub`` (never a byte offset, which the next edit would invalidate;
docs/design.md, "Reversible, never drop"). Text before the first ``##`` (the ``#`` title and its intro) is a unit addressed
``file.md#Title``; a document without headings is one unit addressed by its file name. A
section over :data:`SECTION_CHARS` is split at its next level of sub-headings, each piece keeping
its full heading path; a long section without sub-headings stays whole and only its head is
embedded.

Search is the notes' hybrid recipe (retrieve/fusion.py) on the domain's own
SQLite file: FTS5 BM25 with the heading path weighted above the body, min-max normalised; an
absolute, per-model calibrated cosine on the heading path plus the section's head; 0.6·vector +
0.4·keyword, a section without a vector renormalised to its keyword leg. Two thresholds keep
an unrelated query silent (R3): the fused score (``min_score``) and, for the keyword leg, the
share of the query's IDF weight a section actually contains (``min_coverage``: 0.3 keyword-only,
0.5 with vectors, measured on bench/knowledge.py) — a single common word shared by accident does
not make a section relevant.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import stat
import time
from pathlib import Path

from ..index.schema import migrate
from ..index.text import fts_match_expression, fts_text, query_terms
from ..guards.privacy import OUTSIDE, PrivacyGate, excluded_by
from ..records import dataclass, field
from ..retrieve.fusion import Legs, calibrate_cosine, fuse_hybrid, min_max
from .base import Recalled, index_file, open_index, term_coverage
from .markdown import SECTION_CHARS, Section, split_sections

__all__ = ["KnowledgeDomain", "KnowledgeSettings", "Section", "split_sections", "MARKDOWN_SUFFIXES"]

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
EMBED_CHARS = 2000  # the head of a section (after its heading path) that gets embedded
MAX_FILE_BYTES = 1_000_000  # as the notes' index.max_file_bytes
PARSER_VERSION = "2"  # bump when sections are cut differently: every file is then re-read
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages"}  # and every hidden folder

# -- the index ---------------------------------------------------------------------------------
_SCHEMA = (
    # 1: files by (size, mtime) with their content hash; sections and their full text; vectors by text hash
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE files (path TEXT PRIMARY KEY, root TEXT NOT NULL, rel TEXT NOT NULL, size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL, note TEXT NOT NULL DEFAULT '', skipped INTEGER NOT NULL);
    CREATE TABLE sections (id INTEGER PRIMARY KEY, path TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
        address TEXT NOT NULL, headings TEXT NOT NULL, text TEXT NOT NULL, start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL, split INTEGER NOT NULL, ehash TEXT NOT NULL);
    CREATE INDEX sections_path ON sections(path);
    CREATE INDEX sections_address ON sections(address);
    CREATE VIRTUAL TABLE sections_fts USING fts5(headings, file, body,
        tokenize = 'porter unicode61 remove_diacritics 2');
    CREATE TABLE embeddings (model TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (model, hash));
    """,
)


_HIT_COLUMNS = "s.path, s.address, s.headings, s.text, s.start_line, s.end_line, s.split, f.rel, f.note, f.root"


@dataclass
class KnowledgeSettings:
    """Ranking settings; the defaults are the seed's recipe, checked on bench/knowledge.py."""

    vector_weight: float = 0.6
    keyword_weight: float = 0.4
    min_score: float = 0.30  # fused score below which nothing is recalled (R3)
    min_coverage: float = 0.30  # keyword leg: share of the query's IDF weight a section must contain
    min_coverage_hybrid: float = 0.50  # the same when the vector leg carries the paraphrases (measured)
    fts_weights: dict[str, float] = field(default_factory=lambda: {"headings": 4.0, "file": 2.0, "body": 1.0})
    candidates: int = 100
    section_chars: int = SECTION_CHARS
    max_file_bytes: int = MAX_FILE_BYTES


def _digest(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data).hexdigest()[:32]


def _embed_text(headings: list[str], rel: str, text: str) -> str:
    """What is embedded: the heading path, then the section's head (its heading lines dropped)."""
    label = " > ".join(headings) or rel
    body = text.split("\n", 1)[1] if text.lstrip().startswith("#") and "\n" in text else text
    return f"{label}\n\n{body.strip()}"[:EMBED_CHARS]


def _create(conn: sqlite3.Connection) -> None:
    """The schema, by ordered steps (``PRAGMA user_version`` says how many ran)."""
    conn.execute("PRAGMA foreign_keys = ON")
    migrate(conn, _SCHEMA)
    conn.execute("SELECT count(*) FROM sections").fetchone()


class KnowledgeDomain:
    """Markdown folders as a library of verbatim ``##`` sections (see the module docstring)."""

    name = "knowledge"

    def __init__(self, roots: list[Path], *, gate: PrivacyGate = PrivacyGate(), index_path: Path | str | None = None,
                 embedder=None, settings: KnowledgeSettings | None = None):
        from .. import config

        self.roots = [Path(r).expanduser() for r in roots]
        self.gate = gate
        self.settings = settings or KnowledgeSettings()
        self.notice = ""
        self.embedder = self._load(embedder)
        self.index_path = str(index_path or index_file(config.cache_home(), self.name, self.roots))
        self._conn: sqlite3.Connection | None = None
        self._matrix: tuple[str, object, object] | None = None  # (generation, section ids, vectors)

    def _load(self, embedder):
        """An embedder instance, a registered name, or None/"none" for keyword-only; a missing
        model degrades to keyword-only with a notice, never an error (I3)."""
        if embedder is None or not isinstance(embedder, str):
            return embedder
        from ..embed import resolve_embedder

        found, notice = resolve_embedder(embedder)
        self.notice = notice or ""
        return found

    # -- connection ---------------------------------------------------------------------------
    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = open_index(self.index_path, _create)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._matrix = None

    def _meta(self, key: str, default: str = "") -> str:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def _set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- refresh ------------------------------------------------------------------------------
    def _files(self, skipped: list[dict]) -> tuple[dict[str, tuple[str, str, os.stat_result]], int]:
        """{absolute path: (its folder, its address prefix, stat)} of every markdown file the gate
        lets through, and how many the gate kept out (never opened)."""
        found: dict[str, tuple[str, str, os.stat_result]] = {}
        excluded = 0
        prefix_roots = len(self.roots) > 1
        for root in self.roots:
            root = Path(os.path.abspath(root))
            if root.is_file():
                entries = [(str(root.absolute()), root.name, root.parent)]
            elif root.is_dir():
                entries = [(path, (f"{root.name}/" if prefix_roots else "") + rel, root)
                           for path, rel in _walk(root, skipped)]
            else:
                skipped.append({"path": str(root), "reason": "not found"})
                continue
            for path, rel, base in entries:
                if self.gate.outside(path, base):
                    skipped.append({"path": path, "reason": OUTSIDE})
                    continue
                if self.gate.blocks(path, base):
                    excluded += 1
                    continue
                try:
                    st = os.stat(path)
                except OSError as exc:
                    skipped.append({"path": path, "reason": f"unreadable: {exc.strerror or exc}"})
                    continue
                if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read until a writer came
                    skipped.append({"path": path, "reason": "not a regular file"})
                    continue
                found[path] = (str(base), rel, st)
        return found, excluded

    def refresh(self) -> dict:
        """Index what changed: unchanged files cost a stat, a changed file's sections are replaced,
        a deleted (or newly excluded) file's removed; then embed the sections that lack a vector."""
        started = time.perf_counter()
        report = {"files": 0, "sections": 0, "added": 0, "updated": 0, "removed": 0, "embedded": 0,
                  "skipped": [], "warnings": [], "excluded": 0, "seconds": 0.0}
        found, report["excluded"] = self._files(report["skipped"])
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if self._meta("parser") != f"{PARSER_VERSION}:{self.settings.section_chars}":
                conn.execute("DELETE FROM files")
                conn.execute("DELETE FROM sections_fts")
                self._set_meta("parser", f"{PARSER_VERSION}:{self.settings.section_chars}")
            stored = {row[0]: row[1:] for row in conn.execute("SELECT path, size, mtime_ns, hash, rel FROM files")}
            for path, (base, rel, st) in sorted(found.items()):
                old = stored.get(path)
                if old and old[0] == st.st_size and old[1] == st.st_mtime_ns and old[3] == rel:
                    continue
                outcome = self._index_file(path, base, rel, st, old)
                if outcome:
                    report["added" if old is None else "updated"] += 1
            gone = [p for p in stored if p not in found]
            for path in gone:
                self._drop(path)
                conn.execute("DELETE FROM files WHERE path = ?", (path,))
            report["removed"] = len(gone)
            if report["added"] or report["updated"] or report["removed"]:
                self._set_meta("generation", str(time.time_ns()))
            self._set_meta("refreshed", str(time.time()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        for path, note, skipped in conn.execute("SELECT path, note, skipped FROM files WHERE note != '' ORDER BY path"):
            report["skipped" if skipped else "warnings"].append({"path": path, "reason": note})
        report["embedded"] = self._embed_pending(report["warnings"])
        report["files"] = len(found)
        report["sections"] = conn.execute("SELECT count(*) FROM sections").fetchone()[0]
        if self.notice:
            report["warnings"].append({"path": "", "reason": self.notice})
        report["seconds"] = round(time.perf_counter() - started, 4)
        return report

    def _index_file(self, path: str, base: str, rel: str, st: os.stat_result, old) -> bool:
        """(Re)index one file; False when its content did not change (only its stat is updated)."""
        note, skipped, data = "", 1, b""
        if st.st_size > self.settings.max_file_bytes:
            note = f"too big: {st.st_size} bytes (cap {self.settings.max_file_bytes})"
        else:
            try:
                with open(path, "rb") as handle:
                    data = handle.read(self.settings.max_file_bytes + 1)
            except OSError as exc:
                note = f"unreadable: {exc.strerror or exc}"
            else:
                if b"\0" in data[:8192]:
                    note = "binary file"
                else:
                    skipped = 0
        digest = _digest(data) if not skipped else f"skip:{note}"
        if old and old[2] == digest and old[3] == rel:
            self.conn.execute("UPDATE files SET size = ?, mtime_ns = ? WHERE path = ?", (st.st_size, st.st_mtime_ns, path))
            return False
        text = ""
        if not skipped:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                text = data.decode("utf-8", errors="replace")
                note = f"not UTF-8 (byte {exc.start}): decoded with replacement characters"
        self._drop(path)
        self.conn.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?)",
                          (path, base, rel, st.st_size, st.st_mtime_ns, digest, note, skipped))
        if not skipped:
            self._store_sections(path, rel, text)
        return True

    def _store_sections(self, path: str, rel: str, text: str) -> None:
        sections, _ = split_sections(text, cap=self.settings.section_chars)
        seen: dict[str, int] = {}
        for section in sections:
            address = f"{rel}#{'/'.join(section.headings)}" if section.headings else rel
            seen[address] = seen.get(address, 0) + 1
            if seen[address] > 1:  # two sections with the same heading path: number the later ones
                address = f"{address}~{seen[address]}"
            body = section.text(text)
            cursor = self.conn.execute(
                "INSERT INTO sections (path, address, headings, text, start_line, end_line, split, ehash)"
                " VALUES (?,?,?,?,?,?,?,?)",
                (path, address, json.dumps(section.headings, ensure_ascii=False), body, section.start_line,
                 section.end_line, int(section.split), _digest(_embed_text(section.headings, rel, body))))
            words = re.sub(r"[/_.\-#]+", " ", rel.rsplit(".", 1)[0])
            self.conn.execute("INSERT INTO sections_fts (rowid, headings, file, body) VALUES (?,?,?,?)",
                              (cursor.lastrowid, fts_text(" / ".join(section.headings)), fts_text(words), fts_text(body)))

    def _drop(self, path: str) -> None:
        self.conn.execute("DELETE FROM sections_fts WHERE rowid IN (SELECT id FROM sections WHERE path = ?)", (path,))
        self.conn.execute("DELETE FROM sections WHERE path = ?", (path,))

    def _embed_pending(self, warnings: list[dict], batch_size: int = 32) -> int:
        """Embed each section text hash that has no vector for this embedder yet (only what changed)."""
        if self.embedder is None:
            return 0
        import numpy as np

        model = self.embedder.name
        pending: dict[str, str] = {}
        for ehash, headings, rel, text in self.conn.execute(
                "SELECT s.ehash, s.headings, f.rel, s.text FROM sections s JOIN files f ON f.path = s.path"
                " WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = ? AND e.hash = s.ehash)", (model,)):
            pending.setdefault(ehash, _embed_text(json.loads(headings), rel, text))
        items = list(pending.items())
        done = 0
        for start in range(0, len(items), batch_size):
            batch = items[start:start + batch_size]
            try:
                vectors = self.embedder.embed_passages([t[: self.embedder.max_chars] for _, t in batch])
            except Exception as exc:  # noqa: BLE001 - a failing model degrades to keyword-only
                warnings.append({"path": "", "reason": f"embedding failed, keyword-only for now: {exc}"})
                break
            self._write([("INSERT OR REPLACE INTO embeddings VALUES (?,?,?)", (model, h, np.asarray(v, dtype=np.float32)
                          .tobytes())) for (h, _), v in zip(batch, vectors)])
            done += len(batch)
        self._write([("DELETE FROM embeddings WHERE model = ? AND hash NOT IN (SELECT ehash FROM sections)", (model,))]
                    + ([("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (str(time.time_ns()),))] if done else []))
        return done

    def _write(self, statements: list[tuple[str, tuple]]) -> None:
        """Run ``statements`` in one transaction."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                self.conn.execute(sql, params)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    # -- recall -------------------------------------------------------------------------------
    def recall(self, query: str, k: int = 5, *, filters: dict | None = None) -> list[Recalled]:
        """At most ``k`` sections above the thresholds, best first; ``filters={"path": glob or
        [globs]}`` keeps sections of matching files (relative address or absolute path)."""
        if not self._meta("refreshed"):
            self.refresh()
        terms = query_terms(query)
        if not terms:
            return []  # "thanks!": no content word, nothing to recall (R3)
        allowed = self._allowed(filters)
        hybrid = self.embedder is not None and self._vectors()[1] is not None
        legs, coverage = self._keyword_leg(terms, allowed, self.settings.min_coverage_hybrid if hybrid
                                           else self.settings.min_coverage)
        vectors = hybrid and self._vector_leg(query, legs, allowed)
        fuse_hybrid(legs, vector_weight=self.settings.vector_weight, keyword_weight=self.settings.keyword_weight,
                    vectors_available=vectors)
        ranked = sorted((item for item in legs.items() if item[1].fused >= self.settings.min_score),
                        key=lambda kv: (-kv[1].fused, -(kv[1].cosine or -2.0), -(kv[1].bm25 or 0.0), kv[0]))
        return self._hits(ranked, coverage, k)

    def _allowed(self, filters: dict | None) -> set[int] | None:
        globs = (filters or {}).get("path")
        if not globs:
            return None
        globs = [globs] if isinstance(globs, str) else list(globs)
        rows = self.conn.execute("SELECT s.id, s.path, f.rel FROM sections s JOIN files f ON f.path = s.path")
        return {sid for sid, path, rel in rows if excluded_by(globs, Path(path), rel)}

    def _keyword_leg(self, terms: list[str], allowed: set[int] | None, min_coverage: float
                     ) -> tuple[dict[int, Legs], dict]:
        """BM25F candidates, min-max normalised, and each one's IDF-weighted share of the query
        terms it contains; candidates below ``min_coverage`` leave the keyword leg (R3). Min-max
        makes the best keyword match 1.0 however weak it is, so without this gate any query
        sharing one word with the library would recall its best match."""
        w = self.settings.fts_weights
        rows = self.conn.execute(
            f"SELECT rowid, -bm25(sections_fts, {float(w['headings'])}, {float(w['file'])}, {float(w['body'])})"
            " FROM sections_fts WHERE sections_fts MATCH ? ORDER BY 2 DESC" + ("" if allowed is not None else " LIMIT ?"),
            (fts_match_expression(terms),) + (() if allowed is not None else (self.settings.candidates,))).fetchall()
        scores = {rid: score for rid, score in rows if allowed is None or rid in allowed}
        scores = dict(list(scores.items())[: self.settings.candidates])
        if not scores:
            return {}, {}
        total = self.conn.execute("SELECT count(*) FROM sections").fetchone()[0]
        weight, has = term_coverage(self.conn, "sections_fts", total, terms, scores)
        mass = sum(weight.values()) or 1.0
        coverage = {rid: (sum(weight[t] for t in found) / mass, found) for rid, found in has.items()}
        legs = {}
        for position, (rid, norm) in enumerate(sorted(min_max(scores).items(), key=lambda kv: -kv[1]), start=1):
            if coverage[rid][0] >= min_coverage:
                legs[rid] = Legs(bm25=scores[rid], bm25_norm=norm, bm25_rank=position)
        return legs, coverage

    def _vectors(self):
        """(section ids, matrix) of every section's vector for this embedder, cached per generation."""
        import numpy as np

        generation = self._meta("generation")
        if self._matrix is None or self._matrix[0] != generation:
            rows = self.conn.execute("SELECT s.id, e.vec FROM sections s JOIN embeddings e ON e.hash = s.ehash"
                                     " AND e.model = ? ORDER BY s.id", (self.embedder.name,)).fetchall()
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            matrix = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows]) if rows else None
            self._matrix = (generation, ids, matrix)
        return self._matrix[1], self._matrix[2]

    def _vector_leg(self, query: str, legs: dict[int, Legs], allowed: set[int] | None) -> bool:
        """Add the calibrated cosine (absolute, never per-query normalised) to the candidates: the
        top vector candidates above the embedder's floor, and every keyword candidate."""
        if self.embedder is None:
            return False
        import numpy as np

        ids, matrix = self._vectors()
        if matrix is None:
            return False
        sims = matrix @ np.asarray(self.embedder.embed_query(query[: self.embedder.max_chars]), dtype=np.float32)
        floor, strong = self.embedder.min_cosine, max(self.embedder.strong_cosine, self.embedder.min_cosine + 1e-6)
        order = np.argsort(-sims, kind="stable")
        taken = 0
        for rank_no, pos in enumerate(order.tolist(), start=1):
            sid, cosine = int(ids[pos]), float(sims[pos])
            if cosine < floor or taken >= self.settings.candidates:
                break
            if allowed is not None and sid not in allowed:
                continue
            item = legs.setdefault(sid, Legs())
            item.cosine, item.vector_rank, item.vector = cosine, rank_no, calibrate_cosine(cosine, floor, strong)
            taken += 1
        position = {int(s): p for p, s in enumerate(ids.tolist())} if any(i.cosine is None for i in legs.values()) else {}
        for sid, item in legs.items():
            if item.cosine is None and sid in position:
                item.cosine = float(sims[position[sid]])
                item.vector = calibrate_cosine(item.cosine, floor, strong)
        return True

    def _hits(self, ranked: list[tuple[int, Legs]], coverage: dict, k: int) -> list[Recalled]:
        hits: list[Recalled] = []
        for sid, item in ranked:
            if len(hits) >= k:
                break
            row = self.conn.execute(
                f"SELECT {_HIT_COLUMNS} FROM sections s JOIN files f ON f.path = s.path WHERE s.id = ?", (sid,)).fetchone()
            if row is None or self.gate.blocks(row[0], row[-1]):
                continue  # the gate may have changed since indexing: never hand out a blocked path (G3)
            share, found = coverage.get(sid, (0.0, []))
            hits.append(self._hit(row, round(item.fused, 4), {
                "bm25": item.bm25, "bm25_norm": round(item.bm25_norm, 4), "coverage": round(share, 4),
                "matched": found, "cosine": None if item.cosine is None else round(item.cosine, 4),
                "vector": round(item.vector, 4)}))
        return hits

    def _hit(self, row, activation: float, legs: dict | None = None) -> Recalled:
        path, address, headings, text, start_line, end_line, split, rel, note, _ = row
        headings = json.loads(headings)
        meta = {"file": rel, "headings": headings, "start_line": start_line, "end_line": end_line,
                "split": bool(split)}
        if note:
            meta["note"] = note
        why = []
        if legs is not None:
            meta["legs"] = legs
            if legs["matched"]:
                why.append(f"keyword {legs['bm25_norm']:.2f} (matched {', '.join(legs['matched'])})")
            if legs["cosine"] is not None:
                why.append(f"cosine {legs['cosine']:.2f} (leg {legs['vector']:.2f})")
        return Recalled.of_domain(domain=self.name, path=path, address=address, text=text, activation=activation,
                         title=headings[-1] if headings else Path(rel).name, why="; ".join(why), meta=meta)

    def fetch(self, address: str) -> Recalled | None:
        """The unit at ``address`` (as a recall returned it), or None (the contract's fetch)."""
        return self.section(address)

    def section(self, address: str) -> Recalled | None:
        """One section by its content path (fetch-on-confirmation), verbatim; None if absent or blocked."""
        row = self.conn.execute(
            f"SELECT {_HIT_COLUMNS} FROM sections s JOIN files f ON f.path = s.path WHERE s.address = ?", (address,)
        ).fetchone()
        if row is None or self.gate.blocks(row[0], row[-1]):
            return None
        return self._hit(row, 1.0)


def _walk(root: Path, skipped: list[dict]):
    """(absolute path, path relative to ``root``) of every markdown file, in name order; hidden and
    vendored folders are not entered, symlinked folders are not followed (no loops)."""
    def failed(exc: OSError) -> None:
        skipped.append({"path": exc.filename or str(root), "reason": f"unreadable folder: {exc.strerror or exc}"})

    base = os.path.abspath(root)
    for folder, dirs, files in os.walk(base, onerror=failed):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(files):
            if name.lower().endswith(MARKDOWN_SUFFIXES) and not name.startswith("."):
                path = os.path.join(folder, name)
                yield path, os.path.relpath(path, base).replace(os.sep, "/")
