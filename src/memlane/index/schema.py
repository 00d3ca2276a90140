"""The index schema as ordered, append-only migrations.

The index is derived: deleting the file loses nothing. Each migration runs once, in
order, and ``PRAGMA user_version`` records how far a database has come.
"""

from __future__ import annotations

import sqlite3

FTS_COLUMNS = ("name", "description", "keywords", "body")

MIGRATIONS: tuple[str, ...] = (
    # 1: units, their full text, content-addressed embeddings and the unit->chunk map
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE units (
        id INTEGER PRIMARY KEY,
        uid TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        description TEXT NOT NULL DEFAULT '',
        keywords TEXT NOT NULL DEFAULT '',
        body TEXT NOT NULL DEFAULT '',
        path TEXT NOT NULL DEFAULT '',
        scope TEXT NOT NULL DEFAULT 'project',
        type TEXT,
        meta TEXT NOT NULL DEFAULT '{}',
        hash TEXT NOT NULL,
        indexed_at REAL NOT NULL
    );
    CREATE INDEX units_name ON units(name);
    CREATE VIRTUAL TABLE units_fts USING fts5(
        name, description, keywords, body,
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TABLE chunks (
        unit INTEGER NOT NULL REFERENCES units(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        hash TEXT NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (unit, seq)
    );
    CREATE INDEX chunks_hash ON chunks(hash);
    CREATE TABLE embeddings (
        model TEXT NOT NULL,
        hash TEXT NOT NULL,
        vec BLOB NOT NULL,
        PRIMARY KEY (model, hash)
    );
    """,
    # 2: parsed notes by path, valid while size and mtime hold (store/scan.py ParseCache)
    """
    CREATE TABLE parsed (
        path TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        note TEXT NOT NULL
    );
    """,
    # 3: the link graph (associate/graph.py), rebuilt whenever the units change
    """
    CREATE TABLE edges (
        src INTEGER NOT NULL REFERENCES units(id) ON DELETE CASCADE,
        dst INTEGER NOT NULL REFERENCES units(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        PRIMARY KEY (src, dst, kind)
    );
    CREATE INDEX edges_dst ON edges(dst);
    CREATE TABLE missing_links (
        src INTEGER NOT NULL REFERENCES units(id) ON DELETE CASCADE,
        target TEXT NOT NULL,
        kind TEXT NOT NULL
    );
    """,
    # 4: hubs and constellations (associate/structure.py), rebuilt with the edges
    """
    CREATE TABLE graph_nodes (
        unit INTEGER PRIMARY KEY REFERENCES units(id) ON DELETE CASCADE,
        in_degree INTEGER NOT NULL,
        pagerank REAL NOT NULL
    );
    CREATE TABLE constellations (
        id INTEGER NOT NULL,
        unit INTEGER NOT NULL REFERENCES units(id) ON DELETE CASCADE,
        PRIMARY KEY (id, unit)
    );
    """,
    # 5: usage and lifecycle state per note (lifecycle/), kept by the note's stable id so it
    #    survives re-indexing; communities of the link graph for divergent recall (A5)
    """
    CREATE TABLE usage (
        uid TEXT PRIMARY KEY,
        first_seen REAL NOT NULL,
        refs INTEGER NOT NULL DEFAULT 0,
        last_ref REAL,
        recent TEXT NOT NULL DEFAULT '[]',
        stability REAL NOT NULL DEFAULT 1.0,
        state TEXT NOT NULL DEFAULT 'active',
        state_since REAL NOT NULL,
        reason TEXT NOT NULL DEFAULT ''
    );
    ALTER TABLE graph_nodes ADD COLUMN cluster INTEGER NOT NULL DEFAULT 0;
    """,
)


def migrate(conn: sqlite3.Connection, migrations: tuple[str, ...] = MIGRATIONS) -> None:
    """Bring ``conn`` to the latest of ``migrations`` (ordered scripts; ``PRAGMA user_version``
    counts those that ran); safe when several processes race to do it."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= len(migrations):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]  # re-read under the lock
        for number, script in enumerate(migrations[version:], start=version + 1):
            for statement in script.split(";\n"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
