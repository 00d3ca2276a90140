"""The agent-facing commands: ``hook`` (what an agent's hook runs), ``statusline``, ``serve`` (the
background daemon the hooks talk to), ``install`` / ``uninstall`` (register the hooks with an agent),
``mcp`` (memory as an MCP server)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ...errors import UsageError
from ..agents import DEFAULT, NAMES, PROMPT, SESSION_START, load
from .common import command, say, say_once, store_args


COMMAND_NAMES = ("hook", "statusline", "serve", "install", "uninstall", "mcp")  # the commands ``register`` adds


def register(sub) -> None:
    p = command(sub, "hook", func=cmd_hook, json=False,
                help="run one agent hook: read its input on stdin, print what to inject",
                description="What an agent's hook runs (memlane install sets it up; the faster memlane-hook command "
                            "does the same through the daemon). Reads the hook's JSON on stdin and prints what the "
                            "agent should add to its context, in the agent's own format; on any failure it prints "
                            "nothing and exits 0, so a prompt is never blocked.",
                examples="examples:\n  memlane hook user-prompt-submit < hook-input.json\n"
                         "  memlane hook user-prompt-submit --explain < hook-input.json")
    p.add_argument("event", choices=[SESSION_START, PROMPT],
                   help="session-start (who you are, this project's key facts) or user-prompt-submit (this prompt's "
                        "notes)")
    p.add_argument("--explain", action="store_true",
                   help="print what would be injected, how deep and why, instead of the hook's output")
    p.add_argument("--agent", choices=NAMES, default=DEFAULT, help="whose hook input and output to use")

    command(sub, "statusline", func=cmd_statusline, store=False, json=False,
            help="a status line command that tells the hooks how full the context is",
            description="Claude Code runs a status line command with how much of the context window is used; this "
                        "one records it for the hooks (so they inject less as the context fills) and prints a short "
                        "status line. memlane install claude --statusline sets it up.",
            examples="examples:\n  memlane statusline < status.json      # what Claude Code runs, its status JSON on stdin\n"
                     "  memlane install claude --statusline   # sets it up: in the settings, by hand, it reads\n"
                     '  "statusLine": {"type": "command", "command": "memlane statusline"}')

    p = command(sub, "serve", func=cmd_serve, json=False, help="the background daemon that answers the hooks quickly",
                description="Keep the index and the embedding model warm for this repository's memory, so a hook "
                            "costs a socket round trip. memlane-hook starts it by itself; it stops after 30 idle "
                            "minutes.", examples="examples:\n  memlane serve --daemon\n  memlane serve --stop")
    p.add_argument("--daemon", action="store_true", help="start it in the background and return")
    p.add_argument("--stop", action="store_true", help="stop the daemon serving this set of folders")
    p.add_argument("--idle-minutes", type=float, default=30.0, help="exit after this long without a request")
    p.add_argument("--wait", type=float, default=30.0, help="with --daemon: seconds to wait until it answers")

    for verb in ("install", "uninstall"):
        doing = "register memlane's hooks with" if verb == "install" else "remove memlane's hooks from"
        p = command(sub, verb, func=cmd_install if verb == "install" else cmd_uninstall, store=False, json=False,
                    help=f"{doing} an agent (merged into its settings; other hooks stay)",
                    description=f"{doing[0].upper()}{doing[1:]} an agent's settings: the prompt and session start "
                                "hooks (and, for Claude Code, optionally the status line or the MCP server). Other "
                                "hooks and settings are kept; doing it twice changes nothing.",
                    examples=f"examples:\n  memlane {verb} claude            # this machine's .claude/settings.local.json\n"
                             f"  memlane {verb} claude --shared   # .claude/settings.json, for the whole team\n"
                             f"  memlane {verb} claude --user --dry-run\n  memlane {verb} codex")
        p.add_argument("agent", choices=NAMES, help="the agent whose settings to change")
        where = p.add_mutually_exclusive_group()
        where.add_argument("--shared", action="store_true",
                           help="the settings file your team commits (Claude Code: .claude/settings.json), with a "
                                "command that resolves on every teammate's machine; without it, this machine's "
                                "own settings (Claude Code: .claude/settings.local.json)")
        where.add_argument("--user", action="store_true",
                           help="the agent's settings in your home folder (every project)")
        if verb == "install":
            p.add_argument("--statusline", action="store_true",
                           help="also make memlane the status line (it tells the hooks how full the context is)")
        p.add_argument("--mcp", action="store_true",
                       help="the MCP server instead (Claude Code: ~/.claude.json for this repository; .mcp.json with "
                            "--shared; ~/.claude.json for every project with --user)")
        p.add_argument("--dry-run", action="store_true", help="print the change as a diff, write nothing")

    command(sub, "mcp", func=cmd_mcp, domains=True, json=False, help="serve memory to any MCP client over stdio",
            description="Memory as an MCP server on stdio: recall (ids, summaries or full notes, with why), get, "
                        "related, remember, archive, restore, and memory:// resources. Needs the mcp extra: pip "
                        "install 'memlane[mcp]'.", examples="examples:\n  memlane mcp\n  claude mcp add memlane -- memlane mcp")


def cmd_hook(args) -> int:
    from ..daemon import tune_threads
    from ..hook import run_hook

    tune_threads()
    return run_hook(args.event, stores=store_args(args), embedder=args.embedder, index=args.index,
                    explain=args.explain, agent=args.agent)


def cmd_statusline(args) -> int:
    from ..hook import run_statusline

    return run_statusline()


def cmd_serve(args) -> int:
    from ..daemon import serve, tune_threads

    tune_threads()
    from ..hookclient import ask_daemon, daemon_key, project_root, socket_path, start_daemon

    root = project_root(None)
    stores = [str(Path(s).expanduser().resolve()) for s in (args.store or [])]
    key = daemon_key(root, stores, args.embedder, args.index)
    path = socket_path(key)
    if args.stop:
        reply = ask_daemon(path, "stop")
        sys.stdout.write("stopped\n" if reply is not None else "no daemon running for this store set\n")
        return 0
    if not args.daemon:
        from ..hook import _file_logging

        _file_logging()
        return serve(key, root, stores, args.embedder, args.index, idle_minutes=args.idle_minutes)
    if ask_daemon(path, "ping") is not None:
        sys.stdout.write(f"already running: {path}\n")
        return 0
    start_daemon(key, root, stores, args.embedder, args.index)
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        if ask_daemon(path, "ping") is not None:
            sys.stdout.write(f"started: {path}\n")
            return 0
        time.sleep(0.1)
    sys.stdout.write(f"starting (indexing may take a while; the hooks answer keyword-only meanwhile): {path}\n")
    return 0


def cmd_install(args, *, remove: bool = False) -> int:
    from .. import install

    scope = "user" if args.user else "shared" if getattr(args, "shared", False) else install.default_scope(args.agent)
    if args.mcp:
        if args.agent != "claude":
            raise UsageError("--mcp registers the MCP server with Claude Code; for other clients run `memlane mcp` "
                             "as a stdio server in their MCP settings")
        return _install_mcp(args, remove, scope)
    path = install.settings_path(scope, agent=args.agent)
    if scope != "user":
        install.inside_repository(path)
    portable = scope == "shared"  # a file the team commits runs the same command on every machine
    change = install.plan(path, args.agent, remove=remove, statusline=getattr(args, "statusline", False),
                          command=install.PORTABLE_HOOK if portable else None)
    if not change.changed:
        say(f"{path}: nothing to change{_elsewhere(args.agent, scope) if remove else ''}")
        return 0
    if args.dry_run:
        say(f"would {'remove memlane from' if remove else 'install memlane into'} {path}:\n{change.diff()}")
        return 0
    if remove:
        done = install.undo(change)
        unignored = install.forget_git_ignore(path) if scope == "local" else None
        say(f"memlane hooks taken out of {path}: {done}{f'; {unignored}' if unignored else ''}")
        return 0
    install.apply(change)
    say(f"memlane hooks installed in {path} ({load(args.agent).install_note})")
    if getattr(args, "statusline", False):
        say("and the status line, which tells the hooks how full the context is")
    elsewhere = _elsewhere(args.agent, scope)
    if elsewhere:  # both run on every prompt: the daemon answers one of them, but one install is enough
        say(f"memlane: note: both run on every prompt, one install is enough{elsewhere}")
    if scope == "local":
        ignored = install.ensure_git_ignores(path)
        say(f"this machine's settings, not committed{f'; {ignored}' if ignored else ''} (--shared writes the file "
            "your team commits)")
    problem = install.portable_problem() if portable else None
    if problem:
        say_once(f"memlane: warning: {problem}")  # it may quote a path
    return 0


def _elsewhere(agent: str, scope: str) -> str:
    """Where else memlane's hooks are installed for ``agent``, with the flag that reaches them."""
    from ..install import SCOPES, default_scope, installed, settings_path

    flags = {"local": "", "shared": " --shared", "user": " --user"}
    if default_scope(agent) == "shared":  # the agent has no per-machine file: its project file needs no flag
        flags["shared"] = ""
    here = settings_path(scope, agent=agent)
    others: dict = {}  # each file once (Codex's and Gemini CLI's local and shared scope are one file)
    for s in SCOPES:
        p = settings_path(s, agent=agent)
        if s != scope and p != here and (p not in others or not flags[s]):
            others[p] = s
    found = [f"`memlane uninstall {agent}{flags[s]}` for {p}" for p, s in others.items() if installed(p)]
    return f"; memlane is installed elsewhere: {', '.join(found)}" if found else ""


