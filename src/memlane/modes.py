"""The words every interface asks in: how much of a recalled unit is shown (``Depth``) and how
the keyword and vector legs are combined (``Fusion``). A module of their own, so that a command's
options can offer them without loading the settings (``config.py`` holds them for the rest)."""

from __future__ import annotations

from enum import Enum


class Depth(str, Enum):
    """How much of a recalled unit is shown, lightest first: its id (name, score, why), its
    index line (title and when it applies), a summary (title, type, scope, a preview), or all
    of it. Every interface asks in these words."""

    IDS = "ids"
    INDEX = "index"
    SUMMARY = "summary"
    FULL = "full"

    @property
    def rank(self) -> int:
        return list(Depth).index(self)


class Fusion(str, Enum):
    """How the keyword and vector legs are combined (R1)."""

    HYBRID = "hybrid"  # MemPalace: 0.6 * cosine + 0.4 * min-max(BM25), missing leg renormalised
    RRF = "rrf"  # reciprocal-rank fusion (Cormack et al. 2009)
    KEYWORD = "keyword"  # BM25 only
    VECTOR = "vector"  # cosine only
