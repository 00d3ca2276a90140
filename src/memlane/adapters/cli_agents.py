"""The agent-facing subcommands: hook, statusline, serve (the daemon), install / uninstall, mcp."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..guards.exits import clean
from .cli_common import CliError, _store_args



def cmd_hook(args) -> int:
    from .daemon import tune_threads
    from .hook import run_hook

    tune_threads()
    return run_hook(args.event, stores=_store_args(args), embedder=args.embedder, index=args.index,
                    explain=args.explain, agent=args.agent)


def cmd_statusline(args) -> int:
    from .hook import run_statusline

    return run_statusline()


def cmd_serve(args) -> int:
    from .daemon import serve, tune_threads

    tune_threads()
    from .hookclient import ask_daemon, daemon_key, project_root, socket_path, start_daemon

    root = project_root(None)
    stores = [str(Path(s).expanduser().resolve()) for s in (args.store or [])]
    key = daemon_key(root, stores, args.embedder, args.index)
    path = socket_path(key)
    if args.stop:
        reply = ask_daemon(path, "stop")
        sys.stdout.write("stopped\n" if reply is not None else "no daemon running for this store set\n")
        return 0
    if not args.daemon:
        from .hook import _file_logging

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
    from .install import InstallError, apply, mcp_config_path, plan, plan_mcp, settings_path

    if getattr(args, "mcp", False):
        if args.agent != "claude":
            raise CliError("--mcp registers the MCP server with Claude Code; for other clients run `memlane mcp` "
                           "as a stdio server in their MCP settings")
        return _install_mcp(args, remove, mcp_config_path("user" if args.user else "project"), plan_mcp, apply,
                            InstallError)
    path = settings_path("user" if args.user else "project", agent=args.agent)
    try:
        change = plan(path, args.agent, remove=remove, statusline=getattr(args, "statusline", False))
    except InstallError as exc:
        raise CliError(str(exc)) from None
    verb = "remove memlane from" if remove else "install memlane into"
    if not change.changed:
        sys.stdout.write(f"{path}: nothing to change\n")
        return 0
    if args.dry_run:
        sys.stdout.write(f"would {verb} {path}:\n{clean(change.diff())}")
        return 0
    apply(change)
    done = "removed from" if remove else "installed in"
    notes = {"claude": " (UserPromptSubmit and SessionStart; open /hooks in Claude Code to check)",
             "codex": " (UserPromptSubmit and SessionStart; Codex runs hooks only with [features] codex_hooks = true"
                      " in ~/.codex/config.toml)",
             "gemini": " (BeforeAgent and SessionStart)",
             "cursor": " (sessionStart only: Cursor's beforeSubmitPrompt cannot add context)"}
    sys.stdout.write(f"memlane hooks {done} {path}" + ("" if remove else notes[args.agent]) + "\n")
    return 0


def _install_mcp(args, remove, path, plan_mcp, apply, InstallError) -> int:  # noqa: N803
    try:
        change = plan_mcp(path, remove=remove)
    except InstallError as exc:
        raise CliError(str(exc)) from None
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
    from .mcp_server import serve

    return serve(_store_args(args), args.embedder, args.index, docs=args.docs, transcripts=args.transcripts,
                 code=args.code)


def cmd_uninstall(args) -> int:
    return cmd_install(args, remove=True)


def _agent_status(args) -> dict:
    """Which agents have memlane's hooks installed, and whether this store set's daemon answers."""
    from .hookclient import ask_daemon, daemon_key, project_root, socket_path
    from .install import AGENTS, installed, settings_path

    hooks = {}
    for agent in AGENTS:
        found = {}
        for scope in ("project", "user"):
            path = settings_path(scope, agent=agent)
            if installed(path):
                found[scope] = str(path)
        hooks[agent] = found
    stores = [str(Path(s).expanduser().resolve()) for s in (args.store or [])]
    sock = socket_path(daemon_key(project_root(None), stores, args.embedder, args.index))
    return {"hooks": hooks, "daemon": {"socket": sock, "running": ask_daemon(sock, "ping") is not None}}
