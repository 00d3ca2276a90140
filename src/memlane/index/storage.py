"""The storage seam: everything the recall pipeline, the lifecycle, the write path and the
domains read and write about indexed units, as one protocol.

Two backends implement it: ``SQLiteIndex`` (``index/sqlite.py``, the embedded default: one
derived file per store set) and the team store on PostgreSQL (``team/``). A store is asked in
six groups of calls:

- **units and their facts**: ``sync`` makes the store hold exactly a set of units; reads by id,
  path or name; the facts scoring needs (``unit_facts``);
- **full text**: BM25 over the weighted fields (``keyword_search``), which field matched which
  term (``matched_fields``);
- **vectors**: content-addressed embeddings, what still needs one, exact similarities;
- **the link graph**, as computed by ``associate/`` and stored here (``replace_graph``), and
  the graph queries recall runs (neighbours, constellations, hubs, clusters);
- **usage**: the rows the lifecycle folds the hit-log into, and lifecycle states;
- **meta**: small key/value facts (stamps, versions), and ``transaction()`` around writes.

Unit ids are the store's own integers; a unit's stable identity across rebuilds is its ``uid``
(a note's path, or a team note's id).
"""

from __future__ import annotations

import json
from collections import namedtuple
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager

from ..records import dataclass, field
from .unit import Unit


@dataclass
class SyncReport:
    """What one ``sync`` changed."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    healed: bool = False
    skipped_write: str | None = None  # why the store was not written (locked, read-only)
    #: the store's count of writes to its units before and after this sync (None: it keeps none):
    #: what the link graph of those units is known to reflect (``associate/build.py``)
    writes: tuple[str | None, str | None] = (None, None)

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.removed


class UnitFacts(namedtuple("UnitFacts", "importance mtime status pagerank state recent refs")):
    """What scoring and selection read per unit, in one query, each None when unknown: the
    declared ``importance:`` and ``status:``, the file's last edit (``mtime``), its PageRank, the
    lifecycle's ``state``, its ``recent`` uses (JSON: [[time, session], …]) and the references
    counted (``refs``)."""

    __slots__ = ()


@dataclass(frozen=True)
class Edge:
    """A link between two units, by unit id."""

    src: int
    dst: int
    kind: str  # "wiki" | "markdown" | "mention" | "supersedes" | "index"


@dataclass
class GraphData:
    """The link graph as ``associate/`` computes it from the units' links, for a store to keep."""

    edges: list[Edge] = field(default_factory=list)
    missing: list[tuple[int, str, str]] = field(default_factory=list)  # (unit, target, kind): future writes
    superseded: dict[int, str] = field(default_factory=dict)  # unit -> the name of what replaces it
    #: unit -> (in-degree, PageRank, cluster); None when the structure did not change (edges and
    #: nodes as stored), so the store keeps what it has
    nodes: dict[int, tuple[int, float, int]] | None = None
    constellations: list[list[int]] = field(default_factory=list)
    loops: list[int] = field(default_factory=list)  # units on a ``supersedes`` cycle: neither is demoted
    version: str = ""


class LifecycleRow(namedtuple("LifecycleRow",
                              "uid name path status mtime first_seen last_ref stability state refs reason")):
    """One unit as the lifecycle judges it: its ``uid``, ``name`` and ``path``, the ``status``
    declared in the note, the file's ``mtime``, and its usage row (``first_seen``, ``last_ref``,
    ``stability``, ``state``, ``refs``, ``reason``; None where it has none yet)."""

    __slots__ = ()


TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:
    from typing import Protocol
else:
    class _Structural(type):
        """``isinstance(x, Storage)`` as ``typing.runtime_checkable`` answers it, without ``typing``:
        whether ``x`` has every member the protocol declares (a method not None), whatever it
        inherits. ``memlane.Storage`` is public: a backend of one's own is checked by it."""

        def __instancecheck__(cls, obj) -> bool:
            if type.__instancecheck__(cls, obj):
                return True
            members = cls.__dict__.get("_protocol_members")
            if members is None:
                return False  # the base itself, or a class that inherits a protocol: by its class alone
            return all(hasattr(obj, name) and (not callable(getattr(cls, name, None)) or getattr(obj, name) is not None)
                       for name in members)

    class Protocol(metaclass=_Structural):  # to a type checker typing's; at run time a plain class
        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            if Protocol in cls.__bases__:
                cls._protocol_members = frozenset(
                    [name for name in vars(cls) if not name.startswith("_")] + list(vars(cls).get("__annotations__", {})))


