"""The write path's judgement (W1, W2): before a note is written, what is already there?

**Consolidating add** (Mem0's write discipline, Chhikara et al. 2025 — without a model call):
the draft is compared with its nearest notes (the recall pipeline finds them; closeness is
the embedder's cosine on its own scale, and word overlap) and one of four is advised:

- ``NOOP`` — a note already says this (near-identical, or the draft adds no new words, and no
  figure the note lacks);
- ``UPDATE`` — a note on the same subject (or of the same name) exists and the draft adds to
  it: applied, the draft is appended to that note as a dated update;
- ``SUPERSEDE`` — a note on the same subject says otherwise (one says "always X", the other
  "never X"; or they give the same setting different numbers): applied, the draft is written
  as a new note with ``supersedes: [old]`` (recall then demotes the old note; its file stays);
- ``ADD`` — nothing close: the draft is written as a new note.

Every advice lists the candidates with their similarities and the reason, so the caller (a
person, or an agent over MCP) can overrule it. Nothing is ever deleted.

**Link suggestion** (A-MEM's link generation, Xu et al. 2025): the notes a note's own text
recalls, above the recall threshold and not yet linked, are proposed as ``[[links]]`` with
why; applied, they are appended as one ``Related:`` line.
"""

from __future__ import annotations

import re
import time

from ..index.text import STOPWORDS, query_terms
from ..records import dataclass, field
from ..store.write import Draft

ADD, UPDATE, SUPERSEDE, NOOP = "ADD", "UPDATE", "SUPERSEDE", "NOOP"
#: closeness, 0..1: how far the draft's cosine to a note rises above its typical cosine to
#: the store's notes (the median), towards 1 — passages of one store sit at ~0.73 with each
#: other whatever they say (e5-minilm, measured on the demo and agent_notes_dev stores)
SAME_SUBJECT = 0.35  # ... at least this: the same subject
CLOSE = 0.5  # ... at least this: the same specific thing (an UPDATE, or a NOOP when it adds nothing)
#: without an embedder, closeness is the mean of containment and Jaccard of content words
COVERED = 0.9  # share of the draft's content words a note already has: the draft adds nothing

@dataclass
class Candidate:
    """An existing note close to a new one, and how close."""

    name: str
    path: str
    closeness: float  # 0..1: the embedder's cosine on its own scale, or word overlap
    overlap: float  # Jaccard of content words
    cosine: float | None
    disagreement: str | None = None

    @property
    def shown(self) -> str:
        """Its closeness as the advice says it: two decimals of the three ``as_dict`` keeps, so the
        advice and the list of candidates below it never differ by a rounding."""
        return f"{round(self.closeness, 3):.2f}"

    def as_dict(self) -> dict:
        return {"name": self.name, "path": self.path, "closeness": round(self.closeness, 3),
                "word_overlap": round(self.overlap, 3),
                "cosine": None if self.cosine is None else round(self.cosine, 4),
                "disagreement": self.disagreement}


@dataclass
class Advice:
    """Whether to write a new note, update one, or merge: the action and the reason."""

    action: str
    reason: str
    target: Candidate | None = None
    candidates: list[Candidate] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"advice": self.action, "reason": self.reason,
                "target": self.target.as_dict() if self.target else None,
                "candidates": [c.as_dict() for c in self.candidates]}


def words(text: str) -> set[str]:
    return set(query_terms(text or ""))


def overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


#: "never X", "don't use X", "avoid X": the X a text forbids
_NEGATIVE = re.compile(r"(?i)\b(?:never|don't|do not|avoid|must not|should not|shouldn't|stop|no longer)\s+"
                       r"(?:use |using |run |running |add |adding |rely on |call |calling )?([\w.+#/-]+)")
#: "always X", "use X", "prefer X": the X a text asks for
_POSITIVE = re.compile(r"(?i)(?:\b(?:always|must|should)\s+(?:use |run |add |rely on |call )?|(?:^|[.;:!?]\s+|\n[-*\d.)\s]*)"
                       r"(?:use|prefer|run|add|enable|call)\s+)([\w.+#/-]+)")
