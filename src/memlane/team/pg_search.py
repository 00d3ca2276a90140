"""Search in the PostgreSQL store: the keyword leg and the vector leg.

**Keyword** — FTS5's BM25, computed in SQL over the weighted ``tsvector`` (PostgreSQL has no
BM25; ``ts_rank`` has no IDF and no saturation). The formula is FTS5's own (``fts5_aux.c``):
for each query phrase, IDF = ln((N − n + 0.5) / (n + 0.5)) (at least 1e-6), and
f = Σ column weight × occurrences; score = Σ IDF · f(k1 + 1) / (f + k1(1 − b + b·|D| / avgdl)),
k1 = 1.2, b = 0.75, |D| the unit's token count, avgdl the namespace's mean — so a namespace
ranks exactly as its SQLite index would. A term's rows come from the inverted index kept beside
the tsvector (``postings``: one row per lexeme and unit, with its occurrences per field — what
FTS5's doclists hold), so a query reads only its own terms' rows, as FTS5 does, never a whole
document; a phrase is matched on the tsvector (GIN, then positions). N and the token total are
kept in ``meta`` by every sync. The CTEs are MATERIALIZED: inlined, the planner would re-run the
counts per candidate row.

**Vectors** — exact when the namespace holds at most ``exact_max`` vectors of a model (every
unit's best cosine, as SQLite answers); above that, HNSW (pgvector, one partial index per
dimension) finds the ``hnsw_candidates`` nearest chunks, with ``hnsw.iterative_scan`` so the
namespace filter cannot starve the result, and the units the keyword leg also wants get their
exact cosine.
"""

from __future__ import annotations

from ..index.vectors import Similarities
from .tokens import LABELS, MAX_LEXEME_BYTES, tokenizer, tsquery

K1, B = 1.2, 0.75

_WEIGHT = "CASE x.w WHEN 'A' THEN %(wa)s WHEN 'B' THEN %(wb)s WHEN 'C' THEN %(wc)s ELSE %(wd)s END"

#: one term: its rows of the inverted index (``postings``: occurrences per field, the unit's
#: length; their number is the term's document frequency); a phrase (a term the tokenizer splits):
#: the notes whose tsvector matches it (GIN), its occurrences counted by position
_BM25 = """
WITH ph AS MATERIALIZED (
    SELECT x.i, string_to_array(x.p, ' ') AS toks, x.q::tsquery AS q
    FROM unnest(%(phrases)s::text[], %(queries)s::text[]) WITH ORDINALITY AS x(p, q, i)
), p AS MATERIALIZED (
    SELECT lexeme, unit, a * %(wa)s + b * %(wb)s + c * %(wc)s + d * %(wd)s AS f, ntokens
    FROM postings WHERE team = %(t)s AND lexeme = ANY(%(single)s::text[])
), counts AS MATERIALIZED (
    SELECT lexeme, count(*)::float8 AS n FROM p GROUP BY lexeme
), df AS MATERIALIZED (
    SELECT ph.i, CASE WHEN ln((%(n)s - h.n + 0.5) / (h.n + 0.5)) <= 0 THEN 1e-6
                     ELSE ln((%(n)s - h.n + 0.5) / (h.n + 0.5)) END AS idf
    FROM ph, LATERAL (SELECT CASE WHEN cardinality(ph.toks) = 1
                                  THEN coalesce((SELECT n FROM counts WHERE counts.lexeme = ph.toks[1]), 0)
                                  ELSE (SELECT count(*) FROM units WHERE team = %(t)s AND tsv @@ ph.q) END::float8 AS n) h
), freq AS (
    SELECT p.unit AS id, ph.i, p.f, p.ntokens FROM ph JOIN p ON cardinality(ph.toks) = 1 AND p.lexeme = ph.toks[1]
    {phrases}
)
SELECT f.id, sum(df.idf * f.f * (%(k1)s + 1) / (f.f + %(k1)s * (1 - %(b)s + %(b)s * f.ntokens / %(avgdl)s))) AS score
FROM freq f JOIN df USING (i)
WHERE f.f > 0
GROUP BY f.id
ORDER BY score DESC, f.id
LIMIT %(limit)s
"""
_WEIGHT = "CASE x.w WHEN 'A' THEN %(wa)s WHEN 'B' THEN %(wb)s WHEN 'C' THEN %(wc)s ELSE %(wd)s END"
_PHRASES = f"""
    UNION ALL
    SELECT u.id, ph.i, (
        SELECT coalesce(sum({_WEIGHT}), 0) FROM unnest(u.tsv) AS l, unnest(l.positions, l.weights) AS x(p, w)
        WHERE l.lexeme = ph.toks[1] AND NOT EXISTS (
            SELECT 1 FROM generate_series(2, cardinality(ph.toks)) AS k
            WHERE NOT EXISTS (SELECT 1 FROM unnest(u.tsv) AS l2
                              WHERE l2.lexeme = ph.toks[k] AND (x.p + k - 1) = ANY(l2.positions)))), u.ntokens
    FROM ph JOIN units u ON cardinality(ph.toks) > 1 AND u.team = %(t)s AND u.tsv @@ ph.q"""

