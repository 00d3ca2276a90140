"""A note: one memory file parsed into the fields recall needs (S1, S2)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from .frontmatter import split_frontmatter
from .links import Link, extract_links, link_key
from ..records import asdict, dataclass, field, fields
from .vocabulary import NOTE_KINDS, NOTE_TYPES  # noqa: F401 - NOTE_KINDS: its home before vocabulary.py
from ..digest import sha256

NOTE_STATUSES = ("active", "dormant", "archived")
#: bump when a note's text is read into different fields: every cached parse is then dropped
PARSER_VERSION = "5"


def answer_keys(name: str, path: str) -> set[str]:
    """The link keys a note answers to: its ``name``, its file stem, and the stem without its
    type prefix (``feedback_x.md`` answers to ``x``), each as ``link_key`` normalises it."""
    stem = os.path.splitext(os.path.basename(path))[0] if path else ""
    keys = {link_key(name), link_key(stem)} if stem else {link_key(name)}
    for prefix in NOTE_TYPES:
        if stem.lower().startswith(prefix + "_"):
            keys.add(link_key(stem[len(prefix) + 1:]))
    return {k for k in keys if k}


@dataclass
class Note:
    """A parsed memory note: its metadata, text and links."""

    name: str
    path: Path  # absolute
    rel: str  # relative to its store root, with forward slashes
    scope: str
    store: Path
    description: str = ""
    body: str = ""
    type: str | None = None
    recall: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    importance: float | None = None
    supersedes: list[str] = field(default_factory=list)
    superseded_by: list[str] = field(default_factory=list)
    status: str | None = None
    private: bool = False
    kind: str | None = None
    links: list[Link] = field(default_factory=list)
    title: str | None = None  # from the MEMORY.md line, if any
    index_hook: str | None = None
    index_section: str | None = None  # the MEMORY.md heading the note is listed under
    content_hash: str = ""
    mtime: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def display_title(self) -> str:
        return self.title or self.name


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    text = str(value).strip()
    return [part.strip() for part in text.split(",") if part.strip()] if text else []


def _as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value).strip()


def _as_importance(value, problems: list[str]) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        problems.append(f"importance {value!r} is not a number; ignored")
        return None
    return min(1.0, max(0.0, number))


def _flag(fields: dict, meta: dict, name: str):
    """A field looked up case-insensitively, at the top level and under ``metadata:`` — a
    privacy flag written ``Private: true`` or ``metadata: {private: true}`` is still the flag."""
    for mapping in (fields, meta):
        for key, value in mapping.items():
            if isinstance(key, str) and key.strip().lower() == name:
                return value
    return None


#: a name a [[link]] cannot spell: a YAML list or map left open ("[broken"), a link's own brackets or
#: its alias bar, a line break or a control character
_UNLINKABLE = re.compile(r"\A[\[{]|\[\[|\]\]|[|\x00-\x1f]")
_PUBLIC, _TRUE = {"false", "no", "n", "off", "0", ""}, {"true", "yes", "y", "on", "1"}
#: a ``private: true`` line however it is indented: the flag holds where YAML could not read it
_PRIVATE_LINE = r"^[ \t]*['\"]?private['\"]?[ \t]*:[ \t]*['\"]?(?:true|yes|y|on|1)['\"]?[ \t]*(?:#.*)?$"


def _is_private(value, head: str, problems: list[str]) -> bool:
    """The privacy flag, failing closed: a value that is neither true nor false keeps the note
    private (said in ``problems``), and so does a ``private: true`` line the frontmatter's reading
    missed (a tab-indented line, invalid YAML). A private note never leaves the machine."""
    if value is True:
        return True
    word = None if value is None or value is False else str(value).strip().lower()
    if word is not None and word not in _PUBLIC:
        if word not in _TRUE:
            problems.append(f"private: {str(value)[:40]!r} is neither true nor false; the note is kept private")
        return True
    return "private" in head.lower() and re.search(_PRIVATE_LINE, head, re.IGNORECASE | re.MULTILINE) is not None


def parse_note(text: str, *, path: Path, rel: str, scope: str, store: Path, mtime: float = 0.0) -> Note:
    """Parse a note's text. Never raises; anything odd lands in ``note.problems``."""
    fm = split_frontmatter(text)
    f = fm.fields
    problems = list(fm.problems)
    meta = f.get("metadata") if isinstance(f.get("metadata"), dict) else {}
    note_type = _as_text(f.get("type") or meta.get("type")).lower() or None
    if note_type and note_type not in NOTE_TYPES:
        problems.append(f"unknown type {note_type!r}")
    stem = Path(rel).stem
    status = _as_text(f.get("status")).lower() or None
    if status and status not in NOTE_STATUSES:
        problems.append(f"unknown status {status!r}; treated as active")
        status = None
    name = _as_text(f.get("name"))
    if _UNLINKABLE.search(name):  # "name: [broken" (a YAML list left open) would be a name no [[link]] can reach
        problems.append(f"name {name[:60]!r} is no name a [[link]] can spell (a list left open, '[[', ']]', '|' "
                        "or a line break); "
                        f"the file's name {stem!r} is used")
        name = ""
    return Note(
        name=name or stem,
        path=path,
        rel=rel,
        scope=scope,
        store=store,
        description=_as_text(f.get("description")),
        body=fm.body.strip("\n"),
        type=note_type,
        recall=_as_list(f.get("recall")),
        paths=_as_list(f.get("paths")),
        importance=_as_importance(f.get("importance"), problems),
        supersedes=_as_list(f.get("supersedes")),
        superseded_by=_as_list(f.get("superseded_by")),
        status=status,
        private=_is_private(_flag(f, meta, "private"), text[:len(text) - len(fm.body)], problems),
        kind=_as_text(f.get("kind")).lower() or None,
        links=extract_links(fm.body),
        content_hash=sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
        mtime=mtime,
        problems=problems,
    )


def note_to_json(note: Note) -> str:
    """A parsed note as JSON, for the parse cache (see ``scan.ParseCache``)."""
    data = asdict(note)
    data["path"], data["store"] = str(note.path), str(note.store)
    data["links"] = [[link.target, link.kind] for link in note.links]
    return json.dumps(data, ensure_ascii=False)


_NOTE_FIELDS = {f.name for f in fields(Note)}


def note_from_json(text: str) -> Note:
    data = {k: v for k, v in json.loads(text).items() if k in _NOTE_FIELDS}
    data["path"], data["store"] = Path(data["path"]), Path(data["store"])
    data["links"] = [Link(target, kind) for target, kind in data.get("links", [])]
    return Note(**data)
