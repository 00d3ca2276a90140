"""Gemini CLI: ``BeforeAgent`` and ``SessionStart`` in ``.gemini/settings.json`` (JSON with comments),
timeouts in milliseconds, named handlers; its chat recording (one JSON document) gives the last
reply's input tokens."""

from __future__ import annotations

from .base import Agent


def _read(path, user_turns: int):
    from ...inject.transcript import read_gemini

    return read_gemini(path, user_turns=user_turns)


AGENT = Agent(
    name="gemini", label="Gemini CLI", settings_folder=".gemini", settings_file="settings.json",
    prompt_event="BeforeAgent", session_event="SessionStart", timeout=10_000, named_handlers=True,
    posix_shell=True,  # Gemini CLI runs a hook command with `bash -c` (PowerShell on Windows)
    commented_settings=True, install_note="BeforeAgent and SessionStart", read_transcript=_read)
