"""The recall unit the index stores: a note, or any record with the same fields
(the eval harness builds units from benchmark corpora)."""

from __future__ import annotations

import json

from ..records import dataclass, field
from ..store.note import PARSER_VERSION, Note
from ..digest import sha256


@dataclass
class Unit:
    """What the index holds for one note or document: its fields and text."""

    uid: str  # stable id: a note's absolute path, or a corpus document id
    name: str
    description: str = ""
    keywords: str = ""
    body: str = ""
    title: str = ""
    path: str = ""
    scope: str = "project"
    type: str | None = None
    meta: dict = field(default_factory=dict)
    content_hash: str = ""

    def __post_init__(self) -> None:
        if not self.content_hash:
            payload = json.dumps(
                [self.name, self.title, self.description, self.keywords, self.body, self.scope, self.type, self.meta],
                sort_keys=True, ensure_ascii=False, default=str,
            )
            self.content_hash = sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()

    def fts_description(self) -> str:
        """The description, plus the ``MEMORY.md`` hook that paraphrases it (one more recall
        surface for the keyword leg)."""
        hook = self.meta.get("index_hook") or ""
        if hook and hook not in self.description:
            return f"{self.description}\n{hook}".strip()
        return self.description

    def heading(self) -> str:
        """Name and description: what the unit says it is about."""
        parts = [self.title or self.name]
        if self.description:
            parts.append(self.description)
        return ". ".join(p for p in parts if p)


def unit_from_note(note: Note) -> Unit:
    meta = {
        "rel": note.rel,
        "store": str(note.store),
        "recall": note.recall,
        "paths": note.paths,
        "importance": note.importance,
        "supersedes": note.supersedes,
        "superseded_by": note.superseded_by,
        "status": note.status,
        "private": note.private,
        "kind": note.kind,
        "links": [[link.target, link.kind] for link in note.links],
        "index_hook": note.index_hook,
        "index_section": note.index_section,
        "problems": note.problems,
        "mtime": note.mtime,
    }
    return Unit(
        uid=str(note.path),
        name=note.name,
        title=note.title or "",
        description=note.description,
        keywords=" ".join(note.recall),
        body=note.body,
        path=str(note.path),
        scope=note.scope,
        type=note.type,
        meta=meta,
        content_hash=note.content_hash + ":" + sha256(
            json.dumps([note.title, note.index_hook, note.index_section, note.scope, PARSER_VERSION],
                       ensure_ascii=False).encode()
        ).hexdigest()[:16],
    )
