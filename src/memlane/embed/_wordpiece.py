"""all-MiniLM-L6-v2's tokenizer (BERT, uncased WordPiece), in pure Python.

It reproduces, id for id, what the ``tokenizers`` library does with the model's own
``tokenizer.json`` (BertNormalizer with lowercasing, BertPreTokenizer, WordPiece with ``##``
continuations and at most 100 characters a word), so memlane needs no ``tokenizers`` (and
none of the hub packages it pulls in). ``tests/test_embed_tokenizers.py`` checks the identity
on memlane's own strings; ``bench/embed_speed.py --tokenizers`` on every benchmark text and on
every code point. The steps, in the library's order:

1. the special tokens (``[CLS]``, ``[SEP]``, ``[PAD]``, ``[MASK]``, ``[UNK]``) are cut out of the
   raw text, leftmost-longest, and become their ids;
2. clean: NUL, U+FFFD and every "other" character (categories Cc, Cf, Cn, Co, Cs) but tab,
   newline and carriage return are dropped, and whitespace becomes a space;
3. a space on both sides of every CJK ideograph;
4. accents stripped (NFD, then nonspacing marks dropped) and each character lowercased on
   its own (so a final sigma stays σ, as in the library);
5. split on whitespace, and around every punctuation character (ASCII punctuation, which
   includes symbols such as ``$`` and ``+``, and Unicode categories P*);
6. WordPiece: the longest vocabulary entry from the left, ``##`` before every piece but the
   first; a word with no such split, or longer than 100 characters, is one ``[UNK]``.

The library's character tables are older than Python's: its "other" and punctuation
categories come from the ``unicode_categories`` crate (Unicode 9), so characters assigned
since (🥰, for one) are unassigned to it and dropped, while Python knows them; its
lowercasing and its NFD are newer. ``_wordpiece_tables.py`` lists the difference, found by
probing every code point.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from ._wordpiece_tables import LEGACY_CATEGORY_RANGES, LOWER_EXCEPTIONS, NO_DECOMPOSITION
from .base import EmbedderUnavailable

MAX_WORD_CHARS = 100
PREFIX = "##"
SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_WORD_CACHE = 50_000  # split words remembered (notes repeat their words)
# White_Space (Rust's char::is_whitespace)
_WHITESPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                        "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@lru_cache(maxsize=8192)
def _clean(ch: str) -> str:
    """Steps 2 and 3 for one character."""
    cp = ord(ch)
    if ch in _WHITESPACE:
        return " " if ch in "\t\n\r" or unicodedata.category(ch) != "Cc" else ""
    if cp == 0 or cp == 0xFFFD or _is_other(ch):
        return ""
    if any(lo <= cp <= hi for lo, hi in _CJK):
        return f" {ch} "
    return ch


@lru_cache(maxsize=8192)
def _fold(ch: str) -> str:
    """Steps 4 and 5 for one character of the decomposed text, with a space on each side of
    a punctuation character: the pre-tokenizer then splits on whitespace alone."""
    if _category(ch) == "Mn":
        return ""
    return "".join(f" {low} " if _is_punct(low) else low for low in _case(ch))


_LEGACY_CATEGORY = {cp: category for category, spans in LEGACY_CATEGORY_RANGES.items()
                    for lo, hi in spans for cp in range(lo, hi + 1)}


def _category(ch: str) -> str:
    """The general category as the library's tables have it."""
    return _LEGACY_CATEGORY.get(ord(ch)) or unicodedata.category(ch)


def _is_other(ch: str) -> bool:
    """Cc, Cf, Co or Cs (not Cn: the library keeps unassigned characters)."""
    return _category(ch) in ("Cc", "Cf", "Co", "Cs")


def _is_punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or _category(ch)[0] == "P"


def _decompose(text: str) -> str:
    """NFD, leaving whole the few characters the library cannot decompose (all starters, so
    canonical reordering never crosses them)."""
    if not any(ord(ch) in NO_DECOMPOSITION for ch in text):
        return unicodedata.normalize("NFD", text)
    parts = re.split("([" + "".join(map(chr, sorted(NO_DECOMPOSITION))) + "])", text)
    return "".join(p if i % 2 else unicodedata.normalize("NFD", p) for i, p in enumerate(parts))


def _case(ch: str) -> str:
    return LOWER_EXCEPTIONS.get(ord(ch), ch.lower())


class WordPieceTokenizer:
    """Text to BERT word-piece ids, without ``[CLS]`` / ``[SEP]`` around them."""

    def __init__(self, vocab: dict[str, int], *, unk: str = "[UNK]"):
        self._vocab = vocab
        self._unk_id = vocab[unk]
        self._specials = {name: vocab[name] for name in SPECIALS if name in vocab}
        names = sorted(self._specials, key=len, reverse=True)
        self._special_re = re.compile("|".join(re.escape(n) for n in names))
        self._longest = max(len(p) for p in vocab)
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_tokenizer_json(cls, path: Path) -> "WordPieceTokenizer":
        """The vocabulary of a Hugging Face ``tokenizer.json`` whose model is WordPiece."""
        model = json.loads(Path(path).read_text(encoding="utf-8"))["model"]
        if model.get("type") != "WordPiece" or model.get("continuing_subword_prefix") != PREFIX:
            raise EmbedderUnavailable(f"{path}: not a WordPiece tokenizer with {PREFIX!r} continuations")
        return cls(model["vocab"], unk=model["unk_token"])

    def special_id(self, name: str) -> int:
        return self._specials[name]

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
        if text.isascii():
            normal = text.translate(_ASCII_TABLE)
        else:  # NFD over the whole text: it reorders runs of combining marks
            normal = "".join(map(_fold, _decompose("".join(map(_clean, text)))))
        cache = self._cache
        for word in normal.split():
            found = cache.get(word)
            if found is None:
                if len(cache) >= _WORD_CACHE:
                    cache.clear()
                found = cache[word] = tuple(self._word_pieces(word))
            ids.extend(found)

    def _word_pieces(self, word: str) -> list[int]:
        if len(word) > MAX_WORD_CHARS:
            return [self._unk_id]
        out, start, n = [], 0, len(word)
        while start < n:
            for end in range(min(n, start + self._longest), start, -1):
                piece = word[start:end] if start == 0 else PREFIX + word[start:end]
                piece_id = self._vocab.get(piece)
                if piece_id is not None:
                    out.append(piece_id)
                    start = end
                    break
            else:
                return [self._unk_id]
        return out


_ASCII_TABLE = {cp: _fold(_clean(chr(cp))) if _clean(chr(cp)) else "" for cp in range(128)}
