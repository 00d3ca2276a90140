"""Agent hooks: ``memlane hook session-start`` and ``memlane hook user-prompt-submit`` read the
event JSON on stdin and print what the agent should add to its context, in its own output shape
(``adapters/agents/``) — nothing else ever reaches stdout.

A hook never blocks the agent: on any failure (garbage stdin, a broken store, a locked or
corrupt index, a missing transcript) it exits 0 with no context and writes one line to
``<cache>/hook.log``. ``--explain`` prints, instead of the protocol JSON, what would be
injected, in which bracket, and why (the "what would this prompt bring back" diagnostic).

``memlane statusline`` is a statusline command: it records the context fill Claude Code
reports, for the hooks to pick how deep to inject, and prints a short status line.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from .. import logs
from ..config import cache_home
from ..index.connection import private_file
from .agents import DEFAULT, PROMPT, SESSION_START, load
from ..guards.sanitize import escape_controls, whole_characters
from ..guards.secrets import map_strings, redact

EVENTS = (SESSION_START, PROMPT)
#: a hook waits at most this long for another process's lock on the index, then reads it as it is
HOOK_BUSY_MS = 300
log = logs.get("memlane")


class _HookLog(logs.Sink):
    """``hook.log``, kept small: past ``max_bytes`` the file becomes ``hook.log.1`` (the one
    before that is dropped) and a new one begins. Its lines are ``logging``'s default format
    (time, process, logger: message), redacted (a line quotes prompts and errors) and its control
    characters escaped, written without
    ``logging``, which a fresh hook process never imports (see ``logs``)."""

    level = logs.INFO

    def __init__(self, path, max_bytes: int):
        self.path = str(path)
        self.max_bytes = max_bytes
        self.stream = None
        self._lock = threading.Lock()  # the daemon logs from several threads

    def _open(self):
        """The log quotes prompts: the user's alone (0600), an older one made so too."""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        private_file(fd)
        # a path in another encoding (lone surrogates) is escaped, not the line lost
        return os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace")

    def write(self, name: str, level: int, message: str) -> None:
        """Never raises: a log that cannot be written (a read-only cache, a folder in its place)
        loses the line, never the hook's answer. Its folder deleted while the hook runs is made
        again, once."""
        now = time.time()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        # a file's name or a prompt the line quotes may hold an escape sequence: written out, so that
        # `tail hook.log` (what the README says to look at) shows it and the terminal runs none of it
        line = f"{stamp},{int(now % 1 * 1000):03d} {os.getpid()} {name}: {escape_controls(redact(message))}\n"
        with self._lock:
            try:
                try:
                    self._write(line)
                except FileNotFoundError:  # raised opening or moving the file: no stream is open
                    os.makedirs(os.path.dirname(self.path), exist_ok=True)
                    self._write(line)
            except Exception:  # noqa: BLE001 - the line is lost, the hook goes on
                self.close()

    def _write(self, line: str) -> None:
        if self.stream is None:
            self.stream = self._open()
        if self.stream.tell() >= self.max_bytes:
            self.close()
            os.replace(self.path, self.path + ".1")
            self.stream = self._open()
        self.stream.write(line)
        self.stream.flush()

    def close(self) -> None:
        stream, self.stream = self.stream, None
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


def _file_logging() -> None:
    """Hook diagnostics go to a small rotating file: the host shows a hook's stderr only in
    its debug log, and stdout is protocol. One hook log per process: the current cache folder's."""
    try:
        path = cache_home() / "hook.log"
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # no log file: still never fail
    old = logs.sink()
    logs.send_to(_HookLog(path, max_bytes=1_000_000))
    if isinstance(old, _HookLog):
        old.close()


def read_input(stdin) -> str:
    """All of the hook's input as text. Read as bytes where the stream has them (the host's
    stdin): input that is not UTF-8 is the host's odd bytes, not memory failing, so it is read
    with U+FFFD in their place and said in one log line — a decode error on the text stream
    had lost the prompt, logged as a hook failure."""
    buffer = getattr(stdin, "buffer", None)
    data = buffer.read() if buffer is not None else stdin.read()
    return decode_input(data) if isinstance(data, (bytes, bytearray)) else data


def decode_input(data: bytes) -> str:
    """``data`` as UTF-8, with U+FFFD for each byte that is not (and one log line saying so)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        log.info("hook input is not valid UTF-8 (first at byte %d of %d): read with U+FFFD in place of "
                 "the bytes that are not", exc.start, len(data))
        return data.decode("utf-8", "replace")


def parse_payload(raw: str, agent: str = DEFAULT) -> dict:
    """The hook's stdin as the layers read it; raises ``ValueError`` on anything but a JSON object."""
    payload = json.loads(raw) if raw.strip() else {}
    if not isinstance(payload, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(payload), "a number")
        raise ValueError(f"hook input is {kind} in JSON, not an object")
    if "\\ud" in raw.lower():  # a lone surrogate ("\ud83d" cut from its pair) cannot be written anywhere
        payload = map_strings(payload, whole_characters)
    return load(agent).normalise(payload)


