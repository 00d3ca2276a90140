"""memlane's loggers (``memlane.logs``): a sink takes every line when one is set; else ``logging``
does, imported only when a line would reach it."""

import json
import logging
import subprocess
import sys

from memlane import logs


class Lines(logs.Sink):
    level = logs.INFO

    def __init__(self):
        self.lines = []

    def write(self, name, level, message):
        self.lines.append((name, level, message))


def test_a_sink_takes_every_line_at_its_level_and_logging_none(caplog):
    sink = Lines()
    logs.send_to(sink)
    try:
        with caplog.at_level(logging.DEBUG, logger="memlane.test"):
            log = logs.get("memlane.test")
            log.debug("left out")
            log.info("%d notes in %s", 3, "the store")
            log.warning("one %(what)s", {"what": "mapping"})
            log.error("not formatted %d", "x")  # kept as it is, with its arguments, not lost
    finally:
        logs.send_to(None)
    assert sink.lines == [("memlane.test", logs.INFO, "3 notes in the store"),
                          ("memlane.test", logs.WARNING, "one mapping"),
                          ("memlane.test", logs.ERROR, "not formatted %d ('x',)")]
    assert caplog.records == []


def test_without_a_sink_lines_go_through_logging_from_the_caller(caplog):
    with caplog.at_level(logging.INFO, logger="memlane.test"):
        logs.get("memlane.test").info("through %s", "logging")
    (record,) = caplog.records
    assert (record.name, record.levelno, record.getMessage()) == ("memlane.test", logging.INFO, "through logging")
    assert record.filename == "test_logs.py" and record.funcName.startswith("test_without_a_sink")


def test_an_exception_line_carries_its_traceback():
    sink = Lines()
    logs.send_to(sink)
    try:
        try:
            raise ValueError("the cause")
        except ValueError:
            logs.get("memlane.test").exception("failed")
    finally:
        logs.send_to(None)
    ((_, level, message),) = sink.lines
    assert level == logs.ERROR and message.startswith("failed\nTraceback (most recent call last):")
    assert message.endswith("ValueError: the cause")


def test_info_with_nothing_set_up_does_not_import_logging_and_a_warning_still_reaches_stderr():
    """Unconfigured ``logging`` drops an info line and prints a warning (its last resort): the
    same here, without importing ``logging`` for the info line."""
    code = ("import sys, json; from memlane import logs; log = logs.get('memlane.x'); log.info('quiet'); "
            "before = 'logging' in sys.modules; log.warning('loud %s', 1); "
            "print(json.dumps([before, 'logging' in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert json.loads(proc.stdout) == [False, True]
    assert proc.stderr.strip() == "loud 1" and "quiet" not in proc.stderr


def test_a_line_that_cannot_be_formatted_never_raises_into_the_caller():
    """``logging`` never raised out of a log call (a hook's answer does not depend on its log): an
    argument whose ``str`` raises, or a ``%c`` past Unicode, is written as it is rather than
    lost or raised; one that cannot even be shown is the message alone."""

    class Unprintable:
        def __str__(self):
            raise RuntimeError("no text")

        def __repr__(self):
            return "<unprintable>"

    class Unshowable(Unprintable):
        def __repr__(self):
            raise RuntimeError("no repr either")

    sink = Lines()
    logs.send_to(sink)
    try:
        log = logs.get("memlane.test")
        log.warning("could not read %s", Unprintable())
        log.warning("a character %c", 10**10)
        log.warning("nothing to show %s", Unshowable())
    finally:
        logs.send_to(None)
    assert [m for _, _, m in sink.lines] == ["could not read %s (<unprintable>,)", "a character %c (10000000000,)",
                                             "nothing to show %s"]
