"""Markdown in and out of the team store: ``memlane team import DIR`` and ``memlane team export DIR``.

**Import** reads any store in the S1 layout (a Claude Code memory folder, a memlane store) as a
scan reads it — privacy excludes never read, files outside the folder never followed — and
stores each note with its file text exactly and its ``MEMORY.md`` line. It is idempotent by
content hash (a note already there, the same, is left alone; a changed one becomes its next
version, compare-and-set), refuses ``private: true`` notes, and writes in batches of one
transaction each: interrupted, it resumes where it stopped when run again, with nothing
duplicated (a note's name is unique in its team). Two imports of one folder at once both finish:
whichever stores a note first, the other finds it there, the same.

**Export** writes every note of the team to a folder in the S1 layout — each file as it was
imported or written, byte for byte — and a ``MEMORY.md`` with their lines in their sections and
order, so import → export → import is lossless. ``MEMORY.md`` is what Claude Code loads into the
agent's context unscreened, so it is an exit like a hook's injection: each line is cleaned
(secrets redacted, controls stripped) and a note whose text reads as an attempt to steer the
agent gets no line (reported as quarantined; its file is still exported). Export never replaces
a file that holds something else: it refuses, before writing anything.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable

from ..errors import WriteError
from ..store.memory_index import INDEX_FILE, parse_memory_index
from ..store.scan import DEFAULT_MAX_BYTES, read_text, scan_folder
from .notes import NoteWrite, TeamNotes, VersionConflict, note_hash

log = logging.getLogger("memlane.team")

BATCH = 200


def import_folder(notes: TeamNotes, folder: str | Path, *, exclude: tuple[str, ...] = (),
                  max_bytes: int = DEFAULT_MAX_BYTES, dry_run: bool = False, batch: int = BATCH,
                  progress: Callable[[int, int], None] | None = None) -> dict:
    """Import the notes of ``folder`` into the team of ``notes``; what happened to each."""
    folder = Path(folder).expanduser().resolve()
    if not folder.is_dir():
        raise WriteError(f"{folder} is not a folder")
    scan = scan_folder(folder, "team", max_bytes=max_bytes, exclude=exclude)
    order = {line.file.removeprefix("./"): line.line_no for line in _index_lines(folder)}
    report = {"folder": str(folder), "team": notes.team, "added": 0, "updated": 0, "unchanged": 0,
              "refused": [], "skipped": [{"path": s.path, "reason": s.reason} for s in scan.skipped],
              "conflicts": [], "dry_run": dry_run}
    existing = notes.hashes()
    seen: set[str] = set()
    todo: list[NoteWrite] = []
    for note in scan.notes:
        rel = note.rel
        if note.private:
            report["refused"].append({"path": str(note.path), "reason": "private: true (a private note never enters "
                                                                     "the team store)"})
            continue
        if note.name in seen:
            report["skipped"].append({"path": str(note.path), "reason": f"a second note named {note.name!r} in "
                                                                       "this folder (the first one was imported)"})
            continue
        seen.add(note.name)
        text, problem = read_text(Path(note.path), max_bytes)
        if text is None or problem:
            report["skipped"].append({"path": str(note.path), "reason": problem or "unreadable"})
            continue
        item = NoteWrite(text, rel, note.title, note.index_hook, note.index_section, order.get(rel))
        current = existing.get(note.name)
        if current is not None and current[0] == note_hash(text, rel, item.title, item.hook, item.section, item.order):
            report["unchanged"] += 1
            continue
        item.expected = None if current is None else current[1]
        todo.append(item)
    if dry_run:
        report["would_write"] = len(todo)
        return report
    for start in range(0, len(todo), batch):
        _write_batch(notes, todo[start:start + batch], report)
        if progress:
            progress(min(start + batch, len(todo)), len(todo))
    return report


def _write_batch(notes: TeamNotes, items: list[NoteWrite], report: dict) -> None:
    for item, result in zip(items, notes.write_many(items)):
        if not isinstance(result, VersionConflict):
            report["updated" if item.expected is not None else "added"] += 1
            continue
        theirs = result.theirs
        if theirs is not None and theirs.content_hash == note_hash(item.text, item.rel, item.title, item.hook,
                                                                   item.section, item.order):
            report["unchanged"] += 1  # another import stored this very note meanwhile
        else:
            report["conflicts"].append({"name": result.name, "expected": result.expected,
                                        "theirs": theirs.version if theirs else None,
                                        "by": theirs.updated_by if theirs else None, "rel": item.rel})


def _index_lines(folder: Path):
    text, _ = read_text(folder / INDEX_FILE, DEFAULT_MAX_BYTES) if (folder / INDEX_FILE).is_file() else (None, None)
    return parse_memory_index(text or "")


# -- export -----------------------------------------------------------------------------------
def export_folder(notes: TeamNotes, folder: str | Path) -> dict:
    """Write the team's notes and their ``MEMORY.md`` into ``folder`` (see the module docstring)."""
    from ..guards.exits import clean, unit_risk
    from ..store.write import atomic_write

    folder = Path(folder).expanduser().resolve()
    every = notes.all()
    files = {note.rel: note.text for note in every}
    for rel in files:
        if rel.startswith("/") or ".." in Path(rel).parts or rel == INDEX_FILE:
            raise WriteError(f"the team note file {rel!r} would land outside {folder}; not exporting")
    quarantined, lines = [], []
    for note in sorted(every, key=lambda n: (n.index_order is None, n.index_order or 0, n.id)):
        if note.title is None:
            continue
        risk = unit_risk(note.name, os.path.basename(note.rel), note.title, note.index_hook, note.description, note.body)
        if risk:
            quarantined.append({"name": note.name, "rel": note.rel, "why": risk})
            continue
        lines.append((note.index_section or "", _index_line(clean(note.title), note.rel, clean(note.index_hook or ""))))
    files[INDEX_FILE] = _memory_md(lines)
    clashes = [rel for rel, text in files.items() if (folder / rel).exists() and _read(folder / rel) != text]
    if clashes:
        raise WriteError(f"{folder} already holds other files of these names (nothing was written): "
                         f"{', '.join(sorted(clashes)[:10])}{' …' if len(clashes) > 10 else ''}")
    written = 0
    for rel, text in files.items():
        target = folder / rel
        if target.exists():
            continue  # the same already
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, text)
        written += 1
    return {"folder": str(folder), "team": notes.team, "notes": len(every), "written": written,
            "quarantined": quarantined, "unlisted": sum(1 for n in every if n.title is None)}


def _index_line(title: str, rel: str, hook: str) -> str:
    title = title.replace("]", ")").replace("\n", " ")
    return f"- [{title}]({rel})" + (f" — {hook}" if hook else "")


def _memory_md(lines: list[tuple[str, str]]) -> str:
    """``MEMORY.md``: the lines under their headings, each heading where its first line stood."""
    sections: dict[str, list[str]] = {}
    for section, line in lines:
        sections.setdefault(section, []).append(line)
    parts = []
    for section, entries in sections.items():
        parts.append((f"# {section}\n\n" if section else "") + "\n".join(entries) + "\n")
    return "\n".join(parts) if parts else "# Memory\n"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


__all__ = ["import_folder", "export_folder"]
