"""Claude Code: ``UserPromptSubmit`` and ``SessionStart`` hooks in ``.claude/settings.json`` (timeouts
in seconds), the ``hookSpecificOutput`` JSON on stdout, a JSONL transcript whose last main-thread
assistant ``usage`` says how full the context is, and a status line that reports it directly."""

from __future__ import annotations

from .base import Agent


def _read(path, user_turns: int):
    from ...inject.transcript import read_jsonl

    return read_jsonl(path, user_turns=user_turns)


AGENT = Agent(
    name="claude", label="Claude Code", settings_folder=".claude", settings_file="settings.json",
    local_settings_file="settings.local.json",
    prompt_event="UserPromptSubmit", session_event="SessionStart", timeout=10,
    # every source Claude Code starts a session with: "fork" (a forked session) since 2.1.214, "resume" before
    session_matcher="startup|resume|clear|compact|fork", statusline=True, posix_shell=True,
    install_note="UserPromptSubmit and SessionStart; open /hooks in Claude Code to check",
    read_transcript=_read)