def handle_event(memory, event: str, payload: dict, *, explain: bool = False, agent: str = DEFAULT,
                 fabric=None) -> str:
    """What the hook prints for one event, from an open ``Memory``: the hook's output in the
    agent's shape, the ``--explain`` report, or nothing. Raises on bad input (the callers log
    and stay silent)."""
    from ..inject.layers import session_start, user_prompt

    spec = load(agent)
    started = time.perf_counter()
    if event == PROMPT and spec.prompt_event is None:
        return spec.hook_output(event, "")  # its prompt hook cannot add context
    if not memory.specs:
        log.info("hook %s: no memory folders configured for %s; nothing to inject", event, memory.cwd)
        return ""
    if event == SESSION_START:
        injection = session_start(memory, payload, dry_run=explain)
    else:
        injection = user_prompt(memory, payload, dry_run=explain, fabric=fabric,
                                **({"transcript_reader": spec.read_transcript} if spec.read_transcript else {}))
    injection.text = _final_text(injection.text, memory.config.inject.max_chars)
    injection.report["ms"] = round((time.perf_counter() - started) * 1000, 1)
    log.info("hook %s: session %s, %s chars in %.0f ms", event, payload.get("session_id"),
             len(injection.text), injection.report["ms"])
    if explain:
        from ..guards.exits import clean_data

        return (json.dumps(clean_data(injection.report), ensure_ascii=False, indent=2) + "\n\n" +
                (injection.text or "(nothing would be injected)") + "\n")
    return spec.hook_output(event, injection.text)


def _final_text(text: str, max_chars: int) -> str:
    """The one pass every injected text goes through on its way out: secrets redacted (in any
    field: a title, a hook, a path), terminal and bidi controls stripped, and the host's cap held
    whatever that changed."""
    from ..guards.exits import clean
    from ..retrieve.recalled import cut

    return cut(clean(text), max_chars)


def missing_stores(stores: list[str] | None) -> list[str]:
    """The folders the hook's command names with ``--store`` that are no folder (deleted, moved,
    mistyped), as the store is read: ``'~/notes'`` from the home folder."""
    return [folder for folder in stores or () if not os.path.isdir(os.path.expanduser(folder))]


def check_hook_command(stores: list[str] | None, embedder: str | None) -> list[str]:
    """Raise ``ConfigError`` when the hook's own command line names only stores that are no folder,
    or an embedder memlane does not know: a mistake in the installed command, said to the user once
    a session (a missing store had answered nothing, and a wrong embedder keyword-only, silently).
    Returns the stores that are missing while others are there: memory answers from those, and the
    user is told which folder is missing (:func:`with_missing_stores`)."""
    from ..errors import ConfigError

    missing = missing_stores(stores)
    if missing and len(missing) == len(stores or ()):
        named = " and ".join(f"--store {folder}" for folder in missing)
        raise ConfigError(f"the hook command's {named} {'is not a folder' if len(missing) == 1 else 'are not folders'}")
    if isinstance(embedder, str) and embedder not in ("", "none", "default"):  # an Embedder given is no name to check
        from ..embed import _BUILTIN, available_embedders

        if embedder not in _BUILTIN and embedder not in available_embedders():
            raise ConfigError(f"the hook command's --embedder {embedder!r} is no model memlane knows "
                              f"(known: {', '.join(available_embedders())}, none)")
    return missing


def with_missing_stores(out: str, event: str, payload: dict, agent: str, missing: list[str]) -> str:
    """The hook's output ``out``, telling the user — once a session, for this set of missing
    folders — which of the command's stores is no folder while the others answered; logged each time."""
    if not missing:
        return out
    import zlib

    from ..inject.session import first_time_told

    named = ", ".join(f"--store {folder}" for folder in missing)
    log.warning("hook %s: the hook command's %s: not a folder; answering from its other stores", event, named)
    topic = f"missing-store-{zlib.crc32(chr(0).join(sorted(missing)).encode('utf-8', 'surrogateescape')):08x}"
    if not first_time_told(str(payload.get("session_id") or ""), topic):
        return out
    verb = "is not a folder" if len(missing) == 1 else "are not folders"
    return load(agent).with_notice(event, out, f"memlane: the hook command's {named} {verb} (deleted, moved or "
                                               "mistyped?); memory answers from its other folders. Make the folder "
                                               "again, or fix the hook command (`memlane doctor`).")


