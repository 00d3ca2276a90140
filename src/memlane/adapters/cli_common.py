"""What every ``memlane`` subcommand shares: its error, opening the memory, printing text or JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import UsageError
from ..memory import Memory, demo_store_path
from .progress import ProgressBar



CliError = UsageError  # a command called the wrong way: one line to the user, exit code 2


# -- helpers -------------------------------------------------------------------------


def _memory(args) -> Memory:
    stores = list(args.store or [])
    if getattr(args, "demo", False):
        stores.append(str(demo_store_path()))
    for folder in stores:
        if not Path(folder).expanduser().is_dir():
            raise CliError(f"--store {folder}: not a folder")
    return Memory(stores or None, embedder=args.embedder, index_path=args.index)


def _emit(args, data, text: str) -> None:
    """Print the result: JSON (``--json``) or text — through one redaction pass either way, over
    every string field (a secret in a title, a keyword or a path never reaches the terminal, nor
does a terminal escape or a bidi override)."""
    from ..guards.exits import clean, clean_data

    if args.json:
        json.dump(clean_data(data), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(clean(text.rstrip("\n")) + "\n")


def _notice(memory: Memory) -> None:
    if memory.embedder_notice:
        sys.stderr.write(f"memlane: {memory.embedder_notice}\n")


# -- commands ------------------------------------------------------------------------


def _store_args(args) -> list[str] | None:
    stores = list(args.store or [])
    if getattr(args, "demo", False):
        stores.append(str(demo_store_path()))
    return stores or None


def _refresh_with_progress(memory: Memory) -> None:
    """On-demand indexing before a read; the first run on a new store embeds every note."""
    bar = ProgressBar()
    try:
        memory.refresh(progress=bar)
    finally:
        bar.close()


def _memory_with_notes(args) -> Memory:
    memory = _memory(args)
    if not memory.specs:
        raise CliError("no memory folders: pass --store DIR, mount folders in the config, or run inside a git "
                       "repository that Claude Code keeps memory for")
    return memory
