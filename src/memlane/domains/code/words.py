"""Identifiers as words: ``resumeUpload`` and ``resume_upload`` both read as "resume upload"."""

from __future__ import annotations

import re

from ...index.text import query_terms


# ---------------------------------------------------------------- words of identifiers

_WORD_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")


def split_identifier(name: str) -> list[str]:
    """The words of an identifier, lower-cased: ``resumeUpload`` → resume, upload;
    ``parse_HTTPDate`` → parse, http, date."""
    return [w.lower() for part in re.split(r"[_$\W]+", name) for w in _WORD_PART.findall(part)]


def searchable_words(text: str) -> str:
    """``text`` plus the split words of every compound identifier in it (for the index)."""
    extra = []
    for ident in _IDENT.findall(text):
        words = split_identifier(ident)
        if len(words) > 1:
            extra.extend(words)
    return f"{text} {' '.join(extra)}" if extra else text


def code_query_terms(query: str) -> list[str]:
    """Search terms of a query; a compound identifier (``resumeUpload``, ``resume_upload``)
    becomes its words, so it meets the split names in the index."""
    spaced = _IDENT.sub(lambda m: " ".join(split_identifier(m.group(0))) or m.group(0), query)
    return query_terms(spaced)
