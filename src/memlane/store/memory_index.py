"""``MEMORY.md``: Claude Code's index, one line per note: ``- [Title](file.md) — hook``."""

from __future__ import annotations

import re

from ..records import dataclass

INDEX_FILE = "MEMORY.md"
#: Claude Code loads only the first 200 lines or 25 KB of MEMORY.md, whichever comes first
#: (Claude Code's memory documentation); 25 KB read as 25,000 bytes, the earlier of the two readings
LOADED_MAX_LINES = 200
LOADED_MAX_BYTES = 25_000
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_LINE = re.compile(r"^\s*[-*]\s*\[(?P<title>[^\]]+)\]\((?P<file>[^)\s]+)\)\s*(?:[—–:-]+\s*)?(?P<hook>.*)$")


@dataclass(frozen=True)
class IndexLine:
    """One entry of a MEMORY.md index: title, file, hook and line."""

    title: str
    file: str  # relative to the folder holding MEMORY.md
    hook: str
    line_no: int
    section: str = ""  # the ``#`` heading the line sits under ("" before any heading)


def parse_memory_index(text: str) -> list[IndexLine]:
    """The pointer lines of a ``MEMORY.md``, each with the heading it sits under; prose and
    blank lines are ignored."""
    lines = []
    section = ""
    for number, line in enumerate(text.split("\n"), start=1):  # "\n" only: U+2028 and kin are no line break here
        line = line.removesuffix("\r")
        heading = _HEADING.match(line)
        if heading:
            section = heading.group(1).strip()
            continue
        m = _LINE.match(line)
        if m:
            lines.append(IndexLine(m.group("title").strip(), m.group("file").strip(), m.group("hook").strip(),
                                   number, section))
    return lines


def loaded_lines(text: str) -> int:
    """How many lines of a ``MEMORY.md`` holding ``text`` Claude Code loads: the first
    ``LOADED_MAX_LINES``, fewer when they pass ``LOADED_MAX_BYTES``; a line past the cut is never seen."""
    lines = text.rstrip("\n").split("\n") if text.strip() else []
    encoded = 0
    for number, line in enumerate(lines[:LOADED_MAX_LINES], start=1):
        encoded += len(line.encode("utf-8")) + 1
        if encoded > LOADED_MAX_BYTES:
            return number - 1
    return min(len(lines), LOADED_MAX_LINES)
