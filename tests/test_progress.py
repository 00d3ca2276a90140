"""Progress on stderr: silent for quick work, one plain line every few seconds outside a terminal
once work passes two seconds, a bar with rate and time left on a terminal."""

from __future__ import annotations

import io

from memlane.adapters.progress import ProgressBar, eta


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_quick_work_outside_a_terminal_prints_nothing():
    clock, out = Clock(), io.StringIO()
    bar = ProgressBar(out, clock=clock)
    for done in range(0, 101, 10):
        clock.now += 0.1
        bar("embed", done, 100)
    assert out.getvalue() == ""


def test_long_work_outside_a_terminal_says_where_it_is_every_few_seconds():
    clock, out = Clock(), io.StringIO()
    bar = ProgressBar(out, clock=clock)
    for done in range(0, 301):
        clock.now += 0.1  # 10 notes a second: 30 s in all
        bar("embed", done, 300)
    lines = out.getvalue().splitlines()
    assert 5 <= len(lines) <= 8  # one every 5 s after the first 2 s, and the last
    assert lines[0].startswith("memlane: embedding ") and "/s, about" in lines[0] and "left)" in lines[0]
    assert lines[-1].startswith("memlane: embedding 300/300") and "left" not in lines[-1]


def test_a_terminal_gets_a_bar_with_the_time_left():
    clock, out = Clock(), Tty()
    bar = ProgressBar(out, clock=clock)
    for done in range(0, 101):
        clock.now += 0.5
        bar("index", done, 100)
    text = out.getvalue()
    assert "\r" in text and "[####" in text and "left)" in text and text.endswith("\n")


def test_eta_reads_like_speech():
    assert eta(0.2) == "1 s" and eta(42) == "42 s" and eta(150) == "2 min" and eta(7200) == "2.0 h"