def _install_mcp(args, remove: bool, scope: str) -> int:
    from .. import install

    path, project = install.mcp_config_path(scope)
    if scope == "shared":
        install.inside_repository(path)
    portable = scope == "shared"  # .mcp.json is committed: the same command on every machine
    change = install.plan_mcp(path, remove=remove, command=install.PORTABLE_CLI if portable else None,
                              project=project)
    where = f"{path} (this repository, this machine)" if project else str(path)
    if not change.changed:
        say(f"{where}: nothing to change")
    elif args.dry_run:
        say(f"would {'remove memlane from' if remove else 'register memlane in'} {where}:\n{change.diff()}")
    elif remove:
        say(f"memlane MCP server taken out of {where}: {install.undo(change)}")
    else:
        install.apply(change)
        flag = {"local": "", "shared": " --scope project", "user": " --scope user"}[scope]
        say(f"memlane MCP server registered in {where} (the same as `claude mcp add{flag} memlane -- memlane mcp`; "
            "check with /mcp in Claude Code)")
        if install.mcp_missing():
            say_once("memlane: warning: this installation lacks the MCP SDK; install it with: pip install "
                     "'memlane[mcp]'")
        problem = install.portable_problem(install.PORTABLE_CLI) if portable else None
        if problem:
            say_once(f"memlane: warning: {problem}")
    return 0


