"""The team's notes, the truth of the team scope: read, and written by compare-and-set.

A note is stored as its file text, exactly (what import read and export writes back), with every
S1/S2 field parsed out into columns, its ``MEMORY.md`` line (title, hook, heading) and a version
the server owns: an insert is version 1, every update the next (a trigger; no role may set it).
A writer names the version it read; the update matches only while the note is still at that
version, so two writers on two machines can never both win: the second gets
:class:`VersionConflict` with both versions — its own, and the one now stored (and the common
ancestor from the history) — and nothing is overwritten. Every version is kept in
``note_versions``; nothing is ever deleted (a note is superseded or archived, as files are).

Each write updates the note's unit (the storage seam's index row: full text, chunks) in the
same transaction, so the index is never behind the truth; the link graph and the vectors follow
in the next refresh (``scope.py``).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

from ..errors import TeamStoreError, WriteError
from ..index.unit import Unit, unit_from_note
from ..records import asdict, dataclass, field
from ..store.note import Note, parse_note

_COLUMNS = ("id", "team", "name", "rel", "text", "title", "index_hook", "index_section", "index_order", "description",
            "body", "type", "recall", "paths", "importance", "supersedes", "superseded_by", "status", "private", "kind",
            "links", "content_hash", "version", "created_at", "updated_at", "updated_by")
_WRITTEN = ("rel", "text", "title", "index_hook", "index_section", "index_order", "description", "body", "type",
            "recall", "paths", "importance", "supersedes", "superseded_by", "status", "private", "kind", "links",
            "content_hash")
_SELECT = "SELECT " + ", ".join(_COLUMNS) + " FROM notes"
#: the transaction lock a team's writers take to give their notes files of their own
FILES_LOCK = 0x6D6C
#: what a column is sent as in a bulk insert (the list fields go as JSON text; see _insert_new)
_TYPES = {"index_order": "int", "importance": "real", "private": "boolean"}


@dataclass
class TeamNote:
    """One note as the team store holds it (the current version)."""

    id: int
    team: str
    name: str
    rel: str
    text: str
    title: str | None
    index_hook: str | None
    index_section: str | None
    index_order: int | None
    description: str
    body: str
    type: str | None
    recall: list[str]
    paths: list[str]
    importance: float | None
    supersedes: list[str]
    superseded_by: list[str]
    status: str | None
    private: bool
    kind: str | None
    links: list
    content_hash: str
    version: int
    created_at: datetime | None = None
    updated_at: datetime | None = None
    updated_by: str = ""
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_row(cls, row) -> "TeamNote":
        return cls(**dict(zip(_COLUMNS, row)))

    def as_dict(self) -> dict:
        data = asdict(self)
        data.pop("extra")
        for key in ("created_at", "updated_at"):
            data[key] = data[key].isoformat() if data[key] else None
        return data

    @property
    def path(self) -> str:
        return team_path(self.team, self.rel)


def team_path(team: str, rel: str) -> str:
    """A team note's path and stable id in recall, the hit-log and usage: ``team://<team>/<file>``."""
    return f"team://{team}/{rel}"


