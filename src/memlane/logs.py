"""memlane's loggers: every module logs through ``log = logs.get(__name__)``. A logger reaches the
standard ``logging`` module only when a line has somewhere to go there, so a hook answered in a
fresh process, whose lines go to ``hook.log`` by a sink of its own, never imports ``logging`` and
what it brings (``traceback``, ``threading``, ``weakref``, ``string``: ~10 ms of every cold hook).

Where a line goes:
- **a sink is set** (a hook process or the daemon: ``send_to``): every line at or above the sink's
  level goes to it alone (a host shows a hook's stderr as its output), never to ``logging``;
- **else through ``logging.getLogger(name)``**, as if the module had called it itself. A debug or
  info line while nothing has imported ``logging`` yet is dropped, as ``logging`` left unconfigured
  drops it (its last-resort handler prints warnings and worse only), so it is not imported for that.
"""

from __future__ import annotations

import sys

DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40


class Sink:
    """Where lines go instead of ``logging``: ``write(name, level, message)`` with the message
    already formatted (``msg % args``, and the traceback when one was asked for)."""

    level = INFO

    def write(self, name: str, level: int, message: str) -> None:  # pragma: no cover - an interface
        raise NotImplementedError

    def close(self) -> None:
        """Called when lines stop coming here."""


_sink: Sink | None = None


def send_to(sink: Sink | None) -> None:
    """From now on memlane's lines go to ``sink`` (None: to ``logging`` again)."""
    global _sink
    _sink = sink


def sink() -> Sink | None:
    return _sink


class Logger:
    """The part of ``logging.Logger`` memlane uses."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def debug(self, msg: str, *args, **kwargs) -> None:
        self._log(DEBUG, msg, args, kwargs)

    def info(self, msg: str, *args, **kwargs) -> None:
        self._log(INFO, msg, args, kwargs)

    def warning(self, msg: str, *args, **kwargs) -> None:
        self._log(WARNING, msg, args, kwargs)

    def error(self, msg: str, *args, **kwargs) -> None:
        self._log(ERROR, msg, args, kwargs)

    def exception(self, msg: str, *args, **kwargs) -> None:
        self._log(ERROR, msg, args, {"exc_info": True, **kwargs})

    def _log(self, level: int, msg: str, args: tuple, kwargs: dict) -> None:
        out = _sink
        if out is not None:
            if level >= out.level:
                out.write(self.name, level, _message(msg, args, kwargs))
            return
        if level < WARNING and "logging" not in sys.modules:
            return  # nobody has set logging up: it would drop this line too
        import logging

        logging.getLogger(self.name).log(level, msg, *args, stacklevel=3, **kwargs)


def _message(msg: str, args: tuple, kwargs: dict) -> str:
    """The line as ``logging`` would write its message: ``msg % args`` (a mapping alone as the
    mapping), the traceback after it when ``exc_info`` asks; a message that cannot be formatted
    (whatever formatting raises) is written as it is, with its arguments, rather than lost or
    raised into the caller."""
    text = str(msg)
    if args:
        if len(args) == 1 and isinstance(args[0], dict) and args[0]:
            args = args[0]
        try:
            text = text % args
        except Exception:  # noqa: BLE001 - logging never raises out of a log call either
            try:
                text = f"{text} {args!r}"
            except Exception:  # noqa: BLE001 - not even shown: the message alone
                pass
    exc_info = kwargs.get("exc_info")
    if exc_info:
        import traceback

        if isinstance(exc_info, BaseException):
            exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
        elif not isinstance(exc_info, tuple):
            exc_info = sys.exc_info()
        if exc_info[0] is not None:
            text += "\n" + "".join(traceback.format_exception(*exc_info)).rstrip("\n")
    return text


def get(name: str) -> Logger:
    return Logger(name)
