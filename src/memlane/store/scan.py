"""Read a memory folder safely: every readable note comes back, every file that cannot
be a note comes back as a skip with its reason (binary, too big, unreadable, loop)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError
from .memory_index import INDEX_FILE, IndexLine, parse_memory_index
from ..guards.privacy import OUTSIDE, excluded_with_target
from ..guards.sanitize import is_whole
from .note import Note, note_from_json, note_to_json, parse_note
from ..records import dataclass, field

DEFAULT_MAX_BYTES = 1_000_000
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", ".obsidian", ".trash"}


@dataclass
class Skip:
    """A file left out of a scan, and why."""

    path: str
    reason: str


@dataclass
class FolderScan:
    """What scanning a memory folder found: notes, index lines and skipped files."""

    root: Path
    scope: str
    notes: list[Note] = field(default_factory=list)
    index_lines: list[IndexLine] = field(default_factory=list)
    has_index: bool = False
    skipped: list[Skip] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)  # files privacy.exclude keeps out (G3)


#: why a note (or a folder of notes) whose name is not UTF-8 is not read
NOT_UTF8_NAME = "its name is not UTF-8 (bytes of another encoding): rename it to read it"
#: why a symlink to a note is not read as a note of its own: the file is read once, by its own path
SECOND_PATH = "a symlink to a note this folder already holds: read once, as that file"


def _read_once(found: list[tuple[os.DirEntry, Path, str]], skipped: list[Skip]) -> list[tuple[Path, str]]:
    """``found`` (entry, path, rel) in its order without the second paths to one file: a symlink
    to a note the walk also reached by its own path is skipped — the file itself is kept, whatever
    the order of the walk — and of several symlinks to one file only the first by path is kept.
    One ``realpath`` a folder, and only when the store has a symlinked note to compare with."""
    def is_link(entry: os.DirEntry) -> bool:
        try:
            return entry.is_symlink()
        except OSError:
            return False

    links = [entry for entry, _, _ in found if is_link(entry)]
    if not links:
        return [(path, rel) for _, path, rel in found]
    linked = {entry.path for entry in links}
    folders: dict[str, str] = {}
    real: dict[str, str] = {}  # real path -> the path it is read by
    for entry, _, _ in found:
        if entry.path in linked:
            continue
        folder, name = os.path.split(entry.path)
        if folder not in folders:
            folders[folder] = os.path.realpath(folder)
        real.setdefault(os.path.join(folders[folder], name), entry.path)
    second: dict[str, str] = {}
    for entry in sorted(links, key=lambda e: e.path):
        target = os.path.realpath(entry.path)
        kept = real.setdefault(target, entry.path)
        if kept != entry.path:
            second[entry.path] = kept
    out = []
    for entry, path, rel in found:
        if entry.path in second:
            skipped.append(Skip(entry.path, f"{SECOND_PATH} ({second[entry.path]})"))
        else:
            out.append((path, rel))
    return out


def _markdown_entries(root: Path, skipped: list[Skip], *, ordered: bool):
    """The ``os.DirEntry`` of every ``*.md`` file under ``root`` (in name order when
    ``ordered``), following symlinks once (loops are skipped) — but only those that stay inside
    ``root``: a link to a file or folder elsewhere (``/etc/passwd``, another project) is skipped
    with its reason, never read."""
    seen_dirs: set[tuple[int, int]] = set()
    real_root = os.path.realpath(root)
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
        except OSError as exc:
            skipped.append(Skip(folder, f"unreadable folder: {exc.strerror or exc}"))
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            skipped.append(Skip(folder, "symlink loop or repeated folder"))
            continue
        seen_dirs.add(key)
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name) if ordered else list(listing)
        except OSError as exc:
            skipped.append(Skip(folder, f"unreadable folder: {exc.strerror or exc}"))
            continue
        for entry in entries:
            try:
                if not is_whole(entry.name):  # another encoding: the index refuses it
                    if entry.is_dir() or entry.name.lower().endswith(".md"):
                        skipped.append(Skip(entry.path, NOT_UTF8_NAME))
                    continue
                if entry.is_symlink() and not _stays_inside(entry.path, real_root):
                    if entry.is_dir() or entry.name.lower().endswith(".md"):
                        skipped.append(Skip(entry.path, OUTSIDE))
                    continue
                if entry.is_dir():
                    if entry.name not in _SKIP_DIRS:
                        stack.append(entry.path)
                elif entry.name.lower().endswith(".md") and entry.is_file():
                    yield entry
            except OSError as exc:
                skipped.append(Skip(entry.path, f"unreadable: {exc.strerror or exc}"))


def _stays_inside(path: str, real_root: str) -> bool:
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def utf8_folder(path, what: str) -> None:
    """``UsageError`` when ``path`` is not UTF-8 (bytes of another encoding), naming ``what`` it is:
    the indexes keep paths as UTF-8 text, as the scan skips a note whose own name is not
    (``NOT_UTF8_NAME``)."""
    if not is_whole(str(path)):
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        raise UsageError(f"{what} {shown}: its path is not UTF-8 (bytes of another encoding), and memlane works only "
                         "with folders whose path is: rename it, or move its files to a folder whose path is UTF-8")


def fingerprint(roots: list[Path]) -> str:
    """A digest of every markdown file's path, size and mtime under ``roots``: equal digests
    mean nothing changed, so a refresh can skip parsing (the hook's common case). One stat
    per file and no ``Path`` objects: the daemon runs this every few seconds."""
    import hashlib

    digest = hashlib.sha256()
    skipped: list[Skip] = []
    for root in roots:
        root = root.expanduser()
        digest.update(f"\0root:{root}".encode("utf-8", "surrogateescape"))
        if not root.is_dir():
            continue
        rows = []
        for entry in _markdown_entries(root, skipped, ordered=False):
            try:
                st = entry.stat()  # follows a symlink, as reading the note does
            except OSError:
                continue
            rows.append(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}")
        rows.sort()
        digest.update("\0".join(rows).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def read_text(path: Path, max_bytes: int) -> tuple[str | None, str | None]:
    """Return (text, None) or (None, reason). Non-UTF-8 bytes are replaced, not fatal."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return None, f"too large ({size:,} bytes > {max_bytes:,}); raise index.max_file_bytes to include it"
        data = path.read_bytes()
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}"
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 with its byte-order mark (Windows PowerShell's `>`)
        text = data.decode("utf-16", errors="replace")
        if "\x00" in text[:8192]:  # UTF-32 (its mark begins as UTF-16's does), or binary
            return None, "binary file (NUL bytes)"
        return text, "UTF-16 text (read as such; memlane writes UTF-8)"
    if b"\x00" in data[:8192]:
        return None, "binary file (NUL bytes)"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), "not UTF-8: undecodable bytes replaced with U+FFFD"


