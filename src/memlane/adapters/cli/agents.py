"""The agent-facing commands: ``hook`` (what an agent's hook runs), ``statusline``, ``serve`` (the
background daemon the hooks talk to), ``install`` / ``uninstall`` (register the hooks with an agent),
``mcp`` (memory as an MCP server)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ...errors import UsageError
from ...guards.exits import clean
from ..agents import DEFAULT, NAMES, PROMPT, SESSION_START, load
from .common import command, store_args


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
            examples='example (in .claude/settings.json):\n  "statusLine": {"type": "command", "command": "memlane '
                     'statusline"}')

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
                    examples=f"examples:\n  memlane {verb} claude\n  memlane {verb} claude --user --dry-run\n"
                             f"  memlane {verb} codex")
        p.add_argument("agent", choices=NAMES, help="the agent whose settings to change")
        p.add_argument("--user", action="store_true",
                       help="the agent's settings in your home folder (every project) instead of this repository's")
        if verb == "install":
            p.add_argument("--statusline", action="store_true",
                           help="also make memlane the status line (it tells the hooks how full the context is)")
        p.add_argument("--mcp", action="store_true", help="the MCP server instead (.mcp.json, or ~/.claude.json with "
                                                          "--user)")
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
    from ..install import InstallError, apply, mcp_config_path, plan, plan_mcp, settings_path

    if getattr(args, "mcp", False):
        if args.agent != "claude":
            raise UsageError("--mcp registers the MCP server with Claude Code; for other clients run `memlane mcp` "
                           "as a stdio server in their MCP settings")
        return _install_mcp(args, remove, mcp_config_path("user" if args.user else "project"), plan_mcp, apply,
                            InstallError)
    path = settings_path("user" if args.user else "project", agent=args.agent)
    try:
        change = plan(path, args.agent, remove=remove, statusline=getattr(args, "statusline", False))
    except InstallError as exc:
        raise UsageError(str(exc)) from None
    verb = "remove memlane from" if remove else "install memlane into"
    if not change.changed:
        sys.stdout.write(f"{path}: nothing to change\n")
        return 0
    if args.dry_run:
        sys.stdout.write(f"would {verb} {path}:\n{clean(change.diff())}")
        return 0
    apply(change)
    done = "removed from" if remove else "installed in"
    sys.stdout.write(f"memlane hooks {done} {path}" + ("" if remove else f" ({load(args.agent).install_note})") + "\n")
    return 0


def _install_mcp(args, remove, path, plan_mcp, apply, InstallError) -> int:  # noqa: N803
    try:
        change = plan_mcp(path, remove=remove)
    except InstallError as exc:
        raise UsageError(str(exc)) from None
    if not change.changed:
        sys.stdout.write(f"{path}: nothing to change\n")
    elif args.dry_run:
        sys.stdout.write(f"would {'remove memlane from' if remove else 'register memlane in'} {path}:\n{clean(change.diff())}")
    else:
        apply(change)
        sys.stdout.write(f"memlane MCP server {'removed from' if remove else 'registered in'} {path}"
                         + ("" if remove else " (the same as `claude mcp add memlane -- memlane mcp`; needs the "
                            "[mcp] extra: pip install 'memlane[mcp]')") + "\n")
    return 0


def cmd_mcp(args) -> int:
    from ..mcp_server import serve

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
        for scope in ("project", "user"):
            path = settings_path(scope, agent=agent)
            if installed(path):
                found[scope] = str(path)
        hooks[agent] = found
    stores = [str(Path(s).expanduser().resolve()) for s in (args.store or [])]
    sock = socket_path(daemon_key(project_root(None), stores, args.embedder, args.index))
    return {"hooks": hooks, "daemon": {"socket": sock, "running": ask_daemon(sock, "ping") is not None}}
