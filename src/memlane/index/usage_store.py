"""Usage in the SQLite index: one row per note (by its stable uid, so it survives re-indexing)
with its references, recent uses, stability and lifecycle state — what ``lifecycle/`` folds the
hit-log into and decides states from."""

from __future__ import annotations

from .storage import LifecycleRow


class UsageStore:
    """The ``usage`` table (a mixin of ``SQLiteIndex``)."""

    def usage_of(self, uid: str) -> tuple | None:
        """(refs, last use, recent uses JSON, stability) of one note, or None before its first use."""
        return self.conn.execute("SELECT refs, last_ref, recent, stability FROM usage WHERE uid = ?", (uid,)).fetchone()

    def record_usage(self, uid: str, *, first_seen: float, refs: int, last_ref: float | None, recent: str,
                     stability: float) -> None:
        self.conn.execute("INSERT OR IGNORE INTO usage(uid, first_seen, state_since) VALUES (?, ?, ?)",
                          (uid, first_seen, first_seen))
        self.conn.execute("UPDATE usage SET refs = ?, last_ref = ?, recent = ?, stability = ? WHERE uid = ?",
                          (refs, last_ref, recent, stability, uid))

    def ensure_usage_rows(self, now: float) -> None:
        """A usage row for every unit (first seen now, when it had none)."""
        self.conn.execute("INSERT OR IGNORE INTO usage(uid, first_seen, state_since) SELECT uid, ?, ? FROM units",
                          (now, now))

    def set_states(self, changes: list[tuple[str, str, float, str]], *, only_if_different: bool = False,
                   only_if_inactive: bool = False) -> int:
        """Set (uid, state, since, reason) for each change; returns how many rows changed.
        ``only_if_different``: leave notes already in that state alone; ``only_if_inactive``: only
        notes that are not active (a use brings them back)."""
        sql = "UPDATE usage SET state = ?, state_since = ?, reason = ? WHERE uid = ?"
        rows = [(state, since, reason, uid) for uid, state, since, reason in changes]
        if only_if_different:
            sql += " AND coalesce(state, 'active') != ?"
            rows = [row + (row[0],) for row in rows]
        if only_if_inactive:
            sql += " AND state != 'active'"
        return self.conn.executemany(sql, rows).rowcount

    def lifecycle_rows(self) -> list[LifecycleRow]:
        return [LifecycleRow(*row) for row in self.conn.execute(
            "SELECT u.uid, u.name, u.path, json_extract(u.meta, '$.status'), json_extract(u.meta, '$.mtime'),"
            " g.first_seen, g.last_ref, g.stability, g.state, g.refs, g.reason FROM units u"
            " LEFT JOIN usage g ON g.uid = u.uid ORDER BY u.id")]
