"""The files of a working tree: git's listing (ignored files stay out) or a walk; languages and decoding."""

from __future__ import annotations

import os
import re
import subprocess
import tokenize
from io import BytesIO
from pathlib import Path

from ...store.discovery import git_argv


SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "build", "dist", "__pycache__", "target",
    ".tox", ".nox", "site-packages", "vendor", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs",
})
LANGUAGES = {
    ".py": "python", ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".go": "go", ".rs": "rust",
    ".java": "java", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp",
    ".hh": "cpp", ".hxx": "cpp", ".rb": "ruby",
}


# ---------------------------------------------------------------- listing working trees

def skipped_dir(rel: str) -> bool:
    parts = rel.split("/")[:-1]
    return any(p in SKIP_DIRS or p.endswith(".egg-info") for p in parts)


def list_files(root: Path) -> tuple[list[str], str]:
    """Paths (relative, posix) of the files of ``root`` and how they were listed: "git" or "walk"."""
    try:
        proc = subprocess.run(git_argv(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"),
                              capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        if proc.returncode == 0:
            names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
            return sorted({n for n in names if n and not skipped_dir(n)}), "git"
    except (OSError, subprocess.SubprocessError):
        pass  # no git: a plain walk
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".") and not d.endswith(".egg-info")]
        base = Path(folder).relative_to(root)
        found.extend((base / f).as_posix() for f in files)
    return sorted(found), "walk"


def language_of(rel: str) -> str | None:
    return LANGUAGES.get(os.path.splitext(rel)[1].lower())


def decode_source(data: bytes, language: str) -> tuple[str | None, str]:
    """(text, reason): the text, or None and why it was left out."""
    if b"\0" in data[:8192]:
        return None, "binary file"
    encoding = "utf-8-sig"
    if language == "python":
        try:
            encoding = tokenize.detect_encoding(BytesIO(data).readline)[0]
        except SyntaxError as exc:
            return None, f"bad encoding declaration: {exc}"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None, f"not {encoding} text"
    head = text[:2000]
    if "@generated" in head or re.search(r"Code generated .* DO NOT EDIT", head):
        return None, "generated file"
    lines = text.count("\n") + 1
    if len(text) > 5000 and len(text) / lines > 500:
        return None, "minified (average line over 500 characters)"
    return text, ""