class ParseCache:
    """Parsed notes by path, reused while a file's size and mtime are unchanged, so that
    editing one note of a large store does not re-read and re-parse all the others.

    ``rows`` maps a path to ``(size, mtime_ns, note as JSON)``; after a scan, ``fresh``
    holds what was parsed anew and ``seen`` every path still present (the index keeps
    the rows between processes).
    """

    def __init__(self, rows: dict[str, tuple[int, int, str]] | None = None):
        self.rows = rows or {}
        self.fresh: dict[str, tuple[int, int, str]] = {}
        self.seen: set[str] = set()

    def get(self, path: Path, st: os.stat_result) -> Note | None:
        key = str(path)
        self.seen.add(key)
        row = self.rows.get(key)
        if row is None or row[0] != st.st_size or row[1] != st.st_mtime_ns:
            return None
        try:
            return note_from_json(row[2])
        except (ValueError, TypeError, KeyError):
            return None

    def put(self, path: Path, st: os.stat_result, note: Note) -> None:
        self.fresh[str(path)] = (st.st_size, st.st_mtime_ns, note_to_json(note))


def scan_folder(root: Path, scope: str, *, max_bytes: int = DEFAULT_MAX_BYTES,
                cache: ParseCache | None = None, exclude: tuple[str, ...] = ()) -> FolderScan:
    """Parse every note in ``root`` (a folder without ``MEMORY.md`` is valid). Files that
    ``exclude`` (privacy.exclude) matches are not even read; a symlink to a note read by its
    own path is skipped (one file, one note)."""
    root = root.expanduser().resolve()
    result = FolderScan(root=root, scope=scope)
    if not root.is_dir():
        result.skipped.append(Skip(str(root), "not a folder"))
        return result
    found = []
    for entry in _markdown_entries(root, result.skipped, ordered=True):
        path = Path(entry.path)
        rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        if exclude and excluded_with_target(exclude, path, rel, root):
            result.excluded.append(str(path))
            continue
        found.append((entry, path, rel))
    for path, rel in _read_once(found, result.skipped):
        try:
            st = path.stat()
        except OSError as exc:
            result.skipped.append(Skip(str(path), f"unreadable: {exc.strerror or exc}"))
            continue
        if rel != INDEX_FILE and cache is not None:
            note = cache.get(path, st)
            if note is not None:
                note.rel, note.scope, note.store = rel, scope, root
                result.notes.append(note)
                continue
        text, problem = read_text(path, max_bytes)
        if text is None:
            result.skipped.append(Skip(str(path), problem or "unreadable"))
            continue
        if rel == INDEX_FILE:
            result.has_index = True
            result.index_lines = parse_memory_index(text)
            continue
        note = parse_note(text, path=path, rel=rel, scope=scope, store=root, mtime=st.st_mtime)
        if problem:
            note.problems.append(problem)
        if cache is not None:
            cache.put(path, st, note)  # before MEMORY.md titles and scope checks are added
        result.notes.append(note)
    _attach_index_lines(result)
    return result


def _attach_index_lines(scan: FolderScan) -> None:
    by_rel = {note.rel: note for note in scan.notes}
    for line in scan.index_lines:
        note = by_rel.get(line.file.removeprefix("./"))
        if note is not None:
            note.title, note.index_hook, note.index_section = line.title, line.hook, line.section
