"""``MEMORY.md``: Claude Code's index, one line per note: ``- [Title](file.md) — hook``."""

from __future__ import annotations

import re
from dataclasses import dataclass

INDEX_FILE = "MEMORY.md"
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_LINE = re.compile(r"^\s*[-*]\s*\[(?P<title>[^\]]+)\]\((?P<file>[^)\s]+)\)\s*(?:[—–:-]+\s*)?(?P<hook>.*)$")


@dataclass(frozen=True)
class IndexLine:
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
