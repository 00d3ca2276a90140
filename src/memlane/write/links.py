"""Link suggestion: the notes a note's own text recalls, above the recall threshold and not yet
linked, proposed as ``[[links]]`` with why (A-MEM's link generation, Xu et al. 2025); applied,
they are appended as one ``Related:`` line."""

from __future__ import annotations

from pathlib import Path

from . import consolidate
from ..errors import WriteError
from ..store.write import rewrite_note
from .remember import _writable

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:
    from ..memory import Memory


def suggest_links(memory: "Memory", name: str, *, apply: bool = False, k: int = 5,
                  include_private: bool = True) -> dict:
    """``[[links]]`` worth adding to the note ``name``: the notes its own text recalls, that
    it does not link to yet, each with why. ``apply``: append them as a ``Related:`` line."""
    memory.refresh()
    found = [r for r in memory.index.find(name) if include_private or not r["meta"].get("private")]
    if not found:
        raise WriteError(memory.not_found(name, "links are written into a file, and a team note has none here "
                                                "(`memlane team export` it, add them, `memlane team import` it)"))
    note = found[0]
    unit = note["id"]
    linked = {other for other, kind, direction in memory.index.neighbours_of([unit]).get(unit, [])
              if direction == "out" and kind != "index"}
    linked_paths = {row["path"] for row in memory.index.units_by_id(list(linked)).values()}
    text = f"{note['name'].replace('_', ' ')}: {note.get('description', '')}\n\n{note.get('body', '')}"
    results = memory.recall(text, k=k + len(linked_paths), depth="ids", explain=True, refresh=False, record=False,
                            include_private=include_private, exclude=[note["path"]])
    suggestions = []
    for r in results:
        if r.path == note["path"] or r.path in linked_paths:
            continue
        e = r.explain
        terms = sorted({t for fields in (e.matched_fields or {}).values() for t in fields})[:5]
        why = f"its text recalls it (score {r.score:.2f}"
        why += f"; cosine {e.cosine:.2f}" if e.cosine is not None else ""
        why += f"; shared words: {', '.join(terms)})" if terms else ")"
        suggestions.append({"name": r.name, "path": r.path, "score": r.score, "why": why})
        if len(suggestions) >= k:
            break
    out = {"note": note["name"], "path": note["path"], "suggestions": suggestions, "applied": False}
    if apply and suggestions:
        path = Path(note["path"])
        _writable(memory, path)
        rewrite_note(path, lambda old: consolidate.with_links(old, [s["name"] for s in suggestions]))
        memory.refresh(recheck=True)
        out["applied"] = True
    return out
