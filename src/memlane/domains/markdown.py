"""Markdown documents as sections (S4): where each ``##`` section starts and ends, and the
heading path that addresses it.

A unit runs from a level-1 or level-2 heading to the next heading of the same or a higher
level: the exact slice of the decoded file (line endings and a BOM kept). Headings inside
fenced code and HTML comments do not count; setext headings count only under a one-line
paragraph (so ``---`` after a blank line stays a rule); YAML front matter is skipped, its
``title`` used only when the document has no ``#`` heading. A section over ``SECTION_CHARS``
splits at its next level of sub-headings, recursively, each piece keeping its full heading path.
"""

from __future__ import annotations

import re

from ..records import dataclass

SECTION_CHARS = 4000  # a section longer than this is split at its sub-headings

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_NOT_PARAGRAPH = re.compile(r"^(?: {4,}|\t| {0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)| {0,3}[>|<])")
_ATTRS = re.compile(r"[ \t]*\{[#.][^}]*\}[ \t]*$")  # "## Title {#anchor}" (attr_list)
_FRONT = re.compile(r"\A(\ufeff?)---[ \t]*\r?\n(.*?\r?\n)?(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)


@dataclass
class Heading:
    """A markdown heading and the span of text under it."""

    level: int
    title: str
    start: int  # offset of its first character (a setext heading: of its text line)
    end: int  # offset just past its last line
    line: int  # 1-based line of its first character


@dataclass
class Section:
    """One recall unit: ``text`` is ``source[start:end]`` exactly."""

    headings: list[str]
    start: int
    end: int
    start_line: int
    end_line: int
    split: bool = False

    def text(self, source: str) -> str:
        return source[self.start:self.end]


def _heading_title(raw: str) -> str:
    return _ATTRS.sub("", raw or "").strip()


def _front_matter(text: str) -> tuple[int, str]:
    """(offset where the body starts, the front matter's ``title``) of a YAML front matter block."""
    match = _FRONT.match(text)
    if not match:
        return 0, ""
    title = ""
    for line in (match.group(2) or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "title" and not line[:1].isspace():
            title = value.strip().strip("'\"").strip()
    return match.end(), title


def _headings(text: str, start: int) -> list[Heading]:
    """ATX and setext headings of ``text`` from ``start``, ignoring fenced code blocks and HTML comments."""
    found: list[Heading] = []
    fence: tuple[str, int] | None = None
    comment = False
    prev: tuple[str, int, int] | None = None  # the previous line if it can be a setext heading's text
    before_prev_blank = True
    line_no = text.count("\n", 0, start) + 1
    for match in _LINE.finditer(text, start):
        line, offset = match.group(0).rstrip("\r\n"), match.start()
        candidate = None
        if comment:
            comment = "-->" not in line
        elif fence is not None:
            closing = line.strip()
            if closing and closing[0] == fence[0] and len(closing) >= fence[1] and set(closing) == {fence[0]} \
                    and len(line) - len(line.lstrip(" ")) <= 3:
                fence = None
        elif (opened := _FENCE_OPEN.match(line)) and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = (opened.group(1)[0], len(opened.group(1)))
        elif line.lstrip(" ").startswith("<!--") and len(line) - len(line.lstrip(" ")) <= 3:
            comment = "-->" not in line[line.index("<!--") + 4:]  # an HTML comment block: no headings inside
        elif atx := _ATX.match(line):
            found.append(Heading(len(atx.group(1)), _heading_title(atx.group(2)), offset, match.end(), line_no))
        elif prev is not None and (setext := _SETEXT.match(line)):
            level = 1 if setext.group(1)[0] == "=" else 2
            found.append(Heading(level, _heading_title(prev[0]), prev[1], match.end(), prev[2]))
        elif line.strip() and not _NOT_PARAGRAPH.match(line) and before_prev_blank:
            candidate = (line.strip(), offset, line_no)
        before_prev_blank = not line.strip() or bool(found and found[-1].end == match.end())
        prev = candidate
        line_no += 1
    return found


def _path_of(headings: list[Heading], root: list[str]) -> list[list[str]]:
    """The heading path of every heading: the titles of its open ancestors, then its own."""
    stack: list[Heading] = []
    paths = []
    for heading in headings:
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        paths.append(root + [h.title for h in stack])
    return paths


def _cut(source: str, start: int, end: int, inner: list[tuple[Heading, list[str]]], path: list[str],
         own_end: int, cap: int) -> list[Section]:
    """``source[start:end]`` as one section, or split at its highest sub-heading level when over ``cap``."""
    lines = lambda a, b: (source.count("\n", 0, a) + 1, source.count("\n", 0, max(a, b - 1)) + 1)  # noqa: E731
    if end - start <= cap or not inner:
        return [Section(path, start, end, *lines(start, end))]
    level = min(h.level for h, _ in inner)
    cuts = [i for i, (h, _) in enumerate(inner) if h.level == level]
    pieces: list[Section] = []
    if source[own_end:inner[cuts[0]][0].start].strip():  # the section's own intro, before its first sub-heading
        pieces.append(Section(path, start, inner[cuts[0]][0].start, *lines(start, inner[cuts[0]][0].start)))
    for n, i in enumerate(cuts):
        stop = inner[cuts[n + 1]][0].start if n + 1 < len(cuts) else end
        head, head_path = inner[i]
        below = inner[i + 1:cuts[n + 1] if n + 1 < len(cuts) else len(inner)]
        pieces += _cut(source, head.start, stop, below, head_path, head.end, cap)
    for piece in pieces:
        piece.split = True
    return pieces


def split_sections(source: str, *, cap: int = SECTION_CHARS) -> tuple[list[Section], str]:
    """The recall units of a markdown document, and its title (the first ``#``, else the
    front matter's ``title``). Every unit's text is an exact slice of ``source``."""
    body, fm_title = _front_matter(source)
    headings = _headings(source, body)
    h1 = next((h.title for h in headings if h.level == 1), "")
    title = h1 or fm_title
    root = [] if h1 or not fm_title else [fm_title]  # no "#" title: the front matter's heads every path
    paths = _path_of(headings, root)
    marks = [i for i, h in enumerate(headings) if h.level <= 2]
    lead = headings[marks.pop(0)] if marks and headings[marks[0]].level == 1 else None
    first = headings[marks[0]].start if marks else len(source)
    own_end = lead.end if lead else body
    sections: list[Section] = []
    intro = source[body:lead.start] + source[lead.end:first] if lead else source[body:first]
    if intro.strip():  # the title and its intro, up to the first "##" (or the second "#")
        pre_inner = [(h, p) for h, p in zip(headings, paths) if own_end <= h.start < first]
        sections += _cut(source, body, first, pre_inner, [lead.title] if lead else root, own_end, cap)
    for n, i in enumerate(marks):
        stop = headings[marks[n + 1]].start if n + 1 < len(marks) else len(source)
        inner = [(h, p) for h, p in zip(headings[i + 1:], paths[i + 1:]) if h.start < stop]
        if source[headings[i].end:stop].strip():
            sections += _cut(source, headings[i].start, stop, inner, paths[i], headings[i].end, cap)
    if not sections and source[body:].strip():
        sections = [Section([title] if title else root, body, len(source), *(
            source.count("\n", 0, body) + 1, source.count("\n", 0, max(body, len(source) - 1)) + 1))]
    return sections, title