_FIELDS = {label: column for column, label in LABELS.items()}


class FullTextSearch:
    """BM25 over ``units.tsv`` (a mixin of ``PostgresStorage``)."""

    def _phrases(self, terms: list[str]) -> list[tuple[str, list[str]]]:
        """(term, its tokens) for each term the tokenizer keeps something of (a token past
        PostgreSQL's lexeme size is in no note's index: its term matches nothing)."""
        return [(t, p) for t, p in zip(terms, tokenizer().phrases(terms))
                if p and all(len(tok.encode("utf-8")) <= MAX_LEXEME_BYTES for tok in p)]

    def keyword_search(self, terms: list[str], limit: int = 200) -> list[tuple[int, float]]:
        """(unit id, BM25 score, higher = better) for units matching any term."""
        phrases = [p for _, p in self._phrases(terms)]
        if not phrases:
            return []
        n, tokens = self.text_stats()
        if n == 0:
            return []
        w = self.fts_weights
        params = {"t": self.namespace, "phrases": [" ".join(p) for p in phrases],
                  "queries": [tsquery(p) for p in phrases], "single": sorted({p[0] for p in phrases if len(p) == 1}),
                  "n": float(n),
                  "avgdl": max(tokens, 1) / n, "k1": K1, "b": B, "limit": int(limit),
                  "wa": float(w["name"]), "wb": float(w["description"]), "wc": float(w["keywords"]),
                  "wd": float(w["body"])}
        sql = _BM25.replace("{phrases}", _PHRASES if any(len(p) > 1 for p in phrases) else "")
        return [(int(i), float(s)) for i, s in self._rows(sql, params)]

    def matched_fields(self, terms: list[str], unit_ids: list[int]) -> dict[int, dict[str, list[str]]]:
        """For each unit, which of ``terms`` occur in which field (for ``--explain``)."""
        out: dict[int, dict[str, list[str]]] = {uid: {} for uid in unit_ids}
        phrases = self._phrases(terms)
        if not phrases or not unit_ids:
            return out
        tokens = sorted({tok for _, p in phrases for tok in p})
        found: dict[int, dict[str, list[tuple[int, str]]]] = {}
        for unit, lexeme, positions, weights in self._rows(
                "SELECT c.id, u.lexeme, u.positions, u.weights FROM units c, unnest(c.tsv) AS u"
                " WHERE c.team = %s AND c.id = ANY(%s) AND u.lexeme = ANY(%s)", (self.namespace, list(unit_ids), tokens)):
            found.setdefault(unit, {})[lexeme] = list(zip(positions, weights))
        for unit, lexemes in found.items():
            for column in ("name", "description", "keywords", "body"):
                label = LABELS[column]
                for term, phrase in phrases:
                    starts = {p for p, w in lexemes.get(phrase[0], []) if w == label}
                    for k, tok in enumerate(phrase[1:], start=1):
                        starts &= {p - k for p, _ in lexemes.get(tok, [])}
                    if starts:
                        out[unit].setdefault(column, []).append(term)
        return out


