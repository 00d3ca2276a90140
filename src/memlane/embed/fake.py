"""A deterministic embedder for tests: hashed bag of words, no dependencies but numpy.

Texts sharing words get similar vectors, so ranking tests mean something; the same
text always gives the same vector, on every machine.
"""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

from .base import Embedder

_WORD = re.compile(r"\w+", re.UNICODE)


class FakeEmbedder(Embedder):
    name = "fake"
    dim = 64
    min_cosine = 0.2
    strong_cosine = 0.8

    def embed_batch(self, texts: Sequence[str], *, is_query: bool):
        import numpy as np

        from ..index.text import fts_text  # CJK as bigrams, so CJK texts share "words" too

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(fts_text(text).lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                slot = int.from_bytes(digest[:2], "little") % self.dim
                sign = 1.0 if digest[2] & 1 else -1.0
                out[row, slot] += sign
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out
