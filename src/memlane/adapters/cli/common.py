"""What the ``memlane`` commands share: their option groups, opening the memory, printing.

A command module declares only the options it uses, from these groups: ``store_options`` (which
memory folders, which index, which embedder), ``domain_options`` (documentation folders,
transcripts and code to recall beside the notes), ``json_option``. Printing goes through
``emit``: text or ``--json``, through the one clean pass every exit takes (secrets redacted,
terminal and bidi controls stripped)."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager
from pathlib import Path

from ...errors import UsageError
from ..progress import ProgressBar

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:  # the library is imported when a command opens it: `memlane recall` through the daemon never does
    from ...memory import Memory

def withhold(data: dict, risk: str | None) -> dict:
    """``guards.exits.withhold``, imported when a note is handed out: the CLI's start-up (the daemon
    client's too) loads no guard module."""
    from ...guards import exits

    return exits.withhold(data, risk)


def kind_and_scope(note_type: str | None, scope: str) -> str:
    """How a note's type and scope read in a listing: "feedback note, project scope"."""
    return f"{note_type + ' note' if note_type else 'note'}, {scope} scope"


def command(sub, name: str, *, help: str, description: str, examples: str, func, store: bool = True,  # noqa: A002
            domains: bool = False, json: bool = True) -> argparse.ArgumentParser:
    """Register the command ``name``: its one-line ``help`` for the command list, the
    ``description`` and ``examples`` its own help shows, and the option groups it uses."""
    import textwrap

    parser = sub.add_parser(name, help=help, description=textwrap.fill(description, 96), epilog=examples,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(func=func)
    if store:
        store_options(parser)
    if domains:
        domain_options(parser)
    if json:
        json_option(parser)
    return parser


def store_options(parser: argparse.ArgumentParser, *, embedder: bool = True) -> None:
    group = parser.add_argument_group("which memory")
    group.add_argument("--store", action="append", metavar="DIR",
                       help="use this memory folder directly (repeatable); no config or init needed")
    group.add_argument("--demo", action="store_true", help="use the bundled demo store")
    group.add_argument("--index", metavar="FILE", help="the index file (default: one per set of folders, in the cache)")
    if embedder:
        group.add_argument("--embedder", metavar="NAME",
                           help="the embedding model (a registered name, or 'none' for keyword search only)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")


def domain_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("other sources, each recalled in its own list")
    group.add_argument("--docs", action="append", metavar="DIR",
                       help="a markdown folder recalled section by section (repeatable)")
    group.add_argument("--transcripts", action="append", metavar="DIR",
                       help="a folder of Claude Code session transcripts (repeatable)")
    group.add_argument("--code", action="append", metavar="DIR", help="a working tree whose code symbols are recalled "
                                                                         "(repeatable)")


def json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (``--k 0`` is an error, not the default)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def result_count(text: str) -> int:
    """An argparse type for ``--k``: a whole number from 1 to the most one recall returns."""
    from ...recall import MAX_K

    value = positive_int(text)
    if value > MAX_K:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_K}, got {value}")
    return value


def store_args(args) -> list[str] | None:
    stores = list(getattr(args, "store", None) or [])
    if getattr(args, "demo", False):
        from ...memory import demo_store_path

        stores.append(str(demo_store_path()))
    return stores or None


def open_memory(args, *, cwd: str | None = None) -> "Memory":
    stores = store_args(args)
    for folder in stores or []:
        if not Path(folder).expanduser().is_dir():
            raise UsageError(f"--store {folder}: not a folder")
    from ...memory import Memory

    return Memory(stores, embedder=getattr(args, "embedder", None), index_path=getattr(args, "index", None), cwd=cwd)


def memory_with_notes(args) -> "Memory":
    memory = open_memory(args)
    if not memory.specs:
        raise UsageError("no memory folders: pass --store DIR, run `memlane init` for your own notes, or run inside a "
                         "git repository that Claude Code keeps memory for")
    return memory


def emit(args, data, text: str) -> None:
    """Print ``data`` as JSON (``--json``) or ``text``, through the one clean pass of every exit."""
    sys.stdout.write(rendered(getattr(args, "json", False), data, text))


def rendered(as_json: bool, data, text: str) -> str:
    """What ``emit`` prints: ``data`` as JSON or ``text``, secrets redacted and controls stripped."""
    from ...guards.exits import clean, clean_data

    if as_json:
        return json.dumps(clean_data(data), ensure_ascii=False, indent=2) + "\n"
    return clean(text.rstrip("\n")) + "\n"


def say(text: str) -> None:
    """A line for the user on stdout (cleaned like every exit)."""
    from ...guards.exits import clean

    sys.stdout.write(clean(text.rstrip("\n")) + "\n")


#: the ``memlane: …`` lines this process wrote to stderr, its log's included: a notice the library
#: logged already (a missing embedding model) is not written a second time
SAID: set[str] = set()


def first_time(line: str) -> bool:
    """Whether this process has not written ``line`` to stderr yet (it is counted as written now)."""
    if line in SAID:
        return False
    SAID.add(line)
    return True


def say_once(text: str) -> None:
    """``text``'s lines to stderr, redacted (stderr is an exit too), each one only if this process
    has not written it yet."""
    if not text:
        return
    from ...guards.secrets import redact

    for line in redact(text).splitlines():
        if first_time(line):
            sys.stderr.write(line + "\n")


def _skip_lines_unlogged(record) -> bool:
    return record.msg != "skipped %s: %s"


@contextmanager
def skips_in_report():
    """Inside: the index's "skipped FILE: why" warnings left out of stderr, for a command whose
    own report lists every skipped file (``memlane index``, ``memlane lint``): each is said once."""
    import logging

    index_log = logging.getLogger("memlane.index")
    index_log.addFilter(_skip_lines_unlogged)
    try:
        yield
    finally:
        index_log.removeFilter(_skip_lines_unlogged)


def notice(memory: "Memory") -> None:
    if memory.embedder_notice:
        say_once(f"memlane: {memory.embedder_notice}")


def refresh_with_progress(memory: "Memory") -> None:
    """On-demand indexing before a read; the first run on a new store embeds every note."""
    bar = ProgressBar()
    try:
        memory.refresh(progress=bar)
    finally:
        bar.close()
