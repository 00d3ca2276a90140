"""The line a prompt is judged on (R1): a joined embedder searches a CJK prompt with the part
that can read it, on that part's own cosine line."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memlane.config import RetrieveConfig
from memlane.embed import load_embedder
from memlane.embed.base import QueryLine
from memlane.embed.ensemble import CJK_SHARE, E5_WEIGHT, MINILM_WEIGHT, E5MiniLMOnnxEmbedder, cjk_share
from memlane.embed.fake import FakeEmbedder
from memlane.index.sqlite import SQLiteIndex
from memlane.index.unit import Unit
from memlane.index.vectors import embed_pending
from memlane.retrieve.search import rank


@pytest.mark.parametrize("text, share", [
    ("hello world", 0.0), ("", 0.0), ("1234 !!", 0.0), ("배포 전에", 1.0), ("对象存储快满了", 1.0),
    ("files 테이블에 thumbnail_hash 컬럼", 6 / 24), ("rename README_中文.md please", 2 / 22),
])
def test_cjk_share_counts_letters(text, share):
    assert cjk_share(text) == pytest.approx(share)


def test_a_single_model_judges_every_prompt_on_its_own_line():
    fake = FakeEmbedder()
    vector = fake.embed_query("배포 전에 확인")
    line = fake.query_line("배포 전에 확인", vector)
    assert line == QueryLine(vector, fake.min_cosine, fake.strong_cosine) and not line.why


def _joined(e5: np.ndarray, minilm: np.ndarray) -> np.ndarray:
    return np.hstack([e5 * math.sqrt(E5_WEIGHT), minilm * math.sqrt(MINILM_WEIGHT)]).astype(np.float32)


def _unit(rng, dim) -> np.ndarray:
    v = rng.normal(size=dim)
    return v / np.linalg.norm(v)


def test_a_cjk_prompt_is_searched_by_e5_alone_on_e5s_line():
    joined = E5MiniLMOnnxEmbedder.__new__(E5MiniLMOnnxEmbedder)  # query_line needs no model loaded
    e5_class = joined.e5_class
    rng = np.random.default_rng(7)
    q_e5, q_mini, d_e5, d_mini = (_unit(rng, 384) for _ in range(4))
    prompt, note = _joined(q_e5, q_mini), _joined(d_e5, d_mini)

    line = joined.query_line("안드로이드에서 큰 동영상 올리다가 멈춰요", prompt)
    scale = math.sqrt(E5_WEIGHT)
    assert float(np.linalg.norm(line.vector)) == pytest.approx(1.0, abs=1e-5)  # a unit vector: pgvector's
    cosine = float(line.vector @ note)  # cosine distance and SQLite's plain product agree on it
    assert cosine == pytest.approx(scale * float(q_e5 @ d_e5), abs=1e-5)  # e5's cosine, scaled
    assert (line.min_cosine, line.strong_cosine) == pytest.approx((scale * e5_class.min_cosine,
                                                                   scale * e5_class.strong_cosine))
    assert e5_class.name in line.why

    english = joined.query_line("the upload froze at 60%", prompt)
    assert english.vector is prompt and not english.why
    assert (english.min_cosine, english.strong_cosine) == (joined.min_cosine, joined.strong_cosine)
    assert float(english.vector @ note) == pytest.approx(
        E5_WEIGHT * float(q_e5 @ d_e5) + MINILM_WEIGHT * float(q_mini @ d_mini), abs=1e-5)
    assert cjk_share("안드로이드에서 큰 동영상") >= CJK_SHARE > cjk_share("the upload froze 동영상")


class _CJKLine(FakeEmbedder):
    """The fake model, with CJK prompts judged on a stricter line of its own."""

    name = "fake"

    def query_line(self, text, vector):
        if cjk_share(text) < CJK_SHARE:
            return super().query_line(text, vector)
        return QueryLine(vector, 0.95, 0.99, why="the strict line (a CJK prompt)")


def test_rank_judges_cosines_on_the_line_of_the_prompt(tmp_path):
    index = SQLiteIndex(tmp_path / "i.sqlite")
    index.sync([Unit(uid="a", name="배포_체크리스트", description="배포 전에 확인할 것", body="배포 전에 확인")])
    embedder = _CJKLine()
    embed_pending(index, embedder)
    settings = RetrieveConfig(min_cosine=0.0)  # a configured floor is on the model's usual line only
    (hit,) = rank(index, "배포 전에 확인할 것", settings, embedder=embedder, fusion="vector", apply_threshold=False)
    assert hit.legs.cosine < 0.95 and hit.legs.vector == 0.0  # under the CJK line's floor
    assert "cosine by the strict line (a CJK prompt)" in hit.legs.notes
    assert rank(index, "배포 전에 확인할 것", settings, embedder=embedder, fusion="vector") == []
    index.close()


class _Flipped(FakeEmbedder):
    """The fake model, searching CJK prompts with the opposite vector: a line of its own."""

    name = "fake"

    def query_line(self, text, vector):
        if cjk_share(text) < CJK_SHARE:
            return super().query_line(text, vector)
        return QueryLine(-vector, self.min_cosine, self.strong_cosine, why="the flipped vector")


def test_rank_searches_with_the_vector_of_the_line(tmp_path):
    index = SQLiteIndex(tmp_path / "i.sqlite")
    index.sync([Unit(uid="a", name="배포_체크리스트", description="배포 전에 확인할 것", body="배포 전에 확인")])
    embedder = _Flipped()
    embed_pending(index, embedder)
    prompt = "배포 전에 확인할 것"
    (hit,) = rank(index, prompt, RetrieveConfig(), embedder=embedder, fusion="vector", apply_threshold=False)
    plain = FakeEmbedder()
    (same,) = rank(index, prompt, RetrieveConfig(), embedder=plain, fusion="vector", apply_threshold=False)
    assert hit.legs.cosine == pytest.approx(-same.legs.cosine) and same.legs.cosine > 0.5
    index.close()


@pytest.mark.slow
def test_the_default_embedder_reads_a_korean_prompt_with_e5():
    pytest.importorskip("onnxruntime")
    try:
        embedder = load_embedder("e5-minilm-onnx")
    except Exception as exc:  # the model files are not installed here
        pytest.skip(f"e5-minilm-onnx unavailable: {exc}")
    text = "안드로이드에서 큰 동영상 올리다가 중간에 멈춰요"
    line = embedder.query_line(text, embedder.embed_query(text))
    assert line.why and float(np.linalg.norm(line.vector[384:])) == 0.0
