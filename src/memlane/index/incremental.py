"""A refresh in proportion to what changed: one stat walk, and — when only notes were edited in
place — only those notes read, parsed and synced.

The stores are read as ``store/`` reads them (``scan_folder``, ``load_snapshot``): the same walk,
the same parse, the ``MEMORY.md`` line of the note attached. What a single note cannot tell is
kept from the last complete refresh in a manifest (``meta`` key ``manifest``): the files that are
not notes (``MEMORY.md``, files skipped or excluded) with their sizes and mtimes, the walk's own
skips, the notes whose name another note shares (duplicates and shadowing depend on the others),
and what that refresh reported. An edit takes the short way only when nothing of that can have
moved: the same files, the same settings, a changed file that is a note read before, still read
the same way, under the same name, sharing it with no other note. Anything else — a note added,
removed or renamed, ``MEMORY.md`` edited, a file that can no longer be read — is a complete
refresh, as before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from collections.abc import Callable

from ..guards.privacy import excluded_with_target
from ..records import dataclass, field
from ..store.links import link_key
from ..store.memory_index import INDEX_FILE, parse_memory_index
from ..store import scan  # the very walk, read and parse scan_folder makes (scan.parse_note, scan.read_text)
from ..store.note import Note, note_to_json
from ..store.scan import Skip, _markdown_entries
from ..store.scopes import StoreSpec

MANIFEST = "manifest"
MANIFEST_VERSION = 2
MAX_EDITED = 64  # more edits at once: a complete refresh is as cheap


@dataclass
class Walk:
    """The stores' markdown files as one stat walk found them."""

    roots: list[tuple[StoreSpec, Path]] = field(default_factory=list)  # (spec, resolved root), first of each root
    stats: dict[str, str] = field(default_factory=dict)  # path -> "size:mtime_ns" (compared as strings, in C)
    skips: list[tuple[str, str]] = field(default_factory=list)  # what the walk itself could not enter
    digest: str = ""
    #: nested roots: the files whose root is not the last one their path lies under (that root's
    #: walk skipped them, e.g. a symlink leading out of it) -> the root that found them last
    owners: dict[str, int] = field(default_factory=dict)

    def file(self, path: str) -> tuple[int, int, float, int]:
        """(size, mtime_ns, mtime, root number) of a file the walk found — the mtime as
        ``os.stat`` gives it, the root the last of the roots that found it. Kept as the one
        string per file only: a walk of 100k files is held between two refreshes."""
        size, _, mtime_ns = self.stats[path].partition(":")
        seconds, nanoseconds = divmod(int(mtime_ns), 1_000_000_000)
        number = self.owners.get(path)
        if number is None:
            number = self._under(path)
        if number is None:
            raise KeyError(path)
        return int(size), int(mtime_ns), seconds + nanoseconds * 1e-9, number

    def _under(self, path: str) -> int | None:
        """The last root whose folder holds ``path``."""
        for number in range(len(self.roots) - 1, -1, -1):
            root = str(self.roots[number][1])
            if path.startswith(root if root.endswith(os.sep) else root + os.sep):
                return number
        return None


#: files stat-ed between two calls of a walk's ``pause``
PAUSE_EVERY = 128


def walk(specs: list[StoreSpec], pause: Callable[[], None] | None = None) -> Walk:
    """One stat of every markdown file under ``specs``; ``digest`` changes whenever a path,
    size or mtime does (``store.scan.fingerprint``'s rule). ``pause``: called every
    ``PAUSE_EVERY`` files; a background walk waits in it while a prompt is being answered, so
    the two never share the interpreter (the walk is pure Python: 10 µs a file)."""
    import hashlib

    found, digest, seen, listed = Walk(), hashlib.sha256(), set(), []
    for spec in specs:
        root = spec.path.expanduser().resolve()
        digest.update(f"\0root:{root}".encode("utf-8", "surrogateescape"))
        if not root.is_dir():
            found.skips.append((str(root), "not a folder"))
            continue
        if root in seen:
            continue
        seen.add(root)
        found.roots.append((spec, root))
        skipped, mine = [], {}
        for count, entry in enumerate(_markdown_entries(root, skipped, ordered=False)):
            if pause is not None and not count % PAUSE_EVERY:
                pause()
            try:
                st = entry.stat()  # follows a symlink, as reading the note does
            except OSError:
                continue
            mine[entry.path] = f"{st.st_size}:{st.st_mtime_ns}"
        found.skips += [(s.path, s.reason) for s in skipped]
        found.stats.update(mine)
        listed.append(mine)
        # "path<TAB>size:mtime_ns" entries in order, made, sorted and joined in C (a repr of sorted
        # tuples cost 140 ms at 100k files)
        digest.update("\0".join(sorted(map("\t".join, mine.items()))).encode("utf-8", "surrogateescape"))
    found.digest = digest.hexdigest()
    if len(listed) > 1:  # the root that found a file last is its root (as reading the stores does)
        last = {path: number for number, mine in enumerate(listed) for path in mine}
        found.owners = {path: number for path, number in last.items() if found._under(path) != number}
    return found


