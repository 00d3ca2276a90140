"""Fusion (R1) as pure functions, and thresholds (R3) on a real index."""

from __future__ import annotations

import pytest

from memlane import Memory
from memlane.config import RetrieveConfig
from memlane.embed import load_embedder
from memlane.index import Index, Unit, embed_pending
from memlane.retrieve import Legs, calibrate_cosine, fuse_hybrid, fuse_rrf, min_max, rank


@pytest.mark.parametrize("scores, expected", [
    ({}, {}),
    ({1: 5.0}, {1: 1.0}),  # a single candidate is the best candidate
    ({1: 2.0, 2: 2.0}, {1: 1.0, 2: 1.0}),  # all equal: all best, never divide by zero
    ({1: 1.0, 2: 3.0, 3: 2.0}, {1: 0.0, 2: 1.0, 3: 0.5}),
    ({1: -4.0, 2: -2.0}, {1: 0.0, 2: 1.0}),
])
def test_min_max(scores, expected):
    assert min_max(scores) == pytest.approx(expected)


@pytest.mark.parametrize("cosine, floor, expected", [
    (0.9, 0.8, 0.5),
    (0.8, 0.8, 0.0),
    (0.7, 0.8, 0.0),  # below the model's floor: nothing
    (1.0, 0.8, 1.0),
    (0.6, 0.2, 0.5),
    (1.2, 0.0, 1.0),  # clamped
    (0.99, 1.0, 0.0),  # a floor of 1 leaves no room
])
def test_calibrate_cosine(cosine, floor, expected):
    assert calibrate_cosine(cosine, floor) == pytest.approx(expected)


def test_fuse_hybrid_weights_and_renormalises_a_missing_vector():
    legs = {
        1: Legs(bm25=9.0, bm25_norm=1.0, cosine=0.9, vector=0.5),
        2: Legs(bm25=5.0, bm25_norm=0.5),  # no vector for this unit
        3: Legs(cosine=0.95, vector=0.75),  # vector only
    }
    fuse_hybrid(legs, vector_weight=0.6, keyword_weight=0.4, vectors_available=True)
    assert legs[1].fused == pytest.approx(0.6 * 0.5 + 0.4 * 1.0)
    assert legs[2].fused == pytest.approx(0.5)  # the keyword leg at full weight, never 0
    assert legs[2].notes == ["no vector for this unit yet: keyword leg only"]
    assert legs[3].fused == pytest.approx(0.6 * 0.75)
    assert legs[1].notes == [] and legs[3].notes == []


def test_fuse_hybrid_weights_need_not_sum_to_one():
    legs = {1: Legs(bm25_norm=1.0, cosine=0.5, vector=0.2)}
    fuse_hybrid(legs, vector_weight=3, keyword_weight=1, vectors_available=True)
    assert legs[1].fused == pytest.approx((3 * 0.2 + 1 * 1.0) / 4)


def test_fuse_hybrid_without_vectors_is_the_keyword_leg():
    legs = {1: Legs(bm25_norm=0.7), 2: Legs(bm25_norm=0.0)}
    fuse_hybrid(legs, vector_weight=0.6, keyword_weight=0.4, vectors_available=False)
    assert (legs[1].fused, legs[2].fused) == (pytest.approx(0.7), 0.0)
    assert legs[1].notes == []  # keyword-only mode is not a per-unit problem


def test_fuse_rrf():
    legs = {
        1: Legs(bm25_rank=1, vector_rank=1),
        2: Legs(bm25_rank=2, vector_rank=None),
        3: Legs(bm25_rank=None, vector_rank=2),
        4: Legs(),
    }
    fuse_rrf(legs, k=60, legs_used=2)
    best = 2 / 61
    assert legs[1].fused == pytest.approx(1.0)  # first in every leg scores 1
    assert legs[2].fused == pytest.approx((1 / 62) / best)
    assert legs[3].fused == pytest.approx(legs[2].fused)
    assert legs[4].fused == 0.0


def test_fuse_rrf_one_leg():
    legs = {1: Legs(bm25_rank=1), 2: Legs(bm25_rank=3)}
    fuse_rrf(legs, k=10, legs_used=1)
    assert (legs[1].fused, legs[2].fused) == (pytest.approx(1.0), pytest.approx(11 / 13))


# -- on a real index -------------------------------------------------------------------
UNITS = [
    Unit(uid="cache", name="ci_cache", description="key the CI cache on the lockfile hash", body="cache lockfile"),
    Unit(uid="release", name="release_checklist", description="release checklist: changelog and signed tag",
         body="changelog, version, tag"),
    Unit(uid="pg", name="postgres_upgrade", description="postgres upgrade during the freeze", body="postgres 16"),
]


@pytest.fixture
def index(tmp_path, backend):
    idx = backend(tmp_path / "i.sqlite")
    idx.sync(UNITS)
    yield idx
    idx.close()


def test_unit_without_a_vector_is_renormalised_to_its_keyword_leg(index):
    fake = load_embedder("fake")
    embed_pending(index, fake)
    late = Unit(uid="late", name="cache_warmup", description="warm the cache before the release", body="cache")
    index.sync([late], prune=False)  # indexed, not embedded yet
    hits = {h.unit_id: h for h in rank(index, "cache release", RetrieveConfig(), embedder=fake,
                                       apply_threshold=False)}
    late_id = next(uid for uid, row in index.units_by_id(hits).items() if row["uid"] == "late")
    legs = hits[late_id].legs
    assert legs.cosine is None and legs.bm25_norm > 0
    assert hits[late_id].score == pytest.approx(legs.bm25_norm)
    assert "keyword leg only" in " ".join(legs.notes)


@pytest.mark.parametrize("fusion", ["hybrid", "rrf", "keyword", "vector"])
def test_every_fusion_ranks_the_obvious_unit_first(index, fusion):
    fake = load_embedder("fake")
    embed_pending(index, fake)
    hits = rank(index, "postgres upgrade freeze", RetrieveConfig(), embedder=fake, fusion=fusion)
    assert hits, fusion
    assert index.units_by_id([hits[0].unit_id])[hits[0].unit_id]["uid"] == "pg"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_vector_leg_threshold_drops_weak_cosines(index):
    fake = load_embedder("fake")
    embed_pending(index, fake)
    settings = RetrieveConfig(min_cosine=0.99)
    hits = rank(index, "postgres upgrade freeze", settings, embedder=fake, fusion="vector")
    assert hits == []


@pytest.mark.parametrize("prompt", ["thanks!", "ok", "thank you so much", "sounds good", "yes please", "lol"])
def test_chit_chat_recalls_nothing_keyword_only(store, tmp_path, prompt):
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        assert mem.recall(prompt) == []


def test_min_score_is_configuration(store, tmp_path):
    from memlane import Config

    prompt = "release the postgres upgrade"
    counts = []
    for min_score in (0.0, 0.3, 1.0):
        config = Config()
        config.retrieve.min_score = min_score
        with Memory([store], embedder="none", config=config, index_path=tmp_path / "i.sqlite") as mem:
            hits = mem.recall(prompt, k=10)
            assert all(h["score"] >= min_score for h in hits)
            counts.append(len(hits))
    assert counts[0] > counts[1] > 0 and counts[2] == 1  # only the best keyword match reaches 1.0
