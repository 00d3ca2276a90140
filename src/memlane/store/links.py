"""Links between notes: ``[[name]]`` wikilinks, markdown links to ``*.md`` files, and
plain filename mentions ("see feedback_x.md"), as real agent stores write them."""

from __future__ import annotations

import re

from ..records import dataclass

_WIKI = re.compile(r"\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_MD_LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+\.md)>?(?:#[^)\s]*)?\s*(?:\"[^\"]*\")?\)")
_MENTION = re.compile(r"(?<![\w/.(\[-])([\w][\w.-]*\.md)\b")
_CODE_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1", re.S | re.M)


@dataclass(frozen=True)
class Link:
    """A link as written in a note."""

    target: str  # as written: a name for wiki links, a relative path for the others
    kind: str  # "wiki" | "markdown" | "mention"


def extract_links(body: str) -> list[Link]:
    """Every link in ``body`` in order of appearance, without duplicates."""
    text = _CODE_FENCE.sub(" ", body)
    found: list[Link] = []
    seen: set[tuple[str, str]] = set()

    def add(target: str, kind: str) -> None:
        key = (target.strip(), kind)
        if key[0] and key not in seen:
            seen.add(key)
            found.append(Link(key[0], kind))

    for m in _WIKI.finditer(text):
        add(m.group(1), "wiki")
    md_spans = []
    for m in _MD_LINK.finditer(text):
        target = m.group(1)
        md_spans.append(m.span())
        if "://" not in target:
            add(target, "markdown")
    for m in _MENTION.finditer(text):
        if any(start <= m.start() < end for start, end in md_spans):
            continue
        add(m.group(1), "mention")
    return found


_SEPARATORS = re.compile(r"[\s_-]+")


def link_key(text: str) -> str:
    """Normalise a link target or a note name for matching: case, ``_``/``-``/space, ``.md``."""
    text = text.strip().rsplit("/", 1)[-1].lower()
    if text.endswith(".md"):
        text = text[:-3]
    return _SEPARATORS.sub("-", text).strip("-")
