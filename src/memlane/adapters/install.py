"""``memlane install AGENT`` / ``memlane uninstall AGENT``: register memlane's hooks with an agent
(each agent's settings file, events and timeout unit come from ``adapters/agents/``).

Where the hooks go, and with which command:

- **local** (the default for Claude Code): ``.claude/settings.local.json`` in the repository — this
  machine's settings, which git does not commit (memlane makes sure git ignores it). The command is
  this installation's absolute path, which is right for this machine.
- **shared** (``--shared``; the only project file Codex, Gemini and Cursor have): the settings file a
  team commits. The command is the bare ``memlane-hook``, which resolves on any teammate's machine
  that has memlane installed as a tool; memlane checks it resolves here and says how to make it so.
  Where the agent runs hook commands through a shell (Claude Code, Codex CLI, Gemini CLI, Cursor), the
  command first asks the shell whether ``memlane-hook`` is there and does nothing when it is not, so
  a teammate without memlane gets no "hook error" on every prompt (:func:`guarded`).
- **user** (``--user``): the agent's settings in the home folder, for every project, with the
  absolute command.

The settings are merged, never replaced: other hooks and keys stay as they are, memlane's own
entries (recognised by their ``memlane … hook`` command) are replaced, so installing twice changes
nothing. A settings file that is not valid JSON is left untouched and reported; one the agent
reads as JSON with comments (Gemini CLI's) is read so, and — when it holds comments — edited in
place: only its top-level ``"hooks"`` member changes, every other byte stays (:func:`_edit_commented`);
a comment inside ``"hooks"`` itself leaves the file untouched, with exactly what to add or take
out by hand (:func:`_by_hand`). Before the first install a copy of the file as it was is kept in memlane's data
folder (never in the repository); ``uninstall`` puts that exact file back when nothing else changed
since — and removes a file that install created — else it takes out only memlane's entries.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..config import data_home, lies_within
from ..errors import InstallError
from ..guards.sanitize import is_whole
from ..records import dataclass, field
from ..store import git_root
from ..store.discovery import git_argv
from .agents import DEFAULT, NAMES, PROMPT, SESSION_START, Agent, load

AGENTS = {name: load(name) for name in NAMES}
SCOPES = ("local", "shared", "user")
PORTABLE_HOOK = "memlane-hook"  # what a committed settings file runs: found on each machine's PATH
PORTABLE_CLI = "memlane"


@dataclass
class Change:
    """One file install writes: its text before and after."""

    path: Path
    before: str
    after: str
    existed: bool = True  # whether the file was there before
    #: keys install itself adds to the file beside memlane's entries (Cursor's ``"version": 1``):
    #: uninstall takes them out again when the file did not have them before memlane
    added: dict = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.before.splitlines(True), self.after.splitlines(True),
                                            fromfile=f"{self.path} (now)", tofile=f"{self.path} (after)"))


# -- where, and which command -------------------------------------------------------------
def settings_path(scope: str, cwd: Path | None = None, agent: str = DEFAULT) -> Path:
    """The settings file of ``agent`` for ``scope`` (local, shared — or ``project``, the older
    name of the agent's project file — or user)."""
    spec = AGENTS[agent]
    if scope == "user":
        if agent == "claude" and os.environ.get("CLAUDE_CONFIG_DIR"):
            return Path(os.environ["CLAUDE_CONFIG_DIR"]) / spec.settings_file
        if agent == "codex" and os.environ.get("CODEX_HOME"):  # Codex's home folder, where it reads hooks.json
            return Path(os.environ["CODEX_HOME"]) / spec.settings_file
        return Path.home() / spec.settings_folder / spec.settings_file
    root = git_root(cwd or Path.cwd()) or (cwd or Path.cwd())
    if scope == "local" and spec.local_settings_file:
        return root / spec.settings_folder / spec.local_settings_file
    return root / spec.settings_folder / spec.settings_file


def inside_repository(path: Path, cwd: Path | None = None) -> None:
    """``InstallError`` when ``path``, a repository's own settings file, is — or lies in a folder
    that is — a symlink out of the repository: anyone can commit ``.mcp.json`` or ``.claude/`` as a
    link to the user's ``~/.claude.json`` or ``~/.claude/``, whose text installing would carry into
    the file the team commits (other servers' keys, the user's env), or whose hooks it would change."""
    root = git_root(cwd or Path.cwd()) or (cwd or Path.cwd())
    real, base = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    if not real.is_relative_to(base):
        raise InstallError(f"{path} leads through a symbolic link to {real}, outside the repository; memlane does "
                           "not read or write a file there for this repository: remove the link, or install with --user")


def default_scope(agent: str) -> str:
    """Claude Code has a per-machine settings file; the other agents only the one a team commits."""
    return "local" if AGENTS[agent].local_settings_file else "shared"


def memlane_command() -> str:
    """This installation's ``memlane``, by absolute path (the agent's PATH may not hold the
    virtualenv it lives in)."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "memlane" and argv0.exists():
        return str(argv0.absolute())
    beside = Path(sys.executable).parent / "memlane"
    if beside.exists():
        return str(beside)
    found = shutil.which("memlane")
    if found:
        return str(Path(found).absolute())
    # -P: the hooks run in the project, whose folder must not come first on the import path (a
    # cloned repository's own memlane/ package would run instead of this one)
    return f"{shlex.quote(sys.executable)} -P -m memlane.adapters.cli"


def hook_command(memlane: str) -> str:
    """The stdlib-only hook client installed beside ``memlane`` (``memlane-hook``), or
    ``memlane hook`` when there is none."""
    if os.path.exists(memlane) and os.path.basename(memlane) == "memlane":
        client = os.path.join(os.path.dirname(memlane), PORTABLE_HOOK)
        if os.path.exists(client):
            return _shell_prefix(client)
    return f"{_shell_prefix(memlane)} hook"


#: a committed command that does nothing where its program is missing (a POSIX shell's ``command -v``)
_GUARD = "if command -v {program} >/dev/null 2>&1; then {command}; fi"
_GUARDED = re.compile(r"\Aif command -v (\S+) >/dev/null 2>&1; then (.+); fi\Z")


def guarded(command: str, program: str) -> str:
    """``command``, run only when ``program`` is on the PATH; else nothing happens and the exit is 0.
    The guard is POSIX shell, so it runs in ``sh -c '…'``: the shell the agent hands the line to
    need only read one single-quoted word — Codex runs it with the user's login shell (``$SHELL
    -lc``), which may be fish, where a bare ``if …; then …; fi`` is a syntax error and no hook runs."""
    return f"sh -c {shlex.quote(_GUARD.format(program=program, command=command))}"


def unguarded(command: str) -> str:
    """The command a :func:`guarded` one runs (``command`` itself when it is not guarded); an older
    install's guard, without ``sh -c``, too."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    inner = words[2] if len(words) == 3 and words[:2] == ["sh", "-c"] else command
    match = _GUARDED.match(inner)
    return match.group(2) if match else command


