"""What session start injects without a prompt (layers 1 and 2), and the notes a prompt brings
in by the files it names (``paths:`` globs, like Claude Code's rules with ``paths:``)."""

from __future__ import annotations

import fnmatch
import re

from ..lifecycle.usage import state_of, unit_states
from ..recall import recalled_note
from ..retrieve.recalled import Recalled

_PATHLIKE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+|[\w-]+\.[A-Za-z0-9]{1,8})(?![\w/])")


def briefing(memory, *, layer: int, refresh: bool = True) -> list[Recalled]:
    """Layer 1 (identity: notes of type ``user``) or layer 2 (critical project facts:
    ``project`` and ``feedback`` notes outside the user scope), most important first — declared
    ``importance:``, then centrality in the link graph, then the most recently edited — at full
    depth. Archived, dormant and private notes are left out."""
    if layer not in (1, 2):
        raise ValueError("briefing layers are 1 and 2")
    if refresh:
        memory.refresh()
    index = memory.index
    ids = index.unit_ids(types=["user"]) if layer == 1 else \
        index.unit_ids(types=["project", "feedback"], exclude_scopes=["user"])
    facts = index.unit_facts(ids)
    rows = index.units_by_id(ids)
    ranked = sorted(
        (i for i in ids if state_of(facts[i]) == "active" and not rows[i]["meta"].get("private")),
        key=lambda i: (-(float(facts[i].importance) if facts[i].importance is not None else 0.5),
                       -(facts[i].pagerank or 0.0), -(float(facts[i].mtime) if facts[i].mtime else 0.0),
                       rows[i]["name"]))
    return [recalled_note(rows[i], rank=n, reached="briefing") for n, i in enumerate(ranked, start=1)]


def notes_with_paths(memory) -> list[Recalled]:
    """Notes that declare ``paths:`` globs (a file trigger), at full depth; archived and private
    notes left out."""
    index = memory.index
    ids = index.units_with_paths()
    rows = index.units_by_id(ids)
    states = unit_states(index, ids)
    return [recalled_note(rows[i], reached="briefing") for i in ids
            if states.get(i) != "archived" and not rows[i]["meta"].get("private")]


def path_triggered(memory, prompt: str, known: set[str]) -> list[Recalled]:
    """Notes whose ``paths:`` globs match a file the prompt names (not already among ``known``)."""
    named = {m.group(1).strip("./") for m in _PATHLIKE.finditer(prompt)}
    if not named:
        return []
    out = []
    for note in notes_with_paths(memory):
        if note.path in known:
            continue
        hit = next((f"{glob} matches {name}" for glob in note.paths for name in named
                    if fnmatch.fnmatch(name, glob) or fnmatch.fnmatch(name, glob.lstrip("*/"))
                    or name.endswith(glob.lstrip("*"))), None)
        if hit:
            out.append(note.with_(reached=f"paths: {hit}"))
    return out
