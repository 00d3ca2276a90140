"""The write path, as ``Memory`` runs it.

``add``: find the draft's nearest notes with the recall pipeline, take the advice of
``consolidate.advise`` and, when asked (``apply``) — or when the advice is a plain ``ADD`` —
carry it out through ``store.write`` (atomic, under the store's lock, MEMORY.md re-read before
its rename). A note goes to the store of its scope: ``user`` notes to the user store, the others
to this repository's project store — Claude Code's own memory folder, written in its format, so
Claude Code's loader and memlane see the same notes. Nothing is ever deleted.
"""

from __future__ import annotations

from pathlib import Path

from . import consolidate
from ..config import lies_within
from ..store.links import link_key
from ..store.memory_index import INDEX_FILE, LOADED_MAX_BYTES, LOADED_MAX_LINES, loaded_lines, parse_memory_index
from ..store.write import Draft, WriteError, rewrite_note, write_new_note

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:
    from ..memory import Memory

NEIGHBOURS = 5
QUERY_CHARS = 2000  # a draft's nearest notes are found from its head (name, description, first lines)
PASSAGE_BACKGROUND = 0.73  # two unrelated notes' cosine (e5-minilm), for stores too small to measure


SCOPES = ("user", "project", "team")  # team: only when asked (P1, team/remember.py)


def scope_of(draft: Draft, scope: str | None = None) -> str:
    """The scope a note is written to: the one asked for, else the one its type names — ``user``
    notes to the user store, ``project``, ``feedback`` and ``reference`` notes to this repository's
    project store (a project's note never reaches another project)."""
    if scope is not None:
        if scope not in SCOPES:
            raise WriteError(f"scope must be one of {', '.join(SCOPES)}; got {scope!r}")
        return scope
    return "user" if draft.type == "user" else "project"


def target_folder(memory: "Memory", draft: Draft, *, scope: str | None = None, to: str | Path | None = None) -> Path:
    """Where a new note goes: ``to`` when given, else the store of its scope (``scope_of``); the
    folder is created when it does not exist yet (``add`` works before ``init``)."""
    if to is not None:
        return Path(to).expanduser().resolve()
    if memory._explicit is not None:  # folders given directly: the first project-scope one, else the first
        folders = sorted((s for s in memory.specs if not s.read_only), key=lambda s: s.scope != scope_of(draft, scope))
        if folders:
            return Path(folders[0].path)
        raise WriteError("no writable memory folder among those given: pass --to DIR")
    if scope_of(draft, scope) == "user":
        return memory.config.user_store_path().expanduser().resolve()
    project = memory.project_store()
    if project is None:
        raise WriteError(f"{memory.cwd} is not inside a git repository, so there is no project store for a "
                         f"{draft.type} note: run this inside the repository, pass --scope user, or --to DIR")
    return project


def add(memory: "Memory", draft: Draft, *, apply: bool = False, to: str | Path | None = None,
        scope: str | None = None, include_private: bool = True, dry_run: bool = False) -> dict:
    """Advise on ``draft`` and, when ``apply`` (or when the advice is ADD and not
    ``dry_run``), carry the advice out. Returns the advice with what was written."""
    draft.check()
    if scope_of(draft, scope) == "team" and to is None:
        from ..team.remember import add_to_team

        return add_to_team(memory, draft, apply=apply, dry_run=dry_run)
    folder = target_folder(memory, draft, scope=scope, to=to)
    memory.refresh(recheck=True)  # compare with the notes as they are now
    text = consolidate.draft_text(draft)[:QUERY_CHARS]
    neighbours = [r.as_dict() for r in memory.recall(text, k=NEIGHBOURS, depth="full", refresh=False, record=False,
                                           include_private=include_private)]
    same_name = _same_name(memory, draft.name, include_private)
    if to is not None:  # written into that folder: compared with its notes alone, never acted on elsewhere
        neighbours = [r for r in neighbours if lies_within(r["path"], folder)]
        same_name = same_name if same_name and lies_within(same_name["path"], folder) else None
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
    memory.reload_stores()  # a store folder this note created is read from now on
    memory.refresh(recheck=True)  # the next recall sees the change
    out.update({"applied": True, "written": str(path)})
    if advice.action != consolidate.UPDATE and not draft.private:
        out["warnings"] += index_cut_warnings(folder, path.name)
    return out


def index_cut_warnings(folder: Path, filename: str) -> list[str]:
    """When the ``MEMORY.md`` line of ``filename`` lies past what Claude Code loads of that file, say
    so: Claude Code's own recall never sees the note (memlane's still does)."""
    index = folder / INDEX_FILE
    try:
        text = index.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    cut = loaded_lines(text)
    line = next((l.line_no for l in parse_memory_index(text) if l.file.lstrip("./") == filename), None)
    if line is None or line <= cut:
        return []
    return [f"{index} now has {len(text.splitlines())} lines, and this note's line is line {line}: Claude Code loads "
            f"only the first {LOADED_MAX_LINES} lines or {LOADED_MAX_BYTES // 1000} KB of it, so Claude Code never sees "
            "the note there (memlane still recalls it) — shorten or merge lines of MEMORY.md (`memlane lint` shows "
            "where the cut falls)"]


def secret_warnings(draft: Draft) -> list[str]:
    """What in the draft looks like a secret, by family and place — never the value itself."""
    from ..guards.secrets import a_secret, find_secrets

    out = []
    for field, text in (("description", draft.description), ("body", draft.body),
                        ("recall keywords", " ".join(draft.recall)), ("title", draft.title or "")):
        for found in find_secrets(text):
            where = f"line {found.line} of the {field}" if field == "body" else f"the {field}"
            out.append(f"{where} holds what looks like {a_secret(found.family)}: memlane hides it "
                       "from everything it shows, but the note keeps it in plain text on disk — keep the secret "
                       "in your environment or a secret manager and write where to find it instead")
    return out


def _same_name(memory: "Memory", name: str, include_private: bool) -> dict | None:
    key = link_key(name)
    for row in memory.index.find(name):
        if link_key(row["name"]) == key and (include_private or not row["meta"].get("private")):
            return {"name": row["name"], "path": row["path"], "description": row["description"], "body": row["body"]}
    return None


def _cosines(memory: "Memory", text: str, paths: list[str]) -> tuple[dict[str, float], float | None]:
    return draft_cosines(memory.index, memory.embedder, text, paths)


def draft_cosines(storage, embedder, text: str, paths: list[str]) -> tuple[dict[str, float], float | None]:
    """The draft's cosine to each of ``paths`` in ``storage`` (any backend of the storage seam),
    and its median cosine to every note (the store's background level); ``({}, None)`` without
    an embedder or vectors."""
    if embedder is None or not paths:
        return {}, None
    import numpy as np

    vector = embedder.embed_passages([text[: embedder.max_chars]])[0]
    ids = {row["path"]: row["id"] for row in storage.units_by_path(paths)}
    with storage.snapshot():
        found = storage.similarities(embedder.name, vector, among=list(ids.values()))
        if found is None or len(found.sims) == 0:
            return {}, None
        by_unit = dict(zip(found.units.tolist(), found.sims.tolist()))
        base = float(np.median(found.sims)) if len(found.sims) >= 5 else PASSAGE_BACKGROUND
    return {p: by_unit[i] for p, i in ids.items() if i in by_unit}, base


def _writable(memory: "Memory", path: Path) -> None:
    for spec in memory.specs:
        if path.resolve().is_relative_to(Path(spec.path).expanduser().resolve()) and spec.read_only:
            raise WriteError(f"{path} is in a read-only store ({spec.label or spec.path}); memlane does not write "
                             "there")
