"""Codex CLI: the same hook shape as Claude Code in ``.codex/hooks.json`` (seconds), only run with
``[features] codex_hooks = true``; its rollout transcript's last ``token_count`` event gives the
context fill and the window. After a compaction Codex sends ``SessionStart`` with source
``compact``, as Claude Code does, so the session's dedup state is reset there."""

from __future__ import annotations

from .base import Agent


def _read(path, user_turns: int):
    from ...inject.transcript import read_jsonl

    return read_jsonl(path, user_turns=user_turns)


AGENT = Agent(
    name="codex", label="Codex CLI", settings_folder=".codex", settings_file="hooks.json",
    prompt_event="UserPromptSubmit", session_event="SessionStart", timeout=10,
    # after a compaction Codex starts the session again with source "compact": the hook resets what it has seen
    session_matcher="startup|resume|clear|compact",
    posix_shell=True,  # Codex runs a hook command with the login shell: `$SHELL -lc COMMAND`
    install_note="UserPromptSubmit and SessionStart; Codex runs hooks only with [features] codex_hooks = true in "
                 "~/.codex/config.toml",
    read_transcript=_read)
