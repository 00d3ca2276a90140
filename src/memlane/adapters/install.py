"""``memlane install AGENT`` / ``memlane uninstall AGENT``: register the hooks with an agent
(each agent's hook settings, adapters/agents/), the same engine behind each:

- **claude**: ``.claude/settings.json`` (or ``~/.claude/settings.json``), ``UserPromptSubmit`` and
  ``SessionStart``, timeouts in seconds; optionally the statusline;
- **codex**: ``.codex/hooks.json`` (or ``~/.codex/hooks.json``), the same shape and events
  (Codex also needs ``[features] codex_hooks = true`` in its config.toml);
- **gemini**: ``.gemini/settings.json`` (or ``~/.gemini/settings.json``), ``BeforeAgent`` and
  ``SessionStart``, timeouts in **milliseconds**;
- **cursor**: ``.cursor/hooks.json`` (or ``~/.cursor/hooks.json``), ``{"version": 1}`` with flat
  handler lists; ``sessionStart`` only, because Cursor's ``beforeSubmitPrompt`` cannot add
  context (it may only let the prompt through or stop it).

The settings file is merged, never replaced: other hooks stay as they are, memlane's own
entries (recognised by their ``memlane … hook`` command) are replaced, so installing twice
changes nothing. Timeouts are in seconds, as Claude Code reads them. A settings file that is
not valid JSON is left untouched and reported. ``--dry-run`` prints the diff instead.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import InstallError
from ..store import git_root
from .agents import DEFAULT, NAMES, PROMPT, SESSION_START, Agent, load



AGENTS = {name: load(name) for name in NAMES}


@dataclass
class Change:
    path: Path
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.before.splitlines(True), self.after.splitlines(True),
                                            fromfile=f"{self.path} (now)", tofile=f"{self.path} (after)"))


def memlane_command() -> str:
    """How Claude Code should start memlane: the absolute path of this installation's script
    (not a bare name: the agent's PATH may not hold the virtualenv)."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "memlane" and argv0.exists():
        return str(argv0.absolute())
    beside = Path(sys.executable).parent / "memlane"
    if beside.exists():
        return str(beside)
    found = shutil.which("memlane")
    if found:
        return str(Path(found).absolute())
    return f"{shlex.quote(sys.executable)} -m memlane.adapters.cli"


def settings_path(scope: str, cwd: Path | None = None, agent: str = "claude") -> Path:
    spec = AGENTS[agent]
    if scope == "user":
        if agent == "claude" and os.environ.get("CLAUDE_CONFIG_DIR"):
            return Path(os.environ["CLAUDE_CONFIG_DIR"]) / spec.settings_file
        return Path.home() / spec.settings_folder / spec.settings_file
    root = git_root(cwd or Path.cwd()) or (cwd or Path.cwd())
    return root / spec.settings_folder / spec.settings_file


def _is_ours(handler: dict) -> bool:
    command = str(handler.get("command", "")) + " " + " ".join(map(str, handler.get("args", []) or []))
    return "memlane-hook" in command or ("memlane" in command and (" hook " in f" {command} " or "statusline" in command))


def hook_command(memlane: str) -> str:
    """The stdlib-only hook client installed beside ``memlane`` (``memlane-hook``), or
    ``memlane hook`` when there is none."""
    if os.path.exists(memlane) and os.path.basename(memlane) == "memlane":
        client = os.path.join(os.path.dirname(memlane), "memlane-hook")
        if os.path.exists(client):
            return _shell_prefix(client)
    return f"{_shell_prefix(memlane)} hook"


def _without_ours(groups: list) -> list:
    out = []
    for group in groups:
        if not isinstance(group, dict):
            out.append(group)
            continue
        if "command" in group and "hooks" not in group:  # Cursor: a flat list of handlers
            if not _is_ours(group):
                out.append(group)
            continue
        handlers = [h for h in group.get("hooks", []) if not (isinstance(h, dict) and _is_ours(h))]
        if handlers:
            out.append({**group, "hooks": handlers})
        elif not group.get("hooks"):
            out.append(group)
    return out


def _read_settings(path: Path, key: str) -> tuple[str, dict]:
    """The file's text and its JSON object (empty when there is no file), which must hold an
    object under ``key`` if anything; a file that is not valid JSON is never overwritten."""
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        settings = json.loads(before) if before.strip() else {}
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it first, memlane will not overwrite it") from None
    if not isinstance(settings, dict) or not isinstance(settings.get(key, {}), dict):
        raise InstallError(f"{path}: unexpected shape (expected an object with a '{key}' object)")
    return before, settings


def plan_claude(path: Path, *, remove: bool = False, statusline: bool = False, command: str | None = None) -> Change:
    return plan(path, "claude", remove=remove, statusline=statusline, command=command)


def plan(path: Path, agent: str, *, remove: bool = False, statusline: bool = False,
         command: str | None = None) -> Change:
    """The settings text after installing (or removing) memlane's hooks for ``agent``."""
    spec = AGENTS[agent]
    if statusline and not spec.statusline:
        raise InstallError(f"{agent} has no statusline memlane can use")
    before, settings = _read_settings(path, "hooks")
    program = command or memlane_command()
    base, hook = _shell_prefix(program), hook_command(program)
    hooks = dict(settings.get("hooks", {}))
    events = _entries(spec, hook)
    for event in dict.fromkeys(event for event, _ in events):
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
    current_status = settings.get("statusLine")
    if remove and isinstance(current_status, dict) and _is_ours(current_status):
        after_settings.pop("statusLine")
    elif statusline and not remove:
        if current_status and not (isinstance(current_status, dict) and _is_ours(current_status)):
            raise InstallError(f"{path} already has a statusLine ({current_status.get('command') if isinstance(current_status, dict) else current_status}); "
                               "keep it, or remove it and install again with --statusline")
        after_settings["statusLine"] = {"type": "command", "command": f"{base} statusline", "padding": 0}
    after = json.dumps(after_settings, indent=2, ensure_ascii=False) + "\n" if (after_settings or before.strip()) else ""
    return Change(path, before, after)


def mcp_config_path(scope: str, cwd: Path | None = None) -> Path:
    """Where Claude Code reads stdio MCP servers: ``.mcp.json`` at the repository root
    (project scope, shared) or ``~/.claude.json`` (user scope)."""
    if scope == "user":
        return Path.home() / ".claude.json"
    return (git_root(cwd or Path.cwd()) or (cwd or Path.cwd())) / ".mcp.json"


def plan_mcp(path: Path, *, remove: bool = False, command: str | None = None) -> Change:
    """``path`` with memlane's MCP server registered under ``mcpServers.memlane`` (the form
    ``claude mcp add memlane -- memlane mcp`` writes), or taken out; other servers and keys
    stay as they are."""
    before, settings = _read_settings(path, "mcpServers")
    servers = dict(settings.get("mcpServers", {}))
    servers.pop("memlane", None)
    if not remove:
        program = command or memlane_command()
        argv = [program] if os.path.exists(program) else shlex.split(program)
        servers["memlane"] = {"type": "stdio", "command": argv[0], "args": [*argv[1:], "mcp"]}
    after_settings = {**settings, "mcpServers": servers}
    if not servers:
        after_settings.pop("mcpServers")
    after = json.dumps(after_settings, indent=2, ensure_ascii=False) + "\n" if (after_settings or before.strip()) else ""
    return Change(path, before, after)


def _entries(spec: Agent, hook: str) -> list[tuple[str, dict]]:
    """(event, the entry memlane adds under it) in ``spec``'s settings shape."""
    flag = "" if spec.name == DEFAULT else f" --agent {spec.name}"
    if spec.flat_hooks:  # handlers listed flat under each event
        events = [(spec.session_event, SESSION_START)] + ([(spec.prompt_event, PROMPT)] if spec.prompt_event else [])
        return [(event, {"command": f"{hook} {name}{flag}"}) for event, name in events]
    out = []
    for event, name in ((spec.prompt_event, PROMPT), (spec.session_event, SESSION_START)):
        handler = {"type": "command", "command": f"{hook} {name}{flag}", "timeout": spec.timeout}
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


def installed(path: Path) -> bool:
    """Whether the settings file at ``path`` holds memlane's hooks."""
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    return isinstance(hooks, dict) and any(
        isinstance(g, dict) and (_is_ours(g) if "command" in g else
                                 any(isinstance(h, dict) and _is_ours(h) for h in g.get("hooks", [])))
        for groups in hooks.values() if isinstance(groups, list) for g in groups)


def apply(change: Change) -> None:
    if not change.changed:
        return
    change.path.parent.mkdir(parents=True, exist_ok=True)
    backup = change.path.with_name(change.path.name + ".memlane-backup")
    if change.before and not backup.exists():
        backup.write_text(change.before, encoding="utf-8")
    fd, tmp = tempfile.mkstemp(dir=change.path.parent, prefix=".settings-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(change.after)
    os.replace(tmp, change.path)
