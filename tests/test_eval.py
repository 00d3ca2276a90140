"""The evaluation harness: metrics against hand-computed values, the three dataset layouts on
tiny fixtures, and a full run with the fake embedder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memlane.eval import DatasetError, detect_format, evaluate_path, format_report, load_dataset, run_eval, to_json
from memlane.eval import metrics as m
from memlane.eval.datasets import read_qrels, spread

SHARED = Path("/work/shared/bench")


# -- metrics ------------------------------------------------------------------------------------
RANKED = ["a", "b", "c", "d"]
RELEVANT = {"b", "d", "x"}  # "x" is never retrieved


@pytest.mark.parametrize("k, recall, hit", [(1, 0.0, 0.0), (2, 1 / 3, 1.0), (4, 2 / 3, 1.0), (10, 2 / 3, 1.0)])
def test_recall_and_hit(k, recall, hit):
    assert m.recall_at_k(RANKED, RELEVANT, k) == pytest.approx(recall)
    assert m.hit_at_k(RANKED, RELEVANT, k) == hit


def test_recall_of_nothing_relevant_is_zero():
    assert m.recall_at_k(RANKED, set(), 5) == 0.0
    assert m.ndcg_at_k(RANKED, set()) == 0.0


def test_ndcg_binary():
    # DCG = 1/log2(3) + 1/log2(5); ideal with 3 relevant = 1 + 1/log2(3) + 1/log2(4)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 0.5
    assert m.ndcg_at_k(RANKED, RELEVANT, 10) == pytest.approx(dcg / idcg)
    assert m.ndcg_at_k(RANKED, RELEVANT, 10) == pytest.approx(0.49819, abs=1e-5)


def test_ndcg_graded_and_cutoff():
    gains = {"b": 2.0, "d": 1.0}
    assert m.ndcg_at_k(RANKED, gains, 10) == pytest.approx((2 / math.log2(3) + 1 / math.log2(5))
                                                           / (2 + 1 / math.log2(3)))
    assert m.ndcg_at_k(["b", "d"], gains, 10) == pytest.approx(1.0)
    assert m.ndcg_at_k(RANKED, gains, 1) == 0.0  # "a" first, nothing relevant in the top 1


def test_reciprocal_rank():
    assert m.reciprocal_rank(RANKED, RELEVANT) == 0.5
    assert m.reciprocal_rank(RANKED, {"z"}) == 0.0
    assert m.reciprocal_rank(RANKED, {"a": 1.0}) == 1.0


def test_must_not_stats():
    assert m.must_not_in_top_k(["m1", "r", "m2"], {"m1", "m2"}, 1) == 1
    assert m.must_not_in_top_k(["m1", "r", "m2"], {"m1", "m2"}, 3) == 2
    assert m.must_not_outranks_relevant(["m", "r"], {"r"}, {"m"}) is True
    assert m.must_not_outranks_relevant(["r", "m"], {"r"}, {"m"}) is False
    # a relevant unit missing from the ranking counts as ranked last
    assert m.must_not_outranks_relevant(["a", "m"], {"r"}, {"m"}) is True
    # the best relevant unit decides: one relevant above the lure is enough
    assert m.must_not_outranks_relevant(["r1", "m", "r2"], {"r1", "r2"}, {"m"}) is False
    assert m.must_not_outranks_relevant(["a", "r"], {"r"}, {"m"}) is False  # lure not retrieved


def test_percentiles_and_latency():
    assert m.percentile([4, 1, 3, 2], 50) == 2.5
    assert m.percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)
    assert m.percentile([], 50) == 0.0
    summary = m.latency_summary([1.0, 2.0, 3.0])
    assert summary == {"n": 3, "p50": 2.0, "p95": pytest.approx(2.9), "mean": 2.0, "max": 3.0}


def test_gate_outcome():
    out = m.gate_outcome(["k1", "r1"], ["r2", "h1", "k1", "ok"], {"r1", "r2"}, {"ok"})
    assert out["caught"] == ["r2"]  # hybrid found r2, keyword did not
    assert out["lost"] == ["r1"]  # keyword found r1, hybrid did not
    assert out["added_fp"] == ["h1"]  # k1 was already returned by keyword, "ok" is acceptable
    assert out["hybrid_n"] == 4


def test_estimate_tokens():
    assert m.estimate_tokens("abcd") == 1
    assert m.estimate_tokens("abcde") == 2
    assert m.estimate_tokens("배포") == 2
    assert m.estimate_tokens("") == 0


def test_spread_keeps_the_mix():
    assert spread(list(range(10)), 5) == [0, 2, 4, 6, 8]
    assert spread([1, 2], None) == [1, 2]
    assert spread([1, 2], 5) == [1, 2]


# -- fixtures -----------------------------------------------------------------------------------
def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    """Two haystacks (LongMemEval style: the query's haystack is its own id)."""
    root = tmp_path / "mini"
    root.mkdir()
    _jsonl(root / "corpus.jsonl", [
        {"id": "q1/answer_1", "text": "We adopted a golden retriever puppy named Biscuit last spring.", "haystack": "q1"},
        {"id": "q1/s2", "text": "Planning a trip to Lisbon with a stop in Porto for the wine.", "haystack": "q1"},
        {"id": "q1/s3", "text": "My sourdough starter finally rose after feeding it rye flour.", "haystack": "q1"},
        {"id": "q2/answer_1", "text": "The quarterly tax payment is due on the fifteenth of June.", "haystack": "q2"},
        {"id": "q2/s2", "text": "Our dog Biscuit hates thunderstorms and hides under the bed.", "haystack": "q2"},
        {"id": "q3/s1", "text": "Unrelated haystack.", "haystack": "q3"},
    ])
    _jsonl(root / "queries.jsonl", [
        {"id": "q1", "text": "What is the name of my puppy?", "question_type": "single-session-user"},
        {"id": "q2", "text": "When is the tax payment due?", "question_type": "temporal-reasoning"},
        {"id": "q3_abs", "text": "Who is my dentist?", "question_type": "single-session-user"},
    ])
    (root / "qrels.tsv").write_text("query_id\tdoc_id\trelevance\nq1\tq1/answer_1\t1\nq2\tq2/answer_1\t1\n")
    return root


@pytest.fixture
def locomo_dir(tmp_path: Path) -> Path:
    root = tmp_path / "conv"
    root.mkdir()
    _jsonl(root / "corpus.jsonl", [
        {"id": "c1:D1:1", "text": "Ann: I started pottery classes.", "title": "c1 session 1", "conversation_id": "c1"},
        {"id": "c1:D1:2", "text": "Bob: I went hiking in the Alps.", "title": "c1 session 1", "conversation_id": "c1"},
        {"id": "c2:D1:1", "text": "Cy: My cat is called Miso.", "title": "c2 session 1", "conversation_id": "c2"},
    ])
    _jsonl(root / "queries.jsonl", [
        {"id": "c1:q0", "text": "What hobby did Ann start?", "question_type": "single-hop", "category": 4,
         "conversation_id": "c1"},
        {"id": "c1:q1", "text": "Did Ann climb Everest?", "question_type": "adversarial", "category": 5,
         "conversation_id": "c1"},
        {"id": "c2:q0", "text": "What is the cat called?", "question_type": "single-hop", "category": 4,
         "conversation_id": "c2"},
    ])
    (root / "qrels.tsv").write_text("c1:q0\tc1:D1:1\t1\nc1:q1\tc1:D1:2\t1\nc2:q0\tc2:D1:1\t1\n")
    return root


def _note(path: Path, name: str, description: str, body: str, extra: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}\n", encoding="utf-8")


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    root = tmp_path / "agent_notes"
    mem = root / "notes" / "acme__widget" / ".claude" / "memory"
    _note(mem / "feedback_changelog.md", "changelog", "Add an Unreleased changelog entry before closing",
          "Every user-visible change needs a CHANGELOG entry under Unreleased.", "type: feedback\n")
    _note(mem / "feedback_smoke.md", "smoke", "Wait for the smoke test before closing an issue",
          "Never close an issue while the timing run is still going.", "type: feedback\n")
    (mem / "MEMORY.md").write_text("- [Changelog](feedback_changelog.md) — release notes rule\n", encoding="utf-8")
    (root / "notes" / "acme__widget" / "LICENSE").write_text("MIT\n")
    other = root / "notes" / "solo__tool" / "memory"
    _note(other / "project_db.md", "db", "The database is Postgres 16", "We use Postgres, not MySQL.")
    _jsonl(root / "prompts.jsonl", [
        {"id": "w-01", "repo": "acme/widget", "prompt": "added a new flag, write the changelog entry",
         "relevant": ["acme/widget:.claude/memory/feedback_changelog.md"], "also_ok": [],
         "must_not": ["acme/widget:.claude/memory/feedback_smoke.md"], "kind": "plain"},
        {"id": "w-02", "repo": "acme/widget", "prompt": "the timing run is still going, close the issue?",
         "relevant": ["acme/widget:.claude/memory/feedback_smoke.md"],
         "also_ok": ["acme/widget:.claude/memory/feedback_changelog.md"], "must_not": [], "kind": "intent"},
        {"id": "t-01", "repo": "solo/tool", "prompt": "which database do we run?",
         "relevant": ["solo/tool:memory/project_db.md"], "also_ok": [], "must_not": [], "kind": "plain"},
    ])
    return root


@pytest.fixture
def demo_dir(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    _note(root / "store" / "deploy_freeze.md", "deploy-freeze", "No deploys on Friday afternoons",
          "Deploys are frozen from Friday noon until Monday.")
    _note(root / "store" / "team" / "review_rule.md", "review-rule", "Two approvals for schema changes",
          "Database schema migrations need two reviewers.")
    _note(root / "store" / "배포_규칙.md", "배포-규칙", "금요일 오후에는 배포하지 않는다", "배포는 금요일 정오부터 월요일까지 동결된다.")
    _jsonl(root / "prompts.jsonl", [
        {"id": "d1", "prompt": "can I deploy on friday afternoon?", "relevant": ["deploy_freeze.md"],
         "kind": "plain", "lang": "en"},
        {"id": "d2", "prompt": "schema migration reviewers", "relevant": ["team/review_rule"], "kind": "plain",
         "lang": "en"},
        {"id": "d3", "prompt": "금요일에 배포해도 돼?", "relevant": ["배포_규칙.md"], "kind": "plain", "lang": "ko"},
        {"id": "d4", "prompt": "nothing", "relevant": ["missing.md"], "kind": "plain", "lang": "en"},
    ])
    return root


# -- datasets -----------------------------------------------------------------------------------
def test_read_qrels_skips_header_and_zero(tmp_path: Path):
    path = tmp_path / "q.tsv"
    path.write_text("qid\tdoc\trel\nq1\td1\t1\nq1\td2\t0\nq2\t0\td3\t2\n")
    assert read_qrels(path) == {"q1": {"d1": 1.0}, "q2": {"d3": 2.0}}


def test_corpus_scoped_by_haystack(corpus_dir: Path):
    assert detect_format(corpus_dir)[0] == "corpus"
    ds = load_dataset(corpus_dir)
    assert ds.scope_field == "haystack"
    assert [q.id for q in ds.queries] == ["q1", "q2"]  # q3_abs has no qrels
    assert ds.skipped == {"no qrels": 1}
    assert {q.scope for q in ds.queries} == {"q1", "q2"}  # no haystack field: the query's own id
    assert sorted(u.uid for u in ds.units["q1"]) == ["q1/answer_1", "q1/s2", "q1/s3"]
    assert "q3" not in ds.units  # only scopes with queries are built
    unit = ds.units["q1"][0]
    assert "answer" not in unit.name + unit.title + unit.body  # the id is never indexed text
    assert ds.queries[0].relevant == {"q1/answer_1": 1.0}


def test_corpus_scoped_by_conversation_with_type_filter(locomo_dir: Path):
    ds = load_dataset(locomo_dir, exclude_types=["5"])
    assert ds.scope_field == "conversation_id"
    assert [q.id for q in ds.queries] == ["c1:q0", "c2:q0"]
    assert ds.skipped == {"type filtered out": 1}
    assert ds.queries[0].kind == "single-hop" and ds.queries[0].tags["category"] == "4"
    assert load_dataset(locomo_dir, include_types=["adversarial"]).queries[0].id == "c1:q1"
    assert ds.units["c1"][0].title == "c1 session 1"


def test_corpus_unknown_scope_field(locomo_dir: Path):
    with pytest.raises(DatasetError, match="no field 'nope'"):
        load_dataset(locomo_dir, scope_field="nope")


def test_agent_notes_layout(notes_dir: Path):
    assert detect_format(notes_dir)[0] == "notes"
    ds = load_dataset(notes_dir)
    assert set(ds.units) == {"acme/widget", "solo/tool"}
    uids = sorted(u.uid for u in ds.units["acme/widget"])
    assert uids == ["acme/widget:.claude/memory/feedback_changelog.md", "acme/widget:.claude/memory/feedback_smoke.md"]
    changelog = next(u for u in ds.units["acme/widget"] if u.uid.endswith("changelog.md"))
    assert "release notes rule" in changelog.fts_description()  # the MEMORY.md hook is read, MEMORY.md is no unit
    first = ds.queries[0]
    assert first.scope == "acme/widget" and first.kind == "plain"
    assert first.must_not == {"acme/widget:.claude/memory/feedback_smoke.md"}
    assert ds.queries[1].also_ok == {"acme/widget:.claude/memory/feedback_changelog.md"}
    assert ds.problems == []


def test_prompts_store_layout(demo_dir: Path):
    fmt, paths = detect_format(demo_dir)
    assert fmt == "prompts" and paths["store"] == demo_dir / "store"
    assert detect_format(demo_dir / "prompts.jsonl")[0] == "prompts"
    ds = load_dataset(demo_dir)
    assert sorted(u.uid for u in ds.units["all"]) == ["deploy_freeze.md", "team/review_rule.md", "배포_규칙.md"]
    assert [sorted(q.relevant) for q in ds.queries] == [["deploy_freeze.md"], ["team/review_rule.md"], ["배포_규칙.md"]]
    assert ds.skipped == {"no relevant note": 1}
    assert any("missing.md" in p for p in ds.problems)


def test_not_a_benchmark(tmp_path: Path):
    with pytest.raises(DatasetError):
        detect_format(tmp_path)


# -- runner -------------------------------------------------------------------------------------
def test_run_eval_end_to_end_with_fake_embedder(corpus_dir: Path, tmp_path: Path):
    cache = tmp_path / "cache" / "emb.sqlite"
    ds = load_dataset(corpus_dir)
    result = run_eval(ds, modes=("keyword", "vector", "hybrid", "rrf"), ks=(1, 3), embedder="fake",
                      cache_path=cache)
    assert result["embedder"] == "fake" and result["modes"] == ["keyword", "vector", "hybrid", "rrf"]
    for mode in result["modes"]:
        assert result["overall"][mode]["n"] == 2
        assert result["latency_ms"][mode]["n"] == 2
    assert result["overall"]["keyword"]["recall@1"] == 1.0  # "puppy" and "tax payment" are in one doc each
    assert result["overall"]["hybrid"]["hit@3"] == 1.0
    assert set(result["groups"]["kind"]) == {"single-session-user", "temporal-reasoning"}
    assert result["timing"]["passages_embedded"] == 5
    assert set(result["gate"]) == {"hybrid", "rrf"} and result["gate"]["hybrid"]["top_k"]["queries"] == 2
    record = result["per_query"][0]
    assert record["modes"]["keyword"]["top"][0] == "q1/answer_1"
    json.loads(to_json(result))
    json.dumps(result)  # JSON-able as is: the CLI dumps it without a default=
    text = format_report(result)
    assert "delivered" in text and "ranking, a diagnostic" in text and "meaning (embeddings) against keyword search alone" in text and "hybrid" in text
    assert text.index("delivered") < text.index("ranking, a diagnostic")  # the product's figures first
    # a second run takes every passage and query vector from the shared cache
    again = run_eval(ds, modes=("keyword", "hybrid"), ks=(1,), embedder="fake", cache_path=cache)
    assert again["timing"]["passages_embedded"] == 0 and again["timing"]["queries_embedded"] == 0
    assert again["overall"]["hybrid"] == pytest.approx(
        {k: v for k, v in result["overall"]["hybrid"].items() if k in again["overall"]["hybrid"]})


def test_run_eval_without_embedder_is_keyword_only(notes_dir: Path):
    result = run_eval(load_dataset(notes_dir), ks=(1, 3), embedder=None)
    assert result["modes"] == ["keyword"]
    assert any("skipped" in n for n in result["notes"])
    assert result["gate"] == {}
    mn = result["must_not"]["keyword"]
    assert mn["outranks_all"]["prompts"] == 1 and mn["top3"]["total"] == 1
    assert result["overall"]["keyword"]["n"] == 3
    assert "scope" in result["groups"]  # few scopes: a per-scope table


def test_evaluate_path_prompts_store(demo_dir: Path, tmp_path: Path):
    result = evaluate_path(demo_dir, embedder="fake", cache_path=tmp_path / "c.sqlite", ks=(1, 3))
    assert result["modes"] == ["keyword", "vector", "hybrid", "full"]  # full: the pipeline as configured
    assert result["overall"]["keyword"]["n"] == 3
    assert set(result["groups"]["lang"]) == {"en", "ko"}
    assert result["groups"]["lang"]["ko"]["keyword"]["recall@1"] == 1.0  # CJK bigrams match
    assert "by lang" in format_report(result)


def test_unknown_mode(corpus_dir: Path):
    with pytest.raises(ValueError, match="unknown mode"):
        run_eval(load_dataset(corpus_dir), modes=("keyword", "bm42"), embedder="fake")


# -- the real benchmarks (skipped without /work/shared) ----------------------------------------
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="benchmark data in /work/shared/bench not present")


@needs_shared
@pytest.mark.slow
def test_agent_notes_dev_keyword_baseline():
    result = evaluate_path(SHARED / "agent_notes_dev", embedder="none", ks=(1, 3, 5))
    ds = result["dataset"]
    assert (ds["queries"], ds["units"], ds["scopes"]) == (47, 43, 4)
    assert ds["problems"] == []
    assert result["groups"]["kind"]["plain"]["keyword"]["recall@1"] == 1.0
    assert result["must_not"]["keyword"]["top5"]["total"] == 10


@needs_shared
@pytest.mark.slow
def test_locomo_and_longmemeval_loading():
    locomo = load_dataset(SHARED / "locomo", exclude_types=["5"])
    assert locomo.scope_field == "conversation_id" and len(locomo.units) == 10
    assert len(locomo.queries) == 1536 and locomo.problems == []
    lme = load_dataset(SHARED / "longmemeval_s_trunc500", limit=20)
    assert lme.scope_field == "haystack" and len(lme.queries) == 20 and len(lme.units) == 20
    full = load_dataset(SHARED / "longmemeval_s_trunc500")
    assert len(full.queries) == 470 and full.skipped == {"no qrels": 30}


def test_eval_command(corpus_dir: Path, tmp_path: Path, capsys, monkeypatch):
    """`memlane eval DIR` end to end: text report and --json, type filters, a clear error."""
    from memlane.adapters.cli import main

    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["eval", str(corpus_dir), "--embedder", "fake", "--modes", "keyword,hybrid", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["modes"] == ["keyword", "hybrid"] and data["overall"]["hybrid"]["n"] > 0
    assert main(["eval", str(corpus_dir), "--embedder", "none"]) == 0
    assert "keyword" in capsys.readouterr().out
    assert main(["eval", str(tmp_path / "missing")]) == 2
    assert "no such benchmark folder" in capsys.readouterr().err
