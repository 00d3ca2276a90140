"""``add --scope team`` (W1 for the team): the same advice as a local note gets — ADD, UPDATE,
SUPERSEDE or NOOP, against the team's nearest notes (``write/consolidate.py``) — then the write,
by compare-and-set: an UPDATE merges into the exact version it read and is stored only if the
note is still at that version; a new note is stored only if nobody took its name meanwhile.
Either way a lost race raises ``VersionConflict`` with both versions; nothing is overwritten."""

from __future__ import annotations

from ..errors import TeamStoreError, WriteError
from ..store.links import link_key
from ..store.write import Draft, render_note
from ..write import consolidate
from ..write.remember import NEIGHBOURS, QUERY_CHARS, draft_cosines

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:
    from ..memory import Memory



def add_to_team(memory: "Memory", draft: Draft, *, apply: bool = False, dry_run: bool = False) -> dict:
    """Advise on ``draft`` against the team's notes and, when ``apply`` (or for a plain ADD
    unless ``dry_run``), write it to the team store. A store that cannot be used is an error
    that says why (a write never goes elsewhere silently)."""
    try:
        return _add(memory, draft, apply=apply, dry_run=dry_run)
    except Exception as exc:
        from .connect import explain

        if type(exc).__module__.startswith("psycopg"):
            raise TeamStoreError(explain(exc, memory.config.team.configured_dsn())) from None
        raise


def _add(memory: "Memory", draft: Draft, *, apply: bool, dry_run: bool) -> dict:
    from ..modes import Depth
    from ..recall import RecallPlan, recalled_units, run_recall
    from ..write.remember import secret_warnings
    from .notes import TeamNotes

    team = memory.team
    if team is None:
        raise WriteError("no team store is configured: set [team] dsn and name in your config (docs/team.md)")
    refused = team.write_problem()
    if refused:
        raise WriteError(refused)
    if draft.private:
        raise WriteError("a private note never enters the team store: drop --private, or write it to your user "
                         "store")
    from .transfer import secret_in

    held = secret_in(draft.name, draft.title, draft.description, draft.body, " ".join(draft.recall),
                     " ".join(draft.paths))
    if held:
        raise WriteError(f"this note holds what looks like {held}, and a team note is every member's, its history "
                         "kept for good (nothing is ever deleted from it): nothing was written. Keep the secret in "
                         "your environment or a secret manager and write where to find it instead")
    team.open()  # a write says why the team store cannot be used, it never goes elsewhere silently
    st = team.storage
    embedder = memory.embedder
    team._refresh(embedder, None)  # compare with the team's notes as they are now
    text = consolidate.draft_text(draft)[:QUERY_CHARS]
    outcome = run_recall(st, text, team.config, embedder=embedder, plan=RecallPlan(k=NEIGHBOURS))
    neighbours = [r.as_dict() for r in recalled_units(st, text, outcome.selected, depth=Depth.FULL, explain=False)]
    notes = TeamNotes(st, strategy=team.config.embed.long_notes)
    current = notes.get(draft.name)
    same_name = None if current is None else {"name": current.name, "path": current.path,
                                              "description": current.description, "body": current.body}
    cosines, base = draft_cosines(st, embedder, text, [n["path"] for n in neighbours])
    advice = consolidate.advise(draft, neighbours, cosines, base=base, same_name=same_name)
    out = advice.as_dict() | {"applied": False, "written": None, "folder": f"team://{team.name}",
                              "warnings": secret_warnings(draft)}
    act = not dry_run and (apply or advice.action == consolidate.ADD)
    if not act or advice.action == consolidate.NOOP:
        out["applied"] = act and advice.action == consolidate.NOOP
        return out
    if advice.action == consolidate.UPDATE:
        target = current if current is not None and link_key(advice.target.name) == link_key(current.name) \
            else _by_path(notes, advice.target.path)
        note = notes.write(consolidate.update_text(target.text, draft), rel=target.rel, title=target.title,
                           hook=target.index_hook, section=target.index_section, expected=target.version)
    else:
        if advice.action == consolidate.SUPERSEDE:
            draft.supersedes = list(dict.fromkeys([*draft.supersedes, advice.target.name]))
        note = notes.write(render_note(draft), rel=draft.filename, title=draft.title or draft.name,
                           hook=draft.description.strip(), expected=None)
    team._refresh(embedder, None)  # the next recall sees it, with its vector and its links
    out.update({"applied": True, "written": note.path, "version": note.version})
    return out


def _by_path(notes, path: str):
    rel = path.split("/", 3)[-1] if path.startswith("team://") else path
    for note in notes.all():
        if note.rel == rel:
            return note
    raise WriteError(f"the team note at {path} is gone")


__all__ = ["add_to_team"]
