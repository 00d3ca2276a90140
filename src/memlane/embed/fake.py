"""A deterministic embedder for tests: hashed bag of words, no dependencies but numpy.

Texts sharing words get similar vectors, so ranking tests mean something; the same
text always gives the same vector, on every machine.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Sequence

from .base import Embedder

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK_RUN = re.compile("[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]{2,}")


def _words(text: str) -> list[str]:
    """Words, with a run of CJK characters read as its overlapping bigrams (so CJK texts share
    "words" too, as the keyword index reads them)."""
    text = unicodedata.normalize("NFC", text)
    text = _CJK_RUN.sub(lambda m: " " + " ".join(m.group(0)[i:i + 2] for i in range(len(m.group(0)) - 1)) + " ", text)
    return _WORD.findall(text)


class FakeEmbedder(Embedder):
    name = "fake"
    dim = 64
    instant = True
    min_cosine = 0.2
    strong_cosine = 0.8

    def embed_batch(self, texts: Sequence[str], *, is_query: bool):
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _words(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                slot = int.from_bytes(digest[:2], "little") % self.dim
                sign = 1.0 if digest[2] & 1 else -1.0
                out[row, slot] += sign
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out
