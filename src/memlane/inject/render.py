"""Turning recalled notes into the text a hook injects: depth by context bracket, budgets, the
host's cap.

Depth per bracket: FRESH shows notes in full, MODERATE the most relevant in full and the rest
as index lines, DEPLETED index lines only. A layer's token budget and the host's character cap
are never exceeded: a note that does not fit at its depth drops to an index line, and when
even index lines stop fitting the text ends, at a note boundary, with a pointer to the rest.
Never nothing: a matching note is at least an index line while there is room for one.

The text is phrased as background facts with each note's source path — imperative "system"
wording can trip the host's prompt-injection defences (Claude Code's hook documentation says so).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..config import Bracket
from ..index.text import estimate_tokens
from ..records import dataclass, field
from ..retrieve.recalled import PREVIEW_CHARS, Recalled, cut, shorten

PREVIEW = 160  # the longest one-line form of another domain's unit


def planned_depth(position: int, bracket: Bracket, moderate_full: int) -> str:
    """The depth a note at ``position`` (0 = most relevant) gets in ``bracket``."""
    if bracket is Bracket.FRESH:
        return "full"
    if bracket is Bracket.MODERATE:
        return "full" if position < moderate_full else "index"
    return "index"


def full_block(item: Recalled, folder: str | None = None) -> str:
    """A note in full; its file named within ``folder`` when the header names that folder once."""
    kind = ", ".join(part for part in (item.type or "note", item.scope) if part)
    lines = [f"### {' '.join(item.title.split())} ({kind}) — {_where(item, folder)}"]
    if item.description:
        lines.append(" ".join(item.description.split()))  # one line, whatever the header held
    if item.body.strip():
        lines.append(item.body.strip())
    reason = _reason(item)
    if reason and not reason.startswith("seed"):
        lines.append(f"(recalled {reason})")
    if item.stale:
        lines.append(_stale_note(item))
    return "\n".join(lines)


def _reason(item: Recalled) -> str:
    """How the unit came: a note's path through the graph, another domain's own reason."""
    return f"{item.domain}: {item.reached or 'match'}" if item.address else item.reached


def _one_line(item: Recalled) -> str:
    """A note's preview (its index hook, else its description, else its text); another domain's
    unit: its first line."""
    if not item.address:
        return shorten(item.hook or item.description or item.body, PREVIEW_CHARS)
    first = next((line.strip("# ").strip() for line in item.body.splitlines() if line.strip()), "")
    return shorten(first, PREVIEW)


#: a file or note name an agent may paste into a shell as it is (``memlane show NAME``, ``cat PATH``)
_PLAIN_NAME = re.compile(r"[\w./@+,:=-]+")


def shell_word(name: str) -> str:
    """``name`` as one word a shell reads literally: as it is when plain, else in single quotes.
    A cloned repository can name a note ``$(curl … | sh)``; pasted bare into ``memlane show``, the
    shell would run it. A name holding what does not print (a newline, a carriage return, a Unicode
    line separator or format character) is in bash's and zsh's ``$'…'`` with escapes: quoted as it
    is, it broke the text into a line of its own, and the controls taken out on the way left a
    word that named no file."""
    if _PLAIN_NAME.fullmatch(name):
        return name
    if name.isprintable():
        return "'" + name.replace("'", "'\"'\"'") + "'"
    return "$'" + "".join(_escaped(ch) for ch in name) + "'"


def _escaped(ch: str) -> str:
    """One character inside ``$'…'``."""
    if ch in "\\'":
        return "\\" + ch
    if ch.isprintable():
        return ch
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def folder_word(folder: str) -> str:
    """The folder the text names once, above its notes' file names (``…/``), as a word a shell reads
    literally: a folder a repository mounts can be called ``$(…)`` as well as a file can."""
    return shell_word(folder.rstrip("/") + "/")


def _where(item: Recalled, folder: str | None = None) -> str:
    """The source: a note's file (its name alone when it lies in ``folder``, which the text names
    once); for another domain's unit, the file and the unit's address. Shell-quoted when not plain."""
    if item.address:
        return f"{shell_word(item.path)} ({item.address})"
    if folder and item.path.startswith(folder.rstrip("/") + "/"):
        return shell_word(item.path[len(folder.rstrip("/")) + 1:])
    return shell_word(item.path)


def _no_file(item: Recalled) -> bool:
    """A note that is not a file on this machine (a team note: ``team://team/file``)."""
    return item.path.startswith("team://")


def common_folder(items) -> str | None:
    """The one folder every note of ``items`` lies in (named once, above their lines), or None —
    also when one is a team note: ``team://team/`` is no folder (and ``Path`` would read it as
    ``team:/team``), so each of its lines names its own ``team://`` address."""
    if any(_no_file(i) for i in items):
        return None
    folders = {str(Path(i.path).parent) for i in items if not i.address and i.path}
    return folders.pop() if len(folders) == 1 and all(not i.address for i in items) else None


def _stale_note(item: Recalled) -> str:
    return "(may be stale: " + "; ".join(item.stale[:5]) + (" …" if len(item.stale) > 5 else "") + ")"


def summary_line(item: Recalled, folder: str | None = None) -> str:
    """The one-line form (summary depth, and the index lines of MODERATE/DEPLETED): title,
    type, the hook or description, where the note lives (its file name alone in ``folder``)."""
    line = f"- {item.title} ({item.type or 'note'}): {_one_line(item)} — {_where(item, folder)}"
    return f"{line} {_stale_note(item)}" if item.stale else line


MENU_HEADER = ("Possibly relevant — open one only if it applies to this request (read the file, or `memlane "
               "show NAME`):")
#: the same, when a line names a team note (it lives in the team's database: no file to read)
MENU_HEADER_SHOW = "Possibly relevant — open one only if it applies to this request (`memlane show NAME`):"


@dataclass
class Rendered:
    """Rendered notes: the text, what was shown at which depth, what did not fit, the menu."""

    text: str
    shown: list[tuple[Recalled, str]]  # each note and the depth it was shown at
    omitted: list[Recalled]  # matched but did not fit
    menu: list[Recalled] = field(default_factory=list)  # listed as possibly relevant, for the agent to open


def render(items: list[tuple[Recalled, str]], *, header: str, budget_tokens: int, max_chars: int,
           index_header: str = "Also relevant (one line each; `memlane show NAME` prints a note in full):",
           menu: list[Recalled] = (), menu_tokens: int = 0) -> Rendered:
    """Lay out ``items`` (each with its planned depth) within ``budget_tokens`` and
    ``max_chars``: full notes first, in order, then the index lines; then the ``menu`` — further
    candidates the agent's own model may open if they apply — as index lines within their own
    ``menu_tokens`` (and the same cap)."""
    if (not items and not menu) or max_chars <= len(header) + 2:
        return Rendered("", [], [item for item, _ in items])
    tail_room = 120  # always keep room for the pointer to what did not fit
    full_parts, lines, shown, omitted = [], [], [], []
    folder = common_folder([item for item, _ in items] + list(menu))
    if folder:  # the folder once, the file names on the lines
        header = f"{header}\nNotes below are files in {folder_word(folder)}"
    used_chars = len(header) + 1
    used_tokens = estimate_tokens(header)
    for item, depth in items:
        if depth == "full":
            block = full_block(item, folder)
            cost = len(block) + 2
            if (used_chars + cost + tail_room <= max_chars
                    and used_tokens + estimate_tokens(block) <= budget_tokens):
                full_parts.append(block)
                shown.append((item, "full"))
                used_chars += cost
                used_tokens += estimate_tokens(block)
                continue
            depth = "index"  # too big for what is left: never nothing, an index line instead
        line = summary_line(item, folder)
        extra = len(line) + 1 + (0 if lines else len(index_header) + 2)
        if used_chars + extra + tail_room > max_chars:
            omitted.append(item)
            continue
        lines.append(line)
        shown.append((item, depth))
        used_chars += extra
        used_tokens += estimate_tokens(line)
    listed, menu_lines = [], []
    menu_header = MENU_HEADER_SHOW if any(_no_file(item) for item in menu) else MENU_HEADER
    menu_used = estimate_tokens(menu_header)
    used_chars += len(menu_header) + 2
    for item in menu:
        line = summary_line(item, folder)
        cost = estimate_tokens(line)
        if menu_used + cost > menu_tokens or used_chars + len(line) + 1 + tail_room > max_chars:
            break
        menu_lines.append(line)
        listed.append(item)
        menu_used += cost
        used_chars += len(line) + 1
    if not shown and not menu_lines:
        return Rendered("", [], omitted)
    parts = [header]
    if full_parts:
        parts.append("\n\n".join(full_parts))
    if lines:
        parts.append((index_header + "\n" if full_parts else "") + "\n".join(lines))
    if omitted:
        names = ", ".join(shell_word(i.name) for i in omitted[:5]) + (" …" if len(omitted) > 5 else "")
        names = shorten(names, 50)
        parts.append(f"({len(omitted)} more matching note(s) did not fit: {names}; `memlane show NAME` prints one)")
    if menu_lines:
        parts.append(menu_header + "\n" + "\n".join(menu_lines))
    text = "\n\n".join(parts)
    text = cut(text, max_chars)  # cannot be needed by construction; the host's cap is a hard limit
    return Rendered(text, shown, omitted, listed)
