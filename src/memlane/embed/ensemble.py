"""Two embedders as one: multilingual-e5-small and all-MiniLM-L6-v2, concatenated.

Each model's vector is scaled by the square root of its weight before the two are joined,
so the dot product of two joined vectors is the weighted mean of the two models' cosines:
``w_e5 * cos_e5 + w_minilm * cos_minilm``. The weights even out the models' scales (e5
squeezes unrelated and related texts into ~0.72-0.90, MiniLM spreads them over ~0-0.7),
so that neither model decides alone. Measured in README "Choosing the default embedder".
"""

from __future__ import annotations

import math
from typing import Sequence

from .base import Embedder
from .e5 import E5SmallEmbedder
from .minilm import MiniLMEmbedder

E5_WEIGHT = 0.78
MINILM_WEIGHT = 0.22


class E5MiniLMEmbedder(Embedder):
    name = "e5-minilm"
    dim = E5SmallEmbedder.dim + MiniLMEmbedder.dim
    min_cosine = E5_WEIGHT * E5SmallEmbedder.min_cosine + MINILM_WEIGHT * MiniLMEmbedder.min_cosine
    strong_cosine = E5_WEIGHT * E5SmallEmbedder.strong_cosine + MINILM_WEIGHT * MiniLMEmbedder.strong_cosine
    max_chars = min(E5SmallEmbedder.max_chars, MiniLMEmbedder.max_chars)

    def __init__(self) -> None:
        self.parts = ((E5SmallEmbedder(), math.sqrt(E5_WEIGHT)), (MiniLMEmbedder(), math.sqrt(MINILM_WEIGHT)))

    def embed_batch(self, texts: Sequence[str], *, is_query: bool):
        import numpy as np

        blocks = [model.embed_batch(texts, is_query=is_query) * scale for model, scale in self.parts]
        return np.ascontiguousarray(np.hstack(blocks), dtype=np.float32)