def portable_problem(name: str = PORTABLE_HOOK) -> str | None:
    """Why a bare ``name`` in a committed settings file would not run for a teammate (or here),
    with how to fix it; None when it resolves to a tool install on the PATH. ``memlane``
    (:data:`PORTABLE_CLI`) is what a committed ``.mcp.json`` starts: the MCP server, which needs
    the ``[mcp]`` extra too."""
    found = shutil.which(name)
    mcp = name == PORTABLE_CLI
    what, broken = ("the MCP server would not start", "MCP server") if mcp else ("the hooks would not run", "hook")
    extras = "[embed,mcp]" if mcp else "[embed]"
    fix = (f"install memlane as a tool so `{name}` is on every machine's PATH: `pipx install '<memlane>{extras}'` "
           f"or `uv tool install '<memlane>{extras}'`, <memlane> being memlane's folder (the README's Install)")
    if found is None:
        return f"`{name}` is not on this machine's PATH, so {what} here; {fix}"
    if sys.prefix != sys.base_prefix and Path(found).resolve().is_relative_to(Path(sys.prefix).resolve()):
        if mcp:
            return (f"`{name}` resolves into this virtualenv ({found}); teammates without it on their PATH get a broken "
                    f"{broken}; {fix}")
        # the committed hook steps aside where it finds no memlane-hook: silence, not an error
        return (f"`{name}` resolves into this virtualenv ({found}): memory is silently off wherever the agent starts "
                f"without that folder on its PATH (teammates, and here outside this virtualenv); {fix}")
    return None