def cmd_mcp(args) -> int:
    from ..mcp_server import serve
    from . import every_line

    every_line()  # a command says a line once; the server runs for hours

    return serve(store_args(args), args.embedder, args.index, docs=args.docs, transcripts=args.transcripts,
                 code=args.code)


def cmd_uninstall(args) -> int:
    return cmd_install(args, remove=True)


def agent_status(args) -> dict:
    """Which agents have memlane's hooks installed, and whether this store set's daemon answers."""
    from ..hookclient import ask_daemon, daemon_key, project_root, socket_path
    from ..install import installed, settings_path

    hooks = {}
    for agent in NAMES:
        found = {}
        for scope in ("local", "shared", "user"):
            if scope == "local" and not load(agent).local_settings_file:
                continue  # no file of this machine's: its project file is the shared one
            path = settings_path(scope, agent=agent)
            if scope not in found and str(path) not in found.values() and installed(path):
                found[scope] = str(path)
        hooks[agent] = found
    stores = [str(Path(s).expanduser().resolve()) for s in (args.store or [])]
    sock = socket_path(daemon_key(project_root(None), stores, args.embedder, args.index))
    return {"hooks": hooks, "mcp": mcp_status(),
            "daemon": {"socket": sock, "running": ask_daemon(sock, "ping") is not None}}


def mcp_status() -> dict[str, dict]:
    """Where memlane's MCP server is registered with Claude Code (what ``install claude --mcp``
    writes: this repository's entry in ~/.claude.json, .mcp.json, ~/.claude.json for every project),
    each as the file and the command it starts."""
    import json

    from ..install import mcp_config_path

    found = {}
    for scope in ("local", "shared", "user"):
        path, project = mcp_config_path(scope)
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        holder = settings.get("projects", {}).get(project) if project and isinstance(settings, dict) else settings
        servers = holder.get("mcpServers") if isinstance(holder, dict) else None
        server = servers.get("memlane") if isinstance(servers, dict) else None
        if isinstance(server, dict) and isinstance(server.get("command"), str):
            args = [str(a) for a in server.get("args", []) if isinstance(a, (str, int, float))]
            found[scope] = {"path": str(path), "command": [server["command"], *args]}
    return found
