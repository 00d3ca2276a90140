"""Writing notes (W1): Claude Code's format, atomically, and never destructively.

A note is written as ``<type>_<name>.md`` with frontmatter ``name``, ``description``,
``metadata.type`` and memlane's optional fields, and its line is added to the folder's
``MEMORY.md`` (``- [Title](file.md) — description``). Every write goes to a temporary file in
the same folder, is flushed to disk and renamed over the target, so a reader — Claude Code, a
hook, another memlane — sees the old file or the new one, never half of one. Writers of one
folder take turns under a lock on the folder itself (whatever their cache or configuration;
nothing extra lands in the memory folder), so two ``add`` calls never lose each other's
``MEMORY.md`` line; and ``MEMORY.md`` is read again right before its rename, so a line another
program (Claude Code) wrote meanwhile is kept too. A rewritten file keeps its mode, and a
symlinked ``MEMORY.md`` is written through to its target inside the store (or refused).

Refused with a clear error, before anything is written: names that are not one plain file
name (``../x``, ``/etc/x``, ``a/b``, control characters), values that would break out of the
YAML block (newlines in one-line fields; the frontmatter is written by the YAML emitter and
read back to check it says exactly what was asked), bodies over ``MAX_BODY_BYTES``, and a new
note whose file already exists.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..errors import WriteError
from ..guards.sanitize import is_whole, line_break_chars, strip_controls
from .frontmatter import split_frontmatter
from .memory_index import INDEX_FILE, parse_memory_index
from ..records import dataclass, field
from .vocabulary import NOTE_KINDS, NOTE_TYPES

MAX_BODY_BYTES = 100_000
MAX_NAME = 80
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass
class Draft:
    """A note to write. ``name`` is its identity (and its file name's stem)."""

    name: str
    description: str
    body: str
    type: str = "project"
    recall: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    importance: float | None = None
    supersedes: list[str] = field(default_factory=list)
    private: bool = False
    kind: str | None = None
    title: str | None = None  # the MEMORY.md title; the name when absent

    def check(self) -> "Draft":
        """Raise ``WriteError`` for anything that cannot be written safely."""
        texts = [("name", self.name), ("description", self.description), ("body", self.body),
                 ("title", self.title or "")]
        texts += [(label, value) for label, values in (("recall", self.recall), ("paths", self.paths),
                                                       ("supersedes", self.supersedes)) for value in values]
        for label, value in texts:
            if isinstance(value, str) and not is_whole(value):  # bytes that were not UTF-8, half a character
                raise WriteError(f"{label} is not UTF-8 text (it holds undecodable bytes, or half of a character): "
                                 "convert it to UTF-8 first, e.g. with iconv")
        self.name = self.name.strip()
        if not self.name or len(self.name) > MAX_NAME or not _NAME.match(self.name) or ".." in self.name:
            raise WriteError(f"name {self.name[:100]!r} must be one plain file name of ASCII letters, digits, '_', "
                             f"'-' and '.', starting with a letter or digit (at most {MAX_NAME} characters; no '/', "
                             "no '..'); the title (MEMORY.md) and the description may be in any language")
        one_line = [("description", self.description), ("title", self.title or "")]
        one_line += [(label, value) for label, values in (("recall", self.recall), ("paths", self.paths),
                                                          ("supersedes", self.supersedes)) for value in values]
        for label, value in one_line:
            bad = line_break_chars(value) + _hidden_chars(value)
            if bad:
                raise WriteError(f"{label} must be one line without control characters; it contains "
                                 f"{', '.join(dict.fromkeys(bad))}")
        if not self.description.strip():
            raise WriteError("description is empty: say when the note applies ('when deciding …'), recall keys on it")
        if self.type not in NOTE_TYPES:
            raise WriteError(f"type must be one of {', '.join(NOTE_TYPES)}; got {self.type!r}")
        if self.kind is not None and self.kind not in NOTE_KINDS:
            raise WriteError(f"kind must be one of {', '.join(NOTE_KINDS)}; got {self.kind!r}")
        if self.importance is not None and not 0 <= self.importance <= 1:
            raise WriteError("importance must be between 0 and 1")
        if len(self.body.encode("utf-8")) > MAX_BODY_BYTES:
            raise WriteError(f"body is {len(self.body.encode('utf-8')):,} bytes; a note holds one fact "
                             f"(at most {MAX_BODY_BYTES:,} bytes): split it")
        if "\x00" in self.body:
            raise WriteError("body contains a NUL byte")
        return self

    @property
    def filename(self) -> str:
        """``<type>_<name>.md``; a name given as a file name (``deploy.md``) is its stem, not ``deploy.md.md``."""
        name = self.name[:-3] if self.name.lower().endswith(".md") and len(self.name) > 3 else self.name
        stem = name if name.startswith(f"{self.type}_") else f"{self.type}_{name}"
        return f"{stem}.md"


def _hidden_chars(value: str) -> list[str]:
    """Bidi overrides and other characters that would be stripped before printing: in a one-line
    field they only serve to disguise what it says."""
    import unicodedata

    kept = set(strip_controls(value))
    return [f"U+{ord(c):04X} {unicodedata.name(c, 'UNNAMED')}" for c in dict.fromkeys(value) if c not in kept]


def render_note(draft: Draft) -> str:
    """The file text of ``draft``: YAML frontmatter written by the emitter, then the body."""
    import yaml

    fields: dict = {"name": draft.name, "description": draft.description.strip(), "metadata": {"type": draft.type}}
    for key in ("recall", "paths", "supersedes"):
        if getattr(draft, key):
            fields[key] = list(getattr(draft, key))
    if draft.importance is not None:
        fields["importance"] = draft.importance
    if draft.private:
        fields["private"] = True
    if draft.kind:
        fields["kind"] = draft.kind
    head = yaml.safe_dump(fields, sort_keys=False, allow_unicode=True, width=10_000, default_flow_style=False)
    text = f"---\n{head}---\n\n{draft.body.strip()}\n"
    _verify(text, fields)
    return text


def _verify(text: str, fields: dict) -> None:
    """Read the rendered text back: the frontmatter must say exactly ``fields`` (a value that
    tried to close the YAML block, or smuggle in a key, would not)."""
    parsed = split_frontmatter(text)
    if parsed.problems or parsed.fields != fields:
        raise WriteError("the frontmatter would not read back as written; refusing to write it")


def index_line(draft: Draft) -> str:
    hook = draft.description.strip()
    return f"- [{(draft.title or draft.name).replace(']', ')')}]({draft.filename}) — {hook}"


@contextmanager
def folder_lock(folder: Path):
    """Writers of ``folder`` take turns: an exclusive ``flock`` on the folder itself, so any two
    writers of one store serialise whatever their cache folder or configuration (and nothing
    extra lands in the folder)."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def write_target(path: Path, store: Path | None = None) -> Path:
    """The file a write of ``path`` lands in: ``path`` itself, or — when it is a symlink (a
    MEMORY.md linked from elsewhere in the store) — its target, which must lie inside the store
    folder (``store``, default ``path``'s folder). A link out of the store is refused."""
    if not path.is_symlink():
        return path
    target = Path(os.path.realpath(path))
    root = Path(os.path.realpath(store or path.parent))
    if not (target == root or target.is_relative_to(root)):
        raise WriteError(f"{path} is a symlink to {target}, outside the memory folder; memlane will not write "
                         "through it (replace the link with the file, or write there directly)")
    return target


def atomic_write(path: Path, text: str, *, exclusive: bool = False, store: Path | None = None) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder, flushed and
    renamed (``exclusive``: fail if ``path`` exists, atomically — a hard link, not a check).
    An existing file keeps its mode; a symlink is written through to its target inside the
    store (see ``write_target``). Returns the file written."""
    target = path if exclusive else write_target(path, store)
    tmp = _temp_copy(target, text)
    try:
        if exclusive:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise WriteError(f"{target.name} already exists in {target.parent}") from None
            os.unlink(tmp)
        else:
            os.replace(tmp, target)
        _fsync_dir(target.parent)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def _temp_copy(target: Path, text: str) -> str:
    """``text`` in a flushed temporary file beside ``target``, with ``target``'s mode (or the
    mode a new file gets under the umask); the caller renames or removes it."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_new_note(folder: Path, draft: Draft) -> Path:
    """Create the note and add its ``MEMORY.md`` line (both atomic; the line only if the
    index does not list the file yet, and never for a private note: Claude Code loads that
    file into every session). Raises ``WriteError`` if the file exists."""
    draft.check()
    text = render_note(draft)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / draft.filename
    with folder_lock(folder):
        if not draft.private:
            _read_index(folder / INDEX_FILE)  # an index memlane will not touch is refused before the note is written
        atomic_write(path, text, exclusive=True)
        if not draft.private:
            add_index_line(folder, draft)
    return path


def add_index_line(folder: Path, draft: Draft) -> bool:
    """Append the note's line to ``MEMORY.md`` unless the file is listed; the caller holds the
    folder lock. A folder without ``MEMORY.md`` gets one only when the note is its first (a
    folder kept without an index by choice stays so).

    Another program (Claude Code) may edit ``MEMORY.md`` at any moment without memlane's lock,
    so the file is never replaced: the line is appended in place, in one ``O_APPEND`` write (two
    appends never overwrite each other, and the file keeps its inode, mode and any link), then
    the file is read again — a rewrite by the other program that dropped the line means one more
    append. A new ``MEMORY.md`` is created exclusively."""
    index = folder / INDEX_FILE
    if not index.exists() and any(p.name != draft.filename for p in folder.glob("*.md")):
        return False
    wrote = False
    for _attempt in range(MAX_INDEX_RETRIES):
        current = _read_index(index)
        if _lists(current, draft.filename):
            return wrote
        target = write_target(index, folder)
        line = index_line(draft) + "\n"
        if current is None:
            data, flags = "# Memory\n" + line, os.O_WRONLY | os.O_CREAT | os.O_EXCL
        else:
            data, flags = ("" if current.endswith("\n") or not current else "\n") + line, os.O_WRONLY | os.O_APPEND
        try:
            fd = os.open(target, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
        except (FileExistsError, FileNotFoundError):
            continue  # created or removed by the other program meanwhile: look again
        try:
            os.write(fd, data.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        wrote = True
    if _lists(_read_index(index), draft.filename):
        return wrote
    raise WriteError(f"{index} kept changing while memlane added a line to it; try again")


MAX_INDEX_RETRIES = 20


def _lists(text: str | None, filename: str) -> bool:
    return any(line.file.lstrip("./") == filename for line in parse_memory_index(text or ""))


def _read_index(index: Path) -> str | None:
    if not index.exists():
        return None
    target = write_target(index)
    if not target.is_file():  # a FIFO would block the read for good, a device never end
        raise WriteError(f"{index} is not a regular file; not touching it")
    try:
        return target.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise WriteError(f"{index} is not UTF-8; not touching it") from None


def rewrite_note(path: Path, change) -> str:
    """Replace a note's text with ``change(old_text)`` atomically, under the folder lock; the
    result must still read as a note (its frontmatter parses). Returns the new text."""
    with folder_lock(path.parent):
        try:
            old = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise WriteError(f"cannot read {path}: {exc}") from None
        new = change(old)
        if len(new.encode("utf-8")) > MAX_BODY_BYTES + 4096:
            raise WriteError(f"{path.name} would grow past {MAX_BODY_BYTES:,} bytes; split it")
        if old.startswith("---") and split_frontmatter(new).problems:
            raise WriteError(f"the new text of {path.name} would not parse; refusing to write it")
        atomic_write(path, new)
        return new
