"""What a parser finds in a source file: its symbols and its call sites."""

from __future__ import annotations

from ...records import dataclass, field


# ---------------------------------------------------------------- parse results

@dataclass
class Symbol:
    """A function, class or method found in a source file."""

    name: str
    qualname: str
    kind: str
    line: int
    end_line: int
    start_line: int = 0  # first line of the source shown (decorators included)
    signature: str = ""
    doc: str = ""
    decorators: list[str] = field(default_factory=list)


@dataclass
class Parsed:
    """A source file's symbols and calls, and the parser that found them."""

    symbols: list[Symbol]
    calls: list[tuple[str, int, str | None]]  # (callee name, line, caller qualname)
    parser: str
    note: str = ""  # set when the parse was partial (e.g. a syntax error → regex fallback)


def _first_line(doc: str | None) -> str:
    for line in (doc or "").strip().splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""
