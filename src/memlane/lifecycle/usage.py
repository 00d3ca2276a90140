"""Usage: the hit-log folded into the index, feeding recency (L1) and decay (L3).

The hit-log is append-only and cheap to write; reading it whole on every recall would not
be. So the index remembers how far it has read each log file (by inode, which survives
rotation) and folds only new, complete lines into one ``usage`` row per note: reference
count, last use, the last few use times (ACT-R), stability and lifecycle state.

A note recalled again and again in one session counts once (the session's first use):
without that, a hook that recalls the same note on every prompt would make it immortal —
a feedback loop (popular notes recalled because they are popular). Without a session id, uses within an hour count once.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time

from ..config import LifecycleConfig
from ..index.storage import Storage
from .activation import DAY, base_level, recency_factor
from .decay import Verdict, judge, potentiate
from .hitlog import HitLog
from ..records import dataclass
from .. import logs

log = logs.get("memlane.lifecycle")

KEEP_RECENT = 16  # use times kept per note for ACT-R; older ones are approximated
MASSED_SECONDS = 3600.0  # without a session id, uses closer than this count once
OFFSETS_KEY = "hitlog_offsets"


@dataclass(frozen=True)
class Transition:
    """A note moving from one lifecycle state to another."""

    uid: str
    name: str
    path: str
    old: str
    new: str
    reason: str
    idle_days: float
    stability: float
    refs: int


class Usage:
    def __init__(self, index: Storage, hit_log: HitLog | None, config: LifecycleConfig):
        self.index, self.hit_log, self.config = index, hit_log, config

    # -- reading the hit-log ----------------------------------------------------------
    def consume(self) -> int:
        """Fold the hit-log lines not read yet into ``usage``; returns the references added.
        Torn or corrupt lines are skipped; a missing log is simply nothing new. Safe when
        several processes fold at once: the offsets are re-read under the index's write lock,
        so a line is never counted twice."""
        if self.hit_log is None or not self._unread(json.loads(self.index.get_meta(OFFSETS_KEY) or "{}")):
            return 0  # the common case on the hot path: a few stat calls, no lock
        with self.index.transaction():
            offsets = json.loads(self.index.get_meta(OFFSETS_KEY) or "{}")
            records, fresh_offsets = self._read_new(offsets)
            added = self._fold(sorted(records, key=lambda r: r["t"])) if records else 0
            if fresh_offsets != offsets:
                self.index.set_meta(OFFSETS_KEY, json.dumps(fresh_offsets))
        return added

    def _unread(self, offsets: dict[str, int]) -> bool:
        """Whether any log file holds bytes past what was folded (or was replaced)."""
        for path in self.hit_log.files():
            try:
                st = path.stat()
            except OSError:
                continue
            if offsets.get(f"{st.st_dev}:{st.st_ino}", 0) != st.st_size:
                return True
        return False

    def _read_new(self, offsets: dict[str, int]) -> tuple[list[dict], dict[str, int]]:
        fresh_offsets, records = {}, []
        for path in self.hit_log.files():
            try:
                with open(path, "rb") as handle:
                    st = os.fstat(handle.fileno())
                    key = f"{st.st_dev}:{st.st_ino}"
                    start = offsets.get(key, 0)
                    if start > st.st_size:
                        start = 0  # the file was truncated or replaced
                    handle.seek(start)
                    data = handle.read()
            except OSError as exc:
                log.warning("hit-log %s unreadable (%s); skipped", path, exc)
                continue
            whole = data.rfind(b"\n") + 1  # a line still being written waits for the next read
            for raw in data[:whole].split(b"\n"):
                try:
                    record = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    continue
                if isinstance(record, dict) and isinstance(record.get("unit"), str) \
                        and isinstance(record.get("t"), (int, float)):
                    records.append(record)
            fresh_offsets[key] = start + whole
        return records, fresh_offsets

    def _fold(self, records: list[dict]) -> int:
        by_uid: dict[str, list[dict]] = {}
        for record in records:
            by_uid.setdefault(record["unit"], []).append(record)
        added = 0
        for uid, uses in by_uid.items():
            row = self.index.usage_of(uid)
            first = uses[0]["t"]
            if row is None:
                refs, last_ref, recent, stability = 0, None, [], 1.0
            else:
                refs, last_ref, recent, stability = row[0], row[1], json.loads(row[2] or "[]"), row[3]
            last_session = recent[-1][1] if recent else None
            for use in uses:
                t, session = float(use["t"]), use.get("session")
                if last_ref is not None:
                    if session and session == last_session:
                        continue  # the same session: counted once
                    if not session and t - last_ref < MASSED_SECONDS:
                        continue
                    stability = potentiate(stability, t - last_ref, gain=self.config.spacing_gain,
                                           spacing_days=self.config.spacing_days)
                refs, last_ref, last_session = refs + 1, t, session
                recent = (recent + [[t, session]])[-KEEP_RECENT:]
                added += 1
            self.index.record_usage(uid, first_seen=first, refs=refs, last_ref=last_ref, recent=json.dumps(recent),
                                    stability=stability)
        return added

    # -- lifecycle --------------------------------------------------------------------
    def evaluate(self, now: float | None = None) -> list[Transition]:
        """Every note whose state should change now, and why (nothing is written)."""
        now = time.time() if now is None else now
        out = []
        for uid, name, path, meta_status, mtime, first_seen, last_ref, stability, state, refs, reason in \
                self.index.lifecycle_rows():
            if reason == BY_HAND and not meta_status:
                continue  # archived by hand stays archived until restored or used again
            first_seen = now if first_seen is None else first_seen
            last_use = max(first_seen, last_ref or 0.0, mtime or 0.0)
            verdict: Verdict = judge(now=now, last_use=last_use, stability=stability or 1.0,
                                     dormant_days=self.config.dormant_days, archive_days=self.config.archive_days,
                                     declared=meta_status)
            current = state or "active"
            if verdict.state != current:
                out.append(Transition(uid, name, path, current, verdict.state, verdict.reason,
                                      round(verdict.idle_days, 1), round(verdict.stability, 2), refs or 0))
        return out

    def apply(self, transitions: list[Transition], now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self.index.transaction():
            self.index.ensure_usage_rows(now)
            self.index.set_states([(t.uid, t.new, now, t.reason) for t in transitions])
            self.index.set_meta("lifecycle_at", str(now))

    def decay(self, *, dry_run: bool = True) -> dict:
        """What the lifecycle would change now, and why; applied unless ``dry_run``."""
        self.consume()
        transitions = self.evaluate()
        if not dry_run:
            self.apply(transitions)
        return {"dry_run": dry_run, "changes": [t.__dict__ for t in transitions],
                "settings": {"dormant_days": self.config.dormant_days, "archive_days": self.config.archive_days}}

    def status(self, *, limit: int = 10) -> dict:
        """Every note's state: counts, the most used, the ones about to change."""
        try:
            self.consume()
        except (OSError, sqlite3.Error) as exc:
            log.info("hit-log not folded in: %s", exc)
        rows = self.index.lifecycle_rows()
        counts = {"active": 0, "dormant": 0, "archived": 0}
        for row in rows:
            counts[row.status if row.status in counts else (row.state or "active")] += 1
        most_used = sorted((r for r in rows if r.refs), key=lambda r: (-r.refs, r.name))[:limit]
        pending = self.evaluate()
        return {"notes": len(rows), "states": counts,
                "hit_log": None if self.hit_log is None else str(self.hit_log.path),
                "most_used": [{"name": r.name, "path": r.path, "refs": r.refs, "last_used": _iso(r.last_ref),
                               "stability": round(r.stability or 1, 2)} for r in most_used],
                "pending_changes": [t.__dict__ for t in pending[:limit]], "pending_total": len(pending),
                "lifecycle_updated": _iso(float(self.index.get_meta("lifecycle_at") or 0) or None)}

    def maintain(self, *, every_seconds: float = 3600.0, now: float | None = None) -> list[Transition]:
        """What a recall runs: fold new hit-log lines; at most every ``every_seconds``, move
        notes between states ("Mechanical > Aspirational": nobody has to remember to)."""
        now = time.time() if now is None else now
        self.consume()
        last = float(self.index.get_meta("lifecycle_at") or 0)
        if now - last < every_seconds:
            return []
        transitions = self.evaluate(now)
        self.apply(transitions, now)
        return transitions

    def restore(self, uids: list[str], now: float | None = None) -> None:
        """Archived or dormant notes that were just used come back at once (L3)."""
        if not uids:
            return
        now = time.time() if now is None else now
        with self.index.transaction():
            self.index.ensure_usage_rows(now)
            self.index.set_states([(uid, "active", now, "used again") for uid in uids], only_if_inactive=True)

    def set_state(self, uids: list[str], state: str, now: float | None = None) -> int:
        """Archive (``state="archived"``) or restore (``"active"``) notes by hand; an archived
        note stays so until restored or used in a deep recall. Returns how many changed."""
        if state not in ("active", "archived"):
            raise ValueError(f"state must be active or archived, got {state!r}")
        now = time.time() if now is None else now
        reason = BY_HAND if state == "archived" else "restored by hand"
        with self.index.transaction():
            self.index.ensure_usage_rows(now)
            changed = self.index.set_states([(uid, state, now, reason) for uid in uids], only_if_different=True)
        return changed