#: an explicit setting: ``lock_timeout = 5s``, ``max-retries: 3``, ``set `pool_size` to 20``. Bare versions
#: ("Postgres 14", "v0.4.0") are left out: notes written at different times name different versions
#: without disagreeing (on agent_notes_dev every version pair was history, not conflict)
_SETTING = re.compile(r"(?<![\w.-])`?([a-z][a-z0-9]*(?:[_.-][a-z0-9]+)+)`?\s*(?:=|:)\s*[\"'`]?(\d[\d.]*[a-z]{0,3})\b"
                      r"|\bset\s+`?([\w.-]+)`?\s+to\s+`?(\d[\d.]*[a-z]{0,3})\b")


def disagreement(a: str, b: str, *, this: str = "this note", other: str = "the other") -> str | None:
    """How text ``a`` and text ``b`` (on one subject) may disagree, or None: a word one asks
    for and the other forbids, or one setting given two values. Only one-sided stances count:
    a text that says both "use X" and "never X" holds no clear position on X. A heuristic that
    flags candidates (lint, the write path's SUPERSEDE); it does not decide which is right."""
    (pos_a, neg_a), (pos_b, neg_b) = _stances(a), _stances(b)
    for word in sorted((pos_a - neg_a) & (neg_b - pos_b)):
        return f"{this} says to use \"{word}\" where {other} says never to / to avoid it"
    for word in sorted((neg_a - pos_a) & (pos_b - neg_b)):
        return f"{this} says never to use / to avoid \"{word}\" where {other} says to use it"
    values_a, values_b = _values(a), _values(b)
    for key in sorted(values_a.keys() & values_b.keys()):
        va, vb = values_a[key], values_b[key]
        if len(va) == 1 and len(vb) == 1 and va != vb and not (va & _words_raw(b) or vb & _words_raw(a)):
            return f"they give {key} different values ({next(iter(va))} in {this}, {next(iter(vb))} in {other})"
    return None


def _stances(text: str) -> tuple[set[str], set[str]]:
    """Objects the text asks for (always X, use X) and forbids (never X, avoid X)."""
    neg = {m.group(1).lower().strip(".") for m in _NEGATIVE.finditer(text)}
    pos = {m.group(1).lower().strip(".") for m in _POSITIVE.finditer(text)}

    def meaningful(word: str) -> bool:
        return len(word) > 2 and word not in STOPWORDS and not word.isdigit()

    return {w for w in pos if meaningful(w)}, {w for w in neg if meaningful(w)}


def _values(text: str) -> dict[str, set[str]]:
    """Settings the text gives: ``key = 30``, ``set x to 5``."""
    found: dict[str, set[str]] = {}
    for m in _SETTING.finditer(text):
        key, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        found.setdefault(key.lower(), set()).add(value.rstrip("."))
    return found


def _words_raw(text: str) -> set[str]:
    return set(re.findall(r"[\w.]+", text))


def draft_text(draft: Draft) -> str:
    """The draft as the index embeds a note (name: description, then the body)."""
    name = draft.name.replace("_", " ").replace("-", " ")
    return f"{name}: {draft.description.strip()}\n\n{draft.body.strip()}"


