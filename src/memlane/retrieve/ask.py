"""What of a prompt recall reads: the ask, without the tool output pasted around it.

An agent's prompt often carries a pasted block — a traceback, a test run, a log, a diff, a JSON
reply — before or after the words that say what is wanted ("why does this fail?", "fix this").
Read whole, the block drowns the ask: its words fill the keyword leg and its text most of what
the embedder reads, and recall brings notes about the paste's vocabulary, or nothing. Measured
with ``bench/long_prompts.py``: on agent_notes_dev, delivered recall fell from 0.670 to 0.37–0.56
with a block pasted, on the demo from 0.800 to 0.21–0.57.

So a long prompt is read without its pasted blocks: a fenced block (```), and any run of three
or more lines that read as machine output or code — indented, mostly symbols or digits, few
plain words, or opening with the same two words line after line ("npm warn …"); a line
between two such lines goes with them. Lines that read as sentences stay, so an error's own
headline ("TypeError: … is required") is still searched. When what is left is too little to
search (fewer than ``MIN_TERMS`` content words: "what's this?" under a log), the whole prompt
is read, since the paste is then all there is to go on. The judge and ``paths:`` triggers still
see the prompt as written.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..index.text import query_terms

#: a prompt shorter than this is read whole: too short to hold a pasted block worth taking out
MIN_CHARS = 400
#: a pasted block is a run of at least this many machine lines
MIN_RUN = 3
#: fewer content words than this left: the whole prompt is read
MIN_TERMS = 3
#: nor fewer letters of an unspaced script (Chinese, Japanese) than this
MIN_UNSPACED_LETTERS = 6

_EDGES = re.compile(r"^\W+|\W+$")
_LIST_ITEM = re.compile(r"^\s*([-*+•]|\d{1,3}[.)])\s")
_CODE_CHARS = frozenset("{}[]()<>=;/\\|@#$%^&*_~+`")


def the_ask(prompt: str) -> str:
    """``prompt`` without its pasted blocks, or ``prompt`` itself (see the module's docstring)."""
    if len(prompt) < MIN_CHARS:
        return prompt
    return _the_ask(prompt)


@lru_cache(maxsize=64)  # one prompt is asked for by recall, the menu and the deep layer in turn
def _the_ask(prompt: str) -> str:
    lines = prompt.split("\n")
    pasted = _pasted(lines)
    kept, at = [], 0
    while at < len(lines):
        if not pasted[at]:
            kept.append(lines[at])
            at += 1
            continue
        end = at
        while end < len(lines) and (pasted[end] or not lines[end].strip()):
            end += 1
        if sum(pasted[at:end]) < MIN_RUN:  # a line or two of code in a sentence's company stays
            kept += lines[at:end]
        at = end
    ask = "\n".join(kept).strip()
    if ask == prompt.strip():
        return prompt
    unspaced = sum(c.isalpha() and not c.isascii() for c in ask)
    return ask if len(query_terms(ask)) >= MIN_TERMS or unspaced >= MIN_UNSPACED_LETTERS else prompt


def _pasted(lines: list[str]) -> list[bool]:
    """Whether each line reads as pasted output: fenced, machine-like, or in a run of lines
    opening with the same two words, or between two such lines."""
    flags, fenced = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            flags.append(True)
        else:
            flags.append(fenced or _machine(line))
    firsts = [" ".join(line.split()[:2]) for line in lines]
    at = 0
    while at < len(lines):
        end = at
        while end + 1 < len(lines) and firsts[end + 1] == firsts[at]:
            end += 1
        if end - at + 1 >= MIN_RUN and any(c.isalpha() for c in firsts[at]):
            flags[at:end + 1] = [True] * (end - at + 1)
        at = end + 1
    written = [n for n, line in enumerate(lines) if line.strip()]
    for before, line, after in zip(written, written[1:], written[2:]):
        if flags[before] and flags[after]:
            flags[line] = True
    return flags


def _machine(line: str) -> bool:
    """Whether one line reads as machine output or code rather than a person's sentence."""
    text = line.strip()
    if not text:
        return False
    if line.startswith("\t") or (line.startswith("  ") and not _LIST_ITEM.match(line)):
        return True  # indented: code, a stack frame, a log's continuation (a list item is prose)
    if sum(c in _CODE_CHARS for c in text) >= max(3, 0.08 * len(text)):
        return True
    letters = sum(c.isalpha() for c in text)
    if letters + text.count(" ") < 0.6 * len(text):
        return True  # mostly digits and symbols: timestamps, hashes, rulers of =====
    if sum(c.isalpha() and not c.isascii() for c in text) * 2 > letters:
        return False  # a script written without spaces between words: judged by its letters alone
    tokens = text.split()
    return sum(map(_plain_word, tokens)) < 0.6 * len(tokens)


def _plain_word(token: str) -> bool:
    word = _EDGES.sub("", token)
    return len(word) >= 2 and word.replace("'", "").replace("’", "").replace("-", "").isalpha()
