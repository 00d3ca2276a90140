"""Keeping the index in line with the files: scan the stores, parse what changed, sync the
units, let the link graph be rebuilt, embed what is new — and know when nothing changed.

A refresh in a fresh process costs one stat walk when no file changed: the stat walk's digest
(paths, sizes, mtimes), the settings and the index's count of writes to its notes are compared
with the stamp the last refresh left in the index (one per embedder: a write under another's
stamp makes this one look again). Notes whose file did not change are not parsed again (the parse cache).
When the index file cannot be written (locked past the busy timeout, read-only, refused), the
index is read as it is when it has notes, else a private in-memory index serves this process;
nothing on disk is touched.

The graph is computed outside the index (``associate/``): whoever builds a ``Refresher`` hands
it the function that rebuilds the graph of a store after its units changed.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from ..config import Config
from ..records import asdict, dataclass, field
from ..store.note import PARSER_VERSION
from ..store.scan import ParseCache, Skip
from ..store.scopes import StoreSpec, load_snapshot
from .incremental import (MANIFEST, Walk, edited_notes, load_manifest, manifest_of, read_edited, report_lists,
                          same_name, walk)
from .schema import MIGRATIONS, WRITES
from .sqlite import SQLiteIndex
from .storage import SyncReport
from .unit import unit_from_note
from .vectors import EmbedTurn, embed_pending
from .. import logs
from ..digest import sha256

log = logs.get("memlane.index")

Progress = Callable[[str, int, int], None]
#: (store, whether its units changed, (before, after) link facts of the only units edited, the
#: sync's count of writes before and after) -> None
GraphBuilder = Callable[..., None]


@dataclass
class RefreshReport:
    """What one refresh did (``memlane index`` prints it; ``--json`` is its ``as_dict``)."""

    notes: int | None = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0
    healed: bool = False
    skipped: list[dict] = field(default_factory=list)
    excluded: int = 0
    shadowed: list[dict] = field(default_factory=list)
    embedder: str | None = None
    notice: str | None = None
    index_problem: str | None = None
    index: str = ""
    seconds: float = 0.0
    up_to_date: bool = False  # nothing changed since the last complete refresh
    throttled: bool = False  # not looked at: a resident process looked less than its interval ago
    trusted: bool = False  # not looked at: the caller trusts the index as it is (a hook's fallback)

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.removed

    def as_dict(self) -> dict:
        return asdict(self)

    def __getitem__(self, key: str):  # report["notes"]: the shape callers knew before the report was typed
        return getattr(self, key)

    def get(self, key: str, default=None):
        return getattr(self, key, default)


class Refresher:
    """The files of ``specs`` kept in one index (see the module docstring)."""

    def __init__(self, index_path: str, specs: list[StoreSpec], config: Config, *, graph_builder: GraphBuilder,
                 graph_version: str = "", storage=None):
        self.config, self.specs, self.graph_builder = config, specs, graph_builder
        self.graph_version = graph_version  # part of the stamp: a new way of computing the graph rebuilds it
        self.index_path = index_path
        self.index = storage if storage is not None else SQLiteIndex(
            index_path, fts_weights=config.retrieve.fts_weights, busy_timeout_ms=config.index.busy_timeout_ms)
        self.skipped: list[Skip] = []
        self.excluded: list[str] = []  # files privacy.exclude keeps out of the index
        self.shadowed: list[tuple] = []
        #: (stored stamp, walk) as this process last found the index in line with the files:
        #: while the index holds that stamp (its files, settings and count of writes to the
        #: notes: no process wrote one since, under any embedder's stamp), an edit is found by
        #: comparing two walks, without reading the parse cache's row of every note (120 ms at
        #: 100k notes)
        self._in_line: tuple[str, Walk] | None = None

    # -- the stamp ---------------------------------------------------------------------
    def stamp(self, embedder_name: str | None, found: Walk) -> tuple[str, str]:
        """(meta key, what the files as ``found`` and the settings look like)."""
        return f"files:{embedder_name or '-'}", found.digest + self._settings()

    def walk(self, pause: Callable[[], None] | None = None) -> Walk:
        """One stat walk of the stores, which ``stamp`` and ``refresh`` take as ``found``."""
        return walk(self.specs, pause)

    def _settings(self) -> str:
        settings = (f"{self.config.embed.long_notes}|{self.config.index.max_file_bytes}|{len(MIGRATIONS)}|"
                    f"{self.graph_version}|"
                    f"{PARSER_VERSION}|{sorted(self.config.privacy.exclude)}|"
                    f"{sorted((str(s.path), s.scope) for s in self.specs)}")
        return sha256(settings.encode()).hexdigest()[:16]

    def _meta(self, key: str) -> str | None:
        try:
            return self.index.get_meta(key)
        except (sqlite3.Error, OSError):
            return None

    def _stamp_index(self, key: str, stamp: str, found: Walk | None) -> None:
        """Record that the index is in line with the files as ``stamp`` says, with the count of
        writes to its notes this refresh leaves (another process's write makes the next refresh
        look); ``found``: the walk to remember as this process's baseline, if it may be one."""
        value = f"{stamp}|{self._meta(WRITES)}"
        self._in_line = (value, found) if self._set(key, value) and found is not None else None

    def _set(self, key: str, value: str) -> bool:
        try:
            self.index.set_meta(key, value)
            return True
        except sqlite3.Error as exc:  # a locked index: the next refresh simply re-checks
            log.info("could not record %s: %s", key, exc)
            return False

    # -- the refresh -------------------------------------------------------------------
    def refresh(self, embedder, *, notice: str | None, progress: Progress | None = None,
                force: bool = False, found: Walk | None = None) -> RefreshReport:
        """Sync the index with the files and, with ``embedder``, embed what has no vector.
        ``found``: a stat walk just made (the daemon's check), else one is made here."""
        started = time.perf_counter()
        found = found or walk(self.specs)
        stamp_key, stamp = self.stamp(embedder.name if embedder else None, found)
        name = embedder.name if embedder else None
        stored, writes = self._meta(stamp_key), self._meta(WRITES)
        if not force and stored == f"{stamp}|{writes}":  # nothing changed, and no one wrote a note since
            self._in_line = (stored, found)
            count = self.index.counts()["units"]
            return RefreshReport(notes=count, unchanged=count, up_to_date=True, embedder=name, notice=notice,
                                 index=self.index_path, seconds=round(time.perf_counter() - started, 3))
        before = self._in_line[1] if self._in_line is not None and self._in_line[0] == stored \
            and stored.endswith(f"|{writes}") else None
        self._in_line = None
        locked = None
        try:
            edited = None if force else self._refresh_edited(found, embedder, progress, before)
        except sqlite3.OperationalError as exc:  # locked past the busy timeout: the complete sync would wait again
            edited, locked = None, exc
        if edited is not None:
            edited.notice, edited.seconds = notice, round(time.perf_counter() - started, 3)
            self._stamp_index(stamp_key, stamp, found)
            return edited
        cache = self._parse_cache() if not force else ParseCache()
        snap = load_snapshot(self.specs, max_bytes=self.config.index.max_file_bytes, cache=cache,
                             exclude=tuple(self.config.privacy.exclude))
        self.skipped, self.shadowed, self.excluded = snap.skipped, snap.shadowed, snap.excluded
        self._say_skipped(snap.skipped, self._skips_said())
        units = [unit_from_note(n) for n in snap.notes]
        max_chars = embedder.max_chars if embedder else None
        embedded, problem = 0, None
        try:
            if locked is not None:
                raise locked
            synced = self._sync(units, max_chars, progress)
            if embedder is not None:
                embedded = self.embed(embedder, progress)
        except (sqlite3.OperationalError, OSError) as exc:
            problem = str(exc)  # locked past the busy timeout, read-only, or unopenable: recall must still work
            synced = self._fall_back(exc, units, max_chars)
            if embedder is not None and self.index.path == ":memory:":
                embedded = self.embed(embedder, progress)
        if problem is None:  # skipped files are reported here, and again by `memlane index`
            self._save_parse_cache(cache)
            read = [*snap.notes, *(hidden for hidden, _ in snap.shadowed)]
            self._set("skipped", json.dumps([[s.path, s.reason] for s in snap.skipped]))
            # the stamp only after the manifest: an edit is later found against this refresh's
            # manifest, never an older one left by a write that failed (a lock at that moment)
            if self._set(MANIFEST, json.dumps(manifest_of(snap, found, self._settings()))):
                # a note edited after ``found`` differs from it, so is read again next time; one that
                # appeared after it is not in it, and ``found`` cannot say when it goes
                self._stamp_index(stamp_key, stamp,
                                  found if all(str(note.path) in found.stats for note in read) else None)
        return RefreshReport(
            notes=len(units), added=synced.added, updated=synced.updated, removed=synced.removed,
            unchanged=synced.unchanged, embedded=embedded, healed=synced.healed or self.index.healed,
            skipped=[{"path": s.path, "reason": s.reason} for s in snap.skipped], excluded=len(snap.excluded),
            shadowed=[{"path": str(h.path), "by": str(w.path)} for h, w in snap.shadowed], embedder=name,
            notice=notice, index_problem=problem, index=self.index_path,
            seconds=round(time.perf_counter() - started, 3))

    def _refresh_edited(self, found: Walk, embedder, progress: Progress | None,
                        before_walk: Walk | None = None) -> RefreshReport | None:
        """The refresh when only notes were edited in place (``incremental.py``): those notes
        read and synced, the link graph left alone unless their links moved. None: take the
        complete refresh (something else changed, or this store keeps no parse cache).
        ``before_walk``: the walk the index was last in line with, compared instead of the
        parse cache's stats (a path whose stat moved since is read again either way)."""
        index = self.index
        if not all(hasattr(index, n) for n in ("parsed_stats", "save_parsed_rows", "chunking_holds", "link_facts_of")):
            return None
        max_chars = embedder.max_chars if embedder else None
        try:
            manifest = load_manifest(index.get_meta(MANIFEST), self._settings())
            if (manifest is None or index.get_meta("parser") != PARSER_VERSION
                    or not index.chunking_holds(self.config.embed.long_notes, max_chars)):
                return None
            paths = edited_notes(found, manifest, before_walk.stats if before_walk else index.parsed_stats())
            read = None if paths is None else read_edited(paths, found, manifest,
                                                          max_bytes=self.config.index.max_file_bytes,
                                                          exclude=tuple(self.config.privacy.exclude))
            if read is None:
                return None
            units = [unit_from_note(n) for n in read[0]]
            before = index.link_facts_of([u.uid for u in units])
            if len(before) != len(units) or any(not same_name(before[u.uid]["name"], u.name) for u in units):
                return None  # not indexed as itself (shadowed), or renamed: the others may answer to it
            synced = index.sync(units, strategy=self.config.embed.long_notes, max_chars=max_chars, prune=False,
                                progress=(lambda d, t: progress("index", d, t)) if progress else None)
            if synced.healed:
                return None  # a new, empty index: fill it completely
            now = {u.uid: _links_of(u) for u in units}
            moved = [uid for uid, facts in now.items() if facts != _links_of(before[uid])]
            self.graph_builder(index, bool(moved), edited=({uid: before[uid] for uid in moved},
                                                            {uid: now[uid] for uid in moved}) if moved else None,
                               writes=synced.writes)
            embedded = self.embed(embedder, progress) if embedder is not None else 0
            index.save_parsed_rows(read[1])
        except sqlite3.OperationalError as exc:
            if _locked(exc):
                raise  # the complete refresh would wait for the same lock: ``refresh`` falls back at once
            log.info("refreshing the edited notes alone did not work (%s): a complete refresh", exc)
            return None
        except (sqlite3.Error, OSError) as exc:
            log.info("refreshing the edited notes alone did not work (%s): a complete refresh", exc)
            return None
        self.skipped, self.excluded, self.shadowed = report_lists(manifest)
        self._say_skipped(self.skipped, self._skips_said())
        self._set("skipped", json.dumps([[s.path, s.reason] for s in self.skipped]))
        notes = manifest["notes"]
        return RefreshReport(
            notes=notes, updated=synced.updated, added=synced.added, unchanged=notes - synced.changed,
            embedded=embedded, healed=index.healed, skipped=[{"path": s.path, "reason": s.reason} for s in self.skipped],
            excluded=len(self.excluded), shadowed=[{"path": str(h.path), "by": str(w.path)} for h, w in self.shadowed],
            embedder=embedder.name if embedder else None, index=self.index_path)

    def _sync(self, units, max_chars: int | None, progress: Progress | None) -> SyncReport:
        report = self.index.sync(units, strategy=self.config.embed.long_notes, max_chars=max_chars,
                                 progress=(lambda d, t: progress("index", d, t)) if progress else None)
        self.graph_builder(self.index, bool(report.changed or report.healed), writes=report.writes)
        return report

    def embed(self, embedder, progress: Progress | None = None, *, turn: EmbedTurn | None = None) -> int:
        """Embed what is pending, taking turns with other processes (``turn``: one the caller
        holds, and closes)."""
        own = turn is None
        if own:
            turn = self.embed_turn()
        try:
            done = embed_pending(self.index, embedder, turn=turn,
                                 progress=(lambda d, t: progress("embed", d, t)) if progress else None)
        finally:
            if own and turn is not None:
                turn.close()
        pack = getattr(self.index, "pack_vectors", None)  # a store that keeps its vectors packed (SQLite)
        if pack is not None:
            try:
                pack(embedder.name)
            except sqlite3.OperationalError as exc:  # only derived: a reader packs what is missing itself
                log.info("could not store packed vectors: %s", exc)
        return done

    def embed_turn(self) -> EmbedTurn | None:
        """The turn every process embedding into this index file takes (``vectors.EmbedTurn``),
        kept beside it; None for an index in memory, or one that is not a file here."""
        path = str(self.index_path)
        if path == ":memory:" or getattr(self.index, "path", None) == ":memory:" or not Path(path).parent.is_dir():
            return None
        try:
            return EmbedTurn(f"{path}.embedding", on_wait=lambda: log.warning(
                "another memlane process (an index run, or the daemon) is embedding notes into %s: waiting "
                "for it; what it embeds is not embedded again", path))
        except OSError as exc:  # a read-only cache folder: embed without taking turns
            log.info("could not open %s.embedding (%s): embedding without taking turns", path, exc)
            return None

    # -- the parse cache ---------------------------------------------------------------
    def _parse_cache(self) -> ParseCache:
        try:
            if self.index.get_meta("parser") != PARSER_VERSION:
                return ParseCache()  # parsed by an older reader: parse everything again
            return ParseCache(self.index.load_parsed())
        except (sqlite3.Error, OSError):
            return ParseCache()

    def _save_parse_cache(self, cache: ParseCache) -> None:
        try:
            self.index.save_parsed(cache.fresh, cache.seen)
            self.index.set_meta("parser", PARSER_VERSION)
        except sqlite3.Error as exc:  # only a cache: the next refresh parses again
            log.info("could not record parsed notes: %s", exc)

    # -- when the index cannot be written ------------------------------------------------
    def _fall_back(self, exc: Exception, units, max_chars: int | None) -> SyncReport:
        """Use the index read-only if it is current enough to read, else build a private
        in-memory index for this process. Nothing on disk is touched."""
        if "locked" in str(exc).lower() and self.readable():
            log.warning("index %s is locked by another process (%s); recalling from it as it is",
                        self.index_path, exc)
            return SyncReport(skipped_write=str(exc))
        log.warning("index %s cannot be written (%s); using an in-memory index for this run",
                    self.index_path, exc)
        self.index.close()
        self.index = SQLiteIndex(":memory:", fts_weights=self.config.retrieve.fts_weights)
        self.index_path = ":memory:"
        report = self._sync(units, max_chars or 2000, None)
        report.skipped_write = str(exc)
        return report

    def readable(self) -> bool:
        try:
            return self.index.has_units()
        except (sqlite3.Error, OSError):
            return False

    def _skips_said(self) -> set[tuple[str, str]]:
        """The files the last refresh that wrote the index skipped: said then, not again."""
        try:
            return {tuple(s) for s in json.loads(self.index.get_meta("skipped") or "[]")}
        except (ValueError, TypeError, sqlite3.Error, OSError):
            return set()

    def _say_skipped(self, skipped: list[Skip], said: set[tuple[str, str]]) -> None:
        """A warning for each skipped file an earlier refresh did not skip so already: every run
        of `memlane add` or `stats` repeated the whole list (`memlane index` and `doctor` list them all)."""
        for skip in skipped:
            if (skip.path, skip.reason) not in said:
                log.warning("skipped %s: %s", skip.path, skip.reason)

    def skipped_files(self) -> list[tuple[str, str]]:
        """(path, reason) of every file the last scan of the stores could not or would not read."""
        try:
            return [tuple(s) for s in json.loads(self.index.get_meta("skipped") or "[]")]
        except (ValueError, TypeError, sqlite3.Error, OSError):
            return [(s.path, s.reason) for s in self.skipped]


def _links_of(unit) -> dict:
    """What the link graph reads of a unit (``link_facts``' entry, its id aside)."""
    if isinstance(unit, dict):
        return {k: v for k, v in unit.items() if k != "id"}
    meta = json.loads(json.dumps(unit.meta, ensure_ascii=False, default=str))
    return {"name": unit.name, "path": unit.path, "scope": unit.scope,
            "meta": {"links": meta.get("links") or [], "supersedes": meta.get("supersedes") or [],
                     "index_section": meta.get("index_section"), "store": meta.get("store"),
                     "superseded_by": meta.get("superseded_by") or []}}


def _locked(exc: sqlite3.OperationalError) -> bool:
    """Another process holds the index past the busy timeout ("database is locked", "... busy")."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text
