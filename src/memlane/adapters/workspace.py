"""A warm workspace: one ``Memory`` (and the other recall domains beside it) kept open by a
resident process, and kept fresh by one throttle, whichever face serves it — the hook daemon
or the MCP server.

The throttle, the same for both faces:

- **The notes' files** are looked at at most every ``refresh_s`` seconds — or, for a store so
  large that its walk takes long, at most ``WALK_SHARE`` of the time (the walk's 0.1 s at 10k
  notes: every 2 s; its 1 s at 100k: every 20 s) — and looking is a stat walk only
  (``Memory.files_stamp``) that steps aside while a request is answered (``serving``); the index
  is refreshed only when the files changed. The same round folds the hit-log into the index
  (and, hourly, moves notes between lifecycle states), so a recall never pays for it.
- **The other domains** (docs, transcripts, code) are refreshed at most every
  ``fabric_refresh_s`` seconds: transcripts grow and code changes, but re-reading them costs
  more than a stat walk.
- **A changed configuration file** (a file the configuration was read from changed, or is
  gone) closes everything and opens it again: the stores, the index or the embedder may be
  others now.

Who runs the throttle differs, because the faces differ:

- **The daemon** answers many sessions at once and a request must never wait on a file check,
  so it calls ``warm`` (the index fresh and the model loaded before the first answer, then the
  warm-up's objects frozen out of the collector's way) and ``start_refresher``: a background
  thread runs ``refresh_due`` whenever a check comes due. Requests take the workspace with
  ``held`` (the lock, a deadline, a config check) and never refresh.
- **The MCP server** answers one call at a time and may sit idle for hours, so a thread would
  only spend cycles nobody waits for; it calls ``current`` (and ``domains``) on each call, which
  opens on first use and runs the same ``refresh_due`` inline: a call pays for a stat walk at
  most every ``refresh_s`` — on every call while a walk takes at most ``CHEAP_WALK_S`` (a store
  of a few thousand notes), as a person's recall through the daemon does — and for a refresh
  only when a file changed.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from collections.abc import Callable, Iterator

from ..errors import MemlaneError
from .. import logs

log = logs.get("memlane.workspace")

REFRESH_S = 2.0  # the notes' files are stat-walked at most this often
#: a person's recall through the daemon, and each MCP call, walks the files first when the last walk
#: took at most this long (a store of a few thousand notes); a larger store keeps to the throttle
CHEAP_WALK_S = 0.02
WALK_SHARE = 0.05  # ... and the walks take at most this share of the time (a large store is walked less often)
WALK_YIELD_S = 1.0  # a walk waits at most this long for the requests in flight before it goes on
FABRIC_REFRESH_S = 15.0  # the other domains are re-read at most this often
SCREEN_AHEAD_S = 1.0  # a background round screens notes ahead this long at most (``_screen_ahead``)
#: ... and only once no request has been served for this long, until the next one arrives: prompts in a
#: row never share the interpreter (and two cores) with it
SCREEN_IDLE_S = 3.0
IDLE_POLL_S = 0.05  # the refresher never spins: its shortest wait
#: a warm workspace's refresh embeds this many new texts under the lock (a note or a few edited: ~0.1–1 s);
#: more (a bulk change: a folder copied in, a first start) are embedded apart, a batch at a time, while
#: requests answer keyword-only and say so (``Memory.embed_apart``)
INLINE_EMBED = 8
EMBED_ROUND_S = 5.0  # a background round embeds this long at most: then the files are looked at again
EMBED_RETRY_S = 1.0  # ... and when another process (`memlane index`) was embedding, tries again after this
#: the dry-run prompt a warm-up answers (``_prime``): content words for both legs and the guard
PRIME_PROMPT = "how do we deploy and test this project safely"


class Busy(MemlaneError):
    """The workspace could not be had before a request's deadline."""


