"""G3's one gate: what never leaves its scope, for every domain and every interface.

``privacy.exclude`` globs name files that are never read into any index — memory notes,
knowledge documents, session transcripts, source files alike — and that no answer may carry
(the aggregator checks every hit's path again, so a domain that slipped could not leak).
``private: true`` notes are the user's own: the local CLI shows them, no agent-facing
interface (hook layers, MCP, the aggregator) does.

A pattern is matched against a file's path relative to the folder it was found in, its
absolute path and its name; ``*`` also crosses ``/``; ``**/x.md`` matches ``x.md`` at the top.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path


def excluded_by(patterns: list[str] | tuple[str, ...], path: Path, rel: str) -> str | None:
    """The first of ``patterns`` that matches ``path`` (``rel``: its path inside its mounted
    folder), or None."""
    for pattern in patterns:
        pattern = pattern.strip()
        forms = {pattern, pattern.replace("**/", "")}
        if pattern and any(fnmatch.fnmatchcase(candidate, form) for candidate in (rel, str(path), path.name)
                           for form in forms):
            return pattern
    return None


@dataclass(frozen=True)
class PrivacyGate:
    """The exclusion globs of one configuration, asked by every domain and the aggregator."""

    exclude: tuple[str, ...] = ()

    def blocks(self, path: str | Path, root: str | Path | None = None) -> str | None:
        """The pattern that keeps ``path`` out (``root``: the folder it was found in), or None."""
        if not self.exclude:
            return None
        path = Path(path)
        rel = path.name
        if root is not None:
            try:
                rel = path.relative_to(root).as_posix()
            except ValueError:
                pass
        return excluded_by(self.exclude, path, rel)
