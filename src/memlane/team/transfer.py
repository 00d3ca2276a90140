"""Markdown in and out of the team store: ``memlane team import DIR`` and ``memlane team export DIR``.

**Import** reads any store in the S1 layout (a Claude Code memory folder, a memlane store) as a
scan reads it — privacy excludes never read, files outside the folder never followed — and
stores each note with its file text exactly and its ``MEMORY.md`` line. It is idempotent by
content hash (a note already there, the same, is left alone — its line moved up or down
``MEMORY.md`` by lines added or removed around it is no change; a changed one becomes its next
version, compare-and-set; a file that holds an earlier version of its note — the folder is
behind the team, a member wrote since — is skipped and said so, never written back over the newer
one), refuses ``private: true`` notes and notes holding a secret, and writes in batches of one
transaction each: interrupted, it resumes where it stopped when run again, with nothing
duplicated (a note's name is unique in its team). Two imports of one folder at once both finish:
whichever stores a note first, the other finds it there, the same. Two imports (or exports) of
one folder at once, of one team or two, take turns on its record: each reads it anew under a lock
on the folder, merges what it found into it and replaces it whole, so neither loses the other's entries.

**The folder's record** (``.memlane-team.json``, kept by both): which version of the team's note
each file holds, as export or import last left it. A file edited here while a member changed its
note in the team is a conflict — neither is written over the other, both are said — until the
user has merged the two and names the note with ``overwrite``. So is a file no entry of the record
names its note for (a new file, or a file whose note was renamed) when the team has a note of
that name: a member's note, which no file here ever held. A file unchanged since is the
team's version it holds: behind the team, it is skipped; not, it is unchanged (whatever export's
cleaning did to it). A folder without a record (one never exported, or a record malformed) is
compared with the team's history alone, as above.

**Export** writes every note of the team to a folder in the S1 layout — each file as it was
imported or written, byte for byte — and a ``MEMORY.md`` with their lines in their sections and
order, so import → export → import is lossless. ``MEMORY.md`` is what Claude Code loads into the
agent's context unscreened, and the files are what the agent reads, so export is an exit like a
hook's injection: every text it writes — each file, each line, each heading — is cleaned
(secrets redacted, controls stripped; a heading, title or hook on one line), and a note whose
text (file, name, title, hook or heading) reads as an attempt to steer the agent is left out,
file and line (reported as quarantined). Each file is written under a plain name inside the
folder: a note whose file is no such name (a folder part, ``..``, a leading dot, ``MEMORY.md`` in
any case, a clash) is written as ``<its name>.md`` and reported as renamed, and a name that leads
out of the folder through a link is refused. ``MEMORY.md`` is written always, and last. Export
never replaces a file that holds something else — it refuses, before writing anything — unless
the folder's record says the file is as the last export or import here left it (its text unedited
since): then it is an older version of its note, and export brings it up to date.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from collections.abc import Callable

from ..errors import WriteError
from ..store.memory_index import INDEX_FILE, parse_memory_index
from ..store.scan import DEFAULT_MAX_BYTES, read_text, scan_folder
from .. import logs
from .notes import NoteWrite, TeamNotes, VersionConflict, note_hash, parse_text

log = logs.get("memlane.team")

BATCH = 200


def import_folder(notes: TeamNotes, folder: str | Path, *, exclude: tuple[str, ...] = (),
                  max_bytes: int = DEFAULT_MAX_BYTES, dry_run: bool = False, batch: int = BATCH,
                  overwrite: tuple[str, ...] = (), progress: Callable[[int, int], None] | None = None) -> dict:
    """Import the notes of ``folder`` into the team of ``notes``; what happened to each.
    ``overwrite``: names of notes whose file here is to be written over the team's newer
    version all the same (the user merged the two)."""
    folder = Path(folder).expanduser().resolve()
    if not folder.is_dir():
        raise WriteError(f"{folder} is not a folder")
    scan = scan_folder(folder, "team", max_bytes=max_bytes, exclude=exclude)
    order = {line.file.removeprefix("./"): line.line_no for line in _index_lines(folder)}
    report = {"folder": str(folder), "team": notes.team, "added": 0, "updated": 0, "unchanged": 0,
              "refused": [], "skipped": [{"path": s.path, "reason": s.reason} for s in scan.skipped],
              "conflicts": [], "dry_run": dry_run}
    existing = notes.hashes()
    recorded = _read_record(folder).get(notes.team, {})
    known = bool(recorded)  # the folder has a record of this team: it tells which files held which note
    recorded_as = {e["name"]: e for e in recorded.values()}  # note name -> the record's entry of its file
    kept: dict[str, dict] = {}  # what the record says after this import, per file
    suspects: list[tuple[NoteWrite, dict]] = []  # conflicts, unless the history says the file is behind
    forced: set[str] = set()  # the files written though their text is an earlier version's (the user's say)
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
        if any("\x00" in (t or "") for t in (item.text, item.title, item.hook, item.section)):
            # past the scan's first 8 KB: PostgreSQL's text cannot hold it, and would fail the whole batch
            report["skipped"].append({"path": str(note.path), "reason": "binary file (NUL bytes)"})
            continue
        held = secret_in(item.text, item.title, item.hook, item.section)
        if held:
            report["refused"].append({"path": str(note.path), "reason": f"it holds what looks like {held} (a team "
                                      "note is every member's, and its history is kept for good): keep the secret "
                                      "in your environment or a secret manager and write where to find it instead"})
            continue
        current = existing.get(note.name)
        entry = _entry(note.name, current[1] if current else 0, item)
        if current is not None and current[0] in (note_hash(text, rel, item.title, item.hook, item.section, item.order),
                                                  note_hash(text, rel, item.title, item.hook, item.section, current[2])):
            report["unchanged"] += 1
            kept[rel] = entry
            continue
        base = recorded.get(rel)
        if current is not None and (base is None or base["name"] != note.name):
            base = recorded_as.get(note.name)  # a file renamed here: its note's entry under the old name
            if base is None and known and note.name not in overwrite:
                # no file here ever held this note (a new file, or one whose note was renamed to it), yet the
                # team has one of that name: a member's, not an earlier version of this file
                item.expected = current[1]
                suspects.append((item, _taken_conflict(note.name, rel, recorded.get(rel), current)))
                continue
        if current is not None and base is not None and base["name"] == note.name:
            if base["sha256"] == entry["sha256"]:  # the file is as the last export or import here left it
                if base["version"] >= current[1]:
                    report["unchanged"] += 1
                    kept[rel] = base
                else:
                    report["skipped"].append({"path": str(folder / rel), "reason": _behind_reason(
                        base["version"], current[1], current[3])})
                continue
            if base["version"] < current[1] and note.name not in overwrite:  # changed here and in the team
                theirs, by = current[1], current[3]
                item.expected = current[1]
                suspects.append((item, {
                    "name": note.name, "expected": base["version"], "theirs": theirs, "by": by, "rel": rel,
                    "reason": f"{rel} was changed here since it held version {base['version']}, and {by} wrote "
                              f"version {theirs} in the team meanwhile; nothing was written. Merge the two "
                              f"(`memlane team history {note.name} --text` shows theirs), then import again with "
                              f"--overwrite {note.name}"}))
                continue
            if base["version"] == current[1]:  # edited here from the team's current version: the user's,
                forced.add(rel)                # even an undo back to an earlier version's text
        item.expected = None if current is None else current[1]
        if note.name in overwrite:
            forced.add(rel)
        todo.append(item)
    # a file holding an earlier version of its note is behind the team, no edit of the user's — also one the
    # record calls edited whose text is a later version than the record's (the record missed an import)
    behind = _behind(notes, [*(item for item, _ in suspects),
                             *(item for item in todo if item.expected is not None and item.rel not in forced)])
    for item in [*(item for item, _ in suspects), *todo]:
        if item.rel in behind:
            report["skipped"].append({"path": str(folder / item.rel), "reason": _behind_reason(*behind[item.rel])})
    report["conflicts"] += [conflict for item, conflict in suspects if item.rel not in behind]
    todo = [item for item in todo if item.rel not in behind]
    named = {note.name for note in scan.notes}
    report["overwrite_unknown"] = [name for name in overwrite if name not in named]
    if dry_run:
        report["would_write"] = len(todo)
        return report
    try:
        for start in range(0, len(todo), batch):
            _write_batch(notes, todo[start:start + batch], report, kept)
            if progress:
                progress(min(start + batch, len(todo)), len(todo))
    finally:  # interrupted too: the batches written are the versions their files hold
        report["record"] = _write_record(folder, notes.team, kept, merge=True)  # MEMORY.md's entry as it is
    return report


def _taken_conflict(name: str, rel: str, held: dict | None, current: tuple) -> dict:
    """The conflict of the file ``rel`` naming the note ``name`` that the team has and no file of
    this folder ever held (``held``: the record's entry of ``rel``, under another note's name)."""
    theirs, by = current[1], current[3]
    was = (f"{rel} is new here (no export or import of this folder wrote or read it)" if held is None else
           f"{rel} held the note {held['name']} when last exported or imported here and now names {name}")
    return {"name": name, "expected": None, "theirs": theirs, "by": by, "rel": rel,
            "reason": f"{was}, and the team already has a note named {name} (version {theirs}, by {by}); nothing "
                      f"was written. If they are one note, merge the two (`memlane team history {name} --text` "
                      f"shows theirs), then import again with --overwrite {name}; if not, give yours another name"}


def _behind_reason(mine: int, theirs: int, by: str) -> str:
    return (f"the team's note is newer: this file holds its version {mine}, the team has version {theirs} (by {by}); "
            "nothing was written — export the team's notes to bring this folder up to date, or change the note "
            "with `memlane add --scope team`")


def _behind(notes: TeamNotes, items: list[NoteWrite]) -> dict[str, tuple[int, int, str]]:
    """The items (updates of notes the team has) whose text is an earlier version of their note's,
    not its current one: the folder is behind the team, and writing it would undo what a member
    wrote since. rel -> (the version the file holds, the team's version, who wrote it)."""
    if not items:
        return {}
    names = [parse_text(item.text, item.rel).name for item in items]  # the note each would update
    digests = [file_digest(item.text) for item in items]
    rows = notes.storage._rows(
        "SELECT DISTINCT ON (x.i) x.i, v.version, n.version, n.updated_by"
        " FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS x(name, digest, i)"
        " JOIN notes n ON n.team = %s AND n.name = x.name"
        " JOIN note_versions v ON v.team = n.team AND v.note_id = n.id AND v.version < n.version AND v.op <> 'delete'"
        " WHERE encode(sha256(convert_to(v.data ->> 'text', 'UTF8')), 'hex') = x.digest"
        " AND encode(sha256(convert_to(n.text, 'UTF8')), 'hex') <> x.digest"
        " ORDER BY x.i, v.version DESC", (names, digests, notes.team))
    return {items[i - 1].rel: (mine, theirs, by) for i, mine, theirs, by in rows}


def secret_in(*texts: str | None) -> str | None:
    """The first secret in ``texts`` (a note's text and its ``MEMORY.md`` line) as a sentence
    names it ("a GitHub token"), or None. What enters the team store leaves this machine for every member and stays in its
    append-only history, which nobody can purge: a secret never goes in (every exit redacts one
    all the same, for what an older client or a member's own SQL stored)."""
    from ..guards.secrets import a_secret, find_secrets

    for text in texts:
        found = find_secrets(text or "")
        if found:
            return a_secret(found[0].family)
    return None


def _write_batch(notes: TeamNotes, items: list[NoteWrite], report: dict, kept: dict[str, dict]) -> None:
    for item, result in zip(items, notes.write_many(items)):
        if not isinstance(result, VersionConflict):
            report["updated" if item.expected is not None else "added"] += 1
            kept[item.rel] = _entry(result.name, result.version, item)
            continue
        theirs = result.theirs
        if theirs is not None and theirs.content_hash == note_hash(item.text, item.rel, item.title, item.hook,
                                                                   item.section, item.order):
            report["unchanged"] += 1  # another import stored this very note meanwhile
            kept[item.rel] = _entry(theirs.name, theirs.version, item)
        else:
            report["conflicts"].append({"name": result.name, "expected": result.expected,
                                        "theirs": theirs.version if theirs else None,
                                        "by": theirs.updated_by if theirs else None, "rel": item.rel})


#: the folder's record of which version of the team's note each file holds
RECORD_FILE = ".memlane-team.json"
RECORD_MAX_BYTES = 20_000_000


def file_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _entry(name: str, version: int, item: NoteWrite) -> dict:
    """The record of the file ``item`` holding ``version`` of the note ``name``: the hash an import
    compares (its text and ``MEMORY.md`` line, the line's place left out: lines added or removed
    around it are no change) and its text's own hash (what export checks before replacing it)."""
    return {"name": name, "version": version, "sha256": note_hash(item.text, item.rel, item.title, item.hook,
                                                                  item.section), "text": file_digest(item.text)}


def _read_record(folder: Path) -> dict[str, dict[str, dict]]:
    """team -> file -> {name, version, sha256, text}, from the folder's record (``text``: the
    file text's own hash, None in a record without it); {} when it has none, or
    one that is a link, no regular file (a FIFO would block the read), too large or malformed
    (nested too deep to parse, or escapes no UTF-8 can hold: it could not be written back) —
    logged: the import then goes by the history alone."""
    path = folder / RECORD_FILE
    if not _exists(path):
        return {}
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > RECORD_MAX_BYTES:
            raise ValueError("a link, no regular file or too large")
        data = json.loads(path.read_text(encoding="utf-8"))
        json.dumps(data, ensure_ascii=False).encode("utf-8")  # a lone surrogate ("\ud800") fails here, not at the write
        teams = data["teams"]
        return {team: {rel: {"name": e["name"], "version": e["version"], "sha256": e["sha256"],
                             "text": e["text"] if isinstance(e.get("text"), str) else None}
                       for rel, e in files.items()
                       if isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("sha256"), str)
                       and type(e.get("version")) is int}
                for team, files in teams.items() if isinstance(files, dict)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        log.warning("%s: not read (%s); each file is compared with the team's history alone", path, exc)
        return {}


def _exported(files: dict[str, str], notes: dict, index: str) -> dict[str, dict]:
    """The record of an export: each file written, its note's version, and the hash an import of
    it will compute (its text and its line in the ``MEMORY.md`` written, the line's place left out)."""
    line = {entry.file.removeprefix("./"): entry for entry in parse_memory_index(index)}
    out = {}
    for rel, text in files.items():
        at = line.get(rel)
        item = NoteWrite(text, rel, *((at.title, at.hook, at.section) if at else ()))
        out[rel] = _entry(notes[rel].name, notes[rel].version, item)
    out[INDEX_FILE] = {"name": "", "version": 0, "sha256": "", "text": file_digest(index)}  # its text alone
    return out


def _text_digest(path: Path) -> str | None:
    text = _read(path)
    return None if text is None else file_digest(text)


def _write_record(folder: Path, team: str, files: dict[str, dict], *, merge: bool = False) -> str:
    """Keep ``files`` as the team's part of the folder's record (the other teams' parts as they
    are): "kept", or why it was not (the import or export itself stands). An export's ``files``
    are the whole part. An import's (``merge``) are the files it compared: merged into the part as
    it is now, so what another import at once recorded stays, and an entry goes only with its file
    (one left out, excluded or unreadable, keeps it).
    Writers take turns (a lock on the folder), each reading the record anew and replacing it whole."""
    from ..store.write import atomic_write, folder_lock

    path = folder / RECORD_FILE
    if path.is_symlink():
        log.warning("%s is a link: not written", path)
        return "not kept: it is a link"
    try:
        with folder_lock(folder):
            teams = _read_record(folder)
            part = dict(files)
            if merge:
                part = {**{rel: e for rel, e in teams.get(team, {}).items() if _still_there(folder, rel)}, **files}
            teams[team] = {rel: part[rel] for rel in sorted(part)}
            atomic_write(path, json.dumps({"teams": teams}, indent=1, ensure_ascii=False) + "\n")
    except (OSError, WriteError) as exc:
        log.warning("%s: not written (%s)", path, exc)
        return f"not kept: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}"
    return "kept"


def _still_there(folder: Path, rel: str) -> bool:
    """Whether the record's file ``rel`` is still a file of ``folder`` (one an import left out,
    excluded or unreadable, keeps its entry; one deleted loses it)."""
    parts = Path(rel).parts
    return bool(parts) and not Path(rel).is_absolute() and ".." not in parts and _exists(folder / rel)


def _index_lines(folder: Path):
    text, _ = read_text(folder / INDEX_FILE, DEFAULT_MAX_BYTES) if (folder / INDEX_FILE).is_file() else (None, None)
    return parse_memory_index(text or "")


# -- export -----------------------------------------------------------------------------------
def export_folder(notes: TeamNotes, folder: str | Path) -> dict:
    """Write the team's notes and their ``MEMORY.md`` into ``folder`` (see the module docstring)."""
    from ..guards.exits import clean, unit_risk
    from ..store.write import atomic_write

    folder = Path(folder).expanduser().resolve()
    if _exists(folder) and not folder.is_dir():
        raise WriteError(f"{folder} is a file, not a folder: export to a folder (created when missing)")
    every = notes.all()
    quarantined, renamed, lines = [], [], []
    files: dict[str, str] = {}
    names: dict[str, object] = {}  # file -> its note
    taken = {INDEX_FILE.casefold()}
    for note in sorted(every, key=lambda n: (n.index_order is None, n.index_order or 0, n.id)):
        risk = unit_risk(note.name, os.path.basename(note.rel), note.title, note.index_hook, note.index_section,
                         note.description, note.body, note.text,
                         *(str(v) for v in (getattr(note, a, None) for a in ("type", "kind", "status")) if v),
                         *(str(v) for a in ("recall", "paths", "supersedes", "superseded_by")
                           for v in (getattr(note, a, None) or ())))
        if risk:  # neither its line nor its file: what reads as an instruction never reaches the agent
            quarantined.append({"name": note.name, "rel": note.rel, "why": risk})
            continue
        rel = _file_name(note, taken)
        if rel != note.rel:
            renamed.append({"name": note.name, "rel": note.rel, "as": rel})
        taken.add(rel.casefold())
        files[rel] = clean(note.text)
        names[rel] = note
        if note.title is not None:
            lines.append((_one_line(note.index_section or ""),
                          _index_line(_one_line(note.title), rel, _one_line(note.index_hook or ""))))
    index = _memory_md(lines)
    held = _read_record(folder).get(notes.team, {})
    # a file that holds something else is refused, unless the record says it is as the last export or
    # import here left it (its text unedited since): then it is a version of its note behind the team's
    clashes = [rel for rel, text in [*files.items(), (INDEX_FILE, index)]
               if _exists(folder / rel) and _read(folder / rel) != text
               and not (held.get(rel, {}).get("text") and held[rel]["text"] == _text_digest(folder / rel))]
    outside = [rel for rel in files if (folder / rel).is_symlink() or not _inside(folder / rel, folder)]
    if outside:
        raise WriteError(f"{folder}: these files lead outside it (a link), nothing was written: "
                         f"{', '.join(sorted(outside)[:10])}")
    if clashes:
        raise WriteError(f"{folder} already holds other files of these names (nothing was written): "
                         f"{', '.join(sorted(clashes)[:10])}{' …' if len(clashes) > 10 else ''}; they were edited "
                         "since the last export or import here, or no export wrote them: import the folder first "
                         f"(`memlane team import {folder}`), move them away, or export to a new folder")
    written = 0
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where a parent folder should be, no permission …
        raise WriteError(f"{folder}: cannot make the folder ({exc.strerror or exc})") from None
    for rel, text in [*files.items(), (INDEX_FILE, index)]:  # MEMORY.md always, and last
        target = folder / rel
        if _exists(target) and _read(target) == text:
            continue  # the same already
        atomic_write(target, text)
        written += 1
    return {"folder": str(folder), "team": notes.team, "notes": len(every), "written": written,
            "quarantined": quarantined, "renamed": renamed, "unlisted": sum(1 for n in every if n.title is None),
            "record": _write_record(folder, notes.team, _exported(files, names, index))}


_UNSAFE = re.compile(r"[^\w.\-]+")


def _file_name(note, taken: set[str]) -> str:
    """The note's file as a plain name in the folder: its own when that is one (no folder part,
    no leading dot, no control character, not ``MEMORY.md`` in any case, not taken), else one
    made from its name, with ``-2``, ``-3`` … on a clash."""
    rel = note.rel
    plain = (rel and rel == os.path.basename(rel) and "/" not in rel and "\\" not in rel and not rel.startswith(".")
             and rel.isprintable() and rel.casefold() != INDEX_FILE.casefold() and rel.casefold() not in taken
             and len(rel.encode("utf-8")) <= 200)
    if plain:
        return rel
    stem = _UNSAFE.sub("_", note.name).strip("._")[:100] or f"note_{note.id}"
    if stem.casefold() == "memory":
        stem = f"{stem}_note"
    candidate, k = f"{stem}.md", 2
    while candidate.casefold() in taken:
        candidate, k = f"{stem}-{k}.md", k + 1
    return candidate


def _one_line(text: str) -> str:
    from ..guards.exits import clean

    return " ".join(clean(text).split())


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().parent == folder
    except OSError:
        return False


def _index_line(title: str, rel: str, hook: str) -> str:
    title = title.replace("]", ")")
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
