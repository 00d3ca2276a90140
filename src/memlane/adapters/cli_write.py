"""The writing and checking subcommands: add, link, archive / restore, lint, graph."""

from __future__ import annotations

import sys
from pathlib import Path

from .cli_common import CliError, _emit, _memory, _memory_with_notes, _notice



def _writing(call):
    """``call()``, with a write memlane refuses as a one-line CLI error."""
    from ..store.write import WriteError

    try:
        return call()
    except WriteError as exc:
        raise CliError(str(exc)) from None


def cmd_add(args) -> int:
    from ..store.write import Draft

    body = sys.stdin.read() if args.body == "-" else args.body
    draft = Draft(name=args.name, description=args.description, body=body, type=args.type, title=args.title,
                  recall=args.recall, paths=args.paths, importance=args.importance, kind=args.kind,
                  private=args.private)
    out = _writing(lambda: _memory(args).add(draft, apply=args.apply, to=args.to, dry_run=args.dry_run))
    for warning in out.get("warnings", []):
        sys.stderr.write(f"memlane: warning: {warning}\n")
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
    _emit(args, out, "\n".join(lines))
    return 0


def cmd_link(args) -> int:
    out = _writing(lambda: _memory(args).suggest_links(args.suggest, apply=args.apply, k=args.k))
    lines = [f"links for {out['note']} ({out['path']}):"]
    lines += [f"  [[{s['name']}]]  {s['why']}" for s in out["suggestions"]] or ["  none: nothing related and unlinked"]
    if out["applied"]:
        lines.append("written: a 'Related:' line at the end of the note")
    elif out["suggestions"]:
        lines.append("add --apply to write them")
    _emit(args, out, "\n".join(lines))
    return 0


def cmd_set_state(args) -> int:
    memory = _memory(args)
    out = _writing(lambda: memory.archive(args.name) if args.state == "archived" else memory.restore(args.name))
    verb = "archived" if args.state == "archived" else "restored"
    _emit(args, out, f"{out['name']}: {verb}" if out["changed"] else f"{out['name']}: already {args.state}")
    return 0


def cmd_lint(args) -> int:
    """``memlane lint``: the report (text or ``--json``); exit 1 at ``--fail-on`` or worse."""
    from ..write.lint import exit_code, format_text, lint

    memory = _memory_with_notes(args)
    try:
        report = lint(memory, checks=args.check)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    _notice(memory)
    _emit(args, report.to_dict(), format_text(report))
    return exit_code(report, args.fail_on)


def cmd_graph(args) -> int:
    """``memlane graph``: ``--html OUT`` writes the page, ``--dot`` / ``--mermaid`` print the
    graph; ``--json`` prints the data instead (with the DOT or Mermaid text, or the page's path)."""
    from ..guards.exits import clean
    from .picture import graph_data, to_dot, to_html, to_mermaid

    data = graph_data(_memory_with_notes(args), recent=args.recent)
    if args.html:
        out = Path(args.html).expanduser()
        if out.is_dir():
            raise CliError(f"--html {out}: is a folder; give a file name such as {out / 'memory.html'}")
        try:
            out.write_text(clean(to_html(data)), encoding="utf-8")
        except OSError as exc:
            raise CliError(f"--html {out}: cannot write it ({exc.strerror or exc})") from None
    if args.json:
        extra = ({"html": str(Path(args.html).expanduser().resolve())} if args.html
                 else {"dot": to_dot(data)} if args.dot else {"mermaid": to_mermaid(data)})
        _emit(args, data | extra, "")
    elif args.html:
        sys.stdout.write(f"wrote {args.html}: {len(data['nodes'])} notes, {len(data['edges'])} links, "
                         f"{len(data['constellations'])} constellations, {len(data['recent'])} recent recalls\n")
    else:
        sys.stdout.write(clean(to_dot(data) if args.dot else to_mermaid(data)))
    return 0
