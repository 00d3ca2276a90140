"""Cursor: ``.cursor/hooks.json`` (``"version": 1``, handlers listed flat under each event); only
``sessionStart`` can add context (its ``beforeSubmitPrompt`` may only let the prompt through or stop
it), answered as ``{"additional_context": …}``; the session is its ``conversation_id`` and the
project its first workspace root."""

from __future__ import annotations

import os

from .base import SESSION_START, Agent


def _normalise(payload: dict) -> dict:
    roots = payload.get("workspace_roots") if isinstance(payload.get("workspace_roots"), list) else []
    return {**payload, "session_id": payload.get("session_id") or payload.get("conversation_id") or "",
            "cwd": payload.get("cwd") or (roots[0] if roots and isinstance(roots[0], str) else None),
            "source": payload.get("source") or "startup"}


def _root(raw: str) -> str | None:
    import json  # on the hook client's path: only when this agent is asked for

    try:
        roots = json.loads(raw).get("workspace_roots") or []
        return roots[0] if roots and isinstance(roots[0], str) and os.path.isdir(roots[0]) else None
    except (ValueError, AttributeError):
        return None


def _output(event: str, text: str) -> str:
    import json

    if event != SESSION_START:
        return json.dumps({"continue": True})  # its prompt hook cannot add context: let the prompt through
    return json.dumps({"additional_context": text}, ensure_ascii=False) if text else "{}"


AGENT = Agent(
    name="cursor", label="Cursor", settings_folder=".cursor", settings_file="hooks.json", prompt_event=None,
    session_event="sessionStart", timeout=0, flat_hooks=True,
    # its project file is the one a team commits: guarded as Claude Code's shared command is
    # (``install.guarded``), so a teammate without memlane gets no hook error. The guard is the one
    # form memlane writes, ``sh -c '<one quoted word>'``: it reads the same handed to sh, bash, zsh or
    # fish. On Windows it needs an ``sh`` on the PATH (Git for Windows has one); memlane itself is
    # made for POSIX systems (README: its daemon listens on a Unix socket), so a PowerShell- or
    # cmd-only machine gets no memory from the bare command either.
    posix_shell=True,
    install_note="sessionStart only: Cursor's beforeSubmitPrompt cannot add context", tells_user=False,
    normalise=_normalise, root_from_payload=_root, output=_output)