class Storage(Protocol):
    """See the module docstring; ``SQLiteIndex`` is the reference implementation."""

    path: str
    healed: bool
    heals: int

    # -- the store itself -------------------------------------------------------------
    def close(self) -> None: ...
    def check_integrity(self) -> str | None: ...
    def transaction(self) -> AbstractContextManager: ...
    #: one read state for several reads (a search's legs), whoever commits meanwhile
    def snapshot(self) -> AbstractContextManager: ...
    def get_meta(self, key: str, default: str | None = None) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    @property
    def generation(self) -> int: ...

    # -- units and their facts ----------------------------------------------------------
    def sync(self, units: Iterable[Unit], *, strategy=..., max_chars: int | None = 2000, prune: bool = True,
             progress: Callable[[int, int], None] | None = None) -> SyncReport: ...
    def units_by_id(self, ids: Iterable[int]) -> dict[int, dict]: ...
    def units_by_path(self, paths: Iterable[str]) -> list[dict]: ...
    def find(self, name_or_path: str) -> list[dict]: ...
    def all_ids(self) -> list[int]: ...
    def unit_ids(self, *, types: Iterable[str] | None = None, exclude_scopes: Iterable[str] = ()) -> list[int]: ...
    def names_of(self, unit_ids: Iterable[int]) -> dict[int, str]: ...
    def unit_facts(self, unit_ids: Iterable[int]) -> dict[int, UnitFacts]: ...
    def private_units(self) -> frozenset[int]: ...
    def units_with_paths(self) -> list[int]: ...
    def recall_keywords(self) -> list[tuple[int, str, list[str]]]: ...
    def counts(self) -> dict[str, int]: ...
    def counts_by(self, column: str) -> dict[str, int]: ...
    def has_units(self) -> bool: ...

    # -- full text -------------------------------------------------------------------------
    def keyword_search(self, terms: list[str], limit: int = 200) -> list[tuple[int, float]]: ...
    def matched_fields(self, terms: list[str], unit_ids: list[int]) -> dict[int, dict[str, list[str]]]: ...

    # -- vectors -----------------------------------------------------------------------------
    def pending_chunks(self, model: str) -> list[tuple[str, str]]: ...
    def pending_count(self, model: str) -> int: ...
    def store_embeddings(self, model: str, hashes: list[str], vectors) -> None: ...
    #: -> vectors.Similarities | None; a store that answers with its best candidates only (HNSW)
    #: also answers for ``among`` (the keyword leg's candidates)
    def similarities(self, model: str, query_vector, *, among: Iterable[int] = ()): ...
    def embedded_units(self) -> dict[str, int]: ...

    # -- the link graph ----------------------------------------------------------------------
    def link_facts(self) -> list[dict]: ...
    def stored_structure(self) -> tuple[set[tuple[int, int, str]], set[int], str | None]: ...
    def replace_graph(self, graph: GraphData) -> None: ...
    def neighbours_of(self, unit_ids: Iterable[int]) -> dict[int, list[tuple[int, str, str]]]: ...
    def constellations_of(self, unit_ids: Iterable[int]) -> list[list[int]]: ...
    def constellation_groups(self) -> list[list[int]]: ...
    def superseded(self) -> dict[int, str]: ...
    def supersedes_loops(self) -> list[int]: ...
    def node_count(self) -> int: ...
    def node_info(self, unit_ids: Iterable[int]) -> dict[int, tuple[int, float, int]]: ...
    def adjacency(self) -> dict[int, list[tuple[int, str]]]: ...
    def clusters(self) -> dict[int, int]: ...
    def cluster_leaders(self) -> dict[int, int]: ...
    def hubs(self, limit: int = 5) -> list[tuple[int, int, float]]: ...
    def missing_links(self) -> list[tuple[int, str, str]]: ...

    # -- usage and lifecycle -----------------------------------------------------------------
    def usage_of(self, uid: str) -> tuple | None: ...
    def record_usage(self, uid: str, *, first_seen: float, refs: int, last_ref: float | None, recent: str,
                     stability: float) -> None: ...
    def ensure_usage_rows(self, now: float) -> None: ...
    def set_states(self, changes: list[tuple[str, str, float, str]], *, only_if_different: bool = False,
                   only_if_inactive: bool = False) -> int: ...
    def lifecycle_rows(self) -> list[LifecycleRow]: ...


class DerivedReads:
    """What every backend derives alike from its own ``get_meta``, ``generation`` and
    ``_derived`` dict (a mixin of ``SQLiteIndex`` and the team's ``PostgresStorage``)."""

    def _cached(self, key: str, load: Callable[[], object]):
        """``load()``'s result, kept until the index changes: for reads on recall's hot path."""
        generation = self.generation
        hit = self._derived.get(key)
        if hit is None or hit[0] != generation:
            hit = self._derived[key] = (generation, load())
        return hit[1]

    def superseded(self) -> dict[int, str]:
        """Units another note supersedes, or that name a ``superseded_by``: unit -> what replaces it."""
        return self._cached("superseded", lambda: {int(k): v for k, v in
                                                   json.loads(self.get_meta("superseded") or "{}").items()})

    def supersedes_loops(self) -> list[int]:
        """Units on a ``supersedes`` cycle (neither is demoted)."""
        return json.loads(self.get_meta("supersedes_loops") or "[]")
