"""The code domain's index and recall: see the package's docstring."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import sqlite3
import stat
import time
from functools import lru_cache
from pathlib import Path

from ...index.text import fts_match_expression
from ...guards.privacy import OUTSIDE, PrivacyGate
from ..base import Recalled, bm25_idf, index_file, open_index
from .ctags import find_ctags, parse_ctags, run_ctags
from .listing import decode_source, language_of, list_files
from .python import parse_python, python_module_name
from .regex import parse_regex
from .symbols import Parsed, Symbol
from .words import code_query_terms, _DOTTED, searchable_words, split_identifier
from ... import logs


log = logs.get("memlane.domains.code")


SCHEMA_VERSION = "1"
PARSER_VERSION = "1"  # bump when parsing changes: every file is parsed again on the next refresh
PARSER_LABELS = {"python-ast": "python ast", "ctags": "universal-ctags", "regex": "regex fallback"}

#: BM25 column weights (name, qualname, signature, doc, path): the name carries a symbol's intent
BM25_WEIGHTS = (10.0, 4.0, 2.0, 3.0, 1.0)
#: how much of a query term's weight a field earns when the term is found there
FIELD_CREDIT = {"name": 1.0, "qualname": 0.8, "doc": 0.6, "signature": 0.5, "path": 0.3}
FTS_FIELDS = ("name", "qualname", "signature", "doc", "path")
MIN_COVERAGE = 0.34  # below this share of the query's (IDF-weighted) words nothing is recalled
MIN_ACTIVATION = 0.35
CANDIDATES = 60  # the BM25 top that coverage is computed for (its cost grows with this)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY, root TEXT NOT NULL, rel TEXT NOT NULL, mtime_ns INTEGER, size INTEGER,
    hash TEXT, language TEXT, parser TEXT, lines INTEGER, status TEXT NOT NULL, reason TEXT,
    UNIQUE(root, rel));
CREATE TABLE IF NOT EXISTS symbols(
    id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, name TEXT NOT NULL, qualname TEXT NOT NULL,
    kind TEXT NOT NULL, language TEXT, parser TEXT, line INTEGER, end_line INTEGER, start_line INTEGER,
    signature TEXT, doc TEXT, decorators TEXT, source TEXT, cut INTEGER DEFAULT 0);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file_id);
CREATE TABLE IF NOT EXISTS calls(file_id INTEGER NOT NULL, callee TEXT NOT NULL, line INTEGER, caller TEXT);
CREATE INDEX IF NOT EXISTS calls_callee ON calls(callee);
CREATE INDEX IF NOT EXISTS calls_file ON calls(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS symbols_fts USING fts5(
    name, qualname, signature, doc, path, tokenize='porter unicode61');
"""




# ---------------------------------------------------------------- the domain

