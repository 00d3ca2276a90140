"""Definitions of other languages through Universal Ctags' JSON output, when it is on PATH."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from .regex import block_end, CONTAINERS, find_calls, leading_comment, nest
from .symbols import Parsed, Symbol
from ... import logs


log = logs.get("memlane.domains.code")


# ---------------------------------------------------------------- other languages: ctags

CTAGS_KINDS = {
    "function": "function", "func": "function", "method": "method", "singletonMethod": "method",
    "constructor": "constructor", "class": "class", "struct": "struct", "interface": "interface",
    "typedef": "type", "type": "type", "alias": "type", "enum": "enum", "trait": "trait", "module": "module",
    "namespace": "namespace", "union": "union", "record": "class",
}


@lru_cache(maxsize=4)
def find_ctags(command: str = "ctags") -> str | None:
    """The path of a Universal Ctags with JSON output, or None (Exuberant Ctags has no JSON)."""
    path = shutil.which(command)
    if not path:
        return None
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
        features = subprocess.run([path, "--list-features"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "Universal Ctags" in version and re.search(r"^json\b", features, re.M) else None


def run_ctags(ctags: str, root: Path, rels: list[str]) -> dict[str, list[dict]]:
    """Tags of ``rels`` (relative to ``root``), by file; an empty dict when ctags fails."""
    tags: dict[str, list[dict]] = {}
    for start in range(0, len(rels), 500):
        batch = [r for r in rels[start:start + 500] if "\n" not in r]
        try:
            # --options=NONE first: a repository's own .ctags.d/ (its option files, their optscript) is never read
            proc = subprocess.run([ctags, "--options=NONE", "--output-format=json", "--fields=+neKS", "--sort=no",
                                   "-f", "-", "-L", "-"],
                                  input="\n".join(batch) + "\n", cwd=root, capture_output=True, text=True,
                                  timeout=300, errors="replace")
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("ctags failed (%s); regex fallback", exc)
            return {}
        for raw in proc.stdout.splitlines():
            try:
                tag = json.loads(raw)
            except ValueError:
                continue
            if tag.get("_type") == "tag":
                tags.setdefault(tag.get("path", ""), []).append(tag)
    return tags


def parse_ctags(text: str, language: str, tags: list[dict]) -> Parsed:
    """Symbols from Universal Ctags tags; ends, docs and calls from the text."""
    lines = text.splitlines()
    symbols = []
    for tag in tags:
        kind, line = CTAGS_KINDS.get(tag.get("kind", "")), int(tag.get("line") or 0)
        source = lines[line - 1] if 0 < line <= len(lines) else ""
        if kind is None and tag.get("kind") in ("constant", "variable") and re.search(r"=>|\bfunction\b", source):
            kind = "function"  # const f = (…) => …
        if kind is None or not line:
            continue
        scope = (tag.get("scope") or "").replace("::", ".")
        if kind == "function" and tag.get("scopeKind") in CONTAINERS | {"implementation"}:
            kind = "method"
        end = int(tag["end"]) if tag.get("end") else block_end(lines, line - 1, language, kind)[0] + 1
        name = tag["name"]
        symbols.append(Symbol(name, f"{scope}.{name}" if scope else name, kind, line, max(end, line), line,
                              source.strip().rstrip("{").strip(), leading_comment(lines, line - 1, language)))
    symbols = nest(symbols)
    return Parsed(symbols, find_calls(lines, symbols, language, None), "ctags")