def advise(draft: Draft, neighbours: list[dict], cosines: dict[str, float], *, base: float | None,
           same_name: dict | None) -> Advice:
    """The advice for ``draft``, given its nearest notes (recall results at full depth), their
    cosines to the draft (by path; empty without an embedder), the draft's median cosine to
    the store (``base``), and the note that already has the draft's name, if any."""
    mine = words(f"{draft.description} {draft.body}")
    candidates = []
    for note in neighbours:
        theirs = words(f"{note.get('description', '')} {note.get('body', '')}")
        share = overlap(mine, theirs)
        cosine = cosines.get(note["path"])
        if cosine is not None and base is not None and base < 1:
            closeness = max(0.0, min(1.0, (cosine - base) / (1 - base)))
        else:
            closeness = (share + _covered(mine, note)) / 2
        candidates.append(Candidate(note["name"], note["path"], closeness, share, cosine,
                                    disagreement(f"{draft.description}. {draft.body}",
                                                 f"{note.get('description', '')}. {note.get('body', '')}",
                                                 this="the new note", other="the existing one")))
    candidates.sort(key=lambda c: -c.closeness)
    if same_name is not None:
        target = next((c for c in candidates if c.path == same_name["path"]), None) or Candidate(
            same_name["name"], same_name["path"], 1.0,
            overlap(mine, words(f"{same_name.get('description', '')} {same_name.get('body', '')}")), None)
        covered = _says_already(mine, same_name)
        if covered is not None:
            return Advice(NOOP, f"a note named {draft.name!r} already says this ({covered:.0%} of the draft's words)",
                          target, candidates)
        return Advice(UPDATE, f"a note named {draft.name!r} exists; the draft adds to it", target, candidates)
    if not candidates or candidates[0].closeness < SAME_SUBJECT:
        return Advice(ADD, "no note is on this subject", None, candidates)
    best = candidates[0]
    if best.disagreement:
        return Advice(SUPERSEDE, f"{best.name} is on the same subject (closeness {best.shown}) but "
                      f"disagrees: {best.disagreement}", best, candidates)
    if best.closeness >= CLOSE:
        note = next(n for n in neighbours if n["path"] == best.path)
        covered = _says_already(mine, note)
        if covered is not None:
            return Advice(NOOP, f"{best.name} already says this (closeness {best.shown}; it has "
                          f"{covered:.0%} of the draft's words)", best, candidates)
        new = len(mine - words(f"{note.get('description', '')} {note.get('body', '')}"))
        return Advice(UPDATE, f"{best.name} is about the same thing (closeness {best.shown}); the draft "
                      f"adds {new} new word{'s' if new != 1 else ''} to it", best, candidates)
    related = ", ".join(c.name for c in candidates[:3] if c.closeness >= SAME_SUBJECT)
    return Advice(ADD, f"no note says this yet; related: {related} (consider linking them)", None, candidates)


def _says_already(mine: set[str], note: dict) -> float | None:
    """The share of the draft's words ``note`` has, when it has enough (``COVERED``) and every
    figure of the draft ("16" where it says "8 GB": a changed figure is the news of a draft that
    otherwise repeats its note); None when the draft adds to it."""
    theirs = words(f"{note.get('description', '')} {note.get('body', '')}")
    covered = len(mine & theirs) / len(mine) if mine else 1.0
    new_figure = any(any(ch.isdigit() for ch in w) for w in mine - theirs)
    return covered if covered >= COVERED and not new_figure else None


def _covered(mine: set[str], note: dict) -> float:
    theirs = words(f"{note.get('description', '')} {note.get('body', '')}")
    return len(mine & theirs) / len(mine) if mine else 1.0


def update_text(old: str, draft: Draft, now: float | None = None) -> str:
    """``old`` with the draft appended as a dated update (nothing of ``old`` removed)."""
    day = time.strftime("%Y-%m-%d", time.localtime(now))
    addition = draft.body.strip() or draft.description.strip()
    if draft.description.strip() and draft.description.strip() not in old and draft.body.strip():
        addition = f"{draft.description.strip()}. {addition}"
    return old.rstrip("\n") + f"\n\nUpdate ({day}): {addition}\n"


def with_links(old: str, names: list[str]) -> str:
    """``old`` with ``[[names]]`` added to its ``Related:`` line (appended if there is none)."""
    links = ", ".join(f"[[{n}]]" for n in names)
    lines = old.rstrip("\n").split("\n")
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("Related: "):
            lines[i] = f"{lines[i].rstrip()}, {links}"
            return "\n".join(lines) + "\n"
    return "\n".join(lines) + f"\n\nRelated: {links}\n"
