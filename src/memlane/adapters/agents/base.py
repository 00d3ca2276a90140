"""What memlane needs to know of one agent (a coding assistant whose hooks it serves), as data.

Each agent is one small module of this package holding one ``Agent``: how its hook input reads,
what its hook output looks like, which settings file registers hooks and in which unit its
timeouts are, how its transcript says how full the context is, and what to tell the user when
installing. The hook, the hook client, ``install``, ``doctor`` and the CLI's choices all read the
registry (``agents/__init__.py``); adding an agent is adding one module.

Standard library only, and nothing heavy at import: the hook client reads this on every prompt.
"""

from __future__ import annotations

#: memlane's own event names (what ``memlane-hook EVENT`` is called with)
SESSION_START = "session-start"
PROMPT = "user-prompt-submit"


def _same(payload: dict) -> dict:
    return payload


def _no_root(raw: str) -> str | None:
    return None


class Agent:
    """One agent (see the module docstring). A plain class, not a dataclass: the hook client
    imports this on every prompt, and ``dataclasses`` costs milliseconds to import."""

    __slots__ = ("name", "label", "settings_folder", "settings_file", "local_settings_file", "prompt_event",
                 "session_event", "timeout", "session_matcher", "statusline", "flat_hooks", "named_handlers",
                 "posix_shell", "commented_settings", "install_note", "tells_user", "normalise", "root_from_payload",
                 "output", "read_transcript")

    def __init__(self, *, name: str, label: str, settings_folder: str, settings_file: str, prompt_event: str | None,
                 local_settings_file: str | None = None,
                 session_event: str, timeout: int, session_matcher: str | None = None, statusline: bool = False,
                 flat_hooks: bool = False, named_handlers: bool = False, posix_shell: bool = False,
                 commented_settings: bool = False, install_note: str = "",
                 tells_user: bool = True, normalise=_same, root_from_payload=_no_root, output=None,
                 read_transcript=None):
        self.name = name  # the registry key and the ``--agent`` value
        self.label = label  # how users call it
        self.settings_folder = settings_folder  # where its hook settings live, in the repository or the home folder
        self.settings_file = settings_file  # the one a team commits
        self.local_settings_file = local_settings_file  # this machine's, beside it (None: the agent has none)
        self.prompt_event = prompt_event  # its name for the prompt event; None: its prompt hook cannot add context
        self.session_event = session_event  # its name for the session-start event
        self.timeout = timeout  # the hook timeout memlane registers, in the agent's own unit
        self.session_matcher = session_matcher  # which session starts run the hook (None: every one)
        self.statusline = statusline  # it can run a status line command that reports the context fill
        self.flat_hooks = flat_hooks  # its settings list handlers directly under an event (no matcher groups)
        self.named_handlers = named_handlers  # each handler carries a "name"
        #: its committed hook command is guarded (``sh -c '…'``, ``install.guarded``): it steps aside where memlane
        #: is missing
        self.posix_shell = posix_shell
        #: it reads its settings file as JSON with comments, so memlane reads it so too (and never writes it back)
        self.commented_settings = commented_settings
        self.install_note = install_note  # what the user should know after ``memlane install``
        self.tells_user = tells_user  # its hook output may carry a "systemMessage" the user sees, the model not
        #: the hook input in the shape memlane's layers read (session id, working folder, prompt)
        self.normalise = normalise
        #: the project root the raw hook input names, for agents that do not run hooks in the project
        self.root_from_payload = root_from_payload
        #: (event, text) -> the hook's stdout injecting ``text`` ("" for nothing); None: hookSpecificOutput
        self.output = output
        #: (path, user_turns) -> inject.transcript.TranscriptView, reading the agent's own transcript
        self.read_transcript = read_transcript

    def hook_output(self, event: str, text: str) -> str:
        if self.output is not None:
            return self.output(event, text)
        return hook_specific_output(self.session_event if event == SESSION_START else self.prompt_event, text)

    def notice_output(self, event: str, message: str) -> str:
        """The hook's stdout telling the user ``message`` (shown to the user, not given to the
        model) and injecting nothing; the no-context output when the agent has no such field."""
        if not self.tells_user:
            return self.hook_output(event, "")
        import json

        name = self.session_event if event == SESSION_START else self.prompt_event
        return json.dumps({"systemMessage": message, "hookSpecificOutput": {"hookEventName": name}},
                          ensure_ascii=False)

    def with_notice(self, event: str, output: str, message: str) -> str:
        """``output`` (the hook's stdout, possibly nothing) also telling the user ``message``, as
        :meth:`notice_output` does; ``output`` as it is when the agent has no such field."""
        if not self.tells_user:
            return output
        if not output:
            return self.notice_output(event, message)
        import json

        data = json.loads(output)
        return json.dumps({"systemMessage": message, **data}, ensure_ascii=False) if isinstance(data, dict) else output

    def __repr__(self) -> str:
        return f"Agent({self.name!r})"


def hook_specific_output(event_name: str | None, text: str) -> str:
    """The ``hookSpecificOutput`` shape Claude Code (and agents that copy it) read."""
    import json

    if not text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}},
                      ensure_ascii=False)
