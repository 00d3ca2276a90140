"""Scopes (S3): user (cross-project), team (P1: shared by a team's agents, on PostgreSQL) and
project (the repository), narrower wins: project over team over user.

A name that exists in two scopes is served from the narrower one; the wider note is shadowed
(reported by ``stats``/``doctor``, never recalled). The union is never loaded. The folders of
user and project scopes are resolved here, file by file; the team's notes live in their own
store, and ``team/scope.py`` applies the same rule when the team joins a recall
(``yields_to_narrower``).
"""

from __future__ import annotations

from pathlib import Path

from .links import link_key
from .note import Note
from ..records import dataclass, field
from .scan import DEFAULT_MAX_BYTES, ParseCache, Skip, scan_folder

#: wider scopes first; a higher rank is narrower and wins a conflict
SCOPE_RANK = {"user": 0, "team": 1, "project": 2}


def scope_rank(scope: str) -> int:
    return SCOPE_RANK.get(scope, SCOPE_RANK["project"])


def yields_to_narrower(scope: str, name: str, names_by_scope: dict[str, set[str]]) -> bool:
    """Whether a ``scope`` note called ``name`` is shadowed: a narrower scope of
    ``names_by_scope`` (scope -> the ``link_key`` of each of its notes' names) has one so named."""
    key = link_key(name)
    return any(scope_rank(other) > scope_rank(scope) and key in names for other, names in names_by_scope.items())


@dataclass(frozen=True)
class StoreSpec:
    """A memory folder in play: path, scope, whether it is read-only, where it came from."""

    path: Path
    scope: str = "project"
    read_only: bool = False
    label: str = ""  # where the mount came from: "--store", "config", "claude-code", "demo"


@dataclass
class Snapshot:
    """Everything the stores hold right now."""

    notes: list[Note] = field(default_factory=list)
    shadowed: list[tuple[Note, Note]] = field(default_factory=list)  # (hidden, winner)
    skipped: list[Skip] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)  # kept out by privacy.exclude (G3)
    folders: dict[Path, bool] = field(default_factory=dict)  # root -> has MEMORY.md


def load_snapshot(specs: list[StoreSpec], *, max_bytes: int = DEFAULT_MAX_BYTES,
                  cache: ParseCache | None = None, exclude: tuple[str, ...] = ()) -> Snapshot:
    snap = Snapshot()
    seen_roots: set[Path] = set()
    for spec in specs:
        scan = scan_folder(spec.path, spec.scope, max_bytes=max_bytes, cache=cache, exclude=exclude)
        if scan.root in seen_roots:
            continue
        seen_roots.add(scan.root)
        snap.notes.extend(scan.notes)
        snap.skipped.extend(scan.skipped)
        snap.excluded.extend(scan.excluded)
        snap.folders[scan.root] = scan.has_index
    _resolve_name_conflicts(snap)
    return snap


def _report_duplicates(notes: list[Note]) -> None:
    groups: dict[tuple[str, int], list[Note]] = {}
    for note in notes:
        groups.setdefault((link_key(note.name), scope_rank(note.scope)), []).append(note)
    for same in groups.values():
        for note in same if len(same) > 1 else ():
            others = ", ".join(str(o.path) for o in same if o is not note)
            note.problems.append(f"duplicate name {note.name!r} in the {note.scope} scope (also {others})")


def _resolve_name_conflicts(snap: Snapshot) -> None:
    _report_duplicates(snap.notes)
    best: dict[str, Note] = {}
    for note in snap.notes:
        key = link_key(note.name)
        holder = best.get(key)
        if holder is None or scope_rank(note.scope) > scope_rank(holder.scope):
            best[key] = note
    kept = []
    for note in snap.notes:
        winner = best[link_key(note.name)]
        if scope_rank(note.scope) < scope_rank(winner.scope):
            snap.shadowed.append((note, winner))
        else:
            kept.append(note)
    snap.notes = kept
