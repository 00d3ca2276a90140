"""The team's shared hit-log (L2) and the lifecycle that reads it (L3).

Every recall of a team note, by any member's agent, is one row of ``hits`` — the same record a
local hit-log line holds (time, session, query hash, unit, layer, depth, bracket, score parts),
plus who. ``TeamUsage`` folds the rows not folded yet into the team's ``usage`` — marking them
folded in the same transaction, under the team's writer lock, so however many processes fold at
once a use is counted exactly once — and so lifecycle sees the whole team: a note the team uses
stays active, one nobody uses slides to dormant and archived, for everyone. A member folds only
the rows they logged (the server's policy: an UPDATE of another's row matches nothing), so no
member can hide another's uses by marking them folded: each member's memlane counts its own, at
its next fold.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from ..lifecycle.hitlog import query_hash
from ..lifecycle.usage import Usage
from .. import logs

log = logs.get("memlane.team")


class TeamHitLog:
    """``HitLog``'s interface over the ``hits`` table of one team."""

    def __init__(self, storage):
        self.storage = storage
        self.path = f"{storage.path}#hits"

    def record(self, query: str, results: list[dict], *, session: str | None = None, layer: str = "recall",
               depth: str = "summary", bracket: str | None = None) -> bool:
        if not results:
            return True
        from psycopg.types.json import Jsonb

        now, qhash = round(time.time(), 3), query_hash(query)
        rows = [(self.storage.namespace, now, session, qhash, r.get("path"), r.get("name"), r.get("rank"), layer, depth,
                 bracket, r.get("score"), Jsonb(r.get("parts", {}))) for r in results]
        try:
            self.storage._many("INSERT INTO hits (team, t, session, q, unit, name, rank, layer, depth, bracket, score,"
                               " parts) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)
        except Exception as exc:  # noqa: BLE001 - a recall never fails because its log could not be written
            log.warning("team hit-log not written (%s); recall goes on", exc)
            return False
        return True

    def read(self) -> Iterator[dict]:
        for t, session, q, unit, name, rank, layer, depth, bracket, score, parts, who in self.storage._rows(
                "SELECT t, session, q, unit, name, rank, layer, depth, bracket, score, parts, who FROM hits"
                " WHERE team = %s ORDER BY id", (self.storage.namespace,)):
            yield {"t": t, "session": session, "q": q, "unit": unit, "name": name, "rank": rank, "layer": layer,
                   "depth": depth, "bracket": bracket, "score": score, "parts": parts, "who": who}

    def files(self) -> list:
        return []


class TeamUsage(Usage):
    """``Usage`` over the team's shared hit-log."""

    def consume(self) -> int:
        with self.index.transaction():
            rows = self.index._rows(  # this member's rows: the server folds no other's
                "UPDATE hits SET folded = true WHERE team = %s AND NOT folded RETURNING t, session, unit",
                (self.index.namespace,))
            records = [{"t": t, "session": session, "unit": unit} for t, session, unit in rows]
            return self._fold(sorted(records, key=lambda r: r["t"])) if records else 0


__all__ = ["TeamHitLog", "TeamUsage"]
