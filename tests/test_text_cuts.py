"""Every text memlane shortens is cut at a word boundary, with an ellipsis: previews, session-start
lines, MCP summaries, transcript titles, and the host's hard cap on an injection."""

from __future__ import annotations

import json
import re

import pytest

from conftest import write_note
from memlane.retrieve.recalled import cut, shorten

WORDY = ("Always invoke the ready command before closing an issue; the smoke step is the gate that catches "
         "regressions nobody wrote a test for, and skipping it has cost two releases already this quarter")


def ends_on_a_word(text: str, source: str) -> bool:
    """``text`` is a prefix of ``source`` ending where a word ends, plus "…"."""
    assert text.endswith("…")
    head = text[:-1]
    at = " ".join(source.split()).find(head)
    flat = " ".join(source.split())
    return at == 0 and (len(head) == len(flat) or not flat[len(head)].isalnum() or not head[-1].isalnum())


@pytest.mark.parametrize("limit", [20, 41, 60, 97, 160])
def test_shorten_and_cut_end_on_a_word(limit):
    for out in (shorten(WORDY, limit), cut(WORDY, limit)):
        assert len(out) <= limit and ends_on_a_word(out, WORDY), out
    assert shorten("short", 10) == "short" and cut("two\nlines", 50) == "two\nlines"
    assert cut("x" * 50, 10) == "x" * 9 + "…"  # one long word: cut inside it, still within the limit


def test_the_hosts_cap_cuts_on_a_word(tmp_path):
    from memlane.adapters.hook import _final_text

    out = _final_text(WORDY * 3, 101)
    assert len(out) <= 101 and ends_on_a_word(out, WORDY * 3)


def test_session_start_and_mcp_summaries_cut_on_words(tmp_path):
    from memlane import Memory
    from memlane.inject.layers import session_start

    store = tmp_path / "store"
    for n in range(3):
        write_note(store, f"feedback_{n}.md", f"---\nname: feedback_{n}\ndescription: {WORDY}\ntype: feedback\n---\n"
                                               f"{WORDY}\n")
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        text = session_start(memory, {"session_id": "s", "source": "startup"}, dry_run=True).text
    cut_lines = [line for line in text.splitlines() if "…" in line]
    assert cut_lines
    for line in cut_lines:
        preview = re.search(r": (.*?…)", line).group(1)
        assert ends_on_a_word(preview, WORDY), preview

    from memlane.adapters.mcp_server import _shape_hit
    from memlane.memory import Depth

    text = "So: " + WORDY  # the 160th character falls inside a word
    shaped = _shape_hit({"domain": "knowledge", "address": "a#b", "activation": 0.5, "text": text, "path": "p"},
                        Depth.SUMMARY)
    assert len(shaped["summary"]) <= 160 and ends_on_a_word(shaped["summary"], text)
    json.dumps(shaped)