def manifest_of(snap, found: Walk, settings: str) -> dict:
    """What the next refresh needs from this one (``snap``: its ``load_snapshot``)."""
    notes = [*snap.notes, *(hidden for hidden, _ in snap.shadowed)]
    note_paths = {str(n.path) for n in notes}
    by_key: dict[str, list[str]] = {}
    for note in notes:
        by_key.setdefault(link_key(note.name), []).append(str(note.path))
    return {
        "version": MANIFEST_VERSION, "settings": settings, "notes": len(snap.notes),
        "others": {p: stat for p, stat in found.stats.items() if p not in note_paths},
        "walk_skips": found.skips, "shared_names": sorted(p for paths in by_key.values() if len(paths) > 1 for p in paths),
        "indexes": [str(root) for root, has in snap.folders.items() if has],
        "skipped": [[s.path, s.reason] for s in snap.skipped], "excluded": list(snap.excluded),
        "shadowed": [[str(h.path), str(w.path)] for h, w in snap.shadowed],
    }


def load_manifest(text: str | None, settings: str) -> dict | None:
    try:
        manifest = json.loads(text or "null")
    except ValueError:
        return None
    if not isinstance(manifest, dict) or manifest.get("version") != MANIFEST_VERSION:
        return None
    return manifest if manifest.get("settings") == settings else None


def edited_notes(found: Walk, manifest: dict, parsed: dict[str, str]) -> list[str] | None:
    """Paths of the notes edited in place since ``manifest``'s refresh (``parsed``: the parse
    cache's "size:mtime_ns" by path), or None when anything else changed (see the module docstring)."""
    if [list(s) for s in found.skips] != [list(s) for s in manifest["walk_skips"]]:
        return None
    others = manifest["others"]
    if len(found.stats) != len(others) + sum(1 for p in parsed if p not in others):
        return None  # a file added or removed
    moved = found.stats.items() - parsed.items()  # in C: the notes that changed, and every other file
    if len(moved) > len(others) + MAX_EDITED:
        return None
    shared, edited = set(manifest["shared_names"]), []
    for path, stat in moved:
        known = others.get(path)
        if known is not None:
            if known != stat:
                return None  # MEMORY.md, or a skipped or excluded file, changed
        elif path not in parsed or path in shared:
            return None  # a new file, or a note whose name another note shares
        else:
            edited.append(path)
    return sorted(edited) if len(edited) <= MAX_EDITED else None


def read_edited(paths: list[str], found: Walk, manifest: dict, *, max_bytes: int,
                exclude: tuple[str, ...]) -> tuple[list[Note], dict[str, tuple[int, int, str]]] | None:
    """The edited notes as ``load_snapshot`` would hand them out, and their parse-cache rows;
    None when one of them no longer reads as the same note (unreadable, excluded)."""
    notes, rows, index_lines = [], {}, {}
    for path in paths:
        size, mtime_ns, mtime, number = found.file(path)
        spec, root = found.roots[number]
        file = Path(path)
        rel = file.relative_to(root).as_posix() if file.is_relative_to(root) else file.name
        if rel == INDEX_FILE or (exclude and excluded_with_target(exclude, file, rel, root)):
            return None
        text, problem = scan.read_text(file, max_bytes)
        if text is None:
            return None
        note = scan.parse_note(text, path=file, rel=rel, scope=spec.scope, store=root, mtime=mtime)
        if problem:
            note.problems.append(problem)
        rows[path] = (size, mtime_ns, note_to_json(note))  # cached before MEMORY.md's line is attached
        if number not in index_lines:
            index_lines[number] = _index_lines(root, manifest, max_bytes)
        for line in index_lines[number]:
            if line.file.removeprefix("./") == rel:
                note.title, note.index_hook, note.index_section = line.title, line.hook, line.section
        notes.append(note)
    return notes, rows


def _index_lines(root: Path, manifest: dict, max_bytes: int) -> list:
    if str(root) not in manifest["indexes"]:
        return []  # no MEMORY.md was read there (none, or excluded, or unreadable)
    text, _ = scan.read_text(root / INDEX_FILE, max_bytes)
    return parse_memory_index(text) if text is not None else []


def report_lists(manifest: dict) -> tuple[list[Skip], list[str], list[tuple]]:
    """(skipped, excluded, shadowed) as the manifest's refresh found them."""
    return ([Skip(p, r) for p, r in manifest["skipped"]], list(manifest["excluded"]),
            [(_Stored(Path(h)), _Stored(Path(w))) for h, w in manifest["shadowed"]])


@dataclass(frozen=True)
class _Stored:
    """A note known by its path only (a shadowed pair, from the manifest)."""

    path: Path


def same_name(a: str, b: str) -> bool:
    return link_key(a) == link_key(b)
