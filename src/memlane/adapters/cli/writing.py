"""Writing and checking notes: ``add`` (with advice against the nearest notes), ``link --suggest``,
``archive`` / ``restore``, ``lint``, and ``graph`` (a picture of memory)."""

from __future__ import annotations

import sys
from pathlib import Path

from ...errors import UsageError
from ...store.vocabulary import NOTE_KINDS, NOTE_TYPES
from .common import (command, emit, memory_with_notes, notice, open_memory, result_count, say, say_once,
                     skips_in_report)


COMMAND_NAMES = ("add", "link", "archive", "restore", "lint", "graph")  # the commands ``register`` adds


def register(sub) -> None:
    p = command(sub, "add", func=cmd_add, help="write a note, after comparing it with the notes it resembles",
                description="Write a note in Claude Code's format with its MEMORY.md line. First it is compared "
                                   "with the nearest notes, and memlane advises: ADD (nothing close: written), UPDATE "
                                   "(append to a note on the same subject), SUPERSEDE (a new note replacing one it "
                                   "contradicts) or NOOP (already known). Only ADD is written without --apply.",
                examples="examples:\n"
                              "  memlane add --name ci_cache_keys --type feedback \\\n"
                              "      --description \"when a CI cache restores stale dependencies\" \\\n"
                              "      --body \"Key caches on the lockfile hash, never the branch name.\"\n"
                              "  echo \"Retry once, then file an issue.\" | memlane add --name flaky_e2e --body - \\\n"
                              "      --description \"when an end-to-end test fails only on CI\" --dry-run")
    p.add_argument("--name", required=True, help="the note's name (its file: <type>_<name>.md)")
    p.add_argument("--description", required=True, help="when the note applies: 'when deciding …' (recall keys on it)")
    p.add_argument("--type", default="project", choices=NOTE_TYPES, help="the note's type (default: project)")
    p.add_argument("--body", default="", help="the note's text ('-' reads stdin)")
    p.add_argument("--title", help="its MEMORY.md title (default: the name)")
    p.add_argument("--recall", action="append", default=[], metavar="KEYWORD", help="a recall keyword (repeatable)")
    p.add_argument("--paths", action="append", default=[], metavar="GLOB",
                   help="files that bring the note in when a prompt names them (repeatable)")
    p.add_argument("--importance", type=float, help="0-1")
    p.add_argument("--kind", choices=NOTE_KINDS, help="what kind of knowledge it is")
    p.add_argument("--private", action="store_true", help="yours only: shown to you, never handed to an agent")
    p.add_argument("--scope", choices=["user", "project", "team"],
                   help="where it goes: user (your notes, every project), project (this repository's, in Claude "
                        "Code's memory folder) or team (the team store of your config); default: user for --type "
                        "user, else project")
    p.add_argument("--to", metavar="DIR", help="write into this folder instead")
    p.add_argument("--apply", action="store_true", help="follow the advice (UPDATE / SUPERSEDE); an ADD is written anyway")
    p.add_argument("--dry-run", action="store_true", help="only show the advice")

    p = command(sub, "link", func=cmd_link, help="propose [[links]] from a note to the notes it relates to",
                description="The notes a note's own text recalls and that it does not link to yet, each with why; "
                            "--apply appends them as one 'Related:' line.",
                examples="examples:\n  memlane link --suggest ci_cache_keys\n"
                         "  memlane link --suggest ci_cache_keys --apply")
    p.add_argument("--suggest", required=True, metavar="NAME", help="the note to propose links for")
    p.add_argument("--apply", action="store_true", help="append them to the note as a 'Related:' line")
    p.add_argument("--k", type=result_count, default=5, metavar="N", help="at most this many")

    for verb, what, desc in (
            ("archive", "archive a note by hand: out of default recall, its file kept",
             "Archive a note by hand: it leaves default recall (--deep still finds it) until restored or used. Its "
             "file is not touched."),
            ("restore", "bring an archived note back into recall", "Bring an archived note back into default recall.")):
        p = command(sub, verb, func=cmd_set_state, help=what, description=desc,
                    examples=f"example:\n  memlane {verb} old_jenkins_deploys")
        p.add_argument("name", help="the note (a name, a file name or a path)")
        p.set_defaults(state="archived" if verb == "archive" else "active")

    p = command(sub, "lint", func=cmd_lint, help="check the notes: links, duplicates, contradictions, descriptions, "
                                                 "the index",
                description="Links to notes that do not exist, notes nothing links to, near-duplicates, "
                                   "contradiction candidates, descriptions that do not say when a note applies, "
                                   "oversized notes, unreadable files, text that reads as an instruction to the agent, "
                                   "secrets, MEMORY.md lines that disagree with their notes, and a MEMORY.md over "
                                   "Claude Code's load limit.",
                examples="examples:\n  memlane lint\n  memlane lint --check secrets --check broken-links --json")
    p.add_argument("--fail-on", choices=["error", "warning", "never"], default="error",
                   help="exit 1 when a finding at this level (or worse) exists (default: error)")
    p.add_argument("--check", action="append", metavar="NAME", help="run only this check (repeatable)")

    p = command(sub, "graph", func=cmd_graph, help="a picture of memory: notes, links, sets recalled together, "
                                                   "recent recalls",
                description="The link graph of the notes as one self-contained HTML page (no network), as Graphviz "
                            "DOT, as a Mermaid flowchart, or as JSON. Private notes are left out.",
                examples="examples:\n  memlane graph --html memory.html\n  memlane graph --dot | dot -Tsvg > m.svg\n"
                         "  memlane graph --json")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--html", metavar="OUT", help="write one self-contained HTML file")
    form.add_argument("--dot", action="store_true", help="print the graph in Graphviz DOT")
    form.add_argument("--mermaid", action="store_true", help="print the graph as a Mermaid flowchart")
    p.add_argument("--recent", type=int, default=20, metavar="N", help="highlight the last N recalled notes")


