"""Extended grapheme clusters (Unicode UAX #29), as far as XLM-R's normaliser can tell them apart.

The SentencePiece normaliser of ``tokenizers`` (``_unigram.py``) treats a cluster shorter than
6 UTF-8 bytes as one unit, so memlane must cut text into clusters exactly where ``tokenizers``
(the ``unicode-segmentation`` crate) does, at least for the short ones. The rules kept here:
GB3-GB5 (CR LF, controls), GB6-GB8 (Hangul syllables), GB9 / GB9a (extending marks, ZWJ,
spacing marks), GB9b (prepended concatenation marks) and GB12 / GB13 (regional-indicator
pairs). Left out, because every cluster they make is at least 6 bytes long and is then read
one character at a time anyway: GB9c (Indic conjuncts) and GB11 (emoji ZWJ sequences).

The properties come from the standard library's ``unicodedata`` (Unicode 14 on Python 3.11)
plus the short lists below: the Grapheme_Cluster_Break exceptions to the general categories
(GraphemeBreakProperty.txt), and the marks assigned after Unicode 14 that the library
already knows. Other characters assigned after Unicode 14 count as unassigned; probing
every code point found no other difference that reaches a token.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

# Grapheme_Cluster_Break = Prepend
_PREPEND = frozenset(
    [*range(0x0600, 0x0606), 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x0D4E, 0x110BD, 0x110CD, 0x111C2, 0x111C3,
     0x1193F, 0x11941, 0x11A3A, *range(0x11A84, 0x11A8A), 0x11D46, 0x11F02])
# Mc characters that are Grapheme_Extend (Other_Grapheme_Extend), so Extend rather than SpacingMark
_EXTEND_MC = frozenset(
    [0x09BE, 0x09D7, 0x0B3E, 0x0B57, 0x0BBE, 0x0BD7, 0x0CC2, 0x0CD5, 0x0CD6, 0x0D3E, 0x0D57, 0x0DCF, 0x0DDF,
     0x1B35, 0x302E, 0x302F, 0x1133E, 0x11357, 0x114B0, 0x114BD, 0x115AF, 0x11930, 0x1D165, 0x1D16E, 0x1D16F,
     0x1D170, 0x1D171, 0x1D172])
# other Extend characters outside Mn / Me: ZWNJ, halfwidth katakana sound marks, emoji modifiers, tags
_EXTEND_OTHER = frozenset([0x200C, 0xFF9E, 0xFF9F, *range(0x1F3FB, 0x1F400), *range(0xE0020, 0xE0080)])
# Mc characters that are neither Extend nor SpacingMark (Grapheme_Cluster_Break = Other)
_NOT_SPACING = frozenset(
    [0x102B, 0x102C, 0x1038, 0x1062, 0x1063, 0x1064, 0x1067, 0x1068, 0x1069, 0x106A, 0x106B, 0x106C, 0x106D,
     0x1083, 0x1087, 0x1088, 0x1089, 0x108A, 0x108B, 0x108C, 0x108F, 0x109A, 0x109B, 0x109C, 0x1A61, 0x1A63,
     0x1A64, 0xAA7B, 0xAA7D, 0x11720, 0x11721])
_SPACING_OTHER = frozenset([0x0E33, 0x0EB3])  # Lo, yet SpacingMark
# marks assigned in Unicode 15-17, unassigned to Python 3.11's unicodedata (Unicode 14), that the
# ``unicode-segmentation`` crate in tokenizers 0.23 joins to the character before them (found by
# probing every code point after "e\u0301" and "\u00b2": bench/embed_speed.py --tokenizers)
_LATER_MARKS = frozenset(cp for lo, hi in (
    (0x0897, 0x0897), (0x0CF3, 0x0CF3), (0x0ECE, 0x0ECE), (0x1ACF, 0x1ADD), (0x1AE0, 0x1AEB), (0x10D69, 0x10D6D),
    (0x10EFA, 0x10EFF), (0x11241, 0x11241), (0x113B8, 0x113C0), (0x113C2, 0x113C2), (0x113C5, 0x113C5),
    (0x113C7, 0x113CA), (0x113CC, 0x113D0), (0x113D2, 0x113D2), (0x113E1, 0x113E2), (0x11B60, 0x11B67),
    (0x11F00, 0x11F01), (0x11F03, 0x11F03), (0x11F34, 0x11F3A), (0x11F3E, 0x11F42), (0x11F5A, 0x11F5A),
    (0x13440, 0x13440), (0x13447, 0x13455), (0x1611E, 0x1612F), (0x1E08F, 0x1E08F), (0x1E4EC, 0x1E4EF),
    (0x1E5EE, 0x1E5EF), (0x1E6E3, 0x1E6E3), (0x1E6E6, 0x1E6E6), (0x1E6EE, 0x1E6EF), (0x1E6F5, 0x1E6F5))
    for cp in range(lo, hi + 1))
_ZWJ = 0x200D

CR, LF, CONTROL, EXTEND, ZWJ, SPACING, PREPEND, RI, L, V, T, LV, LVT, OTHER = range(14)


@lru_cache(maxsize=4096)
def break_class(ch: str) -> int:
    """The Grapheme_Cluster_Break value of one character (as an int constant of this module)."""
    cp = ord(ch)
    if cp < 0x7F:
        return CR if cp == 0x0D else LF if cp == 0x0A else CONTROL if cp < 0x20 else OTHER
    if cp == _ZWJ:
        return ZWJ
    if cp in _PREPEND:
        return PREPEND
    if cp in _EXTEND_OTHER or cp in _EXTEND_MC or cp in _LATER_MARKS:
        return EXTEND
    if cp in _SPACING_OTHER:
        return SPACING
    hangul = _hangul(cp)
    if hangul is not None:
        return hangul
    if 0x1F1E6 <= cp <= 0x1F1FF:
        return RI
    category = unicodedata.category(ch)
    if category in ("Mn", "Me"):
        return EXTEND
    if category == "Mc":
        return OTHER if cp in _NOT_SPACING else SPACING
    if category in ("Cc", "Zl", "Zp") or (category == "Cf" and cp != 0x200C):
        return CONTROL
    if category == "Cn" and _default_ignorable(cp):
        return CONTROL
    return OTHER


def _hangul(cp: int) -> int | None:
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return L
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return V
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return T
    if 0xAC00 <= cp <= 0xD7A3:
        return LV if (cp - 0xAC00) % 28 == 0 else LVT
    return None


def _default_ignorable(cp: int) -> bool:
    """Unassigned code points that are Default_Ignorable (Control for grapheme breaking)."""
    return 0x2060 <= cp <= 0x206F or 0xFFF0 <= cp <= 0xFFF8 or 0xE0000 <= cp <= 0xE0FFF


def joins(prev: int, cur: int, ri_run: int) -> bool:
    """Whether no cluster boundary falls between a character of class ``prev`` and one of ``cur``
    (``ri_run``: regional indicators in a row just before ``cur``)."""
    if prev == CR:
        return cur == LF  # GB3, GB4
    if prev in (LF, CONTROL) or cur in (CR, LF, CONTROL):
        return False  # GB4, GB5
    if prev == L:
        return cur in (L, V, LV, LVT) or cur in (EXTEND, ZWJ, SPACING)  # GB6
    if prev in (LV, V) and cur in (V, T):
        return True  # GB7
    if prev in (LVT, T) and cur == T:
        return True  # GB8
    if cur in (EXTEND, ZWJ, SPACING) or prev == PREPEND:
        return True  # GB9, GB9a, GB9b
    return prev == RI and cur == RI and ri_run % 2 == 1  # GB12, GB13


def clusters(text: str) -> list[str]:
    """``text`` cut into extended grapheme clusters."""
    out: list[str] = []
    start, prev, ri_run = 0, -1, 0
    for i, ch in enumerate(text):
        cur = break_class(ch)
        if i and not joins(prev, cur, ri_run):
            out.append(text[start:i])
            start = i
        ri_run = ri_run + 1 if cur == RI else 0
        prev = cur
    if text:
        out.append(text[start:])
    return out