def run_hook(event: str, *, stores: list[str] | None = None, embedder: str | None = None, index: str | None = None,
             explain: bool = False, stdin=None, stdout=None, refresh: bool = True, agent: str = DEFAULT,
             unsafe_socket_folder: str | None = None, wanted_embedder: str | None = None,
             root: str | None = None) -> int:
    """One hook event in this process. ``refresh=False``: use the index as it is when it has
    notes (the fast fallback while the daemon starts). ``unsafe_socket_folder``: the client
    refused the daemon's folder (said in the log, each time). ``wanted_embedder``: the model the
    hook's command names when this answer is keyword-only all the same (checked, not loaded).
    ``root``: the project the daemon for this hook serves (the client's answer while it starts
    must be the same project's), instead of the input's ``cwd``."""
    from .hookclient import turned_off

    if turned_off():
        return 0  # MEMLANE_OFF: memory off for this session
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    _file_logging()
    if unsafe_socket_folder:
        log.warning("the daemon's socket folder %s is not private (a folder of yours, mode 700): no daemon is "
                    "used, every prompt is answered by keyword only; `memlane doctor` says how to fix it",
                    unsafe_socket_folder)
    payload = None
    try:
        payload = parse_payload(read_input(stdin), agent)
        missing = check_hook_command(stores, wanted_embedder or embedder)
        cwd = root or (payload.get("cwd") if isinstance(payload.get("cwd"), str) else None)
        from ..memory import Memory

        with Memory(stores or None, embedder=embedder, index_path=index,
                    cwd=cwd if cwd and os.path.isdir(cwd) else None) as memory:
            memory.index.busy_timeout_ms = min(memory.index.busy_timeout_ms, HOOK_BUSY_MS)
            if not refresh and memory.has_notes():
                memory.trust_index()
            else:
                memory.prepare_for_hook()
                memory.trust_index()  # the layers ask again: one look at the files per hook call
            from ..domains.fabric import other_domains

            fabric = other_domains(memory, refresh=refresh) if event == "user-prompt-submit" else None
            try:
                out = handle_event(memory, event, payload, explain=explain, agent=agent, fabric=fabric)
                stdout.write(out if explain else with_missing_stores(out, event, payload, agent, missing))
            finally:
                if fabric is not None:
                    fabric.close()
        return 0
    except Exception as exc:  # noqa: BLE001 - a hook must never block the agent
        log.warning("hook %s failed, nothing injected: %s: %s", event, type(exc).__name__, exc)
        try:
            stdout.write(memory_off(event, payload, agent, exc))
        except Exception:  # noqa: BLE001 - not even the notice may fail the hook
            pass
        return 0


def memory_off(event: str, payload: dict | None, agent: str, exc: BaseException) -> str:
    """What a hook prints when memory cannot answer because of the setup (a broken config, an
    unreadable store or index): once per session, a line the user sees — and the model does not —
    saying memory is off, why, and what shows the fix; nothing otherwise. Unreadable hook input
    and a moment's contention (a lock held, a deadline) are not the user's setup: only logged."""
    import sqlite3

    transient = isinstance(exc, (TimeoutError, json.JSONDecodeError)) or (
        isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower())
    if payload is None or transient:
        return ""
    from ..guards.exits import clean
    from ..inject.session import first_time_told
    from ..retrieve.recalled import shorten

    if not first_time_told(str(payload.get("session_id") or ""), "memory-off"):
        return ""
    reason = shorten(clean(str(exc) or type(exc).__name__), 300)
    return load(agent).notice_output(event, f"memlane: memory is off in this session ({reason}). "
                                            "Run `memlane doctor` in this project to see what to fix.")


def run_statusline(stdin=None, stdout=None) -> int:
    """Record ``context_window`` for the hooks; print ``memlane · 23% of context used``."""
    from ..inject.session import context_percentage, write_context

    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    try:
        payload = json.loads(stdin.read() or "{}")
        window = payload.get("context_window") if isinstance(payload, dict) else None
        if isinstance(window, dict) and payload.get("session_id"):
            used = context_percentage(window.get("used_percentage"))
            write_context(str(payload["session_id"]), used, window.get("context_window_size"))
            stdout.write(f"memlane · {used:.0f}% of context used\n" if used is not None else "memlane\n")
        else:
            stdout.write("memlane\n")
    except Exception as exc:  # noqa: BLE001 - a status line must always print something
        log.info("statusline input unreadable: %s", exc)
        stdout.write("memlane\n")
    return 0


__all__ = ["EVENTS", "run_hook", "run_statusline"]
