"""Text for the full-text index, for English and for CJK (I2).

SQLite's ``unicode61`` tokenizer keeps a run of Han, Kana or Hangul characters as one
token, so "배포전에" never matches "배포" and a Chinese sentence is one giant word. We
rewrite every CJK run as overlapping character bigrams (the classic CJK analyzer of
Lucene and Elasticsearch) before text reaches FTS5, for documents and queries alike;
Latin text is left to ``porter unicode61``. The stored note text is never altered.
"""

from __future__ import annotations

import math

import re
import unicodedata
from functools import cache

_CJK = "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK_FIRST = "\u1100"  # the lowest code point of those ranges
_TOKEN = re.compile(r"\w+", re.UNICODE)


@cache
def _cjk_run() -> re.Pattern[str]:
    """Compiled on first need (its wide classes cost ~2 ms to compile: a fresh hook process
    whose text is all below U+1100 never pays it)."""
    return re.compile(f"[{_CJK}]+")

# Short English stopword list: words that carry no intent in a prompt.
STOPWORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each few for from
    further get got had has have having he her here hers him his how i if in into is it its
    itself just let lets me more most my no nor not now of off ok okay on once only or other
    our ours out over own please same she should so some such than that the their theirs them
    then there these they this those through to too under until up us very was we were what
    when where which while who whom why will with would yes you your yours"""
    # conversational filler: a prompt made only of these asks for no memory
    """ thanks thank thx ty great nice cool awesome perfect good fine sure yeah yep yup nope
    alright lol haha hi hello hey morning evening bye cheers sounds works worked looks
    谢谢 多谢 고마 마워 고맙 맙습 습니 니다""".split()
)


def has_cjk(text: str) -> bool:
    return bool(text) and max(text) >= _CJK_FIRST and _cjk_run().search(text) is not None


def _bigrams(run: str) -> str:
    if len(run) == 1:
        return run
    return " ".join(run[i : i + 2] for i in range(len(run) - 1))


def fts_text(text: str) -> str:
    """The form of ``text`` given to FTS5: CJK runs become space-separated bigrams."""
    text = unicodedata.normalize("NFC", text or "")
    if not has_cjk(text):
        return text
    return _cjk_run().sub(lambda m: f" {_bigrams(m.group(0))} ", text)


def query_terms(text: str, *, limit: int = 64) -> list[str]:
    """Distinct, lower-cased search terms of a prompt, stopwords dropped, in order."""
    seen: dict[str, None] = {}
    for token in _TOKEN.findall(fts_text(text).lower()):
        if token in STOPWORDS or (len(token) == 1 and token.isascii()):
            continue
        seen.setdefault(token, None)
        if len(seen) >= limit:
            break
    return list(seen)


def fts_match_expression(terms: list[str]) -> str:
    """An FTS5 MATCH expression ORing the terms, each quoted (so no term is syntax)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def estimate_tokens(text: str) -> int:
    """A model-free token estimate: ~4 characters per token for ASCII text, one token per
    non-ASCII character (CJK scripts run at about one token per character or more)."""
    ascii_chars = len(text.encode("ascii", "ignore"))  # the ASCII characters, counted in C
    return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)