def _create(conn: sqlite3.Connection) -> None:
    row = conn.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone()
    version = row and conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if version and version[0] != SCHEMA_VERSION:  # derived data: drop and rebuild
        for table in ("symbols_fts", "calls", "symbols", "files", "meta"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.executescript(SCHEMA)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
    conn.commit()
    conn.create_function("path_glob", 3, lambda pattern, rel, path: int(
        fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(path, pattern)), deterministic=True)


class CodeDomain:
    """Symbols of working trees, recalled with their exact source and one hop of callers."""

    name = "code"

    def __init__(self, roots: list[Path], *, gate: PrivacyGate = PrivacyGate(), index_path: Path | str | None = None,
                 embedder=None, ctags: bool | str | None = None, max_file_bytes: int = 1_000_000,
                 max_source_chars: int = 4000, max_callers: int = 5):
        from ... import config

        self.roots = [Path(r).expanduser().resolve() for r in roots]
        self.gate = gate
        self.embedder = embedder  # accepted for the contract; code is ranked by its names (keyword only)
        self.max_file_bytes, self.max_source_chars, self.max_callers = max_file_bytes, max_source_chars, max_callers
        self._ctags_choice = ctags
        self.index_path = str(index_path if index_path is not None
                              else index_file(config.cache_home(), "code", self.roots))
        self.conn = self._open()
        self._idf_cache: dict[str, float] = {}

    # -- the index file

    def _open(self) -> sqlite3.Connection:
        return open_index(self.index_path, _create, autocommit=False)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "CodeDomain":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def ctags(self) -> str | None:
        if self._ctags_choice is False:
            return None
        return find_ctags(self._ctags_choice if isinstance(self._ctags_choice, str) else "ctags")

    # -- refresh

    def refresh(self) -> dict:
        """Bring the index in line with the working trees; report what was done."""
        started = time.perf_counter()
        report = {"files": 0, "symbols": 0, "parsed": 0, "unchanged": 0, "removed": 0, "excluded": 0,
                  "skipped": [], "partial": [], "listing": {}, "seconds": 0.0}
        self._check_parser_version()
        self.conn.execute(f"DELETE FROM files WHERE root NOT IN ({','.join('?' * len(self.roots))})",
                          [str(r) for r in self.roots])
        for root in self.roots:
            self._refresh_root(root, report)
        self._drop_orphans()
        self._idf_cache.clear()
        report["files"] = self.conn.execute("SELECT count(*) FROM files WHERE status != 'skipped'").fetchone()[0]
        report["symbols"] = self.conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
        for root, rel, status, reason in self.conn.execute(
                "SELECT root, rel, status, reason FROM files WHERE status != 'ok' ORDER BY root, rel"):
            report["skipped" if status == "skipped" else "partial"].append(
                {"path": str(Path(root) / rel), "reason": reason})
        report["seconds"] = round(time.perf_counter() - started, 3)
        return report

    def _check_parser_version(self) -> None:
        stamp = f"{PARSER_VERSION}|ctags={'yes' if self.ctags else 'no'}|cap={self.max_file_bytes}"
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'parsers'").fetchone()
        if row is None or row[0] != stamp:
            with self.conn:
                self.conn.execute("DELETE FROM files")
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('parsers', ?)", (stamp,))

    def _refresh_root(self, root: Path, report: dict) -> None:
        known = {rel: (fid, mtime, size) for fid, rel, mtime, size in self.conn.execute(
            "SELECT id, rel, mtime_ns, size FROM files WHERE root = ?", (str(root),))}
        if root.is_dir():
            listing, method = list_files(root)
        else:
            listing, method = [], "missing"
        report["listing"][str(root)] = method
        seen, todo = set(), []
        for rel in listing:
            language = language_of(rel)
            if language is None:
                continue
            path = root / rel
            if self.gate.outside(path, root):
                report.setdefault("skipped", []).append({"path": str(path), "reason": OUTSIDE})
                continue
            if self.gate.blocks(path, root):
                report["excluded"] += 1  # never opened; the path is not reported either
                continue
            try:
                info = os.lstat(path)
            except OSError:
                continue  # listed by git but gone from the working tree
            if not stat.S_ISREG(info.st_mode):
                continue
            seen.add(rel)
            previous = known.get(rel)
            if previous and previous[1:] == (info.st_mtime_ns, info.st_size):
                report["unchanged"] += 1
            else:
                todo.append((rel, language, info))
        gone = [known[rel][0] for rel in known.keys() - seen]
        with self.conn:
            for file_id in gone:
                self._forget(file_id)
                self.conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
        report["removed"] += len(gone)
        self._index_files(root, todo, report)

    def _index_files(self, root: Path, todo: list, report: dict) -> None:
        read: list[tuple[str, str, os.stat_result, str, str]] = []
        for rel, language, info in todo:
            if info.st_size > self.max_file_bytes:
                self._save(root, rel, language, info, None, status="skipped",
                           reason=f"too large ({info.st_size} bytes > {self.max_file_bytes})")
                continue
            try:
                data = (root / rel).read_bytes()
            except OSError as exc:
                self._save(root, rel, language, info, None, status="skipped", reason=f"unreadable: {exc.strerror}")
                continue
            digest = hashlib.sha1(data).hexdigest()
            row = self.conn.execute("SELECT id, hash, status FROM files WHERE root = ? AND rel = ?",
                                    (str(root), rel)).fetchone()
            if row and row[1] == digest and row[2] != "skipped":
                self.conn.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?",
                                  (info.st_mtime_ns, info.st_size, row[0]))
                report["unchanged"] += 1  # touched, not changed: no parse
                continue
            text, reason = decode_source(data, language)
            if text is None:
                self._save(root, rel, language, info, None, status="skipped", reason=reason, digest=digest)
                continue
            read.append((rel, language, info, text, digest))
        others = [rel for rel, language, *_ in read if language != "python"]
        tags = run_ctags(self.ctags, root, others) if others and self.ctags else {}
        has_init = lru_cache(maxsize=None)(lambda folder: (folder / "__init__.py").is_file())
        for count, (rel, language, info, text, digest) in enumerate(read, start=1):
            parsed = self._parse(root, rel, language, text, tags, has_init)
            self._save(root, rel, language, info, parsed, text=text, digest=digest,
                       status="partial" if parsed.note else "ok", reason=parsed.note or None)
            report["parsed"] += 1
            if count % 200 == 0:
                self.conn.commit()
        self.conn.commit()

    def _parse(self, root: Path, rel: str, language: str, text: str, tags: dict, has_init) -> Parsed:
        try:
            if language == "python":
                return parse_python(text, python_module_name(root, rel, has_init))
            if tags.get(rel):
                parsed = parse_ctags(text, language, tags[rel])
                if parsed.symbols:
                    return parsed
            return parse_regex(text, language)
        except (RecursionError, MemoryError, ValueError) as exc:  # never a crash: keep the file, say why
            return Parsed([], [], "none", f"parse failed: {type(exc).__name__}")

    def _save(self, root: Path, rel: str, language: str, info, parsed: Parsed | None, *, text: str = "",
              status: str, reason: str | None = None, digest: str | None = None) -> None:
        conn = self.conn
        old = conn.execute("SELECT id FROM files WHERE root = ? AND rel = ?", (str(root), rel)).fetchone()
        if old:
            self._forget(old[0])
        lines = len(text.splitlines())
        file_id = conn.execute(
            "INSERT OR REPLACE INTO files(id, root, rel, mtime_ns, size, hash, language, parser, lines, status, reason)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (old[0] if old else None, str(root), rel, info.st_mtime_ns, info.st_size, digest, language,
             parsed.parser if parsed else None, lines, status, reason)).lastrowid
        if not parsed:
            return
        source_lines = text.splitlines()
        words_path = searchable_words(rel)
        for sym in parsed.symbols:
            source, cut = self._source_of(source_lines, sym)
            symbol_id = conn.execute(
                "INSERT INTO symbols(file_id, name, qualname, kind, language, parser, line, end_line, start_line,"
                " signature, doc, decorators, source, cut) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (file_id, sym.name, sym.qualname, sym.kind, language, parsed.parser, sym.line, sym.end_line,
                 sym.start_line or sym.line, sym.signature[:300], sym.doc, json.dumps(sym.decorators), source,
                 cut)).lastrowid
            conn.execute("INSERT INTO symbols_fts(rowid, name, qualname, signature, doc, path) VALUES (?,?,?,?,?,?)",
                         (symbol_id, searchable_words(sym.name), searchable_words(sym.qualname),
                          searchable_words(sym.signature[:300]), sym.doc, words_path))
        conn.executemany("INSERT INTO calls(file_id, callee, line, caller) VALUES (?,?,?,?)",
                         [(file_id, name, line, caller) for name, line, caller in parsed.calls])

    def _source_of(self, lines: list[str], sym: Symbol) -> tuple[str, int]:
        """The symbol's exact source, cut at a line boundary to ``max_source_chars``; (text, lines cut)."""
        chosen, size = [], 0
        span = lines[(sym.start_line or sym.line) - 1: sym.end_line]
        for line in span:
            size += len(line) + 1
            if size > self.max_source_chars and chosen:
                break
            chosen.append(line)
        return "\n".join(chosen), len(span) - len(chosen)

    def _forget(self, file_id: int) -> None:
        self.conn.execute("DELETE FROM symbols_fts WHERE rowid IN (SELECT id FROM symbols WHERE file_id = ?)",
                          (file_id,))
        self.conn.execute("DELETE FROM symbols WHERE file_id = ?", (file_id,))
        self.conn.execute("DELETE FROM calls WHERE file_id = ?", (file_id,))

    def _drop_orphans(self) -> None:
        """Symbols and calls of files no longer indexed (a root dropped from the set)."""
        with self.conn:
            self.conn.execute("DELETE FROM symbols_fts WHERE rowid IN "
                              "(SELECT id FROM symbols WHERE file_id NOT IN (SELECT id FROM files))")
            self.conn.execute("DELETE FROM symbols WHERE file_id NOT IN (SELECT id FROM files)")
            self.conn.execute("DELETE FROM calls WHERE file_id NOT IN (SELECT id FROM files)")

    # -- recall

    def recall(self, query: str, k: int = 5, *, filters: dict | None = None) -> list[Recalled]:
        """At most ``k`` symbols above the threshold, best first."""
        terms = code_query_terms(query)
        if not terms or k <= 0:
            return []
        candidates = self._candidates(terms, filters or {})
        if not candidates:
            return []
        found = self._term_fields(terms, list(candidates))
        idf = {term: self._idf(term) for term in terms}
        total, best = sum(idf.values()), max(candidates.values())
        named = self._names(list(candidates))
        exact = {token.rsplit(".", 1)[-1]: sum(idf.get(t, 0.0) for t in code_query_terms(token)) / total
                 for token in _DOTTED.findall(query)}
        folded = {name.lower(): share / 2 for name, share in exact.items()}  # NamedTuple for namedtuple: half
        scored = []
        for rowid, bm25 in candidates.items():
            fields = found.get(rowid, {})
            coverage = sum(idf[t] * FIELD_CREDIT[f] for t, f in fields.items()) / total
            activation = (0.6 * coverage + 0.25 * (bm25 / best if best > 0 else 0.0)
                          + 0.15 * exact.get(named.get(rowid, ""), folded.get(named.get(rowid, "").lower(), 0.0)))
            if coverage >= MIN_COVERAGE and activation >= MIN_ACTIVATION:
                scored.append((activation, bm25, rowid, fields))
        scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
        hits = []
        for activation, _bm25, rowid, fields in scored:
            hit = self._hit(rowid, activation, fields)
            if hit is not None:
                hits.append(hit)
            if len(hits) >= k:
                break
        return hits

    def _candidates(self, terms: list[str], filters: dict) -> dict[int, float]:
        where, params = filter_sql(filters)
        sql = (f"SELECT rowid, -bm25(symbols_fts, {', '.join(map(str, BM25_WEIGHTS))}) AS score FROM symbols_fts "
               f"WHERE symbols_fts MATCH ?{where} ORDER BY score DESC LIMIT {CANDIDATES}")
        return dict(self.conn.execute(sql, [fts_match_expression(terms), *params]).fetchall())

    def _term_fields(self, terms: list[str], rowids: list[int]) -> dict[int, dict[str, str]]:
        """For each candidate, each query term's best field (by ``FIELD_CREDIT``)."""
        marks = ",".join("?" * len(rowids))
        flags = ", ".join(f"instr(highlight(symbols_fts, {i}, char(1), char(2)), char(1)) > 0"
                          for i in range(len(FTS_FIELDS)))
        out: dict[int, dict[str, str]] = {}
        for term in terms:
            rows = self.conn.execute(f"SELECT rowid, {flags} FROM symbols_fts WHERE symbols_fts MATCH ? "
                                     f"AND rowid IN ({marks})", [fts_match_expression([term]), *rowids])
            for rowid, *hit in rows:
                fields = [f for f, on in zip(FTS_FIELDS, hit) if on]
                if fields:
                    out.setdefault(rowid, {})[term] = max(fields, key=FIELD_CREDIT.get)
        return out

    def _names(self, rowids: list[int]) -> dict[int, str]:
        marks = ",".join("?" * len(rowids))
        return {rowid: name for rowid, name in
                self.conn.execute(f"SELECT id, name FROM symbols WHERE id IN ({marks})", rowids)}

    def _idf(self, term: str) -> float:
        """Okapi BM25's IDF (made non-negative), cached until the next refresh."""
        if term not in self._idf_cache:
            n = self.conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
            self._idf_cache[term] = bm25_idf(self.conn, "symbols_fts", n, term)
        return self._idf_cache[term]

    def _hit(self, rowid: int, activation: float, fields: dict[str, str]) -> Recalled | None:
        row = self.conn.execute(
            "SELECT s.name, s.qualname, s.kind, s.language, s.parser, s.line, s.end_line, s.signature, s.doc,"
            " s.decorators, s.source, s.cut, f.root, f.rel, f.mtime_ns, f.size, f.status, f.reason"
            " FROM symbols s JOIN files f ON f.id = s.file_id WHERE s.id = ?", (rowid,)).fetchone()
        if row is None:
            return None
        (name, qualname, kind, language, parser, line, end_line, signature, doc, decorators, source, cut,
         root, rel, mtime_ns, size, status, reason) = row
        path = Path(root) / rel
        if self.gate.blocks(path, root):
            return None
        callers, total = self.callers(name, qualname, kind, language)
        text = source + (f"\n… (cut: {cut} more lines, to line {end_line})" if cut else "")
        for caller in callers:
            text += f"\ncalled from: {caller['symbol']} ({caller['rel']}:{caller['line']})"
        if total > len(callers):
            text += f"\ncalled from: … {total - len(callers)} more call sites"
        matched = ", ".join(f"{t} ({f})" for t, f in fields.items())
        why = f"{PARSER_LABELS.get(parser, parser)} symbol; matched {matched}"
        if status == "partial":
            why += f"; file parsed partially ({reason})"
        stale = _changed_since(path, mtime_ns, size)
        if stale:
            why += "; the file changed since it was indexed"
        meta = {"kind": kind, "language": language, "line": line, "end_line": end_line, "signature": signature,
                "doc": doc, "decorators": json.loads(decorators or "[]"), "parser": parser, "root": root, "rel": rel,
                "callers": callers, "callers_total": total, "cut": cut, "stale": stale}
        return Recalled.of_domain("code", str(path), f"{qualname}:{line}", text, round(min(1.0, activation), 4),
                         f"{kind} {name}", why, meta)

    def fetch(self, address: str) -> Recalled | None:
        """The symbol at ``address`` ("qualified.name:line", as a recall returned it), or None."""
        qualname, _, line = address.rpartition(":")
        if not qualname or not line.isdigit():
            qualname, line = address, ""
        sql = "SELECT id FROM symbols WHERE qualname = ?" + (" AND line = ?" if line else "") + " ORDER BY id LIMIT 1"
        row = self.conn.execute(sql, (qualname, int(line)) if line else (qualname,)).fetchone()
        return self._hit(row[0], 1.0, {}) if row else None

    def callers(self, name: str, qualname: str, kind: str, language: str) -> tuple[list[dict], int]:
        """Up to ``max_callers`` call sites of ``name`` (one hop, by name) and how many there are."""
        if kind == "module":
            return [], 0
        query = ("FROM calls c JOIN files f ON f.id = c.file_id "
                 "WHERE c.callee = ? AND coalesce(c.caller, '') != ?")
        total = self.conn.execute(f"SELECT count(*) {query}", (name, qualname)).fetchone()[0]
        rows = self.conn.execute(f"SELECT c.caller, c.line, f.root, f.rel {query} "
                                 "ORDER BY (f.language = ?) DESC, f.rel, c.line LIMIT ?",
                                 (name, qualname, language, 4 * self.max_callers)).fetchall()
        visible = [(caller, line, root, rel) for caller, line, root, rel in rows
                   if not self.gate.blocks(Path(root) / rel, root)]  # defence in depth: never indexed anyway
        out = [{"symbol": caller or "<top level>", "path": str(Path(root) / rel), "rel": rel, "line": line}
               for caller, line, root, rel in visible[: self.max_callers]]
        return out, total - (len(rows) - len(visible))

    def stats(self) -> dict:
        """Counts of the index: files by status, symbols by language and parser."""
        conn = self.conn
        return {"files": dict(conn.execute("SELECT status, count(*) FROM files GROUP BY status").fetchall()),
                "symbols": dict(conn.execute("SELECT language, count(*) FROM symbols GROUP BY language").fetchall()),
                "parsers": dict(conn.execute("SELECT parser, count(*) FROM symbols GROUP BY parser").fetchall()),
                "calls": conn.execute("SELECT count(*) FROM calls").fetchone()[0]}


def filter_sql(filters: dict) -> tuple[str, list]:
    """The SQL restricting candidates to ``filters``: path (glob), kind, language (a value or a list)."""
    clauses, params = [], []
    for key, column in (("kind", "s.kind"), ("language", "s.language")):
        value = filters.get(key)
        if value:
            values = [value] if isinstance(value, str) else list(value)
            clauses.append(f"{column} IN ({','.join('?' * len(values))})")
            params.extend(values)
    if filters.get("path"):
        clauses.append("path_glob(?, f.rel, f.root || '/' || f.rel)")
        params.append(filters["path"])
    if not clauses:
        return "", []
    return (" AND rowid IN (SELECT s.id FROM symbols s JOIN files f ON f.id = s.file_id WHERE "
            + " AND ".join(clauses) + ")"), params


def _changed_since(path: Path, mtime_ns: int, size: int) -> bool:
    try:
        info = path.stat()
    except OSError:
        return True
    return (info.st_mtime_ns, info.st_size) != (mtime_ns, size)


__all__ = ["CodeDomain", "code_query_terms", "parse_python", "parse_regex", "split_identifier"]
