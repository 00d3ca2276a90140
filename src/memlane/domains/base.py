"""A recall domain (D1): one kind of source with its own store and its own algorithm.

Recall is not one system (docs/design.md, "The recall fabric"): memory notes, knowledge documents, session transcripts
and code symbols differ in what a unit is, how it is found and how it is shown, so each domain
indexes its own sources in its own SQLite file and ranks them its own way. What they share is
this contract, and the aggregator (``domains/fabric.py``) that asks them in turn — it never
mixes their scores into one ranking.

A domain

- is built from its roots (folders or files), the privacy gate and an optional embedder;
- ``refresh()`` brings its index in line with the sources, incrementally, and reports what it
  did (skipped files with their reasons included: nothing is lost silently);
- ``fetch(address)`` returns one unit by the address a recall gave it;
- ``recall(query, k, filters)`` returns at most ``k`` hits, best first, each with the domain's
  own activation in [0, 1] (its normalised relevance; comparable only within the domain) and
  nothing below the domain's own threshold: an unrelated query returns nothing;
- never returns a path the privacy gate blocks, and never writes to its sources.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from .. import logs
from ..guards.privacy import PrivacyGate
from ..retrieve.recalled import Recalled

log = logs.get("memlane.domains")

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # to a type checker a protocol; at run time a plain class no domain inherits


class Domain(Protocol):
    name: str

    def refresh(self) -> dict:
        """Index what changed; return counts and ``skipped`` [{path, reason}]."""

    def recall(self, query: str, k: int, *, filters: dict | None = None) -> list[Recalled]:
        """At most ``k`` hits above the domain's threshold, best first."""

    def fetch(self, address: str) -> Recalled | None:
        """The unit at ``address`` (as ``recall`` returned it), whole; None if there is none or
        the gate blocks it (fetch on confirmation, after a recall at ids depth)."""

    def close(self) -> None:
        """Release the index."""


def index_file(cache: Path, domain: str, roots: list[Path], extra: str = "") -> Path:
    """One SQLite file per domain and set of roots, in memlane's cache."""
    import hashlib

    from ..store.scan import utf8_folder

    for root in roots:
        utf8_folder(root, f"the {domain} folder")
    key = hashlib.sha256(("\0".join(sorted(str(Path(r).expanduser().resolve()) for r in roots)) + "|" + extra)
                         .encode()).hexdigest()[:16]
    folder = cache / "domains"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{domain}-{key}.sqlite"


def bm25_idf(conn: sqlite3.Connection, fts_table: str, total: int, term: str) -> float:
    """BM25's IDF of ``term`` in ``fts_table`` (of ``total`` rows), in Lucene's non-negative form."""
    import math

    from ..index.text import fts_match_expression

    df = conn.execute(f"SELECT count(*) FROM {fts_table} WHERE {fts_table} MATCH ?",
                      (fts_match_expression([term]),)).fetchone()[0]
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def term_coverage(conn: sqlite3.Connection, fts_table: str, total: int, terms: list[str], ids
                  ) -> tuple[dict[str, float], dict[int, list[str]]]:
    """Each query term's IDF, and which of the rows ``ids`` contain which terms: what an
    IDF-weighted coverage threshold is computed from (a query sharing one common word with a
    row does not make it relevant)."""
    from ..index.text import fts_match_expression

    ids = list(ids)
    marks = ",".join("?" * len(ids))
    weights, matched = {}, {i: [] for i in ids}
    for term in terms:
        weights[term] = bm25_idf(conn, fts_table, total, term)
        for (rid,) in conn.execute(f"SELECT rowid FROM {fts_table} WHERE {fts_table} MATCH ? AND rowid IN ({marks})",
                                   [fts_match_expression([term]), *ids]):
            matched[rid].append(term)
    return weights, matched


def open_index(index_path: str, setup: Callable[[sqlite3.Connection], None], *, autocommit: bool = True
               ) -> sqlite3.Connection:
    """A domain's SQLite file, opened (WAL, a 5 s busy timeout) and set up by ``setup`` (its
    schema). The index is derived from the sources, so a corrupt file is set aside (kept for
    inspection) and rebuilt rather than failing every recall; a file that is not memlane's is
    refused, never touched (``index/connection.py``)."""
    from ..index.connection import open_healing

    conn, _healed = open_healing(index_path, setup, autocommit=autocommit)
    return conn


__all__ = ["Domain", "PrivacyGate", "Recalled", "bm25_idf", "index_file", "open_index", "term_coverage"]
