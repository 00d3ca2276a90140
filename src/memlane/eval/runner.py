"""Running a benchmark (E1, E2): one in-memory index per scope, every query ranked in every
mode over the full ranking (thresholds off, so ranking metrics see everything), metrics
overall and per group, latency, what would be injected, and the semantic gate."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from collections.abc import Callable, Sequence

from ..config import Config, RetrieveConfig, cache_home
from ..modes import Fusion
from ..embed import Embedder, resolve_embedder
from ..index.chunking import ChunkStrategy, text_hash
from ..associate.build import rebuild_graph
from ..index.sqlite import SQLiteIndex as Index
from ..index.vectors import EmbeddingCache, embed_pending
from ..recall import RecallPlan, run_recall
from ..records import asdict, replace
from ..retrieve.ask import the_ask
from ..store.scan import utf8_folder
from . import metrics as m
from .datasets import Dataset, Query, load_dataset, spread

__all__ = ["GATE_CATCH_SHARE", "GATE_FP_SHARE", "MODES", "evaluate_path", "run_eval"]

Progress = Callable[[str, int, int], None]

#: evaluation mode -> the recall pipeline's stages (recall.py); every mode but "keyword" needs an
#: embedder. keyword/vector/hybrid/rrf: relevance alone; spread: + spreading activation;
#: scored: + importance x recency; full: + constellations (the product's default); divergent: + A5
_RELEVANCE = {"spread": False, "score": False, "constellations": False}
MODES = {
    "keyword": RecallPlan(Fusion.KEYWORD, **_RELEVANCE), "vector": RecallPlan(Fusion.VECTOR, **_RELEVANCE),
    "hybrid": RecallPlan(Fusion.HYBRID, **_RELEVANCE), "rrf": RecallPlan(Fusion.RRF, **_RELEVANCE),
    "spread": RecallPlan(Fusion.HYBRID, spread=True, score=False, constellations=False),
    "scored": RecallPlan(Fusion.HYBRID, spread=True, score=True, constellations=False),
    "full": RecallPlan(Fusion.HYBRID), "divergent": RecallPlan(Fusion.HYBRID, divergent=True),
    "keyword-full": RecallPlan(Fusion.KEYWORD),
}
#: the semantic gate (docs/design.md, "Evaluation"): build semantic recall only if >= 20% of queries show a keyword false negative
#: that hybrid catches, with hybrid false positives < 10%
GATE_CATCH_SHARE = 0.20
GATE_FP_SHARE = 0.10
NDCG_K = 10
_TAG_GROUPS = ("lang", "cross_lingual")


def run_eval(dataset: Dataset, *, modes: Sequence[str] = ("keyword", "vector", "hybrid"),
             ks: Sequence[int] = (1, 3, 5, 10), embedder: Embedder | str | None = None,
             cache_path: str | Path | None = None, settings: RetrieveConfig | None = None,
             limit: int | None = None, progress: Progress | None = None,
             strategy: ChunkStrategy | str = ChunkStrategy.WHOLE, gate_k: int | None = None,
             group_by: Sequence[str] | None = None, config: Config | None = None,
             storage: Callable[[str], object] | None = None) -> dict:
    """Evaluate ``dataset``; returns plain, JSON-able data (see :func:`report.format_report`).

    ``embedder``: an :class:`Embedder`, a registered name, or None/"none" (keyword only:
    the modes that need vectors are dropped, and the result says so).
    ``cache_path``: an :class:`EmbeddingCache` file shared by every run, so each distinct
    text is embedded once ever. ``limit``: evaluate that many queries, spread over the set.
    ``gate_k``: the k of the gate's ranking view (default ``settings.k``).
    ``storage``: makes the store of each scope (a backend of the storage seam; default an
    in-memory SQLite index), closed after the scope's queries.
    """
    config = replace(config or Config())
    if settings is not None:
        config.retrieve = settings
    settings = config.retrieve
    ks = sorted({int(k) for k in ks})
    gate_k = gate_k or settings.k
    notes: list[str] = []
    embedder = _resolve_embedder(embedder, notes)
    modes = _usable_modes(modes, embedder, notes)
    queries = spread(dataset.queries, limit)
    group_by = list(group_by) if group_by is not None else _default_groups(queries, len(dataset.units))
    run = _Run(dataset, modes, ks, gate_k, embedder, config, ChunkStrategy(strategy), cache_path, storage)
    records = run.execute(queries, progress)
    notes.append("delivered = what recall returns, as configured (the product); the ranking metrics below it are "
                 "a diagnostic over the full ranking (thresholds off); ties broken by raw cosine, then raw BM25")
    notes.append(f"injected = what recall returns: relevance >= min_score ({settings.min_score}), at most "
                 f"k={settings.k}, plus constellation companions (and remote associates in divergent mode); "
                 "tokens estimated from their full text (~4 chars/token, 1 per non-ASCII char)")
    return {
        "dataset": dataset.summary() | {"evaluated": len(records)},
        "embedder": embedder.name if embedder else None,
        "modes": list(modes), "ks": ks, "ndcg_k": NDCG_K, "gate_k": gate_k,
        "settings": asdict(settings) | {"chunking": ChunkStrategy(strategy).value,
                                                     "associate": asdict(config.associate),
                                                     "score": asdict(config.score)},
        "notes": notes,
        "overall": {mode: _aggregate(records, mode, ks) for mode in modes},
        "groups": {field: _grouped(records, modes, ks, field) for field in group_by},
        "must_not": _must_not(records, modes, ks),
        "latency_ms": {mode: m.latency_summary(r["modes"][mode]["ms"] for r in records) for mode in modes},
        "gate": _gates(records, modes, gate_k),
        "timing": run.timing,
        "per_query": records,
    }


# -- running ------------------------------------------------------------------------------------
def _resolve_embedder(embedder, notes: list[str]) -> Embedder | None:
    if embedder is None:
        return None
    found, notice = resolve_embedder(embedder)
    if found is None and embedder != "none":
        notes.append(f"embedder unavailable, keyword only: {notice}")
    return found


def _usable_modes(modes: Sequence[str], embedder: Embedder | None, notes: list[str]) -> list[str]:
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown}; known: {', '.join(MODES)}")
    if embedder is None:
        keyword_modes = ("keyword", "keyword-full")
        dropped = [mode for mode in modes if mode not in keyword_modes]
        if dropped:
            notes.append(f"no embedder: mode(s) {', '.join(dropped)} skipped")
        return [mode for mode in modes if mode in keyword_modes] or ["keyword"]
    return list(dict.fromkeys(modes))


def _default_groups(queries: list[Query], n_scopes: int) -> list[str]:
    groups = ["kind"] if any(q.kind for q in queries) else []
    groups += [t for t in _TAG_GROUPS if len({q.tags.get(t) for q in queries}) > 1]
    if 1 < n_scopes <= 20:
        groups.append("scope")
    return groups


class _Run:
    def __init__(self, dataset: Dataset, modes: list[str], ks: list[int], gate_k: int,
                 embedder: Embedder | None, config: Config, strategy: ChunkStrategy,
                 cache_path: str | Path | None, storage: Callable[[str], object] | None = None):
        self.dataset, self.modes, self.ks, self.gate_k = dataset, modes, ks, gate_k
        self.embedder, self.config, self.settings, self.strategy = embedder, config, config.retrieve, strategy
        self.cache = EmbeddingCache(cache_path) if cache_path and embedder else None
        self.depth = max([*ks, NDCG_K, gate_k])
        self.storage = storage
        self.timing = {"index_s": 0.0, "embed_s": 0.0, "passages_embedded": 0, "query_embed_s": 0.0,
                       "queries_embedded": 0, "rank_s": 0.0}

    def execute(self, queries: list[Query], progress: Progress | None) -> list[dict]:
        by_scope: dict[str, list[Query]] = defaultdict(list)
        for query in queries:
            by_scope[query.scope].append(query)
        records = []
        for done, (scope, scope_queries) in enumerate(by_scope.items(), start=1):
            records += self._scope(scope, scope_queries)
            if progress:
                progress("scopes", done, len(by_scope))
        if self.cache is not None:
            self.cache.conn.close()
        return records

    def _scope(self, scope: str, queries: list[Query]) -> list[dict]:
        units = self.dataset.units.get(scope, [])
        index = self.storage(scope) if self.storage else Index(":memory:", fts_weights=self.settings.fts_weights)
        try:
            started = time.perf_counter()
            index.sync(units, strategy=self.strategy,
                       max_chars=self.embedder.max_chars if self.embedder else 2000)
            rebuild_graph(index)
            self.timing["index_s"] += time.perf_counter() - started
            qvecs = [None] * len(queries)
            if self.embedder is not None:
                started = time.perf_counter()
                self.timing["passages_embedded"] += embed_pending(index, self.embedder, cache=self.cache)
                self.timing["embed_s"] += time.perf_counter() - started
                qvecs = self._query_vectors([the_ask(q.text) for q in queries])
            uid_of = {row_id: row["uid"] for row_id, row in index.units_by_id(index.all_ids()).items()}
            tokens = {u.uid: m.estimate_tokens(f"{u.heading()}\n{u.body}") for u in units}
            # recency is judged as of the day after the newest unit (a dated history), else now
            dates = [float(u.meta["mtime"]) for u in units if isinstance(u.meta.get("mtime"), (int, float))]
            now = max(dates) + 86_400 if dates else None
            return [self._query(index, q, vec, uid_of, tokens, now) for q, vec in zip(queries, qvecs)]
        finally:
            index.close()

    def _query_vectors(self, texts: list[str]) -> list:
        """Query vectors, embedded once per text ever when a cache is shared."""
        import numpy as np

        model = f"{self.embedder.name}#query"
        keys = [text_hash(t[: self.embedder.max_chars]) for t in texts]
        found = self.cache.get(model, keys) if self.cache is not None else {}
        missing = sorted({(k, t) for k, t in zip(keys, texts) if k not in found})
        started = time.perf_counter()
        for start in range(0, len(missing), 32):
            batch = missing[start:start + 32]
            vectors = self.embedder.embed_batch([t[: self.embedder.max_chars] for _, t in batch], is_query=True)
            items = [(k, np.asarray(v, dtype=np.float32).tobytes()) for (k, _), v in zip(batch, vectors)]
            found.update(items)
            if self.cache is not None:
                self.cache.put(model, items)
        self.timing["query_embed_s"] += time.perf_counter() - started
        self.timing["queries_embedded"] += len(missing)
        return [np.frombuffer(found[k], dtype=np.float32) for k in keys]

    def _query(self, index: Index, query: Query, qvec, uid_of: dict[int, str], tokens: dict[str, int],
               now: float | None = None) -> dict:
        record = {"id": query.id, "scope": query.scope, "kind": query.kind, "tags": query.tags,
                  "relevant": sorted(query.relevant), "must_not": sorted(query.must_not),
                  "also_ok": sorted(query.also_ok), "modes": {}}
        for mode in self.modes:
            started = time.perf_counter()
            outcome = run_recall(index, the_ask(query.text), self.config, embedder=self.embedder, plan=MODES[mode],
                                 query_vector=qvec, now=now)
            elapsed = time.perf_counter() - started
            self.timing["rank_s"] += elapsed
            ranked = [uid_of[h.unit_id] for h in outcome.ranking]
            injected = [uid_of[h.unit_id] for h in outcome.selected]
            record["modes"][mode] = {
                "ms": elapsed * 1000, "top": ranked[: self.depth], "injected": injected,
                "injected_tokens": sum(tokens.get(uid, 0) for uid in injected),
                "metrics": _query_metrics(ranked, query, self.ks) | _delivered_metrics(injected, query),
            }
        return record


def _delivered_metrics(delivered: list[str], query: Query) -> dict:
    """What recall delivers, as the product does it (thresholds, k, constellations): the share of
    the relevant units it brings, whether it brings any, and how much of what it brings is
    relevant (or acceptable); a must-not unit delivered first."""
    found = [uid for uid in delivered if uid in query.relevant]
    useful = [uid for uid in delivered if uid in query.relevant or uid in query.also_ok]
    out = {"delivered_recall": len(found) / len(query.relevant) if query.relevant else 0.0,
           "delivered_hit": float(bool(found)),
           "relevant_share": len(found) / len(delivered) if delivered else float("nan"),
           "useful_share": len(useful) / len(delivered) if delivered else float("nan")}
    if query.must_not:
        out["must_not_first"] = float(bool(delivered) and delivered[0] in query.must_not)
    return out


def _query_metrics(ranked: list[str], query: Query, ks: list[int]) -> dict:
    out = {}
    for k in ks:
        out[f"recall@{k}"] = m.recall_at_k(ranked, query.relevant, k)
        out[f"hit@{k}"] = m.hit_at_k(ranked, query.relevant, k)
    out[f"ndcg@{NDCG_K}"] = m.ndcg_at_k(ranked, query.relevant, NDCG_K)
    out["mrr"] = m.reciprocal_rank(ranked, query.relevant)
    if query.must_not:
        for k in ks:
            out[f"must_not@{k}"] = m.must_not_in_top_k(ranked, query.must_not, k)
        out["must_not_outranks"] = m.must_not_outranks_relevant(ranked, query.relevant, query.must_not)
    return out


# -- aggregation --------------------------------------------------------------------------------
def _aggregate(records: list[dict], mode: str, ks: list[int]) -> dict:
    names = [f"{p}@{k}" for p in ("recall", "hit") for k in ks] + [f"ndcg@{NDCG_K}", "mrr"]
    rows = [r["modes"][mode] for r in records]
    out = {"n": len(rows)}
    out.update({name: m.mean(row["metrics"][name] for row in rows) for name in names})
    out["injected_units"] = m.mean(len(row["injected"]) for row in rows)
    out["injected_tokens"] = m.mean(row["injected_tokens"] for row in rows)
    for name in ("delivered_recall", "delivered_hit"):
        out[name] = m.mean(row["metrics"][name] for row in rows)
    for name in ("relevant_share", "useful_share"):  # over the queries that delivered something
        shares = [row["metrics"][name] for row in rows if row["injected"]]
        out[name] = m.mean(shares) if shares else float("nan")
    out["delivered_none"] = sum(not row["injected"] for row in rows)
    return out


def _group_value(record: dict, field: str) -> str:
    if field in ("kind", "scope"):
        return str(record[field])
    return str(record["tags"].get(field, "-"))


def _grouped(records: list[dict], modes: list[str], ks: list[int], field: str) -> dict:
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        groups[_group_value(record, field)].append(record)
    return {value: {mode: _aggregate(rows, mode, ks) for mode in modes} for value, rows in sorted(groups.items())}


def _must_not(records: list[dict], modes: list[str], ks: list[int]) -> dict:
    """Per mode: must-not units in the top k (hits of total), and prompts where a must-not unit
    outranks every relevant one; over the queries that have must-not labels."""
    labelled = [r for r in records if r["must_not"]]
    if not labelled:
        return {}
    out = {}
    for mode in modes:
        rows = [r["modes"][mode]["metrics"] for r in labelled]
        entry = {f"top{k}": {"hits": sum(row[f"must_not@{k}"] for row in rows),
                             "total": sum(len(r["must_not"]) for r in labelled)} for k in ks}
        entry["outranks_all"] = {"count": sum(row["must_not_outranks"] for row in rows), "prompts": len(rows)}
        entry["first_delivered"] = {"count": int(sum(row["must_not_first"] for row in rows)), "prompts": len(rows)}
        out[mode] = entry
    return out


def _gates(records: list[dict], modes: list[str], gate_k: int) -> dict:
    """The gate for each fused mode against keyword-only, in two views: the top ``gate_k`` of
    the ranking, and what would be injected (thresholds and k applied)."""
    if "keyword" not in modes:
        return {}
    return {mode: {"top_k": _gate(records, mode, lambda row: row["top"][:gate_k]),
                   "injected": _gate(records, mode, lambda row: row["injected"])}
            for mode in modes if mode in ("hybrid", "rrf")}


def _gate(records: list[dict], mode: str, view) -> dict:
    outcomes = []
    examples = []
    for record in records:
        outcome = m.gate_outcome(view(record["modes"]["keyword"]), view(record["modes"][mode]),
                                 record["relevant"], record["also_ok"])
        outcomes.append(outcome)
        if outcome["caught"] and len(examples) < 5:
            examples.append(record["id"])
    n = len(outcomes)
    caught = sum(bool(o["caught"]) for o in outcomes)
    fp_queries = sum(bool(o["added_fp"]) for o in outcomes)
    fp_units = sum(len(o["added_fp"]) for o in outcomes)
    returned = sum(o["hybrid_n"] for o in outcomes)
    out = {
        "queries": n,
        "caught": caught, "caught_share": caught / n if n else 0.0,
        "lost": sum(bool(o["lost"]) for o in outcomes),
        "added_fp_queries": fp_queries, "added_fp_share": fp_queries / n if n else 0.0,
        "added_fp_units": fp_units, "returned_units": returned,
        "added_fp_unit_rate": fp_units / returned if returned else 0.0,
        "caught_examples": examples,
    }
    out["verdict"] = ("build semantic" if out["caught_share"] >= GATE_CATCH_SHARE
                      and out["added_fp_share"] < GATE_FP_SHARE else "keyword is adequate")
    return out


# -- the CLI's entry point ----------------------------------------------------------------------
def evaluate_path(path: str | Path, *, scope_field: str | None = None, modes: Sequence[str] | None = None,
                  ks: Sequence[int] = (1, 3, 5, 10), limit: int | None = None,
                  embedder: Embedder | str | None = None, cache_path: str | Path | None = None,
                  config: Config | None = None, settings: RetrieveConfig | None = None,
                  include_types: Sequence[str] = (), exclude_types: Sequence[str] = (),
                  gate_k: int | None = None, group_by: Sequence[str] | None = None,
                  progress: Progress | None = None, storage: Callable[[str], object] | None = None,
                  **files) -> dict:
    """Detect the benchmark layout of ``path``, load it and evaluate it.

    ``embedder``: a name, an :class:`Embedder`, "none" (keyword only), or None for the
    configured model. ``modes`` defaults to keyword, vector and hybrid (keyword alone without
    an embedder). ``files``: corpus_file, queries_file, qrels_file for the corpus layout.
    Query vectors and passages are cached in ``cache_path`` (default: memlane's cache dir).
    """
    utf8_folder(Path(path).expanduser().resolve(), "the benchmark folder")
    dataset = load_dataset(path, scope_field=scope_field, include_types=include_types,
                           exclude_types=exclude_types, limit=limit, **files)
    if embedder is None:
        embedder = config.embed.model if config is not None else "default"
    notes: list[str] = []
    resolved = _resolve_embedder(embedder, notes)
    if modes is None:
        modes = ("keyword", "vector", "hybrid", "full") if resolved else ("keyword", "keyword-full")
    if cache_path is None and resolved is not None:
        cache_path = cache_home() / "eval" / "embeddings.sqlite"
    result = run_eval(
        dataset, modes=modes, ks=ks, embedder=resolved, cache_path=cache_path, config=config,
        settings=settings,
        progress=progress, gate_k=gate_k, group_by=group_by, storage=storage,
        strategy=config.embed.long_notes if config is not None else ChunkStrategy.WHOLE)
    result["notes"] = notes + result["notes"]
    return result