def cmd_add(args) -> int:
    from ...store.write import MAX_BODY_BYTES, Draft

    # one character past the limit is enough for the draft to refuse it (`--body - < /dev/zero` ends)
    body = sys.stdin.read(MAX_BODY_BYTES + 1) if args.body == "-" else args.body
    draft = Draft(name=args.name, description=args.description, body=body, type=args.type, title=args.title,
                  recall=args.recall, paths=args.paths, importance=args.importance, kind=args.kind,
                  private=args.private)
    out = open_memory(args).add(draft, apply=args.apply, to=args.to, scope=args.scope, dry_run=args.dry_run)
    for warning in out.get("warnings", []):
        say_once(f"memlane: warning: {warning}")  # it may quote a path
    lines = [f"{out['advice']}: {out['reason']}"]
    for c in out["candidates"]:
        cosine = "" if c["cosine"] is None else f", cosine {c['cosine']:.3f}"
        lines.append(f"  {c['name']}  closeness {c['closeness']:.2f} (word overlap {c['word_overlap']:.2f}{cosine})"
                     + (f"; disagrees: {c['disagreement']}" if c["disagreement"] else "") + f"  {c['path']}")
    if out["written"]:
        lines.append(f"written: {out['written']}")
    elif out["advice"] == "NOOP":
        lines.append("nothing written: the note would say nothing new")
    elif not args.dry_run:
        lines.append("nothing written: add --apply to follow the advice")
    emit(args, out, "\n".join(lines))
    return 0


def cmd_link(args) -> int:
    out = open_memory(args).suggest_links(args.suggest, apply=args.apply, k=args.k)
    lines = [f"links for {out['note']} ({out['path']}):"]
    lines += [f"  [[{s['name']}]]  {s['why']}" for s in out["suggestions"]] or ["  none: nothing related and unlinked"]
    if out["applied"]:
        lines.append("written: a 'Related:' line at the end of the note")
    elif out["suggestions"]:
        lines.append("add --apply to write them")
    emit(args, out, "\n".join(lines))
    return 0


def cmd_set_state(args) -> int:
    memory = open_memory(args)
    out = memory.archive(args.name) if args.state == "archived" else memory.restore(args.name)
    verb = "archived" if args.state == "archived" else "restored"
    emit(args, out, f"{out['name']}: {verb}" if out["changed"] else f"{out['name']}: already {args.state}")
    return 0


def cmd_lint(args) -> int:
    """``memlane lint``: the report (text or ``--json``); exit 1 at ``--fail-on`` or worse."""
    from ...write.lint import exit_code, format_text, lint

    memory = memory_with_notes(args)
    try:
        with skips_in_report():  # the report lists each skipped file
            # the words of a note that reads as an instruction: for a person at a terminal, not an agent's shell
            report = lint(memory, checks=args.check, quote=sys.stdin.isatty())
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    notice(memory)
    emit(args, report.to_dict(), format_text(report))
    return exit_code(report, args.fail_on)


def cmd_graph(args) -> int:
    """``memlane graph``: ``--html OUT`` writes the page, ``--dot`` / ``--mermaid`` print the
    graph; ``--json`` prints the data instead (with the DOT or Mermaid text, or the page's path)."""
    from ...guards.exits import clean
    from ..picture import graph_data, to_dot, to_html, to_mermaid

    if not (args.html or args.dot or args.mermaid or args.json):
        raise UsageError("graph needs a form: --html OUT, --dot, --mermaid or --json")
    data = graph_data(memory_with_notes(args), recent=args.recent)
    if args.html:
        out = Path(args.html).expanduser()
        if out.is_dir():
            raise UsageError(f"--html {out}: is a folder; give a file name such as {out / 'memory.html'}")
        try:
            out.write_text(clean(to_html(data)), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--html {out}: cannot write it ({exc.strerror or exc})") from None
    if args.json:
        extra = ({"html": str(Path(args.html).expanduser().resolve())} if args.html
                 else {"dot": to_dot(data)} if args.dot else {"mermaid": to_mermaid(data)} if args.mermaid else {})
        emit(args, data | extra, "")
    elif args.html:
        say(f"wrote {args.html}: {len(data['nodes'])} notes, {len(data['edges'])} links, "
            f"{len(data['constellations'])} constellations, {len(data['recent'])} recent recalls")
    else:
        sys.stdout.write(clean(to_dot(data) if args.dot else to_mermaid(data)))
    return 0
