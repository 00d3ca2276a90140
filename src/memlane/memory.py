"""``Memory``: the library's front door. It knows which memory folders are in play, where their
index lives and which embedder to use, and hands each request to the room that does it: the
refresh to ``index/refresh.py`` (with the link graph computed by ``associate/``), a recall to
the pipeline in ``recall.py``, the lifecycle to ``lifecycle/``, writing to ``write/``. It returns
plain data and never prints."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from collections.abc import Callable, Iterable

from .associate.build import GRAPH_VERSION, UNSETTLED, rebuild_graph, settle_graph
from .config import Config, cache_home, data_home, load_config
from .modes import Depth, Fusion
from .embed import DEFAULT_EMBEDDER, Embedder, resolve_embedder
from .guards.privacy import OUTSIDE
from .guards.secrets import redact_data
from .index.connection import is_corruption
from .index.refresh import Refresher, RefreshReport
from .lifecycle import HitLog
from .lifecycle.usage import Usage, unit_states
from .recall import (MAX_K, RecallPlan, excluded_units, log_recall, meaning_judges, recalled_units, run_recall,
                     selectable, words_alone)
from .retrieve.ask import the_ask
from .retrieve.recalled import Recalled
from .store.scan import utf8_folder
from .store import StoreSpec, claude_memory_dir, discover_claude_memory, encode_project_path, git_root, scope_rank
from . import logs
from .digest import sha256

log = logs.get("memlane")

Progress = Callable[[str, int, int], None]


def demo_store_path() -> Path:
    return Path(__file__).parent / "demo" / "store"


def _utf8_paths(specs: list[StoreSpec]) -> list[StoreSpec]:
    """``specs``, or ``UsageError`` for the first whose path is not UTF-8 (``store.scan.utf8_folder``)."""
    for spec in specs:
        utf8_folder(spec.path, f"the memory folder ({spec.label})")
    return specs


class Memory:
    """A set of memory folders, their index, and recall over them.

    ``stores``: folders (or :class:`StoreSpec`) to use directly; when omitted, the stores
    come from the configuration: mounted folders, the user store, and Claude Code's
    memory folder for the git repository at ``cwd``.
    ``embedder``: a registered name, an :class:`Embedder`, ``"none"`` for keyword-only, or
    ``None`` for the configured default.
    ``storage``: the store to index into (any backend of ``index/storage.py``); by default the
    SQLite index at ``index_path`` (or one per store set in the cache folder).
    """

    def __init__(self, stores: Iterable[str | Path | StoreSpec] | None = None, *,
                 config: Config | None = None, index_path: str | Path | None = None,
                 embedder: str | Embedder | None = None, cwd: str | Path | None = None, storage=None):
        self.cwd = Path(cwd or os.getcwd())
        self.repo = git_root(self.cwd)
        self.config = config or load_config(self.repo)
        self._explicit = None if stores is None else list(stores)
        self.specs = self._existing_specs()
        self._files = Refresher(str(index_path or self.config.index.path or self._default_index_path()),
                                self.specs, self.config, graph_builder=rebuild_graph, graph_version=GRAPH_VERSION,
                                storage=storage)
        self._embedder_choice = embedder
        self._embedder: Embedder | None = None
        self._embedder_loaded = False
        self.embedder_notice: str | None = None
        self._apart: Embedder | None = None  # the embedder while texts are embedded apart (``embed_apart``)
        #: a resident process re-checks the files at most this often (seconds); 0 = every call
        self.min_refresh_interval = 0.0
        self.walk_s = 0.0  # the last stat walk's time (files_look)
        #: fold the hit-log and move lifecycle states during recall (a daemon does it in the background)
        self.auto_lifecycle = True
        self._last_refresh: tuple[float, bool, RefreshReport] | None = None
        self._refresh_problem: str | None = None  # what the last refresh could not do (a lock held past the timeout)
        self._heals_seen = 0
        self._team, self._team_made = None, False
        self._last_ranking: tuple | None = None  # ((prompt, index generation), ranking) of the last agent recall

    # -- setup ----------------------------------------------------------------------
    def _existing_specs(self) -> list[StoreSpec]:
        """The stores in play that exist (see ``candidate_specs``)."""
        return [spec for spec in self.candidate_specs() if spec.path.is_dir()]

    def candidate_specs(self) -> list[StoreSpec]:
        """Every store this Memory reads, whether its folder exists yet or not: the folders given,
        or — from the configuration — the mounted folders, the user store, and this repository's
        project store (Claude Code's memory folder, or memlane's own when ``stores.claude_code``
        is off). A note written to one that did not exist yet is read from then on, by the same
        index (the index is keyed by these, not by what exists)."""
        stores = self._explicit
        if stores is not None:
            return _utf8_paths([s if isinstance(s, StoreSpec) else
                                StoreSpec(Path(s).expanduser().resolve(), "project", label="--store") for s in stores])
        specs = [StoreSpec(Path(m.path).expanduser().resolve(), m.scope, label="config")
                 for m in self.config.stores.mounts]
        specs.append(StoreSpec(self.config.user_store_path().resolve(), "user", label="user store"))
        project = self.project_store()
        if project is not None:
            specs.append(StoreSpec(project.resolve(), "project",
                                   label="claude-code" if self.config.stores.claude_code else "project store"))
        return _utf8_paths(specs)

    def project_store(self) -> Path | None:
        """Where this repository's project notes live: Claude Code's own memory folder for it (so
        Claude Code's loader and memlane see the same notes), or — with ``stores.claude_code``
        off — memlane's own project store keyed to the repository. None outside a repository."""
        root = self.repo
        if root is None:
            return None
        if self.config.stores.claude_code:
            return claude_memory_dir(root)
        return data_home() / "projects" / encode_project_path(root) / "memory"

    def reload_stores(self) -> None:
        """Read the stores again (after a note created a store folder that did not exist)."""
        self.specs = self._existing_specs()
        self._files.specs = self.specs

    def stores_moved(self) -> bool:
        """Whether a store folder in play has appeared or gone since the stores were read (a few
        stats): Claude Code's memory folder created after this Memory opened, or one moved away
        and back (a sync, a restore)."""
        return [s.path for s in self._existing_specs()] != [s.path for s in self.specs]

    def _default_index_path(self) -> Path:
        key = "\n".join(sorted(f"{s.scope}:{s.path}" for s in self.candidate_specs()))
        digest = sha256(key.encode()).hexdigest()[:16]
        return cache_home() / "index" / f"{digest}.sqlite"

    @property
    def index(self):
        """The store the notes are indexed in (the storage seam)."""
        return self._files.index

    @property
    def index_path(self) -> str:
        return self._files.index_path

    @property
    def team(self):
        """The team scope (P1, ``team/scope.py``) when ``[team]`` names a store and a team, else None."""
        if not self._team_made:
            self._team_made = True
            if self.config.team.configured_dsn() and self.config.team.name:
                from .team.scope import TeamScope

                self._team = TeamScope(self.config)
        return self._team

    @property
    def skipped(self):
        return self._files.skipped

    @property
    def excluded(self):
        return self._files.excluded

    @property
    def shadowed(self):
        return self._files.shadowed

    def embedder_name(self) -> str | None:
        """The embedder's registered name, without loading it (None: keyword-only)."""
        choice = self._embedder_choice
        if isinstance(choice, Embedder):
            return choice.name
        name = choice or self.config.embed.model
        return None if name == "none" else DEFAULT_EMBEDDER if name == "default" else name

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
                recheck: bool = False, walked=None, team: bool = True) -> RefreshReport:
        """Bring the index in line with the files (incremental), then embed what is new.

        When no file changed since the last complete refresh (same paths, sizes and mtimes,
        same settings), nothing is parsed: this is the cost of a recall in a fresh process.
        ``walked``: the stat walk ``files_look`` just made, so the files are not walked twice.
        ``team``: the team store's refresh too (a resident process runs it apart, unlocked)."""
        last = self._last_refresh
        healed = self.index.heals != self._heals_seen  # a rebuilt index is empty: fill it now, whatever the throttle
        if (not force and not recheck and not healed and last is not None and last[1] >= embed
                and time.monotonic() - last[0] < self.min_refresh_interval):
            return RefreshReport(**{**last[2].as_dict(), "up_to_date": True, "throttled": True})
        embedder = self.embedder if embed else None
        report = self._files.refresh(embedder, notice=self.embedder_notice, progress=progress, force=force,
                                     found=walked)
        if team and self.team is not None:  # the team's graph, vectors and lifecycle (never inline in a hook)
            self.team.refresh(embedder, progress=progress)
        self._heals_seen = self.index.heals
        self._refresh_problem = report.index_problem  # a locked index: this process waited for it once
        if not report.index_problem:
            self._last_refresh = (time.monotonic(), embed, report)
        return report

    def files_stamp(self, pause=None) -> str:
        """What the files look like now (paths, sizes, mtimes, settings): a stat walk only (and,
        with a team, its store's generation). ``pause``: called now and then during the walk
        (``index.incremental.walk``)."""
        return self.files_look(pause)[0]

    def files_look(self, pause=None) -> tuple:
        """(``files_stamp``, the stat walk it was made from: ``refresh(walked=…)`` takes it).
        ``walk_s``: how long the walk itself took (``pause``'s waits in it; the team's check not)."""
        started = time.perf_counter()
        walked = self._files.walk(pause)
        self.walk_s = time.perf_counter() - started
        stamp = self._files.stamp(self.embedder.name if self.embedder else None, walked)[1]
        return (stamp if self.team is None else f"{stamp}|team:{self.team.stamp()}"), walked

    def trust_index(self) -> None:
        """Use the index as it is, without checking the files again (a hook's fast fallback)."""
        self.min_refresh_interval = float("inf")
        self._last_refresh = (time.monotonic(), True, RefreshReport(notes=None, up_to_date=True, trusted=True))

    def has_notes(self) -> bool:
        try:
            return self.index.has_units()
        except (sqlite3.Error, OSError):
            return False

    def prepare_for_hook(self) -> RefreshReport:
        """Bring the index up to date without embedding anything, and recall keyword-only for
        this call when vectors are pending (or the index cannot be read for them): a hook answers
        within its budget and never waits for a model to embed a store (``memlane index``, or the
        daemon, embeds). The team scope answers the hook's recalls within its budget, and is never
        refreshed inline."""
        if self.team is not None:
            self.team.hook = True
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

    def prepare_for_recall(self, *, wait: bool = False, inline_max: int = 8, progress=None) -> int:
        """Bring the index up to date for a recall that never waits long for embeddings: what is
        new is embedded here when it is little (at most ``inline_max`` texts, or any amount for
        an instant embedder, or with ``wait``); otherwise this recall is keyword-only (and says
        so in ``embedder_notice``) and the caller hands the embedding to the background. Returns
        how many texts are left to embed (0: the recall uses meaning too)."""
        name = self.embedder_name()
        from .embed import available_embedders, is_instant, is_loadable

        chosen = self._embedder_choice if isinstance(self._embedder_choice, Embedder) else None
        if chosen is None and name is not None and name not in available_embedders():
            resolve_embedder(name)  # the configuration error that names the known embedders
        if (wait or name is None or (chosen.instant if chosen is not None else is_instant(name))
                or chosen is None and not is_loadable(name)):  # missing: the load says so at once, keyword-only
            self.refresh(progress=progress)
            return 0
        self.refresh(embed=False, progress=progress)
        try:
            pending = self.index.pending_count(name)
        except (sqlite3.Error, OSError):
            pending = -1
        if 0 <= pending <= inline_max:
            if pending:
                self.refresh(progress=progress)
            return 0
        self._embedder, self._embedder_loaded = None, True
        self.embedder_notice = ("keyword-only for now: the index is not readable" if pending < 0 else
                                f"keyword-only for now: {pending} note text(s) are being embedded in the "
                                "background; later recalls use meaning too (`memlane index` waits for it, with "
                                "progress)")
        return max(pending, 0)

    def pending_to_embed(self) -> int:
        """How many note texts the index holds no vector for (0 keyword-only, or unreadable)."""
        name = self._apart.name if self._apart is not None else self.embedder_name()
        try:
            return self.index.pending_count(name) if name is not None else 0
        except (sqlite3.Error, OSError):
            return 0

    @property
    def indexing_embedder(self) -> Embedder | None:
        """The embedder that embeds notes: ``embedder``, also while recall is keyword-only because
        texts are being embedded apart (``embed_apart``)."""
        return self._apart or self.embedder

    def embed_pending(self, *, wait: bool = True) -> int | None:
        """Embed now what the index holds no vector for (``refresh`` does after syncing; a
        resident process that refreshed with ``embed=False`` does it here for a few texts).
        ``wait=False``: None, nothing embedded, when another process holds the turn at embedding
        into this index (a resident process under its lock never waits for it)."""
        embedder = self.indexing_embedder
        if embedder is None:
            return 0
        if wait or not self.pending_to_embed():  # nothing to embed: no turn to take (the vectors packed)
            return self._files.embed(embedder)
        turn = self._files.embed_turn()
        if turn is None:
            return self._files.embed(embedder)
        try:
            if turn.try_take() is None:
                return None
            return self._files.embed(embedder, turn=turn)  # the turn held: taken again at once
        finally:
            turn.close()

    @property
    def embedding_apart(self) -> bool:
        """Whether texts are set apart to embed (``embed_apart``): recall keyword-only until
        ``embed_within`` has embedded them."""
        return self._apart is not None

    def embed_apart(self) -> None:
        """From now until ``embed_within`` has embedded every pending text, recall keyword-only
        (and say so): a resident process embeds a bulk change apart, a batch at a time, and its
        requests neither wait for that nor miss the new notes (a note with no vector yet would be
        one the meaning leg calls unrelated)."""
        if self._apart is None and self.embedder is not None:
            self._apart, self._embedder = self._embedder, None
        if self._apart is not None:
            self.embedder_notice = (f"keyword-only for now: {self.pending_to_embed()} note text(s) are being "
                                    "embedded in the background; later recalls use meaning too")

    def embed_within(self, *, hold, pause=None, stop=None, batch_size: int = 4) -> tuple[int, bool]:
        """Embed the pending texts apart (``embed_apart``), ``batch_size`` at a time: the model runs
        outside ``hold()`` (the resident process's lock: its requests go on meanwhile), each batch's
        vectors are stored under it; ``pause()`` before each batch (a request in flight goes first),
        ``stop()`` ends the round early, and so does another process's turn at embedding into this
        index (``memlane index``: it is not waited for, its vectors are not made twice). (texts
        embedded, whether none is left: then recall uses meaning again)."""
        embedder = self._apart
        if embedder is None:
            return 0, True
        turn = self._files.embed_turn()
        try:
            return self._embed_turns(embedder, turn, hold, pause, stop, batch_size)
        finally:
            if turn is not None:
                turn.close()

    def _embed_turns(self, embedder, turn, hold, pause, stop, batch_size: int) -> tuple[int, bool]:
        done, pending = 0, None
        while True:
            if stop is not None and stop():
                return done, False
            if pause is not None:
                pause()
            moved = turn.try_take() if turn is not None else False
            if moved is None:
                return done, False  # another process is embedding into this index: the next round looks again
            stored = False
            try:
                if pending is None or moved:  # first, or another process stored some meanwhile
                    with hold():
                        pending = self.index.pending_chunks(embedder.name)
                if not pending:
                    break
                batch, pending = pending[:batch_size], pending[batch_size:]
                vectors = embedder.embed_passages([text[: embedder.max_chars] for _, text in batch])
                with hold():
                    self.index.store_embeddings(embedder.name, [h for h, _ in batch], vectors)
                    stored, done = True, done + len(batch)
                    self.embedder_notice = (f"keyword-only for now: {len(pending)} note text(s) are being "
                                            "embedded in the background; later recalls use meaning too")
            finally:
                if turn is not None:
                    turn.give(stored=stored)
        with hold():
            if self.index.pending_count(embedder.name):
                return done, False  # more came meanwhile: the next round
            self._files.embed(embedder)  # nothing left to embed: the vectors packed for search
            self._embedder, self._apart, self.embedder_notice = embedder, None, None
        return done, True

    def meaning_back(self) -> None:
        """Recall with meaning again, whatever is still pending (embedding apart failed)."""
        if self._apart is not None:
            self._embedder, self._apart, self.embedder_notice = self._apart, None, None

    def further_candidates(self, prompt: str, *, after: list, n: int, session: str | None = None) -> list:
        """The next ``n`` notes of the ranking after those already recalled (``after``), whatever
        their score — the menu of possibly relevant notes a hook lists below what it injects.
        Private notes are not candidates; nothing is recorded in the hit-log."""
        if n <= 0:
            return []
        prompt = the_ask(prompt)  # what recall searched (retrieve/ask.py)
        known = {r.uid for r in after}  # its identity: a printed path may be redacted or neutral
        ranking = self._ranking_at_hand(prompt)
        if ranking is not None:
            # the prompt's own recall just ranked them: the next of its ranking, not a second search
            private = self.index.private_units()  # as the index holds it now, whatever the ranking saw
            hybrid = meaning_judges(prompt, self.config.retrieve.fusion)
            hits = [h for h in ranking if h.state != "archived" and h.unit_id not in private
                    and not (hybrid and words_alone(h))][: len(known) + 2 * n]
            # states as they are now: the lifecycle may have archived one since (it moves no generation)
            states = unit_states(self.index, [h.unit_id for h in hits])
            hits = [h for h in hits if states.get(h.unit_id) != "archived"]
            paths = self.index.units_by_id([h.unit_id for h in hits])
            hits = [h for h in hits if h.unit_id in paths and paths[h.unit_id].get("uid") not in known][:n]
            return recalled_units(self.index, prompt, hits, depth=Depth.SUMMARY, explain=False)
        plan = RecallPlan(min_score=0.0, k=min(MAX_K, len(after) + n), constellations=False)
        found = self.recall(prompt, depth=Depth.SUMMARY, refresh=False, record=False, include_private=False,
                            plan=plan, session=session)
        return [r for r in found if r.uid not in known][:n]

    def archived_may_answer(self, prompt: str) -> bool:
        """Whether a deep recall of ``prompt`` (archived notes admitted) could bring a note that the
        agent's recall of it just did not. False only when that recall's ranking is at hand (the
        same prompt, the index unchanged, no team scope) and holds no archived note at or above
        the relevance threshold that selection would take (not found by words alone): a deep
        recall ranks the same candidates, and only archived ones are admitted that were not before."""
        prompt = the_ask(prompt)
        ranking = self._ranking_at_hand(prompt)
        if ranking is None:
            return True
        floor, hybrid = self.config.retrieve.min_score, meaning_judges(prompt, self.config.retrieve.fusion)
        return any(h.state == "archived" and selectable(h, floor, hybrid) for h in ranking)

    def _ranking_at_hand(self, prompt: str) -> list | None:
        """The agent's last recall's whole ranking, when it was of ``prompt`` on the index as it is
        now and no team scope joined it; else None (``recall`` keeps it)."""
        last = self._last_ranking
        if self.team is not None or last is None or last[0] != (prompt, self.index.generation):
            return None
        return last[1]

    # -- recall ---------------------------------------------------------------------
    def recall(self, prompt: str, *, k: int | None = None, depth: Depth | str = Depth.SUMMARY,
               explain: bool = False, fusion: Fusion | str | None = None, include_archived: bool = False,
               divergent: bool = False, refresh: bool = True, session: str | None = None,
               plan: RecallPlan | None = None, layer: str = "recall", bracket: str | None = None,
               record: bool = True, include_private: bool = True, exclude: Iterable[str] = ()) -> list[Recalled]:
        """The units worth showing for ``prompt``, best first. Each recall is written to the
        hit-log (``session`` names the agent session, when there is one).

        ``include_archived``: deep mode — archived notes are searched too, and a recalled
        archived note is active again. ``divergent``: add remote associates from other parts of
        the link graph. ``layer`` and ``bracket`` go to the hit-log; ``record=False`` leaves no
        trace (a diagnostic). ``include_private=False``: the answer goes to an agent, so
        ``private: true`` notes are not candidates at all — every hook layer and the MCP server
        ask this way. ``exclude``: paths of notes that are not candidates."""
        depth = Depth(depth)
        plan = plan or RecallPlan(fusion=fusion, include_archived=include_archived, divergent=divergent, k=k)
        prompt = the_ask(prompt)  # a pasted log or diff left out, the words around it searched (retrieve/ask.py)
        if refresh:
            self.refresh()
        if self.auto_lifecycle and not self._refresh_problem:  # a locked index is not waited for twice
            self.maintain_lifecycle(team=False)  # the team's is folded by its refresh, off a hook's path
        begun, generation = None, None
        try:
            generation = self.index.generation  # before the ranking: a write meanwhile keeps it out of the memo
            if self.team is not None:  # the team's half runs on its worker while the local scopes rank
                begun = self.team.begin(self, prompt, plan, depth=depth, explain=explain,
                                        include_private=include_private, exclude=exclude)
            outcome = self._run(prompt, plan, include_private, exclude)
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc) or self.index.path == ":memory:":
                raise
            self.index.heal(exc)  # e.g. a damaged full-text index: rebuild from the files, once
            self.refresh()
            generation = None  # a healed index: no memo of this ranking
            outcome = self._run(prompt, plan, include_private, exclude)
        hits = [h for h in outcome.selected]
        # an agent's recall (no private notes, nothing excluded, archived left out) of an index no one
        # wrote to while it ranked: the menu below it reads the rest of this ranking (further_candidates).
        # Another kind of recall (the deep layer's, with archived notes) leaves that memo as it was: it
        # is keyed by the prompt and the index's generation, so it is never read for another prompt or
        # a changed index.
        agent_view = not include_private and not exclude and not plan.include_archived and plan.min_score is None
        if agent_view:
            unchanged = generation is not None and self.index.generation == generation
            self._last_ranking = ((prompt, generation), outcome.ranking) if unchanged else None
        results = recalled_units(self.index, prompt, hits, depth=depth, explain=explain)
        if self.team is not None:  # the team scope joins, narrower wins (team/scope.py)
            results, hits = self.team.join(self, prompt, plan, results, hits, depth=depth, explain=explain,
                                           include_private=include_private, exclude=exclude, begun=begun)
        if record:
            local = [(r, h) for r, h in zip(results, hits) if r.scope != "team"]
            log_recall(self.hit_log, prompt, [r for r, _ in local], [h for _, h in local], session=session,
                       depth=depth, layer=layer, bracket=bracket)
            if plan.include_archived:
                self._restore([r.uid for r, h in local if h.state in ("archived", "dormant")])
            if len(local) < len(results):
                shared = [(r, h) for r, h in zip(results, hits) if r.scope == "team"]
                self.team.record(prompt, [r for r, _ in shared], [h for _, h in shared], session=session,
                                 depth=depth, layer=layer, bracket=bracket, restore=plan.include_archived)
        return results

    def _run(self, prompt: str, plan: RecallPlan, include_private: bool, exclude_paths: Iterable[str]):
        mixed_scopes = len({scope_rank(s.scope) for s in self.specs}) > 1
        exclude = excluded_units(self.index, prompt, mixed_scopes=mixed_scopes, include_private=include_private,
                                 paths=exclude_paths)
        return run_recall(self.index, prompt, self.config, embedder=self.embedder, plan=plan, exclude=exclude)

    @property
    def hit_log(self) -> HitLog | None:
        """The hit-log beside the index file (none for an in-memory index or when turned off)."""
        if not self.config.index.hit_log or self.index_path == ":memory:":
            return None
        return HitLog(f"{self.index_path}.hits.jsonl")

    # -- lifecycle ------------------------------------------------------------------
    @property
    def usage(self) -> Usage:
        return Usage(self.index, self.hit_log, self.config.lifecycle)

    def graph_unsettled(self) -> bool:
        """Whether a large store's link edit left hubs, clusters and constellations to settle
        (``associate/build.py``)."""
        try:
            return self.index.get_meta("graph") == UNSETTLED
        except (sqlite3.Error, OSError):
            return False

    def settle_graph(self) -> bool:
        """Recompute the link graph's structure if it is unsettled; returns whether it did."""
        return settle_graph(self.index) if self.graph_unsettled() else False

    def maintain_lifecycle(self, *, team: bool = True) -> None:
        """Fold new hit-log lines into the index and, at most hourly, move notes between
        active, dormant and archived. A locked index just waits for the next recall. ``team``:
        the team store's shared hit-log too (a resident process's background round)."""
        try:
            self.usage.maintain()
        except (sqlite3.Error, OSError) as exc:
            log.info("lifecycle not updated this time: %s", exc)
        if team and self.team is not None:
            self.team.maintain()

    def _restore(self, uids: list[str]) -> None:
        try:
            self.usage.restore(uids)
        except (sqlite3.Error, OSError) as exc:
            log.info("could not restore %s: %s", uids, exc)

    def decay(self, *, dry_run: bool = True, refresh: bool = True) -> dict:
        """What the lifecycle would change now, and why; applied unless ``dry_run``."""
        if refresh:
            self.refresh(embed=False)
        return self.usage.decay(dry_run=dry_run)

    def status(self, *, refresh: bool = True, limit: int = 10) -> dict:
        """Lifecycle state of every note: counts, the most used, the ones about to change."""
        if refresh:
            self.refresh(embed=False)
        return {"index": self.index_path, **self.usage.status(limit=limit)}

    # -- the write path (write/) -----------------------------------------------------
    def add(self, draft, *, apply: bool = False, to: str | Path | None = None, scope: str | None = None,
            include_private: bool = True, dry_run: bool = False) -> dict:
        """Compare ``draft`` (a ``store.write.Draft``) with the nearest notes and advise ADD /
        UPDATE / SUPERSEDE / NOOP; an ADD is written unless ``dry_run``, the rest only with
        ``apply``. The note goes to the store its scope names (``scope``, else its type: user
        notes to the user store, the others to this repository's project store), or ``to``.
        Raises ``WriteError`` for a draft that cannot be written."""
        from .write.remember import add

        return add(self, draft, apply=apply, to=to, scope=scope, include_private=include_private, dry_run=dry_run)

    def suggest_links(self, name: str, *, apply: bool = False, k: int = 5, include_private: bool = True) -> dict:
        """``[[links]]`` worth adding to the note ``name``, with why; ``apply`` writes them."""
        from .write.links import suggest_links

        return suggest_links(self, name, apply=apply, k=k, include_private=include_private)

    def archive(self, name: str, *, include_private: bool = True) -> dict:
        """Archive the note ``name`` by hand: out of default recall until restored or used."""
        return self._set_state(name, "archived", include_private)

    def restore(self, name: str, *, include_private: bool = True) -> dict:
        """Bring the archived note ``name`` back into recall."""
        return self._set_state(name, "active", include_private)

    def _set_state(self, name: str, state: str, include_private: bool) -> dict:
        from .errors import WriteError

        self.refresh(embed=False)
        found = [r for r in self.index.find(name) if include_private or not r["meta"].get("private")]
        if not found:
            raise WriteError(self.not_found(name, "its state is the team's (its shared lifecycle), not set from here"))
        changed = self.usage.set_state([r["uid"] for r in found], state)
        return {"name": found[0]["name"], "path": found[0]["path"], "state": state, "changed": changed}

    def not_found(self, name: str, team_note: str) -> str:
        """What to say when no local note is called ``name``: when the team holds one, that it is a
        team note and ``team_note`` (why the command does not act on it), else that there is none."""
        if self.team is not None and self.team.find(name):
            return f"{name[:100]!r} is a team note: {team_note}"
        return f"no note called {name[:100]!r}"  # as far as a note's name can go, not a pasted page

    # -- other reads ----------------------------------------------------------------
    def show(self, name: str, *, refresh: bool = True, session: str | None = None) -> list[dict]:
        """Every note called ``name`` (a name, a file name or a path), in full. Reading a note
        is a use: it is written to the hit-log, and an archived note is active again."""
        if refresh:
            self.refresh(embed=False)
        found = self.index.find(name)
        shared = [] if self.team is None else self.team.show(name, found, session=session)  # narrower wins
        found = [r for r in found if not (r["scope"] == "user" and any(s["name"] == r["name"] for s in shared))]
        if found and self.hit_log is not None:
            self.hit_log.record(name, [{"path": r["path"], "name": r["name"], "rank": n, "score": None}
                                       for n, r in enumerate(found, start=1)], session=session, layer="show",
                                depth=Depth.FULL.value)
            self._restore([r["uid"] for r in found])
        found = sorted(found + shared, key=lambda r: -scope_rank(r["scope"]))
        return redact_data([{"name": r["name"], "title": r["title"] or r["name"], "type": r["type"],
                             "scope": r["scope"], "path": r["path"], "description": r["description"],
                             "body": r["body"], "meta": r["meta"]} for r in found])

    def skipped_files(self) -> list[tuple[str, str]]:
        """(path, reason) of every file the last scan of the stores could not or would not read."""
        return self._files.skipped_files()

    def stats(self, *, refresh: bool = True) -> dict:
        if refresh:
            self.refresh(embed=False)
        skipped, index = self.skipped_files(), self.index
        names = index.names_of(index.all_ids())
        limits = self.config.associate
        return {"index": self.index_path, "counts": index.counts(), "by_type": index.counts_by("type"),
                "by_scope": index.counts_by("scope"), "embedded_units": index.embedded_units(),
                "stores": [{"path": str(s.path), "scope": s.scope, "source": s.label} for s in self.specs],
                "skipped": len(skipped), "links_outside": sum(1 for _, why in skipped if why == OUTSIDE),
                "shadowed": len(self.shadowed), "excluded": len(self.excluded),
                "hubs": [{"name": names.get(u), "in_degree": d, "pagerank": round(r, 4)} for u, d, r in index.hubs()],
                "constellations": [[names.get(u) for u in group] for group in index.constellation_groups()
                                   if limits.constellation_min <= len(group) <= limits.constellation_max],
                "clusters": _linked_clusters(index.clusters()),
                "supersedes_loops": [names.get(u) for u in index.supersedes_loops()],
                "future_writes": [{"from": names.get(u), "target": t} for u, t, _ in index.missing_links()],
                "hit_log": None if self.hit_log is None else
                {"path": str(self.hit_log.path), "records": sum(1 for _ in self.hit_log.read())}}

    def doctor(self) -> dict:
        """What is configured, where the index lives, whether it is healthy, embedder status."""
        embedder = self.embedder
        stores = [{"path": str(spec.path), "scope": spec.scope, "source": spec.label, "exists": spec.path.is_dir(),
                   "read_only": spec.read_only, "has_MEMORY.md": (spec.path / "MEMORY.md").is_file()}
                  for spec in self.specs]
        return {
            "config_files": self.config.sources or ["(none: defaults)"],
            "repository_config": {"file": self.config.repository_file, "refused": self.config.refused},
            "repository": str(self.repo) if self.repo else None,
            "claude_code_memory": str(discover_claude_memory(self.cwd) or "(not found)"),
            "user_store": str(self.config.user_store_path()),
            "stores": stores,
            "index": {"path": self.index_path, "exists": Path(self.index_path).exists(),
                      "integrity": self.index.check_integrity() or "ok", **self.index.counts(),
                      "not_embedded": self._not_embedded(embedder)},
            "embedder": {"name": embedder.name if embedder else None, "dim": embedder.dim if embedder else None,
                         "min_cosine": embedder.min_cosine if embedder else None,
                         "status": "ready" if embedder else (self.embedder_notice or "off")},
            "retrieve": {"fusion": self.config.retrieve.fusion, "min_score": self.config.retrieve.min_score,
                         "long_notes": self.config.embed.long_notes},
            "domains": {"docs": self.config.domains.docs, "transcripts": self.config.domains.transcripts,
                        "code": self.config.domains.code, "privacy_exclude": self.config.privacy.exclude},
            "team": None if self.team is None else self.team.status(),
        }

    def _not_embedded(self, embedder: Embedder | None) -> int | None:
        """How many note texts still wait for ``embedder``'s vectors (None: no embedder, or unknown)."""
        if embedder is None:
            return None
        try:
            return self.index.pending_count(embedder.name)
        except (sqlite3.Error, OSError):
            return None

    def close(self) -> None:
        if self._team is not None:
            self._team.close()
        self.index.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _linked_clusters(clusters: dict[int, int]) -> int:
    """How many clusters hold two notes or more: a note with no links is a cluster of its own, and
    no cluster of linked notes."""
    from collections import Counter

    return sum(1 for size in Counter(clusters.values()).values() if size > 1)