BY_HAND = "archived by hand"


def state_of(facts: tuple) -> str:
    """A unit's state from its ``Index.unit_facts`` row: a ``dormant`` or ``archived`` status
    written in its frontmatter wins, else the lifecycle's."""
    declared, lifecycle = facts[2], facts[4]
    return declared if declared in ("dormant", "archived") else (lifecycle or "active")


def unit_states(index: Storage, unit_ids: list[int]) -> dict[int, str]:
    """Units among ``unit_ids`` that are dormant or archived, by the lifecycle or by their
    own frontmatter ``status:``."""
    return {unit: state for unit, facts in index.unit_facts(unit_ids).items()
            if (state := state_of(facts)) != "active"}


def recency(index: Storage, unit_ids: list[int], *, weight: float, d: float = 0.5,
            now: float | None = None) -> dict[int, tuple[float, float | None, int]]:
    """unit -> (recency factor, base-level activation B, references) from its uses and its
    last edit. Units with no known use get (1.0, None, 0)."""
    facts = index.unit_facts(unit_ids)
    return {unit: recency_of(f[1], f[5], f[6], weight=weight, d=d, now=now) for unit, f in facts.items()}


def recency_of(mtime: float | None, recent: str | None, refs: int | None, *, weight: float, d: float = 0.5,
               now: float | None = None) -> tuple[float, float | None, int]:
    """(recency factor, B, references) from a unit's last edit and its kept use times."""
    now = time.time() if now is None else now
    uses = [float(t) for t, _ in json.loads(recent)] if recent else []
    ages = [(now - t) / DAY for t in uses]
    if mtime:
        ages.append((now - float(mtime)) / DAY)
    older = max(0, (refs or 0) - len(uses))
    oldest = (now - min(uses)) / DAY * 2 if older and uses else None  # unknown: assume as far back again
    b = base_level(ages, d=d, older=older, oldest_days=oldest)
    return recency_factor(b, weight), b, refs or 0


def _iso(ts: float | None) -> str | None:
    return None if not ts else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