def note_hash(text: str, rel: str, title: str | None, hook: str | None, section: str | None,
              order: int | None = None) -> str:
    """What import compares: the file text and its ``MEMORY.md`` line (idempotent by content)."""
    payload = json.dumps([text, rel, title, hook, section, order], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def parse_text(text: str, rel: str, *, mtime: float = 0.0) -> Note:
    return parse_note(text, path=Path(rel), rel=rel, scope="team", store=Path("."), mtime=mtime)


def unit_of(note: TeamNote, parsed: Note | None = None) -> Unit:
    """The note as the storage seam indexes it: the same unit a file of this text would give,
    with the team's path and the version it was made from (``parsed``: its text, parsed already)."""
    import copy

    mtime = note.updated_at.timestamp() if note.updated_at else 0.0
    if parsed is None:
        parsed = parse_text(note.text, note.rel, mtime=mtime)
    else:
        parsed = copy.copy(parsed)
        parsed.mtime = mtime
    parsed.title, parsed.index_hook, parsed.index_section = note.title, note.index_hook, note.index_section
    unit = unit_from_note(parsed)
    unit.uid = unit.path = note.path
    unit.meta.update({"store": f"team://{note.team}", "note_id": note.id, "version": note.version,
                      "updated_by": note.updated_by})
    unit.content_hash += f":v{note.version}"
    return unit


@dataclass
class NoteWrite:
    """One note to write: its file text, its file, its ``MEMORY.md`` line and place, and the
    version it was read at (None: a new note)."""

    text: str
    rel: str
    title: str | None = None
    hook: str | None = None
    section: str | None = None
    order: int | None = None
    expected: int | None = None


class VersionConflict(WriteError):
    """A compare-and-set write lost: the note is no longer at the version the writer read.
    Nothing was written; ``ours`` is what we tried to write, ``theirs`` the note as it is now,
    ``base`` the version we had read (from the history)."""

    def __init__(self, name: str, expected: int | None, ours: dict, theirs: TeamNote | None, base: dict | None = None):
        self.name, self.expected, self.ours, self.theirs, self.base = name, expected, ours, theirs, base
        if theirs is None:
            now = "it is gone"
        else:
            when = theirs.updated_at.isoformat(timespec="seconds") if theirs.updated_at else "?"
            now = f"it is now version {theirs.version}, by {theirs.updated_by} at {when}"
        wanted = "a new note" if expected is None else f"version {expected}"
        super().__init__(f"the team note {name!r} changed since you read it (you wrote against {wanted}; {now}); "
                         "nothing was written. Theirs:\n" + (_shown(theirs.text) if theirs else "(none)") +
                         "\nYours:\n" + _shown(ours.get("text", "")))

    def as_dict(self) -> dict:
        return {"conflict": self.name, "expected": self.expected, "ours": self.ours,
                "theirs": self.theirs.as_dict() if self.theirs else None, "base": self.base}


def _shown(text: str) -> str:
    """A note's text as a message may carry it (to a log, the CLI, an agent through MCP): cleaned,
    or withheld when it reads as an instruction to the agent (another member wrote it)."""
    from ..guards.exits import clean, unit_risk

    risk = unit_risk(text)
    return "(withheld: it reads as an instruction to the agent)" if risk else clean(text)


class TeamNotes:
    """The notes of one team (``storage``: its ``PostgresStorage``)."""

    def __init__(self, storage, *, strategy: str = "whole"):
        self.storage = storage
        self.team = storage.namespace
        self.strategy = strategy

    def get(self, name: str) -> TeamNote | None:
        row = self.storage._one(f"{_SELECT} WHERE team = %s AND name = %s", (self.team, name))
        return TeamNote.from_row(row) if row else None

    def all(self) -> list[TeamNote]:
        return [TeamNote.from_row(r) for r in self.storage._rows(f"{_SELECT} WHERE team = %s ORDER BY id", (self.team,))]

    def hashes(self) -> dict[str, tuple[str, int, int | None, str]]:
        """name -> (content hash, version, ``MEMORY.md`` place, who wrote it) of every note (what
        an import compares against)."""
        return {n: (h, v, o, by) for n, h, v, o, by in self.storage._rows(
            "SELECT name, content_hash, version, index_order, updated_by FROM notes WHERE team = %s", (self.team,))}

    def count(self) -> int:
        return self.storage._one("SELECT count(*) FROM notes WHERE team = %s", (self.team,))[0]

    def history(self, name: str) -> list[dict]:
        """Every version of the note ``name``, oldest first (each as the row was)."""
        rows = self.storage._rows(
            "SELECT v.version, v.op, v.changed_by, v.changed_at, v.data FROM note_versions v"
            " WHERE v.team = %s AND v.note_id = (SELECT id FROM notes WHERE team = %s AND name = %s)"
            " ORDER BY v.version, v.op", (self.team, self.team, name))
        return [{"version": v, "op": op, "by": by, "at": at.isoformat(), "text": (data or {}).get("text")}
                for v, op, by, at, data in rows]

    def _version(self, note_id: int, version: int) -> dict | None:
        row = self.storage._one("SELECT data FROM note_versions WHERE team = %s AND note_id = %s AND version = %s"
                                " AND op <> 'delete'", (self.team, note_id, version))
        return row[0] if row else None

    # -- writing ------------------------------------------------------------------------
    def write(self, text: str, *, rel: str, title: str | None = None, hook: str | None = None,
              section: str | None = None, order: int | None = None, expected: int | None = None) -> TeamNote:
        """Insert a new note (``expected`` None) or update the one at version ``expected`` —
        or raise :class:`VersionConflict` (nothing written). Private notes, and notes holding what
        looks like a secret, are refused (``WriteError``)."""
        [result] = self.write_many([NoteWrite(text, rel, title, hook, section, order, expected)])
        if isinstance(result, VersionConflict):
            raise result
        return result

    def write_many(self, items: list["NoteWrite"]) -> list["TeamNote | VersionConflict"]:
        """Several writes in one transaction (an import's batch): each stored note, or the
        :class:`VersionConflict` that kept it out (the others are written all the same); any
        other failure writes none of them. Every note's unit is updated in the same transaction."""
        prepared = [self._prepare(item) for item in items]
        storage = self.storage
        out: list = [None] * len(items)
        with storage.transaction():
            self._own_files(items, prepared)
            fresh = [n for n, item in enumerate(items) if item.expected is None]
            inserted = self._insert_new([prepared[n] for n in fresh]) if fresh else {}
            for n, item in enumerate(items):
                name, values, _ = prepared[n]
                if item.expected is None:
                    row = inserted.get(name)
                else:
                    row = storage._one(
                        f"UPDATE notes SET {', '.join(f'{c} = %s' for c in _WRITTEN)} WHERE team = %s AND name = %s"
                        " AND version = %s RETURNING " + ", ".join(_COLUMNS),
                        (*(values[c] for c in _WRITTEN), self.team, name, item.expected))
                if row is None:
                    theirs = self.get(name)
                    base = self._version(theirs.id, item.expected) if theirs is not None and item.expected else None
                    out[n] = VersionConflict(name, item.expected, {"name": name, "text": item.text, "rel": item.rel,
                                                                   "title": item.title, "hook": item.hook}, theirs, base)
                else:
                    out[n] = TeamNote.from_row(row)
            written = [(note, prepared[n][2]) for n, note in enumerate(out) if isinstance(note, TeamNote)]
            if written:
                storage.sync([unit_of(note, parsed) for note, parsed in written], strategy=self.chunking(),
                             max_chars=None, prune=False)
        return out

    def _own_files(self, items: list["NoteWrite"], prepared: list[tuple[str, dict, Note]]) -> None:
        """Give each note of the batch a file no other note of the team has (case-insensitively,
        as on macOS): the one it asks for when that is free or already its own, else the one it
        has, else ``<stem>-2.md``, ``-3`` …; so one note is one unit, one ``MEMORY.md`` line and
        one exported file. Writers of a team take turns here (a transaction lock) and a unique
        index holds it. ``content_hash`` stays that of the file asked for: an import of the same
        folder again finds it unchanged."""
        storage = self.storage
        storage._one("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (FILES_LOCK, self.team))
        names = [name for name, _, _ in prepared]
        # a file's key is the database's lower(), as the unique index has it: Python's lower() differs
        # from it (İ, and every non-ASCII letter under a "C" collation), and a clash it missed failed the batch
        keys = dict(storage._rows("SELECT x, lower(x) FROM unnest(%s::text[]) AS x", ([item.rel for item in items],)))
        rows = storage._rows("SELECT name, rel, rel_key FROM notes WHERE team = %s AND (name = ANY(%s)"
                             " OR rel_key = ANY(%s))", (self.team, names, list(keys.values())))
        holder = {rel_key: name for name, _, rel_key in rows}
        current = {name: rel for name, rel, _ in rows}

        def key(rel: str) -> str:
            if rel not in keys:
                keys[rel] = storage._one("SELECT lower(%s)", (rel,))[0]
            return keys[rel]

        def free(rel: str, name: str) -> bool:
            if key(rel) in holder:
                return holder[key(rel)] == name
            return storage._one("SELECT 1 FROM notes WHERE team = %s AND rel_key = %s",
                                (self.team, key(rel))) is None

        for n, item in enumerate(items):
            name, values, _ = prepared[n]
            rel = item.rel
            if not free(rel, name):
                rel = current.get(name) or ""
                if not rel or not free(rel, name):
                    stem, dot, ext = item.rel.rpartition(".") if "." in item.rel else (item.rel, "", "")
                    k = 2
                    while not free(rel := f"{stem}-{k}{dot}{ext}", name):
                        k += 1
            holder[key(rel)] = name
            if rel != item.rel:
                values["rel"] = rel
                prepared[n] = (name, values, parse_text(item.text, rel))

    def _insert_new(self, prepared: list[tuple[str, dict, Note]]) -> dict[str, tuple]:
        """New notes in one statement; name -> the stored row, for those whose name was free."""
        from .postgres import _array

        lists = ("recall", "paths", "supersedes", "superseded_by")
        columns = [("name", "text")] + [(c, _TYPES.get(c, "text")) for c in _WRITTEN]
        values = [[name] + [json.dumps(v[c]) if c in lists else v[c] for c in _WRITTEN] for name, v, _ in prepared]
        select = ", ".join(f"ARRAY(SELECT jsonb_array_elements_text(x.{c}::jsonb))" if c in lists
                           else f"x.{c}::jsonb" if c == "links" else f"x.{c}" for c, _ in columns)
        sql = (f"INSERT INTO notes (team, name, {', '.join(_WRITTEN)}) SELECT %s, {select} FROM unnest("
               + ", ".join(f"%s::{kind}[]" for _, kind in columns) + f") AS x({', '.join(c for c, _ in columns)})"
               " ON CONFLICT (team, name) DO NOTHING RETURNING " + ", ".join(_COLUMNS))
        rows = self.storage._rows(sql, (self.team, *(_array(col) for col in zip(*values))))
        return {row[_COLUMNS.index("name")]: row for row in rows}

    def _prepare(self, item: "NoteWrite") -> tuple[str, dict, Note]:
        parsed = parse_text(item.text, item.rel)
        if parsed.private:
            raise WriteError(f"{item.rel}: a private note never enters the team store (private: true keeps it yours)")
        from .transfer import secret_in

        held = secret_in(item.text, item.title, item.hook, item.section)
        if held:  # whoever writes: a team note is every member's, and its history is kept for good
            raise WriteError(f"{item.rel}: it holds what looks like {held}, and a team note is every member's, its "
                             "history kept for good: nothing was written")
        return parsed.name, {
            "rel": item.rel, "text": item.text, "title": item.title, "index_hook": item.hook,
            "index_section": item.section, "index_order": item.order, "description": parsed.description,
            "body": parsed.body, "type": parsed.type, "recall": parsed.recall, "paths": parsed.paths,
            "importance": parsed.importance, "supersedes": parsed.supersedes, "superseded_by": parsed.superseded_by,
            "status": parsed.status, "private": False, "kind": parsed.kind,
            "links": json.dumps([[link.target, link.kind] for link in parsed.links], ensure_ascii=False),
            "content_hash": note_hash(item.text, item.rel, item.title, item.hook, item.section, item.order)}, parsed

    def chunking(self) -> str:
        """The team's chunking: the one its vectors were made with (every member must agree)."""
        stored = (self.storage.get_meta("chunking") or "").partition(":")[0]
        return stored or self.strategy


__all__ = ["NoteWrite", "TeamNote", "TeamNotes", "VersionConflict", "note_hash", "team_path", "unit_of"]