class VectorSearch:
    """Content-addressed embeddings and similarity (a mixin of ``PostgresStorage``)."""

    def pending_chunks(self, model: str) -> list[tuple[str, str]]:
        return self._rows("SELECT c.hash, min(c.text) FROM chunks c LEFT JOIN embeddings e ON e.team = c.team"
                          " AND e.model = %s AND e.hash = c.hash WHERE c.team = %s AND e.hash IS NULL"
                          " GROUP BY c.hash ORDER BY c.hash", (model, self.namespace))

    def pending_count(self, model: str) -> int:
        return self._one("SELECT count(DISTINCT c.hash) FROM chunks c LEFT JOIN embeddings e ON e.team = c.team"
                         " AND e.model = %s AND e.hash = c.hash WHERE c.team = %s AND e.hash IS NULL",
                         (model, self.namespace))[0]

    def store_embeddings(self, model: str, hashes: list[str], vectors) -> None:
        import numpy as np

        rows = [(self.namespace, model, h, int(np.asarray(v).shape[0]), np.asarray(v, dtype=np.float32))
                for h, v in zip(hashes, vectors)]
        with self.transaction():
            self._many("INSERT INTO embeddings (team, model, hash, dim, vec) VALUES (%s, %s, %s, %s, %s)"
                       " ON CONFLICT (team, model, hash) DO UPDATE SET dim = EXCLUDED.dim, vec = EXCLUDED.vec", rows)
            self._bump_generation()
        self._derived.clear()

    def vector_count(self, model: str) -> int:
        return self._cached(f"vectors:{model}", lambda: self._one(
            "SELECT count(*) FROM embeddings WHERE team = %s AND model = %s", (self.namespace, model))[0])

    def similarities(self, model: str, query_vector, *, among=()) -> Similarities | None:
        """Every unit's best cosine to ``query_vector`` (exact), or — past ``exact_max`` vectors —
        the best ``hnsw_candidates`` chunks' units and those in ``among``; None without vectors."""
        import numpy as np

        count = self.vector_count(model)
        if count == 0:
            return None
        query = np.asarray(query_vector, dtype=np.float32)
        if count <= self.exact_max:
            rows = self._rows("SELECT c.unit, max(1 - (e.vec <=> %s)) FROM chunks c JOIN embeddings e"
                              " ON e.team = c.team AND e.model = %s AND e.hash = c.hash WHERE c.team = %s"
                              " GROUP BY c.unit ORDER BY c.unit", (query, model, self.namespace))
        else:
            rows = self._nearest(model, query, list(among), exact=self.exact_scan)
        if not rows:
            return None
        units = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        sims = np.fromiter((r[1] for r in rows), dtype=np.float32, count=len(rows))
        return Similarities(units, sims, {int(u): n for n, u in enumerate(units.tolist())})

    def _nearest(self, model: str, query, among: list[int], *, exact: bool = False) -> list[tuple[int, float]]:
        """The units of the nearest chunks by HNSW (``exact``: by a full scan, the ground truth),
        plus ``among``'s exact cosines."""
        dim = int(query.shape[0])
        n = int(self.hnsw_candidates)
        with self._reading() as conn:
            if exact:
                conn.execute("SET LOCAL enable_indexscan = off")
            else:
                conn.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(1000, n))}")
                conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            rows = conn.execute(
                f"WITH near AS MATERIALIZED (SELECT hash, vec::vector({dim}) <=> %(q)s::vector({dim}) AS d"
                " FROM embeddings WHERE team = %(t)s AND model = %(m)s AND dim = %(dim)s"
                f" ORDER BY vec::vector({dim}) <=> %(q)s::vector({dim}) LIMIT %(n)s)"
                " SELECT c.unit, max(1 - near.d) FROM near JOIN chunks c ON c.team = %(t)s AND c.hash = near.hash"
                " GROUP BY c.unit", {"q": query, "t": self.namespace, "m": model, "dim": dim, "n": n}).fetchall()
            known = {u for u, _ in rows}
            wanted = [u for u in dict.fromkeys(among) if u not in known]
            if wanted:
                rows += conn.execute(
                    "SELECT c.unit, max(1 - (e.vec <=> %s)) FROM chunks c JOIN embeddings e ON e.team = c.team"
                    " AND e.model = %s AND e.hash = c.hash WHERE c.team = %s AND c.unit = ANY(%s) GROUP BY c.unit",
                    (query, model, self.namespace, wanted)).fetchall()
        return sorted(rows)

    def nearest_units(self, model: str, query_vector, k: int = 10, *, exact: bool = False) -> list[int]:
        """The ``k`` units nearest to ``query_vector`` by HNSW or exactly (benchmarks: HNSW's recall)."""
        import numpy as np

        rows = self._nearest(model, np.asarray(query_vector, dtype=np.float32), [], exact=exact)
        return [u for u, _ in sorted(rows, key=lambda r: -r[1])[:k]]

    def embedded_units(self) -> dict[str, int]:
        return dict(self._rows("SELECT e.model, count(DISTINCT c.unit) FROM chunks c JOIN embeddings e"
                               " ON e.team = c.team AND e.hash = c.hash WHERE c.team = %s GROUP BY e.model",
                               (self.namespace,)))
