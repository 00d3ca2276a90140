"""Find Claude Code's auto-memory folder for the current git repository (read-only).

Claude Code keeps it at ``~/.claude/projects/<encoded>/memory/`` (``$CLAUDE_CONFIG_DIR``
replaces ``~/.claude``), where ``<encoded>`` is the repository's absolute path with every
character outside ``[a-zA-Z0-9]`` replaced by ``-``, runs not collapsed
(Claude Code's memory documentation). All worktrees of a repository share one folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


def encode_project_path(path: Path | str) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "-", str(path))


#: what every git command memlane runs in a working tree is given: a repository's own config must
#: not run a program (``core.fsmonitor`` runs for ``ls-files`` and ``check-ignore``), and a folder
#: of a cloned repository that is laid out as a bare repository (anyone can commit one: ``HEAD``,
#: ``config``, ``objects/``, ``refs/``) must not be taken for one, its config with it
GIT_SAFE = ("-c", "core.fsmonitor=false", "-c", "safe.bareRepository=explicit")


def git_argv(root, *args: str) -> list[str]:
    """``git -C root ARGS`` with :data:`GIT_SAFE`."""
    return ["git", *GIT_SAFE, "-C", str(root), *args]


def claude_config_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()


def git_root(start: Path) -> Path | None:
    """The main working tree of the repository containing ``start`` (worktrees resolve to it)."""
    start = start.expanduser().resolve()
    for folder in (start, *start.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return folder
        if dot_git.is_file():
            return _worktree_main(dot_git) or folder
    return None


def _worktree_main(dot_git_file: Path) -> Path | None:
    try:
        line = dot_git_file.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = Path(line.split(":", 1)[1].strip())
    if not gitdir.is_absolute():
        gitdir = (dot_git_file.parent / gitdir).resolve()
    # <main>/.git/worktrees/<name>  ->  <main>
    if gitdir.parent.name == "worktrees" and gitdir.parent.parent.name == ".git":
        return gitdir.parent.parent.parent
    return None


def claude_memory_dir(repo: Path) -> Path:
    return claude_config_dir() / "projects" / encode_project_path(repo) / "memory"


def discover_claude_memory(cwd: Path | None = None) -> Path | None:
    """The existing Claude Code memory folder for the repository at ``cwd``, or None."""
    root = git_root(cwd or Path.cwd())
    if root is None:
        return None
    folder = claude_memory_dir(root)
    return folder if folder.is_dir() else None
