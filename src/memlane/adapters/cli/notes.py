"""Reading what memory holds: ``show`` a note, ``stats`` of the index and the link graph, the
lifecycle's ``status``, and ``decay`` (moving idle notes to dormant and archived)."""

from __future__ import annotations

import sys

from ...errors import UsageError
from .common import command, emit, kind_and_scope, open_memory, withhold


COMMAND_NAMES = ("show", "stats", "status", "decay")  # the commands ``register`` adds


def register(sub) -> None:
    p = command(sub, "show", func=cmd_show, help="print a note in full",
                description="Print every note of that name in full (the narrowest scope first). Reading a note is a "
                            "use: an archived note becomes active again.",
                examples="examples:\n  memlane show feedback_ci_cache_keys\n  memlane show ci-cache-keys.md --json")
    p.add_argument("name", help="the note: its name, its file name or its path")
    p.add_argument("--unscreened", action="store_true",
                   help="print a note whose text reads as an instruction to the agent too, for a person at a "
                        "terminal (agents are told to fetch notes with this command, so such a note's text is "
                        "withheld by default, as the hooks and the MCP server withhold it)")
    command(sub, "stats", func=cmd_stats, help="what the index holds: notes by type and scope, links, hubs",
            description="Counts of the indexed notes by type and scope, how many are embedded, the most linked-to "
                        "notes, sets of notes recalled together, links to notes not written yet, and the files that "
                        "could not be read.", examples="example:\n  memlane stats --store ~/notes")
    command(sub, "status", func=cmd_status, help="which notes are active, dormant or archived, and which are used most",
            description="The lifecycle: notes nobody recalls for a while turn dormant, then archived (kept, "
                        "searchable with --deep, active again when used). Shows the counts, the most used notes and "
                        "what would change now.", examples="example:\n  memlane status")
    p = command(sub, "decay", func=cmd_decay, help="move idle notes to dormant or archived (from how they are used)",
                description="Apply the lifecycle now: notes unused for long enough turn dormant, then archived. Their "
                            "files are never changed or deleted.",
                examples="examples:\n  memlane decay --dry-run\n  memlane decay")
    p.add_argument("--dry-run", action="store_true", help="show what would change and why, change nothing")


def cmd_show(args) -> int:
    if args.unscreened and not sys.stdin.isatty():  # an agent's shell has no terminal; a person has one
        raise UsageError("--unscreened is for a person at a terminal (this command's input is not one); "
                         "the note's file itself is always there to read")
    from ...guards.exits import row_risk

    memory = open_memory(args)
    found = memory.show(args.name)
    if not found:
        name = args.name[:100]  # quoted back as far as a note's name can go, not a pasted page
        raise UsageError(f"no note named {name!r} (try: memlane recall {name!r})")
    text = []
    for n, note in enumerate(found):
        # the agent may run this command (the hooks' menu says so): it gets what the hooks give; meta goes
        # too, its index hook is screened text
        mark = ", private" if (note.get("meta") or {}).get("private") else ""  # the user's own: no hook injects it
        note = found[n] = withhold(note, None if args.unscreened else row_risk(note))
        if "withheld" in note:
            text.append(f"# {note['name']}  ({note['scope']}{mark})\n{note['path']}\n\n"
                        f"({note['withheld']})\n")
            continue
        text.append(f"# {note['title']}  ({kind_and_scope(note['type'], note['scope'])}{mark})\n{note['path']}\n")
        if note["description"]:
            text.append(f"> {note['description']}\n")
        text.append(note["body"] + "\n")
    emit(args, found, "\n".join(text))
    return 0


def cmd_stats(args) -> int:
    memory = open_memory(args)
    data = memory.stats()
    lines = [f"index: {data['index']}",
             f"units: {data['counts']['units']} ({', '.join(f'{k} {v}' for k, v in sorted(data['by_type'].items()))})",
             f"scopes: {', '.join(f'{k} {v}' for k, v in sorted(data['by_scope'].items())) or '-'}",
             f"embedded: {', '.join(f'{k} {v}' for k, v in data['embedded_units'].items()) or 'none'}",
             f"skipped files: {data['skipped']} ({data['links_outside']} symlinks out of their folder), "
             f"shadowed by a narrower scope: {data['shadowed']}, "
             f"excluded by privacy.exclude: {data['excluded']}",
             f"hit-log: {data['hit_log']['records']} recalled units in {data['hit_log']['path']}"
             if data["hit_log"] else "hit-log: off",
             "hubs: " + (", ".join(f"{h['name']} ({h['in_degree']} in)" for h in data["hubs"]) or "none"),
             f"constellations: {len(data['constellations'])}"
             + "".join(f"\n  {' + '.join(g)}" for g in data["constellations"]),
             f"clusters of linked notes: {data['clusters']}",
             f"future-write markers (links to notes not written yet): {len(data['future_writes'])}"
             + "".join(f"\n  {w['from']} -> [[{w['target']}]]" for w in data["future_writes"][:10])]
    if data["supersedes_loops"]:
        lines.append(f"supersedes loops (neither note is demoted): {', '.join(data['supersedes_loops'])}")
    for store in data["stores"]:
        lines.append(f"store ({store['scope']}, {store['source']}): {store['path']}")
    emit(args, data, "\n".join(lines))
    return 0


def cmd_status(args) -> int:
    memory = open_memory(args)
    data = memory.status()
    states = data["states"]
    lines = [f"index: {data['index']}",
             f"notes: {data['notes']} — active {states['active']}, dormant {states['dormant']}, "
             f"archived {states['archived']}",
             f"hit-log: {data['hit_log'] or 'off'}; lifecycle last updated {data['lifecycle_updated'] or 'never'}"]
    if data["most_used"]:
        lines.append("most used:")
        lines += [f"  {u['name']}: {u['refs']} use{'' if u['refs'] == 1 else 's'}, last {u['last_used']}, "
                  f"stability {u['stability']}"
                  for u in data["most_used"]]
    lines.append(f"would change now: {data['pending_total']}" + (" (memlane decay applies it)" if data["pending_total"] else ""))
    lines += [f"  {c['name']}: {c['old']} -> {c['new']} ({c['reason']})" for c in data["pending_changes"]]
    emit(args, data, "\n".join(lines))
    return 0


def cmd_decay(args) -> int:
    memory = open_memory(args)
    data = memory.decay(dry_run=args.dry_run)
    verb = "would change" if args.dry_run else "changed"
    lines = [f"{verb}: {len(data['changes'])} note(s) (dormant after {data['settings']['dormant_days']:g} d, "
             f"archived after {data['settings']['archive_days']:g} d unreferenced, times stability)"]
    lines += [f"  {c['name']}: {c['old']} -> {c['new']} ({c['reason']}; {c['refs']} uses)" for c in data["changes"]]
    if not data["changes"]:
        lines.append("  nothing: every note is where it should be")
    emit(args, data, "\n".join(lines))
    return 0
