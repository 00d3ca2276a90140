"""The team scope as ``Memory`` joins it: between user and project, never blocking.

A recall asks the local index (user and project scopes) first, then the team's store on
PostgreSQL through the same pipeline (``recall.run_recall`` over ``PostgresStorage``), in a
worker thread given ``team.timeout_ms``: past it, or when the database is down, refuses the
role or has an older schema, the local scopes answer alone and the reason is logged (the hook's
log), and the team is left alone for ``team.retry_s`` — remembered in a small file in the cache
folder, so the daemon, the MCP server and a hook's own process all skip a dead database at once.

The scopes meet the way the folders of user and project do (``store/scopes.py``): narrower
wins. A team note named like one of the project's notes, or sharing a recall keyword the prompt
uses with one, is not a candidate; a user note named like a team note, or sharing such a keyword
with one, yields to it. The two rankings are then interleaved by score — a note with its
constellation companions as one group — and cut to ``k``.

What a member's agents recall of the team's notes goes to the team's shared hit-log (after the
answer, off the request's path); the refresh (the daemon's background thread, ``memlane index``,
a write) rebuilds the team's link graph when its notes changed, embeds what has no vector, and
folds the shared hit-log into the team's lifecycle.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

from ..config import Config, cache_home
from ..errors import TeamStoreError
from ..index.text import query_terms
from ..store.links import link_key
from ..store.note import PARSER_VERSION
from ..store.scopes import yields_to_narrower
from .connect import display_dsn, explain, make_pool
from .. import logs

log = logs.get("memlane.team")

#: how team notes become units; a change makes the next refresh rebuild the team's index
UNITS_VERSION = f"{PARSER_VERSION}:1"
FLUSH_S = 2.0  # the most close() waits for the hit-log rows still being written


def without_secrets(prompt: str) -> str:
    """``prompt`` with whatever looks like a secret left out (a space where it stood): what the
    team's half of a recall sends the team's server — its terms, its vector — leaves this machine,
    and may stay in that server's logs (a slow statement is logged with its parameters)."""
    from ..guards.secrets import find_secrets

    found = find_secrets(prompt)
    if not found:
        return prompt
    parts, last = [], 0
    for finding in found:
        parts += [prompt[last:finding.start], " "]
        last = max(last, finding.end)
    return "".join(parts + [prompt[last:]])


def used_keywords(keywords, terms: set[str]) -> set[str]:
    """The recall keywords a prompt uses (all of a keyword's words are among its terms)."""
    out = set()
    for keyword in keywords or ():
        words = set(query_terms(keyword))
        if words and words <= terms:
            out.add(keyword.lower())
    return out


