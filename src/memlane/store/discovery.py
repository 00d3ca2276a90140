"""Find Claude Code's auto-memory folder for the current git repository (read-only).

Claude Code keeps it at ``~/.claude/projects/<encoded>/memory/`` (``$CLAUDE_CONFIG_DIR``
replaces ``~/.claude``), where ``<encoded>`` is the repository's absolute path with every
character outside ``[a-zA-Z0-9]`` replaced by ``-``, runs not collapsed
(Claude Code's memory documentation). All worktrees of a repository share one folder. The user
moves it with ``autoMemoryDirectory`` in their own ``~/.claude/settings.json`` (an absolute or
``~/`` path), or renames ``<encoded>`` with ``$CLAUDE_CODE_PROJECT_DIR_NAME``; a repository's own
settings may set ``autoMemoryDirectory`` too, and memlane does not follow those: a cloned repository
does not choose which of the user's folders is read into the agent's context.
"""

from __future__ import annotations

import json
import os
import re
import stat
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
    if gitdir.parent.name != "worktrees" or gitdir.parent.parent.name != ".git":
        return None
    # only a worktree its main repository registered: the back pointer git writes there
    # (``<gitdir>/gitdir``) names this ``.git`` file. A ``.git`` file is anyone's to write (a
    # downloaded folder's), and must not make another repository's notes this folder's
    try:
        back = (gitdir / "gitdir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not back or os.path.realpath(gitdir / back) != os.path.realpath(dot_git_file):
        return None
    return gitdir.parent.parent.parent


def claude_memory_dir(repo: Path) -> Path:
    """Where Claude Code keeps the auto memory of the repository at ``repo`` (see the module docstring)."""
    moved = auto_memory_directory()
    if moved is not None:
        return moved
    name = os.environ.get("CLAUDE_CODE_PROJECT_DIR_NAME", "")
    if not _one_folder_name(name):
        name = encode_project_path(repo)
    return claude_config_dir() / "projects" / name / "memory"


def _one_folder_name(name: str) -> bool:
    """Whether ``name`` is one folder's name on any system: no separator (``/`` or ``\\``), no drive
    (``C:elsewhere`` is a path on drive C: for Windows), no dot name."""
    return bool(name) and not any(ch in name for ch in "/\\:\0") and name not in (".", "..")


def auto_memory_directory() -> Path | None:
    """The user's ``autoMemoryDirectory`` (``settings.json`` in Claude Code's config folder), or None
    when it is not set, not an absolute or ``~/`` path, or the file cannot be read."""
    try:
        settings = json.loads((claude_config_dir() / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = settings.get("autoMemoryDirectory") if isinstance(settings, dict) else None
    if not isinstance(value, str) or not value.strip():
        return None
    if value.startswith("~/"):
        return Path.home() / value[2:]
    return Path(value) if os.path.isabs(value) else None


def discover_claude_memory(cwd: Path | None = None) -> Path | None:
    """The existing Claude Code memory folder for the repository at ``cwd``, or None."""
    root = git_root(cwd or Path.cwd())
    if root is None:
        return None
    folder = claude_memory_dir(root)
    return folder if folder.is_dir() else None


#: how much of Claude Code's session logs ``sharing_repositories`` reads: the newest logs, the opening of each
MAX_LOGS, LOG_HEAD_BYTES = 200, 64 * 1024


def sharing_repositories(repo: Path) -> list[str]:
    """Other repositories whose sessions Claude Code gave ``repo``'s memory folder: their paths differ
    from ``repo``'s only in characters its folder name replaces with ``-`` (``~/src/acme-api`` and
    ``~/src/acme_api``), so each one's notes reach the other's sessions. Found from the working
    folders its session logs record (``cwd``), in the project folder and in those of subfolders, that
    are still there; none when the user named the folder (``autoMemoryDirectory``, ``$CLAUDE_CODE_PROJECT_DIR_NAME``)."""
    if auto_memory_directory() is not None or _one_folder_name(os.environ.get("CLAUDE_CODE_PROJECT_DIR_NAME", "")):
        return []
    name = encode_project_path(repo)
    projects = claude_config_dir() / "projects"
    try:
        folders = [e for e in os.scandir(projects) if e.name == name or e.name.startswith(f"{name}-")]
    except OSError:
        return []
    logs = []
    for folder in folders:
        try:
            logs += [(e.stat().st_mtime, e.path) for e in os.scandir(folder.path)
                     if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False)]
        except OSError:
            continue
    own = os.path.realpath(repo)
    found: set[str] = set()
    for _mtime, path in sorted(logs, reverse=True)[:MAX_LOGS]:
        cwd = _logged_cwd(path)
        # a folder gone since (moved, renamed, removed) no longer reads this one: passed over, as is a
        # cwd no path can hold (a NUL, a lone surrogate: isdir says no)
        if not cwd or not os.path.isabs(cwd) or not os.path.isdir(cwd):
            continue
        root = git_root(Path(cwd)) or Path(cwd)  # a folder outside any repository keeps a memory of its own
        if encode_project_path(root) == name and os.path.realpath(root) != own:
            found.add(str(root))
    return sorted(found)


def _logged_cwd(path: str) -> str | None:
    """The working folder a Claude Code session log records first (its lines' ``cwd``), or None: so
    is a log that is no regular file by now. The scan saw one, but a log swapped since for a FIFO
    would hold ``doctor`` at the open until something wrote to it, and one swapped for a link may
    lead anywhere: opened without waiting and without following a link, and checked once open."""
    try:
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)), "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None  # a FIFO some writer holds would hand over what it is sent
            head = fh.read(LOG_HEAD_BYTES)
    except OSError:
        return None
    for line in head.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the last line cut by the read, or not JSON
        cwd = entry.get("cwd") if isinstance(entry, dict) else None
        if isinstance(cwd, str) and cwd:
            return cwd
    return None