# -- the settings text --------------------------------------------------------------------
def _is_ours(handler: dict) -> bool:
    command = str(handler.get("command", "")) + " " + " ".join(map(str, handler.get("args", []) or []))
    return PORTABLE_HOOK in command or ("memlane" in command and (" hook " in f" {command} " or "statusline" in command))


def _without_ours(groups: list) -> list:
    out = []
    for group in groups:
        if not isinstance(group, dict):
            out.append(group)
            continue
        if "command" in group and "hooks" not in group:  # a flat list of handlers
            if not _is_ours(group):
                out.append(group)
            continue
        if not isinstance(group.get("hooks", []), list):  # not a shape memlane writes: not its own, kept
            out.append(group)
            continue
        handlers = [h for h in group.get("hooks", []) if not (isinstance(h, dict) and _is_ours(h))]
        if handlers:
            out.append({**group, "hooks": handlers})
        elif not group.get("hooks"):
            out.append(group)
    return out


#: what JSON with comments has that JSON has not: a string (kept), a ``//`` or ``/* */`` comment, a
#: comma right before the ``}`` or ``]`` that closes its object or array
_JSONC = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|,(?=(?:\s|//[^\n]*|/\*.*?\*/)*[}\]])', re.S)


def _without_comments(text: str) -> str:
    """``text``, JSON with comments (what Gemini CLI reads its settings as), as JSON: comments and
    trailing commas blanked, their line breaks kept (a JSON error's line is still the file's)."""
    return _JSONC.sub(lambda m: m[0] if m[0].startswith('"') else re.sub(r"[^\n]", " ", m[0]), text)


def _loads(text: str, *, comments: bool):
    """``text``'s JSON; with ``comments``, JSON with comments too."""
    try:
        return json.loads(text)
    except ValueError:
        if not comments:
            raise
        return json.loads(_without_comments(text))


def _read_settings(path: Path, key: str, *, comments: bool = False) -> tuple[str, dict]:
    """The file's text and its JSON object (empty when there is no file), which must hold an
    object under ``key`` if anything; a file that is not valid JSON — with ``comments``, JSON with
    comments — is never overwritten."""
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else ""
        settings = _loads(before, comments=comments) if before.strip() else {}
    except ValueError as exc:  # UnicodeDecodeError too: a file that is not UTF-8 is not JSON either
        kind = "JSON (with comments)" if comments else "JSON"
        raise InstallError(f"{path} is not valid {kind} ({exc}); fix it first, memlane will not overwrite it") from None
    if not isinstance(settings, dict) or not isinstance(settings.get(key, {}), dict):
        raise InstallError(f"{path}: unexpected shape (expected an object with a '{key}' object)")
    return before, settings


#: JSON with comments as tokens: a string, a comment, white space, a bracket or separator, a bare word
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/|\s+|[{}\[\]:,]|[^\s{}\[\]:,"/]+|/', re.S)


def _top_members(text: str) -> tuple[int | None, dict, list]:
    """Where the top-level object of ``text`` (JSON with comments) opens (just past its ``{``), and
    its members: key -> (where the key starts, where its value starts, where its value ends); and
    the significant tokens (no white space or comments) as (token, start, end)."""
    sig = [(m[0], m.start(), m.end()) for m in _TOKEN.finditer(text)
           if not (m[0].isspace() or m[0].startswith(("//", "/*")))]
    opened, members, depth, i = None, {}, 0, 0
    while i < len(sig):
        tok, start, end = sig[i]
        if depth == 1 and tok.startswith('"') and i + 2 < len(sig) and sig[i + 1][0] == ":":
            j, inner = i + 2, 0
            while j < len(sig) and not (inner == 0 and sig[j][0] in (",", "}")):
                inner += 1 if sig[j][0] in ("{", "[") else -1 if sig[j][0] in ("}", "]") else 0
                j += 1
            members[json.loads(tok)] = (start, sig[i + 2][1], sig[j - 1][2])
            i = j
            continue
        if tok in ("{", "["):
            depth += 1
            if depth == 1 and tok == "{":
                opened = end
        elif tok in ("}", "]"):
            depth -= 1
        i += 1
    return opened, members, sig


def _plain(text: str) -> bool:
    """Whether ``text`` holds no comment and no trailing comma (nothing a JSON writer would lose)."""
    return _without_comments(text) == text


def _edit_commented(before: str, settings: dict, after_settings: dict) -> str | None:
    """``before``, JSON with comments, with its top-level ``"hooks"`` member put in, replaced or
    taken out as ``after_settings`` has it — every other byte, comments included, as it was (what
    Gemini CLI itself does when it writes its settings). None when that cannot be done without
    touching a comment or trailing comma (one inside ``"hooks"``), or when more than ``"hooks"`` changes."""
    if {k: v for k, v in settings.items() if k != "hooks"} != {k: v for k, v in after_settings.items() if k != "hooks"}:
        return None
    opened, members, sig = _top_members(before)
    if opened is None:
        return None
    hooks = after_settings.get("hooks")
    first = min((start for start, _, _ in members.values()), default=None)
    line_start = before.rfind("\n", 0, first) + 1 if first is not None else 0
    indent = before[line_start:first] if first is not None and not before[line_start:first].strip() else "  "
    value = None if hooks is None else json.dumps(hooks, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)
    if "hooks" not in members:
        if value is None:
            return before
        return before[:opened] + f"\n{indent}\"hooks\": {value}" + ("," if members else "\n") + before[opened:]
    key_start, value_start, value_end = members["hooks"]
    if not _plain(before[key_start:value_end]):
        return None
    if value is not None:
        return before[:value_start] + value + before[value_end:]
    after = [t for t in sig if t[1] >= value_end]
    if after and after[0][0] == ",":  # a member follows: out with this one, its comma and its line's indent
        start, end = key_start, after[0][2]
        line = before.rfind("\n", 0, key_start)
        if not before[line + 1:key_start].strip():
            start = line + 1
            end += len(before[end:]) - len(before[end:].lstrip(" \t"))
            if before[end:end + 1] == "\n":
                end += 1
    else:  # the last member: out with the comma before it
        earlier = [t for t in sig if t[2] <= key_start]
        start, end = (earlier[-1][1] if earlier and earlier[-1][0] == "," else key_start), value_end
    return before[:start] + before[end:] if _plain(before[start:end]) else None


def _by_hand(path: Path, hooks: dict, events: list[tuple[str, dict]], *, remove: bool) -> InstallError:
    """Why memlane leaves a file with comments as it is, and exactly what to change in it by hand:
    memlane's entries to take out (every one when removing; any other than those it would add when
    installing) and the entries to add, in the file's own shape."""
    wanted = {} if remove else {event: [entry for name, entry in events if name == event] for event, _ in events}
    lines = [f"{path} holds comments or trailing commas (JSON with comments), which memlane would lose if it wrote "
             "the file back, so it has not changed it; make the change by hand, then run the same command again "
             "(it says \"nothing to change\" once it is made):"]
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            if not isinstance(group, dict) or group in wanted.get(event, []):
                continue
            handlers = [group] if "command" in group else group.get("hooks", [])
            for handler in handlers if isinstance(handlers, list) else []:
                if isinstance(handler, dict) and _is_ours(handler):
                    lines.append(f"- take out of \"hooks\" > \"{event}\" the entry whose command is: "
                                 f"{handler.get('command')}")
    add = {event: [e for e in entries if e not in (hooks.get(event) or [])] for event, entries in wanted.items()}
    add = {event: entries for event, entries in add.items() if entries}
    if add:
        lines.append("- add to \"hooks\" (each entry to the list of its event; an event, or \"hooks\" itself, that "
                     "the file does not have yet, as it is here):")
        lines.append(json.dumps({"hooks": add}, indent=2, ensure_ascii=False))
    return InstallError("\n".join(lines))


def plan(path: Path, agent: str, *, remove: bool = False, statusline: bool = False,
         command: str | None = None) -> Change:
    """The settings text after installing (or removing) memlane's hooks for ``agent``;
    ``command``: the hook client to run (default: this installation's, by absolute path)."""
    spec = AGENTS[agent]
    if statusline and not spec.statusline:
        raise InstallError(f"{agent} has no status line memlane can use")
    before, settings = _read_settings(path, "hooks", comments=spec.commented_settings)
    hook = command or hook_command(memlane_command())
    hooks = dict(settings.get("hooks", {}))
    events = _entries(spec, hook)
    for event in dict.fromkeys(event for event, _ in events):
        if not isinstance(hooks.get(event, []), list):  # list() of an object or a string would take it apart
            raise InstallError(f"{path}: unexpected shape (expected a list under 'hooks' > '{event}')")
        groups = _without_ours(list(hooks.get(event, [])))
        if not remove:
            groups += [entry for name, entry in events if name == event]
        if groups:
            hooks[event] = groups
        else:
            hooks.pop(event, None)
    after_settings = {**settings, "hooks": hooks}
    if not hooks:
        after_settings.pop("hooks")
    elif spec.flat_hooks:
        after_settings = {"version": 1, **after_settings}  # a flat hooks file is versioned (Cursor)
    _status_line(after_settings, settings.get("statusLine"), path, hook, remove=remove, statusline=statusline,
                 guard=spec.posix_shell)
    if after_settings == settings:  # nothing of memlane's to put in or take out: the file stays as its owner wrote it
        after = before
    elif before.strip() and spec.commented_settings and _parsed(before, comments=False) is None:
        after = _edit_commented(before, settings, after_settings)  # its comments kept
        if after is None or _parsed(after) != after_settings:  # a comment in memlane's way: the user edits it
            raise _by_hand(path, settings.get("hooks", {}), events, remove=remove)
    else:
        after = json.dumps(after_settings, indent=2, ensure_ascii=False) + "\n" if after_settings or before.strip() \
            else ""
    return Change(path, before, after, existed=path.exists(), added={"version": 1} if spec.flat_hooks else {})


def plan_claude(path: Path, *, remove: bool = False, statusline: bool = False, command: str | None = None) -> Change:
    return plan(path, "claude", remove=remove, statusline=statusline, command=command)


def _status_line(after: dict, current, path: Path, hook: str, *, remove: bool, statusline: bool,
                 guard: bool) -> None:
    if remove and isinstance(current, dict) and _is_ours(current):
        after.pop("statusLine")
    elif statusline and not remove:
        if current and not (isinstance(current, dict) and _is_ours(current)):
            shown = current.get("command") if isinstance(current, dict) else current
            raise InstallError(f"{path} already has a statusLine ({shown}); keep it, or remove it and install again "
                               "with --statusline")
        # the CLI beside the hook client: its name is the path's last (a folder may hold "memlane-hook" too)
        head, _, tail = hook.rpartition(PORTABLE_HOOK)
        cli = hook[: -len(" hook")] if hook.endswith(" hook") else head + PORTABLE_CLI + tail
        command = f"{cli} statusline"
        if guard and cli == PORTABLE_CLI:
            command = guarded(command, PORTABLE_CLI)
        after["statusLine"] = {"type": "command", "command": command, "padding": 0}


def _entries(spec: Agent, hook: str) -> list[tuple[str, dict]]:
    """(event, the entry memlane adds under it) in ``spec``'s settings shape."""
    flag = "" if spec.name == DEFAULT else f" --agent {spec.name}"

    def line(name: str) -> str:
        command = f"{hook} {name}{flag}"
        return guarded(command, PORTABLE_HOOK) if hook == PORTABLE_HOOK and spec.posix_shell else command
    if spec.flat_hooks:  # handlers listed flat under each event
        events = [(spec.session_event, SESSION_START)] + ([(spec.prompt_event, PROMPT)] if spec.prompt_event else [])
        return [(event, {"command": line(name)}) for event, name in events]
    out = []
    for event, name in ((spec.prompt_event, PROMPT), (spec.session_event, SESSION_START)):
        handler = {"type": "command", "command": line(name), "timeout": spec.timeout}
        if spec.named_handlers:
            handler["name"] = f"memlane-{name}"
        group = {"hooks": [handler]}
        if name == SESSION_START and spec.session_matcher:
            group = {"matcher": spec.session_matcher, **group}
        out.append((event, group))
    return out


def _shell_prefix(command: str) -> str:
    """A path is quoted for the shell; a ready command line (``python -m …``) is kept."""
    return shlex.quote(command) if os.path.exists(command) else command


# -- MCP ---------------------------------------------------------------------------------
def mcp_config_path(scope: str, cwd: Path | None = None) -> tuple[Path, str | None]:
    """Where Claude Code reads stdio MCP servers for ``scope``, and the project key inside that
    file: local (this machine, this repository: ``~/.claude.json`` under the repository's path,
    where ``claude mcp add`` writes by default), shared (``.mcp.json`` at the repository root,
    committed) or user (``~/.claude.json``, every project)."""
    root = git_root(cwd or Path.cwd()) or (cwd or Path.cwd())
    if scope == "shared":
        return root / ".mcp.json", None
    home_file = Path(os.environ["CLAUDE_CONFIG_DIR"]) / ".claude.json" if os.environ.get("CLAUDE_CONFIG_DIR") \
        else Path.home() / ".claude.json"
    return home_file, (str(root.absolute()) if scope == "local" else None)


def plan_mcp(path: Path, *, remove: bool = False, command: str | None = None, project: str | None = None) -> Change:
    """``path`` with memlane's MCP server registered under ``mcpServers.memlane`` (the form
    ``claude mcp add memlane -- memlane mcp`` writes) — under ``projects.<project>`` when a
    project is named — or taken out; other servers and keys stay as they are."""
    before, settings = _read_settings(path, "projects" if project else "mcpServers")
    holder = settings.get("projects", {}).get(project, {}) if project else settings
    if not isinstance(holder, dict) or not isinstance(holder.get("mcpServers", {}), dict):
        raise InstallError(f"{path}: unexpected shape (expected an object with a 'mcpServers' object)")
    holder = dict(holder)
    servers = dict(holder.get("mcpServers", {}))
    servers.pop("memlane", None)
    if not remove:
        program = command or memlane_command()
        argv = [program] if os.path.exists(program) else shlex.split(program)
        servers["memlane"] = {"type": "stdio", "command": argv[0], "args": [*argv[1:], "mcp"]}
    holder = {**holder, "mcpServers": servers}
    if not servers:
        holder.pop("mcpServers")
    if project:
        projects = dict(settings.get("projects", {}))
        if holder:
            projects[project] = holder
        else:
            projects.pop(project, None)
        after_settings = {**settings, "projects": projects}
        if not projects:
            after_settings.pop("projects")
    else:
        after_settings = holder
    if after_settings == settings:  # no memlane server to take out: Claude Code's own file stays as it wrote it
        after = before
    else:
        after = json.dumps(after_settings, indent=2, ensure_ascii=False) + "\n" if after_settings or before.strip() \
            else ""
    return Change(path, before, after, existed=path.exists())


def mcp_missing() -> bool:
    """Whether this installation lacks the MCP SDK (the ``[mcp]`` extra)."""
    import importlib.util

    return importlib.util.find_spec("mcp") is None


# -- reading and writing the files ---------------------------------------------------------------
def installed(path: Path) -> bool:
    """Whether the settings file at ``path`` holds memlane's hooks."""
    return bool(memlane_commands(path))


def memlane_commands(path: Path) -> list[str]:
    """The commands of memlane's hooks in the settings file at ``path`` (none when it has none
    or cannot be read), a guarded one as the command it runs."""
    return [unguarded(command) for command in written_commands(path)]


def written_commands(path: Path) -> list[str]:
    """The commands of memlane's hooks in the settings file at ``path`` as it writes them, guard
    and all (none when it has none or cannot be read; read as JSON with comments, as Gemini CLI
    reads its own)."""
    return [str(h.get("command", "")) for h in written_handlers(path)]


def written_handlers(path: Path) -> list[dict]:
    """memlane's hooks in the settings file at ``path``, each its whole handler: its command and
    what else the file gives it (a ``shell``, ``args``)."""
    settings = read_settings_file(path)
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    if not isinstance(hooks, dict):
        return []
    handlers = [h for groups in hooks.values() if isinstance(groups, list) for g in groups if isinstance(g, dict)
                for h in ([g] if "command" in g else g.get("hooks", []) if isinstance(g.get("hooks"), list) else [])]
    return [h for h in handlers if isinstance(h, dict) and _is_ours(h)]


def read_settings_file(path: Path):
    """An agent's settings file at ``path`` as the agent reads it (JSON with comments); None when
    it cannot be read."""
    try:
        return _loads(path.read_text(encoding="utf-8"), comments=True)
    except (OSError, ValueError):
        return None


def _backup_file(path: Path) -> Path:
    key = hashlib.sha256(str(path.absolute()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return data_home() / "install-backups" / f"{key}.json"


def apply(change: Change) -> None:
    """Write ``change``; before the first change of a file, keep it as it was (memlane's data
    folder: nothing extra lands in the repository)."""
    if not change.changed:
        return
    if not is_whole(change.after):  # a path in another encoding: the agent reads its settings as UTF-8 JSON
        raise InstallError(f"{change.path}: memlane would have to write a path that is not UTF-8 (bytes of another "
                           "encoding) into it — this repository's, or memlane's own — which the agent could not read "
                           "back; nothing was written: move it to a path that is UTF-8")
    backup = _backup_file(change.path)
    if not backup.exists():
        created = _created_folders(change.path, backup)
        backup.parent.mkdir(parents=True, exist_ok=True)
        backup.write_text(json.dumps({"path": str(change.path.absolute()), "before": change.before if change.existed
                                      else None, "created_folders": created}), encoding="utf-8")
    _write(change.path, change.after)


def _created_folders(path: Path, backup: Path) -> list[str]:
    """The folders memlane creates for ``path`` and its ``backup`` (``.claude/``, its own data
    folder), and those an earlier install still on record created above either: ``.claude/`` made
    for ``settings.local.json`` is ``settings.json``'s too, so whichever file is taken out last
    takes out the folder."""
    created = [str(p) for p in _missing_parents(path) + _missing_parents(backup)]
    above = {str(p) for p in (*path.absolute().parents, *backup.absolute().parents)}
    for record in _records(backup.parent):
        created += [f for f in record.get("created_folders", []) if f in above and f not in created]
    return created


def _records(folder: Path) -> list[dict]:
    """The install records kept in ``folder`` (an unreadable one is skipped)."""
    out = []
    for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and isinstance(record.get("created_folders", []), list):
            out.append(record)
    return out


def undo(change: Change) -> str:
    """Write the removal ``change`` — or, when taking memlane out leaves the file exactly as it
    was before memlane first changed it, put that file back byte for byte (or remove the file
    and folders install created). Returns what was done, for the user."""
    backup = _backup_file(change.path)
    try:
        record = json.loads(backup.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    if record is not None and _same_json(change.after, record["before"], change.added):
        if record["before"] is None:
            change.path.unlink(missing_ok=True)
            done = "removed (install had created it)"
        else:
            _write(change.path, record["before"])
            done = "restored as it was before memlane"
        _forget(backup, record)
        return done
    if change.changed:
        _write(change.path, change.after)
    if record is not None and not installed(change.path):
        _forget(backup, record)  # memlane is out; the file has other changes of the user's
    return "memlane's entries taken out"


def _forget(backup: Path, record: dict) -> None:
    """Drop the install record, then each folder install created that is empty now, deepest
    first (one still holding a file — the user's, or another install's — stays)."""
    backup.unlink(missing_ok=True)
    folders = [Path(f) for f in record.get("created_folders", []) if isinstance(f, str)]
    for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
        try:
            folder.rmdir()  # only when empty
        except OSError:
            pass


def _same_json(text: str, before: str | None, added: dict | None = None) -> bool:
    """Whether ``text`` holds what ``before`` held (nothing, when None), apart from the keys of
    ``added`` that install put in and ``before`` did not have."""
    if before is not None and None in (_parsed(text, comments=False), _parsed(before, comments=False)):
        return text == before  # with comments, memlane kept every byte it did not write: a comment changed is a change
    after, was = _parsed(text), ({} if before is None else _parsed(before))
    if after is None or was is None:
        return False  # a file that does not read is no file memlane wrote
    if isinstance(after, dict) and isinstance(was, dict):
        after = {k: v for k, v in after.items() if not (k in (added or {}) and added[k] == v and k not in was)}
    return after == was


def _parsed(text: str, *, comments: bool = True):
    """``text``'s JSON ({} when it is empty) — JSON with comments too, unless not ``comments`` —
    or None when it does not read."""
    try:
        return _loads(text, comments=comments) if text.strip() else {}
    except ValueError:
        return None


def _missing_parents(path: Path) -> list[Path]:
    out, folder = [], path.parent
    while not folder.exists():
        out.append(folder)
        folder = folder.parent
    return out


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)


def ensure_git_ignores(path: Path) -> str | None:
    """Make sure git does not commit the per-machine ``path`` (it adds it to this clone's own
    ``.git/info/exclude``, which is never committed); what it did, or None."""
    root = git_root(path.parent)
    if root is None or not (root / ".git").is_dir():
        return None
    rel = path.absolute().relative_to(root).as_posix()
    try:
        ignored = subprocess.run(git_argv(root, "check-ignore", "-q", rel), capture_output=True,
                                 timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return None
    if ignored:
        return None
    exclude = root / ".git" / "info" / "exclude"
    if not lies_within(exclude, root / ".git"):
        return None  # a link out of this clone's git folder (a downloaded one's): not appended to
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with open(exclude, "a", encoding="utf-8") as handle:
        handle.write(_ignore_lines(rel))
    return f"git ignores {rel} in this clone (.git/info/exclude)"


def _ignore_lines(rel: str) -> str:
    """What :func:`ensure_git_ignores` appends to ``.git/info/exclude`` for ``rel``."""
    return f"\n# this machine's settings (memlane install)\n/{rel}\n"


def forget_git_ignore(path: Path) -> str | None:
    """Once memlane is out of the per-machine ``path``, take the lines :func:`ensure_git_ignores`
    added for it out of ``.git/info/exclude`` again (only those: the rest of the file stays byte
    for byte) — whether install had created ``path`` (now gone) or it was the user's before (it
    stays, as git saw it before install); what it did, or None."""
    root = git_root(path.parent)
    exclude = root / ".git" / "info" / "exclude" if root is not None else None
    if exclude is None or not exclude.is_file():
        return None
    rel = path.absolute().relative_to(root).as_posix()
    try:
        text = exclude.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    lines = _ignore_lines(rel)
    if lines not in text:
        return None
    at = text.rindex(lines)
    _write(exclude, text[:at] + text[at + len(lines):])
    return f".git/info/exclude no longer lists {rel}"
