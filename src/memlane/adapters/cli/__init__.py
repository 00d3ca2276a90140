"""The ``memlane`` command. Each module of this package registers its commands with only the
options they use (``common.py`` holds the shared option groups); a command opens the memory,
makes one library call, and prints text or ``--json``. Every error memlane raises on purpose is
one line on stderr with its exit code (``errors.exit_code``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from ... import __version__, logs
from ...errors import MemlaneError, exit_code
from . import agents, evaluate, notes, recall, setup, team, writing

DESCRIPTION = """\
Memory recall for AI coding agents. Your agents keep what they learn as markdown notes (Claude
Code's memory folder, or folders of your own); memlane picks, for each prompt, the few notes that
apply — by what the prompt means, with the notes they link to — and hands them to the agent
within its context budget, saying why."""

EPILOG = """\
start here:
  memlane recall --demo "I refactored the photo upload queue; ready to merge?"
  memlane install claude          # the hooks: Claude Code gets the right notes at every prompt
  memlane doctor                  # what memlane sees here, and whether it works
  memlane <command> --help        # what a command does, with examples
"""

#: the command modules, in the order help lists their commands
COMMANDS = (recall, notes, writing, setup, agents, evaluate, team)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command``, only the commands of the module that registers it
    (building all of them costs a command's start-up ~20 ms: ``memlane recall`` through the daemon
    is ~100 ms in all)."""
    parser = argparse.ArgumentParser(prog="memlane", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"memlane {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for module in COMMANDS:
        if command is None or command in module.COMMAND_NAMES:
            module.register(sub)
    return parser


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` ran: ``memlane team status``'s, else ``memlane``'s."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and getattr(args, action.dest, None) in action.choices:
            return _innermost(action.choices[getattr(args, action.dest)], args)
    return parser


class _Said:
    """Records each line the log writes to stderr (``common.SAID``), and drops one already written."""

    def filter(self, record) -> bool:
        from .common import first_time

        return first_time(f"memlane: {record.getMessage()}")


class _Redacted:
    """Redacts each line on its way to stderr (``guards.secrets.RedactingFilter``, loaded with the
    first line: a recall answered by the daemon writes none, and loads no guard), and escapes its
    control characters."""

    def filter(self, record) -> bool:
        from ...guards.secrets import RedactingFilter

        return RedactingFilter().filter(record)


def _stderr_logging(*, verbose: bool) -> None:
    """Diagnostics to stderr as ``memlane: …`` lines, redacted (stderr is an exit too); one such
    handler per process."""
    from .common import SAID

    SAID.clear()  # one command's lines (main runs more than once in a process under test)
    _no_hook_log()
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "memlane_cli", False)]:
        root.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("memlane: %(message)s"))
    handler.addFilter(_Redacted())
    handler.addFilter(_Said())
    handler.memlane_cli = True
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)


def _no_hook_log() -> None:
    """Undo what an earlier hook or daemon in this process left (memlane's lines sent to its
    ``hook.log``): else every later command's lines go to that file — one in a cache folder that
    may be gone by now — and never reach stderr."""
    old = logs.sink()
    if old is not None:
        logs.send_to(None)
        old.close()


def every_line() -> None:
    """From now on the log writes each line as often as it happens (a server that runs for hours,
    ``memlane mcp``: a failure seen again is logged again, and no line is kept for its life)."""
    from .common import SAID

    for handler in logging.getLogger().handlers:
        if getattr(handler, "memlane_cli", False):
            for once in [f for f in handler.filters if isinstance(f, _Said)]:
                handler.removeFilter(once)
    SAID.clear()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    named = argv[0] if argv and any(argv[0] in module.COMMAND_NAMES for module in COMMANDS) else None
    parser = build_parser(named)  # a command the line does not name (a typo, --help): all of them
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said with the usage of the command given them, not memlane's
        from ...guards.sanitize import escape_controls

        _innermost(parser, args).error(escape_controls(f"unrecognized arguments: {' '.join(unknown)}"))
    _stderr_logging(verbose=getattr(args, "verbose", False))
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.func(args)
    except MemlaneError as exc:  # every error memlane raises on purpose: one line, its exit code
        from ...guards.sanitize import escape_controls
        from ...guards.secrets import redact

        # it may quote a path, a prompt, a value: shown with its controls escaped, never run by the terminal
        sys.stderr.write(escape_controls(redact(f"memlane: error: {exc}")) + "\n")
        return exit_code(exc)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `memlane recall ... | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


__all__ = ["build_parser", "main"]