class TeamScope:
    """The team store of ``config`` (``[team] dsn`` or ``$MEMLANE_TEAM_DSN``, and ``name``)."""

    def __init__(self, config: Config, *, dsn: str | None = None, name: str | None = None, pool=None):
        self.config = config
        self.dsn = dsn or config.team.configured_dsn()
        self.name = name or config.team.name
        #: the team came from a cloned repository's config alone: recall may read it, nothing writes to it
        self.named_by_repository = not name and config.team_named_by_repository
        self.timeout_s = config.team.timeout_ms / 1000
        self.retry_s = config.team.retry_s
        self._pool, self._own_pool = pool, pool is None
        self._storage = None
        self._opened: dict | None = None
        self.problem: str | None = None
        #: answering a hook: recall within the budget, but never refresh or fold inline
        self.hook = False
        self._pending: list[threading.Thread] = []
        #: closed (its Memory was, on a reopen or an exit): work still running on it (a resident
        #: process's unlocked team refresh) neither opens a new pool nor trips the breaker
        self._closed = False

    @classmethod
    def from_config(cls, config: Config) -> "TeamScope | None":
        if not (config.team.configured_dsn() and config.team.name):
            return None
        return cls(config)

    def write_problem(self) -> str | None:
        """Why nothing may be written to this team, or None. A repository's ``.memlane.toml`` may
        say which team to read, but a cloned repository must not choose where the user's notes go
        (a team of the user's that the repository's authors picked)."""
        if not self.named_by_repository:
            return None
        return (f"the team {self.name!r} is named only by the repository's config ({self.config.repository_file}); "
                f"memlane writes only to a team you name: set [team] name = \"{self.name}\" in your own config"
                f" (or pass --team {self.name} to memlane team import)")

    # -- the store --------------------------------------------------------------------
    @property
    def pool(self):
        if self._closed:
            raise TeamStoreError("the team scope was closed")
        if self._pool is None:
            self._pool = make_pool(self.dsn, min_size=1, max_size=4, timeout=max(1.0, self.timeout_s * 2))
        return self._pool

    @property
    def storage(self):
        if self._closed:
            raise TeamStoreError("the team scope was closed")
        if self._storage is None:
            from .postgres import PostgresStorage

            self._storage = PostgresStorage(self.dsn, namespace=self.name, pool=self.pool,
                                            fts_weights=self.config.retrieve.fts_weights, generation_ttl=1.0)
        return self._storage

    @property
    def notes(self):
        from .notes import TeamNotes

        return TeamNotes(self.storage, strategy=self.config.embed.long_notes)

    def open(self) -> dict:
        """Check once per process that the schema is this memlane's and the role is in the team."""
        if self._opened is not None:
            return self._opened
        from .schema import check_schema

        with self.storage._conn() as conn:
            version = check_schema(conn)
            role, member, superuser = conn.execute(
                "SELECT current_user, %s = ANY(memlane_teams(current_user)),"
                " (SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user)",
                (self.name,)).fetchone()
        if not member and not superuser:
            raise TeamStoreError(f"the role {role} is not a member of the team {self.name!r} at {display_dsn(self.dsn)}: "
                                 f"ask its admin to run `memlane team add-member {role} --team {self.name}`")
        self._opened = {"role": role, "schema": version, "superuser": bool(superuser)}
        return self._opened

    # -- never blocking ---------------------------------------------------------------
    def _breaker(self) -> Path:
        key = hashlib.sha256(f"{display_dsn(self.dsn)}#{self.name}".encode()).hexdigest()[:16]
        return cache_home() / "team" / f"{key}.down"

    def down(self) -> str | None:
        """Why the team store is being left alone right now (it failed less than ``retry_s`` ago)."""
        left = self.left_alone()
        return None if left is None else left[0]

    def left_alone(self) -> tuple[str, float] | None:
        """(why, for how many more seconds) every memlane process of this user skips the team store
        at once — the hooks, the daemon, the MCP server — since it last failed; None: it is asked."""
        try:
            data = json.loads(self._breaker().read_text(encoding="utf-8"))
            failed_at = float(data.get("t", 0))  # a file not of memlane's making ({"t": null}, a list) is no record
        except (OSError, ValueError, TypeError, AttributeError):
            return None
        remaining = self.retry_s - (time.time() - failed_at)
        if remaining > 0:
            return str(data.get("why") or "unavailable"), remaining
        return None

    def _trip(self, why: str) -> None:
        self.problem = why
        try:
            path = self._breaker()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"t": time.time(), "why": why}), encoding="utf-8")
        except OSError:
            pass

    def _clear(self) -> None:
        self.problem = None
        try:
            self._breaker().unlink(missing_ok=True)
        except OSError:
            pass

    def _failed(self, exc: BaseException, what: str) -> None:
        if self._closed:  # closed under it (a reopen, an exit): the store did not fail, no one is told it did
            log.info("team store: %s stopped, the scope was closed: %s", what, exc)
            return
        why = str(exc) if isinstance(exc, TeamStoreError) else explain(exc, self.dsn)
        self._trip(why)
        log.warning("team store: %s failed, local scopes only for %.0f s: %s", what, self.retry_s, why)

    def within(self, fn, what: str, timeout: float | None = None):
        """``fn()`` in a worker thread, given ``timeout`` (default ``team.timeout_ms``); None when
        it failed or ran late (then logged, and the store left alone for ``retry_s``)."""
        return self._finish(self._start(fn, what, timeout), what)

    def _start(self, fn, what: str, timeout: float | None = None):
        """``fn()`` started on a worker thread: (worker, its result box, its deadline, the
        timeout), or None when the store is left alone for now."""
        if self._closed:
            return None
        why = self.down()
        if why is not None:
            log.info("team store skipped for this %s: %s", what, why)
            return None
        box: dict = {}

        def run():
            try:
                box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - reported below, in the caller's thread
                box["error"] = exc

        timeout = self.timeout_s if timeout is None else timeout
        worker = threading.Thread(target=run, name=f"memlane-team-{what}", daemon=True)
        worker.start()
        return worker, box, time.monotonic() + timeout, timeout

    def _finish(self, started, what: str):
        """What a ``_start``ed call answered by its deadline; None when it failed or ran late."""
        if started is None:
            return None
        worker, box, deadline, timeout = started
        caller_late = time.monotonic() >= deadline  # the local half ran past the budget: not the store's fault
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive() and caller_late:
            log.info("team store: the local scopes took the whole %s budget; answered without the team", what)
            return None
        if worker.is_alive() and self._closed:
            return None
        if worker.is_alive():
            self._trip(f"no answer within {timeout * 1000:.0f} ms")
            log.warning("team store: no %s answer within %.0f ms; the local scopes answered alone", what,
                        timeout * 1000)
            return None
        if "error" in box:
            self._failed(box["error"], what)
            return None
        if not self._closed:
            self._clear()
        return box["value"]

    # -- recall -----------------------------------------------------------------------
    def begin(self, memory, prompt: str, plan, *, depth, explain: bool, include_private: bool, exclude=()):
        """Start the team's half of a recall on its worker, to run while the local scopes rank: it
        reads the local index only for the names and keywords that shadow team notes (here, in
        the caller's thread), never the local results. ``join`` takes it up."""
        from ..modes import Fusion

        prompt = without_secrets(prompt)  # the prompt's words and its vector go to the team's server
        local = memory.index
        project = {link_key(n) for n in local.names_of(local.unit_ids(exclude_scopes=("user",))).values()}
        terms = set(query_terms(prompt))
        project_kw = {kw for _, scope, kws in local.recall_keywords() if scope != "user"
                      for kw in used_keywords(kws, terms)}
        embedder = memory.embedder
        qvec = None
        if embedder is not None and prompt.strip() and Fusion(plan.fusion or self.config.retrieve.fusion) is not Fusion.KEYWORD:
            qvec = embedder.embed_query(prompt[: embedder.max_chars])  # the local recall then reuses it
        started = self._start(lambda: self._recall(prompt, plan, depth, explain, include_private, embedder, qvec,
                                                   project, project_kw, terms, list(exclude)), "recall")
        return started, terms

    def join(self, memory, prompt: str, plan, results: list, hits: list, *, depth, explain: bool,
             include_private: bool, exclude=(), begun=None) -> tuple[list, list]:
        """The local ``results`` (with their ``hits``) joined with the team's, narrower wins;
        ``begun``: the team's half as ``begin`` started it (else started now)."""
        if begun is None:
            begun = self.begin(memory, prompt, plan, depth=depth, explain=explain, include_private=include_private,
                               exclude=exclude)
        started, terms = begun
        k = plan.k if plan.k is not None else self.config.retrieve.k
        answer = self._finish(started, "recall")
        if answer is None:
            return results, hits
        team_results, team_hits, team_keys, team_kw = answer
        kept = [(r, h) for r, h in zip(results, hits)
                if not (r.scope == "user" and (yields_to_narrower("user", r.name, {"team": team_keys})
                                               or used_keywords(r.recall, terms) & team_kw))]
        merged = interleave(kept, list(zip(team_results, team_hits)), k)
        return [r for r, _ in merged], [h for _, h in merged]

    def _recall(self, prompt, plan, depth, explain_, include_private, embedder, qvec, project: set[str],
                project_kw: set[str], terms: set[str], exclude_paths: list[str]):
        from ..recall import excluded_units, recalled_units, run_recall

        self.open()
        st = self.storage
        exclude = set(excluded_units(st, prompt, mixed_scopes=False, include_private=include_private,
                                     paths=[p for p in exclude_paths if str(p).startswith("team://")]))
        keys = st.name_keys()
        exclude |= {u for key in project for u in keys.get(key, ())}  # a project note of that name wins
        rows = st.recall_keywords()
        exclude |= {u for u, _, kws in rows if used_keywords(kws, terms) & project_kw}
        outcome = run_recall(st, prompt, self.config, embedder=embedder, plan=plan, query_vector=qvec,
                             exclude=frozenset(exclude))
        found = [self.own(r) for r in recalled_units(st, prompt, outcome.selected, depth=depth, explain=explain_)]
        team_kw = {kw for u, _, kws in rows if u not in exclude for kw in used_keywords(kws, terms)}
        return found, outcome.selected, keys, team_kw

    def record(self, prompt: str, results: list, hits: list, *, session, depth, layer, bracket,
               restore: bool = False) -> None:
        """The team's part of a recall into the shared hit-log, off the request's path."""
        if not results:
            return
        from ..recall import log_recall

        def work():
            try:
                log_recall(self.hit_log, prompt, results, hits, session=session, depth=depth, layer=layer,
                           bracket=bracket)
                if restore:
                    self.usage().restore([r.uid for r, h in zip(results, hits) if h.state in ("archived", "dormant")])
            except Exception as exc:  # noqa: BLE001 - the answer is given; the log is best effort
                log.info("team hit-log not written: %s", exc)

        worker = threading.Thread(target=work, name="memlane-team-hits", daemon=True)
        worker.start()
        self._pending = [t for t in self._pending if t.is_alive()] + [worker]

    def own(self, item):
        """``item`` (a ``Recalled`` or an index row of the team's store) as the team's: scope
        ``team`` and a ``team://<team>/`` path, whatever its row says. Any member may write the
        index tables (they are derived), so a row's scope or path is no proof: a unit set to scope
        ``project`` at a path in your repository would read as the repository's own note."""
        prefix = f"team://{self.name}/"

        def team_path(path: str) -> str:
            return path if path.startswith(prefix) else prefix + path.replace("\\", "/").rsplit("/", 1)[-1]

        if isinstance(item, dict):
            return item | {"scope": "team", "path": team_path(str(item.get("path") or ""))}
        path = team_path(item.path)
        return item if (item.scope, item.path) == ("team", path) else item.with_(scope="team", path=path)

    def find(self, name: str) -> list[dict]:
        """Team notes called ``name`` (as index rows), within the budget; [] when unavailable."""
        def load():
            self.open()
            return [self.own(row) for row in self.storage.find(name)]
        return self.within(load, "lookup") or []

    def show(self, name: str, local: list[dict], *, session: str | None = None) -> list[dict]:
        """The team notes called ``name`` that no project note of ``local`` (index rows) shadows;
        reading them is a use, recorded in the shared hit-log."""
        project = {link_key(r["name"]) for r in local if r["scope"] not in ("user", "team")}
        rows = [r for r in self.find(name) if not yields_to_narrower("team", r["name"], {"project": project})]
        if rows:
            def work():
                try:
                    self.hit_log.record(name, [{"path": r["path"], "name": r["name"], "rank": n, "score": None}
                                               for n, r in enumerate(rows, start=1)], session=session, layer="show",
                                        depth="full")
                    self.usage().restore([r["uid"] for r in rows])
                except Exception as exc:  # noqa: BLE001 - best effort, like every hit-log write
                    log.info("team hit-log not written: %s", exc)
            worker = threading.Thread(target=work, name="memlane-team-hits", daemon=True)
            worker.start()
            self._pending = [t for t in self._pending if t.is_alive()] + [worker]
        return rows

    @property
    def hit_log(self):
        from .usage import TeamHitLog

        return TeamHitLog(self.storage)

    def usage(self):
        from .usage import TeamUsage

        return TeamUsage(self.storage, self.hit_log, self.config.lifecycle)

    # -- keeping it fresh --------------------------------------------------------------
    def stamp(self) -> str:
        """What the team's index looks like now (its generation), for a resident process's check."""
        if self.hook or self.down():
            return "-"
        value = self.within(lambda: self.storage.get_meta("generation", "0"), "check", timeout=max(1.0, self.timeout_s))
        return "-" if value is None else str(value)

    def refresh(self, embedder=None, *, progress=None) -> dict | None:
        """Units in line with the notes, the link graph rebuilt when they changed, what has no
        vector embedded (with ``embedder``), the shared hit-log folded in. None: unavailable."""
        if self.hook:
            return None
        return self.within(lambda: self._refresh(embedder, progress), "refresh", timeout=600.0)

    def _refresh(self, embedder, progress) -> dict:
        from ..associate.build import GRAPH_VERSION, rebuild_graph
        from ..index.vectors import embed_pending

        self.open()
        st = self.storage
        report = {"team": self.name, "reindexed": None, "graph": False, "embedded": 0}
        if st.get_meta("units_from") != UNITS_VERSION:
            report["reindexed"] = self.reindex(progress=progress)
        units_generation = st.get_meta("units_generation", "0")
        if st.get_meta("graph_at") != units_generation or st.get_meta("graph") != GRAPH_VERSION:
            with st.transaction():
                rebuild_graph(st, True)
                st.set_meta("graph_at", units_generation)
            report["graph"] = True
        if embedder is not None:
            report["embedded"] = embed_pending(st, embedder, progress=(lambda d, t: progress("embed", d, t))
                                               if progress else None)
        self.usage().maintain()
        return report

    def reindex(self, *, progress=None) -> dict:
        """Every note's unit made again (after memlane changed how notes become units)."""
        from .notes import unit_of

        st = self.storage
        with st.transaction():
            units = [unit_of(note) for note in self.notes.all()]
            report = st.sync(units, strategy=self.notes.chunking(), max_chars=None, prune=True,
                             progress=(lambda d, t: progress("index", d, t)) if progress else None)
            st.set_meta("units_from", UNITS_VERSION)
        return {"added": report.added, "updated": report.updated, "removed": report.removed}

    def maintain(self) -> None:
        if self.hook or self.down():
            return
        self.within(lambda: self.usage().maintain(), "lifecycle", timeout=max(2.0, self.timeout_s))

    # -- what doctor and `memlane team status` say -------------------------------------
    def status(self) -> dict:
        """Whether the team store answers, with which role, how many notes it holds."""
        out = {"dsn": display_dsn(self.dsn), "team": self.name, "answers": False, "role": None, "schema": None,
               "notes": None, "units": None, "embedded": None, "problem": None, "skipped_for_s": None}
        left = self.left_alone()  # what the prompts do meanwhile (this look asks the store all the same)
        if left is not None:
            out["skipped_for_s"] = round(left[1])

        def look():
            info = self.open()
            counts = self.storage.counts()
            return info, self.notes.count(), counts, self.storage.embedded_units()

        try:
            info, notes, counts, embedded = look()
        except Exception as exc:  # noqa: BLE001 - the finding is whatever kept it from answering
            problem = None
            if type(exc).__name__ == "PoolTimeout":  # the pool only logs the cause: connect once to see it
                from .connect import probe

                problem = probe(self.dsn)
            out["problem"] = problem or (str(exc) if isinstance(exc, TeamStoreError) else explain(exc, self.dsn))
            return out
        self._clear()
        out.update({"skipped_for_s": None, "answers": True, "role": info["role"], "superuser": info["superuser"], "schema": info["schema"],
                    "notes": notes, "units": counts["units"], "embedded": embedded})
        return out

    def flush(self, timeout: float = FLUSH_S) -> None:
        deadline = time.monotonic() + timeout
        for worker in self._pending:
            worker.join(max(0.0, deadline - time.monotonic()))
        self._pending = [t for t in self._pending if t.is_alive()]

    def close(self) -> None:
        self.flush()
        self._closed = True
        if self._own_pool and self._pool is not None:
            # a hook's process ends next: a pool worker stuck connecting to a store that is down would hold
            # its exit (and the agent's prompt) for up to a second more, for nothing
            self._pool.close(timeout=0.0 if self.hook else 1.0)
            self._pool = None
            self._storage = None


def interleave(local: list[tuple], team: list[tuple], k: int) -> list[tuple]:
    """Both scopes' (Recalled, Hit) pairs as one list: groups (a note and the constellation
    companions that follow it) ordered by the note's score, the first ``k`` groups, then the
    remote associates of divergent recall; ranks renumbered."""
    def groups(pairs):
        out: list[list[tuple]] = []
        for pair in pairs:
            if pair[1].companion_of and out:
                out[-1].append(pair)
            else:
                out.append([pair])
        return out

    every = groups(local) + groups(team)
    remote = [g for g in every if g[0][1].remote]
    ranked = sorted((g for g in every if not g[0][1].remote), key=lambda g: -g[0][0].score)[:k]
    merged = [pair for group in ranked + remote for pair in group]
    return [(r.with_(rank=n), h) for n, (r, h) in enumerate(merged, start=1)]


__all__ = ["TeamScope", "UNITS_VERSION", "interleave", "used_keywords"]
