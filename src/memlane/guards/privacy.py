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
import os
from pathlib import Path

from ..records import dataclass

OUTSIDE = "a symlink that leads out of its folder: not read"  # to a file or a folder


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


def real_inside(path: str | Path, root: str | Path) -> Path | None:
    """The real path of ``path`` (every symlink resolved) when it lies inside the real ``root``,
    else None: only such files are read, in every domain."""
    real = Path(os.path.realpath(path))
    base = Path(os.path.realpath(root))
    return real if real == base or real.is_relative_to(base) else None


def excluded_with_target(patterns, path: Path, rel: str, root: Path | str | None) -> str | None:
    """``excluded_by`` for a file and, when it is (or lies under) a symlink, for its target too:
    a link inside a store to an excluded file is as excluded as the file."""
    found = excluded_by(patterns, path, rel)
    if found or root is None:
        return found
    real = Path(os.path.realpath(path))
    if real == Path(path):
        return None
    base = Path(os.path.realpath(root))
    real_rel = real.relative_to(base).as_posix() if real.is_relative_to(base) else real.name
    return excluded_by(patterns, real, real_rel)


@dataclass(frozen=True)
class PrivacyGate:
    """The exclusion globs of one configuration, asked by every domain and the aggregator."""

    exclude: tuple[str, ...] = ()

    def blocks(self, path: str | Path, root: str | Path | None = None) -> str | None:
        """The pattern that keeps ``path`` out (``root``: the folder it was found in), or None;
        the target of a symlink is checked as well as the link."""
        if not self.exclude:
            return None
        path = Path(path)
        rel = path.name
        if root is not None:
            try:
                rel = path.relative_to(root).as_posix()
            except ValueError:
                pass
        return excluded_with_target(self.exclude, path, rel, root if root is not None else path.parent)

    @staticmethod
    def outside(path: str | Path, root: str | Path) -> bool:
        """Whether ``path`` resolves outside ``root`` (a symlink out of the folder): never read."""
        return real_inside(path, root) is None