class Workspace:
    """One ``Memory`` over ``stores`` (with ``embedder``, the index at ``index``, the project at
    ``cwd``) and the domains ``build_domains(memory)`` opens beside it (None: no other domains).
    Nothing opens before ``warm``, ``held`` or the first ``current``. ``clock`` is what the
    throttle reads (``time.monotonic``; a test may step it by hand)."""

    def __init__(self, stores: list[str] | None, embedder: str | None, index: str | None, cwd: str | None, *,
                 build_domains: Callable | None = None, build_judge: Callable | None = None,
                 refresh_s: float = REFRESH_S, fabric_refresh_s: float = FABRIC_REFRESH_S,
                 clock: Callable[[], float] = time.monotonic):
        self.args = (stores, embedder, index, cwd)
        self.build_domains = build_domains
        self.build_judge = build_judge  # (memory, released) -> the judge (R4) or None: the daemon's only
        self.judge = None
        self.refresh_s, self.fabric_refresh_s = refresh_s, fabric_refresh_s
        self.clock = clock
        self.lock = threading.Lock()  # requests, refreshes and reopening take it: never two at once
        self._request = threading.local()  # this thread's request: its deadline, whether it holds the lock
        self.memory = None
        self.fabric = None  # the other domains, once built (None: not yet, or none to build)
        self.opened = 0  # how many times a Memory was opened: a reopen is visible
        self._team_due = False  # the team store is refreshed by the next round, unlocked (it opened without)
        self._screen_due = False  # notes indexed since the last round not screened ahead yet (``screen_ahead``)
        self._embed_due = False  # texts left to embed apart (``_embed_aside``), recall keyword-only meanwhile
        self._embed_after = 0.0  # time.monotonic() before which the next try would find another process's turn
        self._warm = False
        self._fabric_built = False
        self._config_stamp = None
        self._files_stamp = None
        self._files_checked = self._fabric_checked = 0.0
        self._walk_s = 0.0  # how long the last stat walk took, its waits for requests left out
        self._stepped_aside_s = 0.0
        self._serving = 0  # requests in flight (``serving``)
        self._served_at = float("-inf")  # time.monotonic() when a request last began or ended
        self._serving_lock = threading.Lock()
        self._quiet = threading.Event()  # set while no request is in flight: a walk goes on only then
        self._quiet.set()
        self._stopping = threading.Event()
        self._refresher: threading.Thread | None = None
        self._settler = None  # the process settling the link graph (associate/settle.py), if one was started

    # -- opening --------------------------------------------------------------------
    def warm(self) -> None:
        """Open now, with everything a first answer needs — the index fresh, the model loaded, the
        other domains built and read, one prompt answered as a dry run — and keep the warm-up's
        objects out of the collector's way (again after every reopen)."""
        with self.lock:
            self._warm = True
            _load_numpy()
            self._open()

    def _open(self) -> None:
        """(Re)open under the lock: the old memory and domains closed, a fresh Memory whose index
        is trusted from now on — this workspace's throttle decides when the files are looked at."""
        from ..memory import Memory

        self._close_all()
        stores, embedder, index, cwd = self.args
        memory = Memory(stores or None, embedder=embedder, index_path=index, cwd=cwd)
        try:
            self._config_stamp = _config_stamp(memory)
            self._embed_due = False
            self._index_fresh(memory, team=False)  # index fresh and the model loaded before the first answer
            self._team_due = memory.team is not None  # the team's own refresh: the next round, unlocked
            self._screen_due = True
            self._files_stamp = memory.files_stamp()
            self._walk_s = memory.walk_s
            if self._warm and memory.indexing_embedder is not None:
                try:
                    memory.indexing_embedder.keep_resident()  # its weights read in now, not page by page mid-prompt
                except OSError as exc:
                    log.info("the model's weights could not be read in ahead: %s", exc)
        except BaseException:
            memory.close()  # not half open: the next call opens again
            raise
        self._files_checked = self.clock()
        memory.trust_index()  # from now on refresh_due decides when to look at the files
        memory.auto_lifecycle = False  # ... and folds the hit-log, outside any recall
        self.memory = memory
        self.judge = None if self.build_judge is None else self.build_judge(memory, self.released)
        self.opened += 1
        if self._warm:
            self._build_domains()
            self._prime()
            _freeze_warm_objects()

    def _index_fresh(self, memory, **refresh) -> None:
        """Under the lock: ``memory.refresh(**refresh)``. A warm workspace embeds a few new texts
        there and then, and leaves more to ``_embed_aside`` (requests keyword-only meanwhile):
        embedding a folder copied in took the lock for ~25 s, and every prompt meanwhile waited
        out its deadline (3 s) before its client answered it alone."""
        if not self._warm:
            memory.refresh(**refresh)  # a caller that checks inline (the MCP server) embeds inline too
            return
        memory.refresh(embed=False, **refresh)
        embedder = memory.embedder  # None while texts are embedded apart already
        many = embedder is not None and not embedder.instant and memory.pending_to_embed() > INLINE_EMBED
        # a few texts (or an instant model's) are embedded now, under the lock, unless another process
        # (`memlane index`) has the turn at embedding into this index: never waited for here
        if self._embed_due or many or (embedder is not None and memory.embed_pending(wait=False) is None):
            memory.embed_apart()
            self._embed_due = True
        memory.trust_index()  # as fresh as a refresh that embedded: a request's recall does not look again

    def _prime(self) -> None:
        """One prompt answered as a dry run before the first real one (nothing recorded, no
        session's state, no judge asked): the guard's rules compiled, the vectors and postings read
        in, the model's first run done — the first prompt of a new daemon cost ~0.5 s without it."""
        from ..inject.layers import user_prompt

        memory = self.memory
        try:
            if not memory.has_notes():
                return
            if memory.config.judge.configured:  # a dry run would ask it: the recall alone then
                memory.recall(PRIME_PROMPT, depth="full", refresh=False, record=False, include_private=False)
            else:
                user_prompt(memory, {"session_id": "", "prompt": PRIME_PROMPT, "transcript_path": None},
                            dry_run=True, fabric=self.fabric)
        except Exception as exc:  # noqa: BLE001 - only a warm-up: the first prompt pays instead
            log.info("the warm-up prompt failed: %s: %s", type(exc).__name__, exc)

    def _build_domains(self) -> None:
        """The other domains, built and read once (under the lock)."""
        self._fabric_built = True
        if self.build_domains is None:
            return
        self.fabric = self.build_domains(self.memory)
        if self.fabric is not None:
            self.fabric.refresh()
            self._fabric_checked = self.clock()

    def _reopen_if_config_changed(self) -> bool:
        """Under the lock: reopen when a configuration file changed since the open."""
        if self.memory is None or _config_stamp(self.memory) == self._config_stamp:
            return False
        log.info("configuration changed: reopening")
        self._open()
        return True

    # -- the two ways in --------------------------------------------------------------
    @contextmanager
    def held(self, deadline: float | None = None) -> Iterator["Workspace"]:
        """The workspace for one request, the lock held (no refresh or reopen under it), after a
        config check. ``deadline``: a ``time.monotonic()`` value; ``Busy`` when the lock is not
        had by then (also when ``released`` cannot have it back by then). Used by a warm
        workspace, whose refresher keeps the files fresh."""
        wait = -1 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self.lock.acquire(timeout=wait):
            raise Busy("the workspace was busy past the request's deadline")
        request = self._request
        outer = (getattr(request, "deadline", None), getattr(request, "holding", False))
        request.deadline, request.holding = deadline, True
        try:
            if self.memory is None:
                self._open()
            else:
                self._reopen_if_config_changed()
            yield self
        finally:
            holding = request.holding
            request.deadline, request.holding = outer
            if holding:  # not when released could not have it back: the lock is someone else's then
                self.lock.release()

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Around a whole request, from its first byte read to its last written: a background
        stat walk waits (``WALK_YIELD_S`` at most) rather than share the interpreter with it."""
        with self._serving_lock:
            self._serving += 1
            self._served_at = time.monotonic()
            self._quiet.clear()
        try:
            yield
        finally:
            with self._serving_lock:
                self._serving -= 1
                self._served_at = time.monotonic()
                if not self._serving:
                    self._quiet.set()

    def _step_aside(self) -> None:
        if not self._quiet.is_set():
            started = time.perf_counter()
            self._quiet.wait(WALK_YIELD_S)
            self._stepped_aside_s += time.perf_counter() - started

    @contextmanager
    def released(self) -> Iterator[None]:
        """Inside ``held``, while the request waits on something outside memlane (the judge's
        answer): other requests and the refresher may have the workspace meanwhile. Taken back
        no later than the request's deadline: ``Busy`` when it cannot be (the refresher holds it
        through a long refresh), when the deadline has passed, or when the workspace was
        reopened in the meantime (the request's Memory is closed) — the request then answers
        nothing and records nothing (the client answers the prompt itself)."""
        request = self._request
        if not getattr(request, "holding", False):
            yield  # not inside held on this thread: nothing to let go of
            return
        memory, deadline = self.memory, request.deadline
        request.holding = False
        self.lock.release()
        try:
            yield
        finally:
            wait = -1 if deadline is None else max(0.0, deadline - time.monotonic())
            if not self.lock.acquire(timeout=wait):
                raise Busy("the workspace was busy past the request's deadline when the judge had answered")
            request.holding = True
            if deadline is not None and time.monotonic() >= deadline:
                raise Busy("the request's deadline passed while it waited for the judge")
            if self.memory is not memory:
                raise Busy("the workspace was reopened while the request waited for the judge")

    def current(self):
        """The Memory, for a caller that checks inline: opened on first use, reopened after a
        config change, and the files checked when the throttle says so — or on every call while a
        walk is cheap (``CHEAP_WALK_S``), so a note written a moment ago is found."""
        with self.lock:
            if self.memory is None:
                self._open()
            else:
                self._reopen_if_config_changed()
                if self.files_cheap_to_check():
                    self.check_files()
        self.refresh_files_due()
        return self.memory

    def domains(self):
        """The fabric, for a caller that checks inline: built on first use, then re-read when
        the throttle says so."""
        self.current()
        with self.lock:
            if not self._fabric_built:
                self._build_domains()
                return self.fabric
        self.refresh_domains_due()
        return self.fabric

    # -- the throttle -----------------------------------------------------------------
    def refresh_due(self) -> None:
        """One round: the files if a check is due, the other domains if theirs is."""
        self.refresh_files_due()
        self.refresh_domains_due()
        if self._embed_due and time.monotonic() >= self._embed_after:
            self._embed_aside()

    def _embed_aside(self) -> None:
        """Texts left to embed apart (``_index_fresh``), for ``EMBED_ROUND_S`` at most a round, a batch
        at a time: the model runs outside the lock, and steps aside while a request is served."""
        memory, began = self.memory, time.monotonic()
        if memory is None:
            return
        try:
            done, finished = memory.embed_within(
                hold=lambda: self.lock, pause=self._step_aside,
                stop=lambda: (self._stopping.is_set() or memory is not self.memory
                              or time.monotonic() >= began + EMBED_ROUND_S))
        except Exception as exc:  # noqa: BLE001 - a model that fails on a text: meaning for what is embedded
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower():
                log.info("embedding in the background waits for the index: %s", exc)  # another process writes:
                with self.lock:  # ... the rest a second later, recall keyword-only meanwhile
                    self._embed_after = time.monotonic() + EMBED_RETRY_S
                return
            done, finished = 0, True
            with self.lock:
                if memory is not self.memory:  # reopened meanwhile (its index closed): the new one embeds its own
                    return
                memory.meaning_back()
            log.warning("embedding in the background failed, recall uses meaning for what is embedded: %s", exc)
        with self.lock:
            # (a request that refreshed since ``embed_within`` gave meaning back may have set texts apart
            # again: then they are the next round's, or recall would stay keyword-only for good)
            if memory is self.memory and finished and not memory.embedding_apart:
                self._embed_due = False
            elif not done:  # another process's turn at embedding (or the round ended at once): look again later
                self._embed_after = time.monotonic() + EMBED_RETRY_S
        if done:
            log.info("embedded %d note texts in the background in %.1f s%s", done, time.monotonic() - began,
                     "" if finished else ", more to come")

    def refresh_files_due(self) -> None:
        """At most every ``refresh_s``: a stat walk (outside the lock: requests go on meanwhile),
        then, under the lock, a refresh only if the files changed, and the hit-log folded in. In
        the background only: a link graph a large store's edit left unsettled is settled by a
        process of its own (``associate/settle.py``), started unless one runs."""
        memory, now = self.memory, self.clock()
        if memory is None or now - self._files_checked < self._files_interval():
            return
        self._files_checked = now
        try:
            with self.lock:
                if memory is not self.memory:
                    return
                if memory.stores_moved():  # a folder that appeared is read, one that went is dropped
                    log.info("memory folders changed: now %s", ", ".join(str(s.path) for s in memory.candidate_specs()
                                                                         if s.path.is_dir()) or "none")
                    memory.reload_stores()
                    self._files_stamp = None  # refreshed whatever the walk finds
            self._stepped_aside_s = 0.0
            stamp, walked = memory.files_look(pause=self._step_aside)
            self._walk_s = max(0.0, memory.walk_s - self._stepped_aside_s)  # the team's check left out
            with self.lock:
                if memory is not self.memory:
                    return  # reopened meanwhile: the new one was refreshed as it opened
                self._refresh_if_changed(memory, stamp, walked)
                memory.maintain_lifecycle(team=False)  # new uses in; states moved at most hourly
                unsettled = self._refresher is not None and memory.graph_unsettled()
                team_due, self._team_due = self._team_due, False
                screen_due = self._refresher is not None and self._screen_due
                self._screen_due = self._screen_due and not screen_due
                embedder = memory.indexing_embedder if team_due else None  # loaded here, once
            if memory.team is not None:  # outside the lock: a slow team store (a member's bulk import to
                if team_due:  # embed, a network that stalls) never holds a prompt up past its deadline
                    memory.team.refresh(embedder)
                memory.team.maintain()
            if unsettled:
                self._settle_aside(memory)
            if screen_due:  # a later hook answered in a fresh process finds their verdicts kept
                self._screen_ahead(memory)
        except Exception as exc:  # noqa: BLE001 - the index stays as it is; the next round tries again
            log.info("file check failed: %s", exc)

    def _screen_ahead(self, memory) -> None:
        """The notes' verdicts screened ahead (``inject.layers.screen_ahead_within``), a batch at a
        time under the lock and stepping aside while a request is served, for ``SCREEN_AHEAD_S`` at
        most a round, and only while no request has been served for ``SCREEN_IDLE_S``: the rest is
        left to the next (a first round at 10k notes takes ~20 s, and the files are not looked at
        meanwhile)."""
        from ..inject.layers import screen_ahead_within

        began = time.monotonic()
        if self._serving or began - self._served_at < SCREEN_IDLE_S:
            screened, finished = 0, False  # prompts in a row: later, when the daemon is idle
        else:
            screened, finished = screen_ahead_within(  # the round's time up, or a request came: the rest later
                memory, hold=lambda: self.lock, pause=self._step_aside,
                stop=lambda: time.monotonic() >= began + SCREEN_AHEAD_S or self._served_at > began)
        if not finished:
            with self.lock:
                self._screen_due = self._screen_due or memory is self.memory
        if screened:
            log.info("screened %d notes ahead in %.1f s", screened, time.monotonic() - began)

    def check_files(self) -> None:
        """Inside ``held``: the files checked now, whatever the throttle says — for a person's
        ``memlane recall`` through the daemon, which then finds the note written a moment ago as a
        recall in its own process would (the hooks keep to the background's rounds)."""
        memory = self.memory
        stamp, walked = memory.files_look()
        self._walk_s = memory.walk_s  # the walk alone: a team store's round trip is no cost of the files
        self._refresh_if_changed(memory, stamp, walked)
        self._files_checked = self.clock()

    def _refresh_if_changed(self, memory, stamp: str, walked) -> None:
        """Under the lock: ``memory`` refreshed when the files' ``stamp`` moved (from the ``walked``
        files, not walked again); the team store's refresh is then owed to the next background
        round, which runs it unlocked."""
        if stamp == self._files_stamp:
            return
        self._index_fresh(memory, force=False, recheck=True, walked=walked, team=False)
        self._files_stamp = stamp
        self._team_due = self._team_due or memory.team is not None
        self._screen_due = True

    def files_cheap_to_check(self) -> bool:
        """Whether the last stat walk was quick enough to walk the files again inside a request
        (``CHEAP_WALK_S``): at 10k notes a walk costs ~70 ms of a ~110 ms recall, at 100k ~0.7 s."""
        return self._walk_s <= CHEAP_WALK_S

    def _settle_aside(self, memory) -> None:
        if self._settler is not None and self._settler.poll() is None:
            return  # still settling
        import subprocess
        import sys

        try:
            self._settler = subprocess.Popen(
                [sys.executable, "-P", "-m", "memlane.associate.settle", str(memory.index_path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)
        except OSError as exc:
            log.info("could not start settling the link graph: %s", exc)

    def _files_interval(self) -> float:
        """How long after a stat walk the next one is due: ``refresh_s``, or longer for a walk so
        slow that it would otherwise take more than ``WALK_SHARE`` of the time."""
        return max(self.refresh_s, self._walk_s / WALK_SHARE)

    def refresh_domains_due(self) -> None:
        """At most every ``fabric_refresh_s``: new transcript turns, edited docs and code."""
        if self.fabric is None or self.clock() - self._fabric_checked < self.fabric_refresh_s:
            return
        try:
            with self.lock:
                if self.fabric is not None:
                    self.fabric.refresh()
                self._fabric_checked = self.clock()
        except Exception as exc:  # noqa: BLE001 - the next round tries again
            log.info("domain refresh failed: %s", exc)

    def start_refresher(self) -> None:
        """Run ``refresh_due`` in a background thread, each time a check comes due, until
        ``close``."""
        self._refresher = threading.Thread(target=self._refresh_in_background, name="memlane-refresh",
                                           daemon=True)
        self._refresher.start()

    def _refresh_in_background(self) -> None:
        while not self._stopping.wait(self._until_due()):
            self.refresh_due()

    def _until_due(self) -> float:
        now = self.clock()
        if self.memory is None:
            return self.refresh_s  # not open (yet, or closing): nothing to check
        if self._embed_due:  # texts to embed apart: the next batch now, or once another process's turn is over
            return max(IDLE_POLL_S, min(self._embed_after - time.monotonic(), self.refresh_s))
        due = [self._files_checked + self._files_interval()]
        if self.fabric is not None:
            due.append(self._fabric_checked + self.fabric_refresh_s)
        return max(IDLE_POLL_S, min(due) - now)

    # -- closing ----------------------------------------------------------------------
    def close(self) -> None:
        """Stop the refresher and close everything, after the request in flight (if any)."""
        self._stopping.set()
        with self.lock:
            self._close_all()

    def _close_all(self) -> None:
        fabric, memory = self.fabric, self.memory
        self.fabric, self.memory, self._fabric_built = None, None, False
        if fabric is not None:
            fabric.close()
        if memory is not None:
            memory.close()


def _config_stamp(memory) -> list[tuple]:
    """What the configuration files look like now: the ones the memory was opened with, and the
    ones it would read if they appeared (a config file created later counts as a change)."""
    from ..config import config_files

    stamps = []
    for path in dict.fromkeys([*memory.config.sources, *map(str, config_files(memory.repo))]):
        try:
            st = os.stat(path)
            stamps.append((path, st.st_mtime_ns, st.st_size))
        except OSError:
            stamps.append((path, None, None))
    return stamps


def _freeze_warm_objects() -> None:
    """What the warm-up loaded (index caches, the model's objects) lives as long as the
    workspace: out of the collector's way, so no full collection lands in a request."""
    gc.unfreeze()  # (a reopened workspace: the old one's objects may be collected now)
    gc.collect()
    gc.freeze()


def _load_numpy() -> None:
    """A resident process loads numpy once (when installed), so that its keyword leg reads the
    postings (``index/postings.py``) even keyword-only; a fresh process on a small store does not."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        pass
