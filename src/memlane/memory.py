"""``Memory``: the library's front door (X1). Opens the stores, keeps the index fresh,
recalls, and returns plain data (dicts and lists) — it never prints."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Callable, Iterable

from .config import Config, Depth, Fusion, cache_home, load_config
from .embed import DEFAULT_EMBEDDER, Embedder, resolve_embedder
from .index import Index, SyncReport, embed_pending, query_terms, unit_from_note
from .index.connection import is_corruption
from .index.db import GRAPH_VERSION
from .index.schema import MIGRATIONS
from .guards.exits import unit_risk
from .guards.secrets import redact
from .guards.secrets import redact_data
from .guards.privacy import OUTSIDE
from .lifecycle import HitLog
from .lifecycle.usage import Usage, state_of, unit_states
from .recall import RecallOutcome, RecallPlan, run_recall
from .retrieve import matched_fields
from .store import StoreSpec, discover_claude_memory, git_root, load_snapshot, scope_rank
from .store.note import PARSER_VERSION
from .store.scan import ParseCache, Skip, fingerprint

log = logging.getLogger("memlane")

Progress = Callable[[str, int, int], None]


PREVIEW_CHARS = 80


def demo_store_path() -> Path:
    return Path(__file__).parent / "demo" / "store"


class Memory:
    """A set of memory folders, their index, and recall over them.

    ``stores``: folders (or :class:`StoreSpec`) to use directly; when omitted, the stores
    come from the configuration: mounted folders, the user store, and Claude Code's
    memory folder for the git repository at ``cwd``.
    ``embedder``: a registered name, an :class:`Embedder`, ``"none"`` for keyword-only, or
    ``None`` for the configured default.
    """

    def __init__(self, stores: Iterable[str | Path | StoreSpec] | None = None, *,
                 config: Config | None = None, index_path: str | Path | None = None,
                 embedder: str | Embedder | None = None, cwd: str | Path | None = None):
        self.cwd = Path(cwd or os.getcwd())
        self.repo = git_root(self.cwd)
        self.config = config or load_config(self.repo)
        self.specs = self._resolve_specs(stores)
        self.index_path = str(index_path or self.config.index.path or self._default_index_path())
        self.index = Index(self.index_path, fts_weights=self.config.retrieve.fts_weights,
                           busy_timeout_ms=self.config.index.busy_timeout_ms)
        self._embedder_choice = embedder
        self._embedder: Embedder | None = None
        self._embedder_loaded = False
        self.embedder_notice: str | None = None
        self.skipped: list[Skip] = []
        self.excluded: list[str] = []  # files privacy.exclude keeps out of the index (G3)
        self.shadowed: list[tuple] = []
        #: a resident process re-checks the files at most this often (seconds); 0 = every call
        self.min_refresh_interval = 0.0
        #: fold the hit-log and move lifecycle states during recall (a daemon does it in the background)
        self.auto_lifecycle = True
        self._last_refresh: tuple[float, bool, dict] | None = None
        self._heals_seen = 0

    # -- setup ----------------------------------------------------------------------
    def _resolve_specs(self, stores) -> list[StoreSpec]:
        if stores is not None:
            specs = [s if isinstance(s, StoreSpec) else StoreSpec(Path(s).expanduser().resolve(), "project",
                                                                  label="--store") for s in stores]
            return specs
        specs = [StoreSpec(Path(m.path).expanduser().resolve(), m.scope, label="config")
                 for m in self.config.stores.mounts]
        user = self.config.user_store_path()
        if user.is_dir():
            specs.append(StoreSpec(user.resolve(), "user", label="user store"))
        if self.config.stores.claude_code:
            found = discover_claude_memory(self.cwd)
            if found is not None:
                specs.append(StoreSpec(found.resolve(), "project", read_only=True, label="claude-code"))
        return specs

    def _default_index_path(self) -> Path:
        key = "\n".join(sorted(f"{s.scope}:{s.path}" for s in self.specs))
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return cache_home() / "index" / f"{digest}.sqlite"

    def embedder_name(self) -> str | None:
        """The embedder's registered name, without loading it (None: keyword-only)."""
        choice = self._embedder_choice
        if isinstance(choice, Embedder):
            return choice.name
        name = choice or self.config.embed.model
        return None if name == "none" else DEFAULT_EMBEDDER if name == "default" else name

    def prepare_for_hook(self) -> dict:
        """Bring the index up to date without embedding anything, and recall keyword-only for
        this call when vectors are pending (or the index cannot be read for them): a hook answers
        within its budget and never waits for a model to embed a store (``memlane index``, or the
        daemon, embeds)."""
        report = self.refresh(embed=False)
        name = self.embedder_name()
        if name is not None and not self._embedder_loaded:
            try:
                pending = self.index.pending_count(name)
            except (sqlite3.Error, OSError):
                pending = -1
            if pending:
                self._embedder, self._embedder_loaded = None, True
                self.embedder_notice = ("keyword-only for now: the index is not readable" if pending < 0 else
                                        f"keyword-only for now: {pending} note text(s) are not embedded yet "
                                        "(memlane index, or the daemon, embeds them)")
        return report

    @property
    def embedder(self) -> Embedder | None:
        """The embedder, loaded on first use; None (with ``embedder_notice``) when unavailable."""
        if self._embedder_loaded:
            return self._embedder
        self._embedder_loaded = True
        self._embedder, self.embedder_notice = resolve_embedder(self._embedder_choice, self.config.embed.model)
        if self._embedder is None and self._embedder_choice != "none" and self.config.embed.model != "none":
            log.warning("%s", self.embedder_notice)
        return self._embedder

    # -- indexing -------------------------------------------------------------------
    def refresh(self, *, embed: bool = True, progress: Progress | None = None, force: bool = False,
                recheck: bool = False) -> dict:
        """Bring the index in line with the files (incremental), then embed what is new.

        When no file changed since the last complete refresh (same paths, sizes and mtimes,
        same settings), nothing is parsed: this is the cost of a recall in a fresh process."""
        started = time.perf_counter()
        last = self._last_refresh
        healed = self.index.heals != self._heals_seen  # a rebuilt index is empty: fill it now, whatever the throttle
        if (not force and not recheck and not healed and last is not None and last[1] >= embed
                and time.monotonic() - last[0] < self.min_refresh_interval):
            return last[2] | {"up_to_date": True, "throttled": True}
        report = self._refresh(embed=embed, progress=progress, force=force, started=started)
        self._heals_seen = self.index.heals
        if not report.get("index_problem"):
            self._last_refresh = (time.monotonic(), embed, report)
        return report

    def files_stamp(self) -> str:
        """What the files look like now (paths, sizes, mtimes, settings): a stat walk only."""
        return self._fingerprint(self.embedder)[1]

    def trust_index(self) -> None:
        """Use the index as it is, without checking the files again (a hook's fast fallback)."""
        self.min_refresh_interval = float("inf")
        self._last_refresh = (time.monotonic(), True, {"up_to_date": True, "trusted": True, "notes": None})

    def has_notes(self) -> bool:
        try:
            return self.index.conn.execute("SELECT 1 FROM units LIMIT 1").fetchone() is not None
        except (sqlite3.Error, OSError):
            return False

    def _refresh(self, *, embed: bool, progress: Progress | None, force: bool, started: float) -> dict:
        embedder = self.embedder if embed else None
        stamp_key, stamp = self._fingerprint(embedder)
        if not force and self._stamp_matches(stamp_key, stamp):
            count = self.index.conn.execute("SELECT count(*) FROM units").fetchone()[0]
            return {"notes": count, "added": 0, "updated": 0, "removed": 0, "unchanged": count, "embedded": 0,
                    "healed": False, "skipped": [], "shadowed": [], "up_to_date": True,
                    "embedder": embedder.name if embedder else None, "notice": self.embedder_notice,
                    "index_problem": None, "index": self.index_path,
                    "seconds": round(time.perf_counter() - started, 3)}
        cache = self._parse_cache() if not force else ParseCache()
        snap = load_snapshot(self.specs, max_bytes=self.config.index.max_file_bytes, cache=cache,
                             exclude=tuple(self.config.privacy.exclude))
        self.skipped, self.shadowed, self.excluded = snap.skipped, snap.shadowed, snap.excluded
        for skip in snap.skipped:
            log.warning("skipped %s: %s", skip.path, skip.reason)
        units = [unit_from_note(n) for n in snap.notes]
        max_chars = embedder.max_chars if embedder else None
        sync_progress = (lambda d, t: progress("index", d, t)) if progress else None
        embed_progress = (lambda d, t: progress("embed", d, t)) if progress else None
        embedded, write_problem = 0, None
        try:
            report = self.index.sync(units, strategy=self.config.embed.long_notes, max_chars=max_chars,
                                     progress=sync_progress)
            if embedder is not None:
                embedded = embed_pending(self.index, embedder, progress=embed_progress)
        except (sqlite3.OperationalError, OSError) as exc:
            # locked past the busy timeout, read-only, or unopenable: recall must still work
            write_problem = str(exc)
            report = self._fall_back(exc, units, max_chars)
            if embedder is not None and self.index.path == ":memory:":
                embedded = embed_pending(self.index, embedder, progress=embed_progress)
        if write_problem is None:  # skipped files are reported here, and again by `memlane index`
            self._save_parse_cache(cache)
            self._save_stamp(stamp_key, stamp)
            self._save_stamp("skipped", json.dumps([[s.path, s.reason] for s in snap.skipped]))
        return {
            "notes": len(units), "added": report.added, "updated": report.updated, "removed": report.removed,
            "unchanged": report.unchanged, "embedded": embedded, "healed": report.healed or self.index.healed,
            "skipped": [{"path": s.path, "reason": s.reason} for s in snap.skipped],
            "excluded": len(snap.excluded),
            "shadowed": [{"path": str(h.path), "by": str(w.path)} for h, w in snap.shadowed],
            "embedder": embedder.name if embedder else None, "notice": self.embedder_notice,
            "index_problem": write_problem, "index": self.index_path,
            "seconds": round(time.perf_counter() - started, 3),
        }

    def _fingerprint(self, embedder: Embedder | None) -> tuple[str, str]:
        settings = (f"{self.config.embed.long_notes}|{self.config.index.max_file_bytes}|{len(MIGRATIONS)}|{GRAPH_VERSION}|"
                    f"{PARSER_VERSION}|"
                    f"{sorted(self.config.privacy.exclude)}|"
                    f"{sorted((str(s.path), s.scope) for s in self.specs)}")
        key = f"files:{embedder.name if embedder else '-'}"
        return key, fingerprint([s.path for s in self.specs]) + hashlib.sha256(settings.encode()).hexdigest()[:16]

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

    def _stamp_matches(self, key: str, stamp: str) -> bool:
        try:
            return self.index.get_meta(key) == stamp
        except (sqlite3.Error, OSError):
            return False

    def _save_stamp(self, key: str, stamp: str) -> None:
        try:
            self.index.set_meta(key, stamp)
        except sqlite3.Error as exc:  # a locked index: the next refresh simply re-checks
            log.info("could not record the refresh stamp: %s", exc)

    def _fall_back(self, exc: Exception, units, max_chars: int):
        """The index file cannot be written: use it read-only if it is current enough to read,
        else build a private in-memory index for this process. Nothing on disk is touched."""
        if "locked" in str(exc).lower() and self._index_readable():
            log.warning("index %s is locked by another process (%s); recalling from it as it is",
                        self.index_path, exc)
            return SyncReport(skipped_write=str(exc))
        log.warning("index %s cannot be written (%s); using an in-memory index for this run",
                    self.index_path, exc)
        self.index.close()
        self.index = Index(":memory:", fts_weights=self.config.retrieve.fts_weights)
        self.index_path = ":memory:"
        report = self.index.sync(units, strategy=self.config.embed.long_notes, max_chars=max_chars or 2000)
        report.skipped_write = str(exc)
        return report

    def _index_readable(self) -> bool:
        try:
            return self.index.conn.execute("SELECT count(*) FROM units").fetchone()[0] > 0
        except (sqlite3.Error, OSError):
            return False

    # -- recall ---------------------------------------------------------------------
    def recall(self, prompt: str, *, k: int | None = None, depth: Depth | str = Depth.SUMMARY,
               explain: bool = False, fusion: Fusion | str | None = None, include_archived: bool = False,
               divergent: bool = False, refresh: bool = True, session: str | None = None,
               plan: RecallPlan | None = None, layer: str = "recall", bracket: str | None = None,
               record: bool = True, include_private: bool = True, exclude: Iterable[str] = ()) -> list[dict]:
        """The units worth showing for ``prompt``, best first, as plain dicts. Each recall is
        written to the hit-log (``session`` names the agent session, when there is one).

        ``include_archived``: deep mode — archived notes are searched too, and a recalled
        archived note is active again. ``divergent``: add remote associates (A5). ``layer`` and
        ``bracket`` go to the hit-log; ``record=False`` leaves no trace (a diagnostic).
        ``include_private=False``: the answer goes to an agent, so ``private: true`` notes are
        not candidates at all (G3) — every hook layer and the MCP server ask this way.
        ``exclude``: paths of notes that are not candidates (e.g. the note whose links are sought)."""
        depth = Depth(depth)
        plan = plan or RecallPlan(fusion=fusion, include_archived=include_archived, divergent=divergent, k=k)
        if refresh:
            self.refresh()
        if self.auto_lifecycle:
            self.maintain_lifecycle()
        try:
            outcome = self._run(prompt, plan, include_private, exclude)
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc) or self.index.path == ":memory:":
                raise
            self.index.heal(exc)  # e.g. a damaged full-text index: rebuild from the files, once
            self.refresh()
            outcome = self._run(prompt, plan, include_private, exclude)
        rows = self.index.units_by_id([h.unit_id for h in outcome.selected])
        chosen = [(hit, rows[hit.unit_id]) for hit in outcome.selected if hit.unit_id in rows]
        matched = matched_fields(self.index, prompt, [h.unit_id for h, _ in chosen]) if explain else {}
        results = [self._result(rank_no, hit, row, depth, matched.get(hit.unit_id) if explain else None, hit.state)
                   for rank_no, (hit, row) in enumerate(chosen, start=1)]
        if record:
            self._log_hits(prompt, results, chosen, session, depth, layer, bracket)
        if record and plan.include_archived:
            self._restore([row["uid"] for h, row in chosen if h.state in ("archived", "dormant")])
        return results

    def _run(self, prompt: str, plan: RecallPlan, include_private: bool = True,
             exclude_paths: Iterable[str] = ()) -> RecallOutcome:
        mixed_scopes = len({scope_rank(s.scope) for s in self.specs}) > 1
        exclude = _overridden_user_units(self.index, prompt) if mixed_scopes else frozenset()
        if not include_private:
            exclude = exclude | self.index.private_units()
        if exclude_paths:
            exclude = exclude | {row["id"] for row in self.index.units_by_path(exclude_paths)}
        return run_recall(self.index, prompt, self.config, embedder=self.embedder, plan=plan, exclude=exclude)

    def _log_hits(self, prompt: str, results: list[dict], chosen: list, session: str | None, depth: Depth,
                  layer: str = "recall", bracket: str | None = None) -> None:
        if self.hit_log is None or not results:
            return
        self.hit_log.record(prompt, [
            {"path": r["path"], "name": r["name"], "rank": r["rank"], "score": r["score"],
             "parts": {"bm25_norm": round(h.legs.bm25_norm, 4), "vector": round(h.legs.vector, 4),
                       "fused": round(h.legs.fused, 4), "activation": round(h.activation, 4),
                       "relevance": round(h.relevance, 4), "importance": round(h.importance, 4),
                       "recency": round(h.recency, 4), "reached": _reached_kind(h),
                       **({"via": r["reached"]} if r["reached"] != "seed" else {})}}
            for r, (h, _) in zip(results, chosen)], session=session, depth=depth.value, layer=layer,
            bracket=bracket)

    @property
    def hit_log(self) -> HitLog | None:
        """The hit-log beside the index file (none for an in-memory index or when turned off)."""
        if not self.config.index.hit_log or self.index_path == ":memory:":
            return None
        return HitLog(f"{self.index_path}.hits.jsonl")

    # -- lifecycle (L3) -------------------------------------------------------------
    @property
    def usage(self) -> Usage:
        return Usage(self.index, self.hit_log, self.config.lifecycle)

    def maintain_lifecycle(self) -> None:
        """Fold new hit-log lines into the index and, at most hourly, move notes between
        active, dormant and archived. A locked index just waits for the next recall."""
        try:
            self.usage.maintain()
        except (sqlite3.Error, OSError) as exc:
            log.info("lifecycle not updated this time: %s", exc)

    def _restore(self, uids: list[str]) -> None:
        try:
            self.usage.restore(uids)
        except (sqlite3.Error, OSError) as exc:
            log.info("could not restore %s: %s", uids, exc)

    def decay(self, *, dry_run: bool = True, refresh: bool = True) -> dict:
        """What the lifecycle would change now, and why; applied unless ``dry_run``."""
        if refresh:
            self.refresh(embed=False)
        usage = self.usage
        usage.consume()
        transitions = usage.evaluate()
        if not dry_run:
            usage.apply(transitions)
        return {"dry_run": dry_run, "changes": [t.__dict__ for t in transitions],
                "settings": {"dormant_days": self.config.lifecycle.dormant_days,
                             "archive_days": self.config.lifecycle.archive_days}}

    def status(self, *, refresh: bool = True, limit: int = 10) -> dict:
        """Lifecycle state of every note: counts, the most used, the ones about to change."""
        if refresh:
            self.refresh(embed=False)
        usage = self.usage
        try:
            usage.consume()
        except sqlite3.Error as exc:
            log.info("hit-log not folded in: %s", exc)
        conn = self.index.conn
        rows = conn.execute(
            "SELECT u.name, u.path, coalesce(g.state, 'active'), coalesce(g.refs, 0), g.last_ref, g.stability,"
            " json_extract(u.meta, '$.status') FROM units u LEFT JOIN usage g ON g.uid = u.uid").fetchall()
        counts = {"active": 0, "dormant": 0, "archived": 0}
        for _, _, state, _, _, _, declared in rows:
            counts[declared if declared in counts else state] += 1
        most_used = sorted((r for r in rows if r[3]), key=lambda r: (-r[3], r[0]))[:limit]
        pending = usage.evaluate()
        return {"index": self.index_path, "notes": len(rows), "states": counts,
                "hit_log": None if self.hit_log is None else str(self.hit_log.path),
                "most_used": [{"name": n, "path": p, "refs": refs, "last_used": _iso(last), "stability": round(st or 1, 2)}
                              for n, p, _, refs, last, st, _ in most_used],
                "pending_changes": [t.__dict__ for t in pending[:limit]], "pending_total": len(pending),
                "lifecycle_updated": _iso(float(self.index.get_meta("lifecycle_at") or 0) or None)}

    def _result(self, rank_no: int, hit, row: dict, depth: Depth, matched, state: str) -> dict:
        """One recalled note as plain data, every string field redacted."""
        return redact_data(self._shape(rank_no, hit, row, depth, matched, state))

    def _shape(self, rank_no: int, hit, row: dict, depth: Depth, matched, state: str) -> dict:
        meta = row["meta"]
        result = {"rank": rank_no, "name": row["name"], "path": row["path"], "score": round(hit.score, 4),
                  "reached": "; ".join(hit.path) or "seed"}
        if depth is Depth.INDEX:  # the line an index would hold: title and when it applies
            result.update({"title": row["title"] or row["name"], "type": row["type"], "scope": row["scope"],
                           "hook": _preview(meta.get("index_hook") or row["description"] or row["body"], 160)})
        if depth in (Depth.SUMMARY, Depth.FULL):
            preview_src = meta.get("index_hook") or row["description"] or row["body"]
            result.update({
                "title": row["title"] or row["name"], "type": row["type"], "scope": row["scope"],
                "preview": _preview(redact(preview_src)),
            })
            if meta.get("private"):
                result["private"] = True  # for the user's eyes: no hook or MCP answer carries it (G3)
        if depth is Depth.FULL:
            result.update({"description": redact(row["description"]), "body": redact(row["body"]),
                           "recall": meta.get("recall", []), "paths": meta.get("paths", []),
                           "kind": meta.get("kind"), "status": meta.get("status")})
        if matched is not None:
            legs = hit.legs
            result["explain"] = {
                "bm25": None if legs.bm25 is None else round(legs.bm25, 4),
                "bm25_norm": round(legs.bm25_norm, 4),
                "cosine": None if legs.cosine is None else round(legs.cosine, 4),
                "vector": round(legs.vector, 4),
                "fused": round(legs.fused, 4),
                "bm25_rank": legs.bm25_rank, "vector_rank": legs.vector_rank,
                "matched_fields": matched,
                "notes": legs.notes,
                "activation": round(hit.activation, 4),
                "relevance": round(hit.relevance, 4),
                "importance": round(hit.importance, 4),
                "recency": round(hit.recency, 4),
                "base_level": None if hit.base_level is None else round(hit.base_level, 3),
                "state": state,
                "path": hit.path,
                "risk": unit_risk(row["name"], Path(row["path"]).name, row["title"], meta.get("index_hook"),
                                  row["description"], row["body"]),
            }
        return result

    # -- what session start injects (J1) ------------------------------------------------
    def briefing(self, *, layer: int, refresh: bool = True) -> list[dict]:
        """Layer 1 (identity: notes of type ``user``) or layer 2 (critical project facts:
        project-scope ``project`` and ``feedback`` notes), most important first — declared
        ``importance:``, then centrality in the link graph, then the most recently edited —
        at full depth. Archived and dormant notes, and private ones, are left out."""
        if refresh:
            self.refresh()
        if layer == 1:
            where = "u.type = 'user'"
        elif layer == 2:
            where = "u.type IN ('project', 'feedback') AND u.scope != 'user'"
        else:
            raise ValueError("briefing layers are 1 and 2")
        ids = [i for (i,) in self.index.conn.execute(f"SELECT u.id FROM units u WHERE {where}")]
        facts = self.index.unit_facts(ids)
        rows = self.index.units_by_id(ids)
        ranked = sorted(
            (i for i in ids if state_of(facts[i]) == "active" and not rows[i]["meta"].get("private")),
            key=lambda i: (-(float(facts[i][0]) if facts[i][0] is not None else 0.5), -(facts[i][3] or 0.0),
                           -(float(facts[i][1]) if facts[i][1] else 0.0), rows[i]["name"]))
        return [self._result(n, _Briefed(), rows[i], Depth.FULL, None, "active")
                for n, i in enumerate(ranked, start=1)]

    def notes_with_paths(self) -> list[dict]:
        """Notes that declare ``paths:`` globs (a file trigger), at full depth, with the globs."""
        ids = self.index.units_with_paths()
        rows = self.index.units_by_id(ids)
        states = unit_states(self.index, ids)
        return [self._result(0, _Briefed(), rows[i], Depth.FULL, None, "active") | {"paths": rows[i]["meta"]["paths"]}
                for i in ids if states.get(i) != "archived" and not rows[i]["meta"].get("private")]

    # -- the write path (W1, W2; remember.py) -------------------------------------------
    def add(self, draft, *, apply: bool = False, to: str | Path | None = None, include_private: bool = True,
            dry_run: bool = False) -> dict:
        """Compare ``draft`` (a ``store.write.Draft``) with the nearest notes and advise ADD /
        UPDATE / SUPERSEDE / NOOP; an ADD is written unless ``dry_run``, the rest only with
        ``apply``. Raises ``store.write.WriteError`` for a draft that cannot be written."""
        from .write.remember import add

        return add(self, draft, apply=apply, to=to, include_private=include_private, dry_run=dry_run)

    def suggest_links(self, name: str, *, apply: bool = False, k: int = 5, include_private: bool = True) -> dict:
        """``[[links]]`` worth adding to the note ``name``, with why; ``apply`` writes them."""
        from .write.remember import suggest_links

        return suggest_links(self, name, apply=apply, k=k, include_private=include_private)

    def archive(self, name: str, *, include_private: bool = True) -> dict:
        """Archive the note ``name`` by hand: out of default recall until restored or used."""
        from .write.remember import set_state

        return set_state(self, name, "archived", include_private=include_private)

    def restore(self, name: str, *, include_private: bool = True) -> dict:
        from .write.remember import set_state

        return set_state(self, name, "active", include_private=include_private)

    # -- other reads ----------------------------------------------------------------
    def show(self, name: str, *, refresh: bool = True, session: str | None = None) -> list[dict]:
        """Every note called ``name`` (a name, a file name or a path), in full. Reading a note
        is a use: it is written to the hit-log, and an archived note is active again."""
        if refresh:
            self.refresh(embed=False)
        found = self.index.find(name)
        found.sort(key=lambda r: -scope_rank(r["scope"]))
        if found and self.hit_log is not None:
            self.hit_log.record(name, [{"path": r["path"], "name": r["name"], "rank": n, "score": None}
                                       for n, r in enumerate(found, start=1)], session=session, layer="show",
                                depth=Depth.FULL.value)
            self._restore([r["uid"] for r in found])
        return redact_data([{"name": r["name"], "title": r["title"] or r["name"], "type": r["type"],
                             "scope": r["scope"], "path": r["path"], "description": r["description"],
                             "body": r["body"], "meta": r["meta"]} for r in found])

    def skipped_files(self) -> list[tuple[str, str]]:
        """(path, reason) of every file the last scan of the stores could not or would not read."""
        try:
            return [tuple(s) for s in json.loads(self.index.get_meta("skipped") or "[]")]
        except (ValueError, TypeError, sqlite3.Error, OSError):
            return [(s.path, s.reason) for s in self.skipped]

    def stats(self, *, refresh: bool = True) -> dict:
        if refresh:
            self.refresh(embed=False)
        skipped = self.skipped_files()
        conn = self.index.conn
        by_type = dict(conn.execute("SELECT coalesce(type, '(none)'), count(*) FROM units GROUP BY 1").fetchall())
        by_scope = dict(conn.execute("SELECT scope, count(*) FROM units GROUP BY 1").fetchall())
        embedded = dict(conn.execute(
            "SELECT e.model, count(DISTINCT c.unit) FROM chunks c JOIN embeddings e ON e.hash = c.hash"
            " GROUP BY e.model").fetchall())
        names = dict(conn.execute("SELECT id, name FROM units"))
        return {"index": self.index_path, "counts": self.index.counts(), "by_type": by_type,
                "by_scope": by_scope, "embedded_units": embedded,
                "stores": [{"path": str(s.path), "scope": s.scope, "source": s.label} for s in self.specs],
                "skipped": len(skipped), "links_outside": sum(1 for _, why in skipped if why == OUTSIDE),
                "shadowed": len(self.shadowed), "excluded": len(self.excluded),
                "hubs": [{"name": names.get(u), "in_degree": d, "pagerank": round(r, 4)}
                         for u, d, r in self.index.hubs()],
                "constellations": [[names.get(u) for u in group] for group in self.index.constellation_groups()
                                   if self.config.associate.constellation_min <= len(group)
                                   <= self.config.associate.constellation_max],
                "clusters": len(set(self.index.clusters().values())),
                "supersedes_loops": [names.get(u) for u in self.index.supersedes_loops()],
                "future_writes": [{"from": names.get(u), "target": t} for u, t, _ in self.index.missing_links()],
                "hit_log": None if self.hit_log is None else
                {"path": str(self.hit_log.path), "records": sum(1 for _ in self.hit_log.read())}}

    def doctor(self) -> dict:
        """What is configured, where the index lives, whether it is healthy, embedder status."""
        embedder = self.embedder
        integrity = self.index.check_integrity()
        stores = []
        for spec in self.specs:
            stores.append({"path": str(spec.path), "scope": spec.scope, "source": spec.label,
                           "exists": spec.path.is_dir(), "read_only": spec.read_only,
                           "has_MEMORY.md": (spec.path / "MEMORY.md").is_file()})
        return {
            "config_files": self.config.sources or ["(none: defaults)"],
            "repository_config": {"file": self.config.repository_file, "refused": self.config.refused},
            "repository": str(self.repo) if self.repo else None,
            "claude_code_memory": str(discover_claude_memory(self.cwd) or "(not found)"),
            "user_store": str(self.config.user_store_path()),
            "stores": stores,
            "index": {"path": self.index_path, "exists": Path(self.index_path).exists(),
                      "integrity": integrity or "ok", **self.index.counts()},
            "embedder": {"name": embedder.name if embedder else None, "dim": embedder.dim if embedder else None,
                         "min_cosine": embedder.min_cosine if embedder else None,
                         "status": "ready" if embedder else (self.embedder_notice or "off")},
            "retrieve": {"fusion": self.config.retrieve.fusion, "min_score": self.config.retrieve.min_score,
                         "long_notes": self.config.embed.long_notes},
            "domains": {"docs": self.config.domains.docs, "transcripts": self.config.domains.transcripts,
                        "code": self.config.domains.code, "privacy_exclude": self.config.privacy.exclude},
        }

    def close(self) -> None:
        self.index.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Briefed:
    """Stands in for a ranking hit: briefing notes are chosen by importance, not a prompt."""

    score = 0.0
    path = ["briefing"]


def _reached_kind(hit) -> str:
    if hit.remote:
        return "remote"
    if hit.companion_of:
        return "constellation"
    if hit.activation and not (hit.path and hit.path[0] == "seed"):
        return "spread"
    return "seed"


def _iso(ts: float | None) -> str | None:
    return None if not ts else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _overridden_user_units(index: Index, prompt: str) -> frozenset[int]:
    """S3: user-scope units that share a recall keyword, used by the prompt, with a
    project-scope unit: the narrower scope wins, so they leave both legs before ranking."""
    terms = set(query_terms(prompt))
    rows = index.recall_keywords()

    def used(keyword: str) -> bool:
        words = set(query_terms(keyword))
        return bool(words) and words <= terms

    project = {kw.lower() for _, scope, kws in rows if scope_rank(scope) > 0 for kw in kws if used(kw)}
    return frozenset(uid for uid, scope, kws in rows
                     if scope_rank(scope) == 0 and project & {kw.lower() for kw in kws})
