"""``Recalled``: one recalled unit — a note, a document section, a transcript turn, a code symbol
— from the moment the pipeline (or a domain) chooses it to the edge that serialises it (the
CLI's text and ``--json``, the MCP answer, the hook's injected text), with its explanation.

The library hands these out; adapters turn them into text or JSON with ``as_dict(depth)``. For
code written against the plain dicts recall used to return, a ``Recalled`` also reads like a
mapping of that dict (``r["name"]``, ``r.get("explain")``).
"""

from __future__ import annotations


from ..modes import Depth
from ..records import asdict, dataclass, field, replace

PREVIEW_CHARS = 80


@dataclass(frozen=True)
class Explanation:
    """Why a note was recalled: both legs, the fusion, the association, the score's factors."""

    bm25: float | None = None  # raw BM25 (higher = better)
    bm25_norm: float = 0.0  # its min-max normalisation in this query
    cosine: float | None = None
    vector: float = 0.0  # the cosine on the model's own scale, 0-1
    fused: float = 0.0
    bm25_rank: int | None = None
    vector_rank: int | None = None
    matched_fields: dict = field(default_factory=dict)  # field -> query terms found there
    notes: tuple[str, ...] = ()
    activation: float = 0.0  # what spreading activation added
    relevance: float = 0.0  # text relevance plus activation
    importance: float = 1.0
    recency: float = 1.0
    base_level: float | None = None  # ACT-R base-level activation from past uses
    state: str = "active"
    path: tuple[str, ...] = ()  # "seed", or "via [[a]] → [[b]]" with the activation at each hop
    risk: str | None = None  # why it is never injected automatically, if so

    def as_dict(self) -> dict:
        data = asdict(self)
        data["notes"], data["path"] = list(self.notes), list(self.path)
        return data


@dataclass(frozen=True)
class Recalled:
    """One recalled unit (see the module docstring). For a note, ``name`` is its name; for
    another domain's unit, ``address`` says where it is in its file and ``body`` is its exact text."""

    name: str
    path: str
    domain: str = "notes"
    address: str = ""
    rank: int = 0
    score: float = 0.0  # notes: relevance x importance x recency; other domains: their own activation
    reached: str = "seed"  # how: seed / via [[a]] … / constellation with … ; other domains: their reason
    title: str = ""
    type: str | None = None
    scope: str = ""
    description: str = ""
    body: str = ""
    hook: str = ""  # the MEMORY.md line's hook (notes)
    recall: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    kind: str | None = None
    status: str | None = None
    private: bool = False
    state: str = "active"
    explain: Explanation | None = None
    stale: tuple[str, ...] = ()  # what it names that the working tree no longer has, phrased
    depth: Depth = Depth.FULL  # the depth it was asked at (what ``as_dict`` shows by default)
    uid: str = ""  # its stable identity in the index (a note's file); not shown
    meta: dict = field(default_factory=dict, compare=False, hash=False)  # a domain's specifics

    # -- what it shows ------------------------------------------------------------------
    @property
    def key(self) -> str:
        """What a session's dedup remembers: the note's file, or the unit within a file."""
        return f"{self.path}#{self.address}" if self.address else self.path

    @property
    def preview(self) -> str:
        return shorten(self.hook or self.description or self.body, PREVIEW_CHARS)

    def with_(self, **changes) -> "Recalled":
        return replace(self, **changes)

    def as_dict(self, depth: Depth | str | None = None) -> dict:
        """The unit as plain data at ``depth`` (default: the depth it was recalled at)."""
        depth = Depth(depth or self.depth)
        if self.address:  # a unit as a domain of the fabric reports it
            return self._domain_dict(depth)
        out = {"rank": self.rank, "name": self.name, "path": self.path, "score": round(self.score, 4),
               "reached": self.reached}
        if depth is Depth.INDEX:
            out |= {"title": self.title, "type": self.type, "scope": self.scope,
                    "hook": shorten(self.hook or self.description or self.body, 160)}
        if depth.rank >= Depth.SUMMARY.rank:
            out |= {"title": self.title, "type": self.type, "scope": self.scope, "preview": self.preview}
            if self.private:
                out["private"] = True  # for the user's eyes: no hook or MCP answer carries it
        if depth is Depth.FULL:
            out |= {"description": self.description, "body": self.body, "recall": list(self.recall),
                    "paths": list(self.paths), "kind": self.kind, "status": self.status}
        if self.explain is not None:
            out["explain"] = self.explain.as_dict()
        return out

    def _domain_dict(self, depth: Depth) -> dict:
        out = {"domain": self.domain, "path": self.path, "address": self.address, "activation": round(self.score, 4),
               "title": self.title, "why": self.reached, "meta": dict(self.meta)}
        if depth.rank >= Depth.SUMMARY.rank:
            out["text"] = self.body
        return out

    # -- read like the dict recall used to return ------------------------------------------
    def __getitem__(self, key: str):
        return self.as_dict()[key]

    def get(self, key: str, default=None):
        return self.as_dict().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.as_dict()

    def keys(self):
        return self.as_dict().keys()

    # -- another domain's unit ---------------------------------------------------------
    @classmethod
    def of_domain(cls, domain: str, path: str, address: str, text: str, activation: float, title: str = "",
                  why: str = "", meta: dict | None = None) -> "Recalled":
        """A document section, a transcript turn with its window, a code symbol."""
        return cls(name=address, path=path, domain=domain, address=address, score=activation, reached=why,
                   title=title or address, type=domain, body=text, meta=dict(meta or {}))

    # the names other domains' code reads a unit by
    @property
    def text(self) -> str:
        return self.body

    @property
    def activation(self) -> float:
        return self.score

    @property
    def why(self) -> str:
        return self.reached


def cut(text: str, limit: int) -> str:
    """``text`` as it is (lines kept) when it fits in ``limit`` characters, else cut at the last
    word boundary before it, with "…" (a word longer than half the limit is cut inside)."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = max(head.rfind(" "), head.rfind("\n"))
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:.-—\n") + "…"


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (with "…")."""
    flat = " ".join((text or "").split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit - 1)
    return flat[: cut if cut > limit // 2 else limit - 1].rstrip(" ,;:.-—") + "…"
