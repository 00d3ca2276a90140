"""``MEMORY.md``: Claude Code's index, one line per note: ``- [Title](file.md) — hook``."""

from __future__ import annotations

import re
from dataclasses import dataclass

INDEX_FILE = "MEMORY.md"
_LINE = re.compile(r"^\s*[-*]\s*\[(?P<title>[^\]]+)\]\((?P<file>[^)\s]+)\)\s*(?:[—–:-]+\s*)?(?P<hook>.*)$")


@dataclass(frozen=True)
class IndexLine:
    title: str
    file: str  # relative to the folder holding MEMORY.md
    hook: str
    line_no: int


def parse_memory_index(text: str) -> list[IndexLine]:
    """The pointer lines of a ``MEMORY.md``; headings, prose and blank lines are ignored."""
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        m = _LINE.match(line)
        if m:
            lines.append(IndexLine(m.group("title").strip(), m.group("file").strip(), m.group("hook").strip(), number))
    return lines
