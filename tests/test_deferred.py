"""Writes held for after the answer (deferred.py): made at once outside ``deferring``; inside it,
made in order when the block ends — none when it raised; one failing write never stops the rest."""

from __future__ import annotations

import pytest

from memlane.deferred import deferring, later


def test_outside_a_deferring_block_a_write_is_made_at_once():
    made = []
    later(lambda: made.append(1))
    assert made == [1]


def test_inside_one_the_writes_wait_for_its_end_and_keep_their_order():
    made = []
    with deferring():
        later(lambda: made.append("state"))
        later(lambda: made.append("verdicts"))
        assert made == []
    assert made == ["state", "verdicts"]


def test_a_failing_write_is_logged_and_the_others_are_still_made(caplog):
    made = []

    def broken():
        raise OSError("disk full")

    with deferring():
        later(broken)
        later(lambda: made.append("verdicts"))
    assert made == ["verdicts"] and "disk full" in caplog.text


def test_a_block_that_raises_writes_nothing():
    made = []
    with pytest.raises(TimeoutError), deferring():
        later(lambda: made.append("state"))
        raise TimeoutError("past the request's deadline")
    assert made == []
    later(lambda: made.append("after"))  # and the next write outside is made at once again
    assert made == ["after"]
