"""The ``memlane`` command: each subcommand parses its arguments, opens a ``Memory``,
makes one library call, and prints the result (text or ``--json``). The subcommands live in
``cli_recall.py``, ``cli_agents.py`` and ``cli_write.py``; this file is the parser."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .. import __version__
from ..config import Fusion
from ..errors import MemlaneError, exit_code
from ..memory import Depth
from .cli_agents import cmd_hook, cmd_install, cmd_mcp, cmd_serve, cmd_statusline, cmd_uninstall
from .cli_recall import cmd_decay, cmd_doctor, cmd_eval, cmd_index, cmd_init, cmd_recall, cmd_show, cmd_stats, cmd_status
from .cli_write import cmd_add, cmd_graph, cmd_link, cmd_lint, cmd_set_state

log = logging.getLogger("memlane")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", action="append", metavar="DIR",
                        help="use this memory folder directly (repeatable); no config or init needed")
    common.add_argument("--demo", action="store_true", help="use the bundled demo store")
    common.add_argument("--docs", action="append", metavar="DIR",
                        help="mount a markdown folder as a knowledge library (repeatable; recall --domains)")
    common.add_argument("--transcripts", action="append", metavar="DIR",
                        help="mount a folder of Claude Code session transcripts (repeatable; recall --domains)")
    common.add_argument("--code", action="append", metavar="DIR",
                        help="mount a working tree's code symbols (repeatable; recall --domains)")
    common.add_argument("--json", action="store_true", help="print JSON instead of text")
    common.add_argument("--embedder", metavar="NAME",
                        help="embedder to use (a registered name, or 'none' for keyword-only)")
    common.add_argument("--index", metavar="FILE", help="index file (default: one per store set in the cache)")
    common.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")

    parser = argparse.ArgumentParser(prog="memlane", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"memlane {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("init", parents=[common], help="write a config file and create the user store")
    p.set_defaults(func=cmd_init)

    p = sub.add_parser("index", parents=[common], help="build or refresh the index (incremental)")
    p.add_argument("--no-embed", action="store_true", help="update the full-text index only")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("recall", parents=[common], help="the notes worth showing for a prompt")
    p.add_argument("prompt", nargs="*", help="the prompt ('-' reads stdin)")
    p.add_argument("--prompt-json", metavar="FILE",
                   help="a hook's input JSON ('-' for stdin): show exactly what that prompt would inject, in which "
                        "bracket, and why each note ranks where it does (a dry run: nothing is recorded)")
    p.add_argument("--agent", choices=["claude", "codex", "gemini", "cursor"], default="claude",
                   help="with --prompt-json: whose hook input it is")
    p.add_argument("--k", type=int, default=None, help="at most this many results (default from config: 5)")
    p.add_argument("--depth", choices=[d.value for d in Depth], default=Depth.SUMMARY.value,
                   help="ids | summary | full")
    p.add_argument("--explain", action="store_true", help="show why each note came back")
    p.add_argument("--fusion", choices=[f.value for f in Fusion], help="override the fusion method")
    p.add_argument("--deep", "--archived", dest="deep", action="store_true",
                   help="deep mode: search archived notes too (a recalled archived note becomes active again)")
    p.add_argument("--divergent", action="store_true",
                   help="add remote associates from other clusters of the link graph (for ideation)")
    p.add_argument("--session", help="the agent session id, recorded in the hit-log")
    p.add_argument("--domains", metavar="LIST",
                   help="recall from these domains, one bucket each: notes,knowledge,transcripts,code (default with "
                        "--docs/--transcripts/--code: notes and the mounted ones)")
    p.add_argument("--ceiling", type=int, help="results across all domains, shared equally (default 12)")
    p.add_argument("--in-session", metavar="ID", help="transcripts: only this session (an id or its prefix)")
    p.add_argument("--since", metavar="DATE", help="transcripts: only turns at or after this ISO date/time")
    p.add_argument("--until", metavar="DATE", help="transcripts: only turns before this ISO date/time")
    p.add_argument("--project", metavar="TEXT", help="transcripts: only this project (part of its folder or cwd)")
    p.add_argument("--path", metavar="GLOB", help="knowledge and code: only files matching this glob")
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser("add", parents=[common], help="write a note, after comparing it with the nearest notes "
                       "(advice: ADD, UPDATE, SUPERSEDE or NOOP)")
    p.add_argument("--name", required=True, help="the note's name (its file: <type>_<name>.md)")
    p.add_argument("--description", required=True, help="when the note applies: 'when deciding …' (recall keys on it)")
    p.add_argument("--type", default="project", choices=["user", "feedback", "project", "reference"],
                   help="the note's type (default: project)")
    p.add_argument("--body", default="", help="the note's text ('-' reads stdin)")
    p.add_argument("--title", help="its MEMORY.md title (default: the name)")
    p.add_argument("--recall", action="append", default=[], metavar="KEYWORD", help="a recall keyword (repeatable)")
    p.add_argument("--paths", action="append", default=[], metavar="GLOB", help="a file trigger glob (repeatable)")
    p.add_argument("--importance", type=float, help="0-1")
    p.add_argument("--kind", help="principle | correction | decision | guideline | pitfall | process | model")
    p.add_argument("--private", action="store_true", help="yours only: never injected into an agent (G3)")
    p.add_argument("--to", metavar="DIR", help="the folder to write into (default: the first writable project store)")
    p.add_argument("--apply", action="store_true", help="follow the advice (UPDATE / SUPERSEDE); an ADD is written anyway")
    p.add_argument("--dry-run", action="store_true", help="only show the advice")
    p.set_defaults(func=cmd_add)

    p = sub.add_parser("link", parents=[common], help="propose [[links]] from a note to related notes (A-MEM)")
    p.add_argument("--suggest", required=True, metavar="NAME", help="the note to propose links for")
    p.add_argument("--apply", action="store_true", help="append them to the note as a 'Related:' line")
    p.add_argument("--k", type=int, default=5, help="at most this many")
    p.set_defaults(func=cmd_link)

    for verb, what in (("archive", "archive a note by hand (out of default recall; its file stays)"),
                       ("restore", "bring an archived note back into recall")):
        p = sub.add_parser(verb, parents=[common], help=what)
        p.add_argument("name", help="the note (a name, a file name or a path)")
        p.set_defaults(func=cmd_set_state, state="archived" if verb == "archive" else "active")

    p = sub.add_parser("lint", parents=[common], help="check the notes: links, orphans, duplicates, contradictions, "
                       "descriptions, sizes, injection risk, the MEMORY.md index (W3)")
    p.add_argument("--fail-on", choices=["error", "warning", "never"], default="error",
                   help="exit 1 when a finding at this level (or worse) exists (default: error)")
    p.add_argument("--check", action="append", metavar="NAME", help="run only this check (repeatable)")
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("graph", parents=[common], help="a picture of memory: notes, links, constellations, "
                       "hubs and the last recalls (X5)")
    form = p.add_mutually_exclusive_group(required=True)
    form.add_argument("--html", metavar="OUT", help="write one self-contained HTML file (no network)")
    form.add_argument("--dot", action="store_true", help="print the graph in Graphviz DOT")
    form.add_argument("--mermaid", action="store_true", help="print the graph as a Mermaid flowchart")
    p.add_argument("--recent", type=int, default=20, metavar="N", help="highlight the last N recalled notes")
    p.set_defaults(func=cmd_graph)

    p = sub.add_parser("status", parents=[common], help="lifecycle: active / dormant / archived notes, most used")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("decay", parents=[common], help="move idle notes to dormant / archived (from the hit-log)")
    p.add_argument("--dry-run", action="store_true", help="show what would change and why, change nothing")
    p.set_defaults(func=cmd_decay)

    p = sub.add_parser("hook", parents=[common],
                       help="a Claude Code hook: reads the event JSON on stdin, prints what to inject")
    p.add_argument("event", choices=["session-start", "user-prompt-submit"],
                   help="session-start (layers 1-2) or user-prompt-submit (layers 3-4)")
    p.add_argument("--explain", action="store_true",
                   help="print what would be injected, in which bracket and why, instead of the hook JSON")
    p.add_argument("--agent", choices=["claude", "codex", "gemini", "cursor"], default="claude",
                   help="the agent whose input and output shape to use (Gemini: BeforeAgent; Cursor: additional_context)")
    p.set_defaults(func=cmd_hook)

    p = sub.add_parser("statusline", help="a statusline command: records the context fill for the hooks")
    p.set_defaults(func=cmd_statusline)

    p = sub.add_parser("serve", parents=[common], help="the resident recall daemon the hooks talk to")
    p.add_argument("--daemon", action="store_true", help="start it in the background and return")
    p.add_argument("--stop", action="store_true", help="stop the daemon serving this store set")
    p.add_argument("--idle-minutes", type=float, default=30.0, help="exit after this long without a request")
    p.add_argument("--wait", type=float, default=30.0, help="with --daemon: seconds to wait until it answers")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("install", help="register memlane's hooks with an agent (merges, idempotent)")
    p.add_argument("agent", choices=["claude", "codex", "gemini", "cursor"], help="the agent whose settings to change")
    p.add_argument("--user", action="store_true",
                   help="the agent's settings in your home directory (all projects) instead of this repository's")
    p.add_argument("--statusline", action="store_true",
                   help="also make memlane the statusline (it records the context fill for the hooks)")
    p.add_argument("--mcp", action="store_true", help="register the MCP server instead (.mcp.json, or "
                   "~/.claude.json with --user)")
    p.add_argument("--dry-run", action="store_true", help="print the change as a diff, write nothing")
    p.set_defaults(func=cmd_install)

    p = sub.add_parser("mcp", parents=[common], help="serve memory over MCP on stdio (recall, get, related, "
                       "remember, archive, restore; memory:// resources)")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("uninstall", help="remove memlane's hooks from an agent's settings")
    p.add_argument("agent", choices=["claude", "codex", "gemini", "cursor"], help="the agent whose settings to change")
    p.add_argument("--user", action="store_true", help="the settings in your home directory instead of the repository's")
    p.add_argument("--mcp", action="store_true", help="unregister the MCP server instead")
    p.add_argument("--dry-run", action="store_true", help="print the change as a diff, write nothing")
    p.set_defaults(func=cmd_uninstall)

    p = sub.add_parser("show", parents=[common], help="print a note in full")
    p.add_argument("name", help="note name, file name or path")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("stats", parents=[common], help="counts by type and scope, index size")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("doctor", parents=[common], help="what is configured, where the index lives, embedder status")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("eval", parents=[common], help="run a retrieval benchmark (corpus/queries/qrels or notes+prompts)")
    p.add_argument("path", help="benchmark folder")
    p.add_argument("--modes", default="keyword,vector,hybrid",
                   help="comma list of keyword, vector, hybrid, rrf, spread, scored, full, divergent, keyword-full")
    p.add_argument("--ks", default="1,3,5,10", help="cutoffs, comma list")
    p.add_argument("--limit", type=int, help="at most N queries, sampled evenly across the file")
    p.add_argument("--include-type", metavar="T,..", help="only queries of these types/kinds/categories")
    p.add_argument("--exclude-type", metavar="T,..", help="skip these (e.g. 5 for LoCoMo's adversarial)")
    p.add_argument("--scope-field", help="per-query scoping field (default: auto-detect)")
    p.set_defaults(func=cmd_eval)
    return parser


def _stderr_logging(*, verbose: bool) -> None:
    """Diagnostics to stderr as ``memlane: …`` lines, redacted (stderr is an exit too); one such
    handler per process."""
    from ..guards.secrets import RedactingFilter

    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "memlane_cli", False)]:
        root.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("memlane: %(message)s"))
    handler.addFilter(RedactingFilter())
    handler.memlane_cli = True
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _stderr_logging(verbose=getattr(args, "verbose", False))
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.func(args)
    except MemlaneError as exc:  # every error memlane raises on purpose: one line, its exit code
        sys.stderr.write(f"memlane: error: {exc}\n")
        return exit_code(exc)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `memlane recall ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
