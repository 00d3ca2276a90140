"""The write path (W1, W2, and archive/restore by hand), as ``Memory`` runs it.

``add``: find the draft's nearest notes with the recall pipeline, take the advice of
``consolidate.advise`` and, when asked (``apply``) — or when the advice is a plain ``ADD`` —
carry it out through ``store.write`` (atomic, under the folder's write lock). ``suggest_links``:
the notes a note's own text recalls, not yet linked. Both refresh the index after writing,
so the next recall sees the change. Nothing is deleted; Claude Code's own memory folder is
never written (S1).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import consolidate
from ..store.links import link_key
from ..store.write import Draft, WriteError, rewrite_note, write_new_note

if TYPE_CHECKING:
    from ..memory import Memory

NEIGHBOURS = 5
QUERY_CHARS = 2000  # a draft's nearest notes are found from its head (name, description, first lines)
PASSAGE_BACKGROUND = 0.73  # two unrelated notes' cosine (e5-minilm), for stores too small to measure


def writable_folder(memory: "Memory", to: str | Path | None = None) -> Path:
    """Where a new note goes: ``to`` if it is one of the stores (or any folder, when given
    explicitly), else the first writable project-scope store, else the first writable one."""
    if to is not None:
        return Path(to).expanduser().resolve()
    writable = [s for s in memory.specs if not s.read_only]
    for spec in sorted(writable, key=lambda s: s.scope != "project"):
        return Path(spec.path).expanduser().resolve()
    raise WriteError("no writable memory folder: pass --to DIR (Claude Code's own memory folder is read, never "
                     "written)")


def add(memory: "Memory", draft: Draft, *, apply: bool = False, to: str | Path | None = None,
        include_private: bool = True, dry_run: bool = False) -> dict:
    """Advise on ``draft`` and, when ``apply`` (or when the advice is ADD and not
    ``dry_run``), carry the advice out. Returns the advice with what was written."""
    draft.check()
    folder = writable_folder(memory, to)
    memory.refresh(recheck=True)  # compare with the notes as they are now
    text = consolidate.draft_text(draft)[:QUERY_CHARS]
    neighbours = [r for r in memory.recall(text, k=NEIGHBOURS, depth="full", refresh=False, record=False,
                                           include_private=include_private)]
    same_name = _same_name(memory, draft.name, include_private)
    cosines, base = _cosines(memory, text, [r["path"] for r in neighbours])
    advice = consolidate.advise(draft, neighbours, cosines, base=base, same_name=same_name)
    out = advice.as_dict() | {"applied": False, "written": None, "folder": str(folder),
                              "warnings": secret_warnings(draft)}
    act = not dry_run and (apply or advice.action == consolidate.ADD)
    if not act or advice.action == consolidate.NOOP:
        out["applied"] = act and advice.action == consolidate.NOOP
        return out
    if advice.action == consolidate.ADD:
        path = write_new_note(folder, draft)
    elif advice.action == consolidate.UPDATE:
        path = Path(advice.target.path)
        _writable(memory, path)
        rewrite_note(path, lambda old: consolidate.update_text(old, draft))
    else:  # SUPERSEDE: the draft as a new note that names what it replaces
        draft.supersedes = list(dict.fromkeys([*draft.supersedes, advice.target.name]))
        path = write_new_note(folder, draft)
    memory.refresh(recheck=True)  # the next recall sees the change
    out.update({"applied": True, "written": str(path)})
    return out


def secret_warnings(draft: Draft) -> list[str]:
    """What in the draft looks like a secret, by family and place — never the value itself."""
    from ..guards.secrets import find_secrets

    out = []
    for field, text in (("description", draft.description), ("body", draft.body),
                        ("recall keywords", " ".join(draft.recall)), ("title", draft.title or "")):
        for found in find_secrets(text):
            where = f"line {found.line} of the {field}" if field == "body" else f"the {field}"
            out.append(f"{where} holds what looks like a {found.family.replace('-', ' ')}: memlane hides it "
                       "from everything it shows, but the note keeps it in plain text on disk — keep the secret "
                       "in your environment or a secret manager and write where to find it instead")
    return out


def suggest_links(memory: "Memory", name: str, *, apply: bool = False, k: int = 5,
                  include_private: bool = True) -> dict:
    """``[[links]]`` worth adding to the note ``name``: the notes its own text recalls, that
    it does not link to yet, each with why. ``apply``: append them as a ``Related:`` line."""
    memory.refresh()
    found = [r for r in memory.index.find(name) if include_private or not r["meta"].get("private")]
    if not found:
        raise WriteError(f"no note called {name!r}")
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
        if r["path"] == note["path"] or r["path"] in linked_paths:
            continue
        e = r["explain"]
        terms = sorted({t for fields in (e.get("matched_fields") or {}).values() for t in fields})[:5]
        why = f"its text recalls it (score {r['score']:.2f}"
        why += f"; cosine {e['cosine']:.2f}" if e.get("cosine") is not None else ""
        why += f"; shared words: {', '.join(terms)})" if terms else ")"
        suggestions.append({"name": r["name"], "path": r["path"], "score": r["score"], "why": why})
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


def set_state(memory: "Memory", name: str, state: str, *, include_private: bool = True) -> dict:
    """Archive or restore the note ``name`` by hand (its file is not touched)."""
    memory.refresh(embed=False)
    found = [r for r in memory.index.find(name) if include_private or not r["meta"].get("private")]
    if not found:
        raise WriteError(f"no note called {name!r}")
    changed = memory.usage.set_state([r["uid"] for r in found], state)
    return {"name": found[0]["name"], "path": found[0]["path"], "state": state, "changed": changed}


def _same_name(memory: "Memory", name: str, include_private: bool) -> dict | None:
    key = link_key(name)
    for row in memory.index.find(name):
        if link_key(row["name"]) == key and (include_private or not row["meta"].get("private")):
            return {"name": row["name"], "path": row["path"], "description": row["description"], "body": row["body"]}
    return None


def _cosines(memory: "Memory", text: str, paths: list[str]) -> tuple[dict[str, float], float | None]:
    """The draft's cosine to each of ``paths``, and its median cosine to every note (the
    store's background level); ``({}, None)`` without an embedder or vectors."""
    embedder = memory.embedder
    if embedder is None or not paths:
        return {}, None
    import numpy as np

    from ..index.vectors import unit_similarities

    vector = embedder.embed_passages([text[: embedder.max_chars]])[0]
    found = unit_similarities(memory.index, embedder.name, vector)
    if found is None or len(found[1]) == 0:
        return {}, None
    by_unit = dict(zip(found[0].tolist(), found[1].tolist()))
    base = float(np.median(found[1])) if len(found[1]) >= 5 else PASSAGE_BACKGROUND
    ids = {row["path"]: row["id"] for row in memory.index.units_by_path(paths)}
    return {p: by_unit[i] for p, i in ids.items() if i in by_unit}, base


def _writable(memory: "Memory", path: Path) -> None:
    for spec in memory.specs:
        if path.resolve().is_relative_to(Path(spec.path).expanduser().resolve()) and spec.read_only:
            raise WriteError(f"{path} is in a read-only store ({spec.label or spec.path}); memlane never writes "
                             "Claude Code's own memory folder")
