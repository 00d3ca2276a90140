"""The index schema as ordered, append-only migrations.

The index is derived: deleting the file loses nothing. Each migration runs once, in
order, and ``PRAGMA user_version`` records how far a database has come.
"""

from __future__ import annotations

import sqlite3

FTS_COLUMNS = ("name", "description", "keywords", "body")
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"  # as migration 1 wrote it (postings.py tokenizes alike)

#: meta: the count of writes to ``units``, whoever writes (migration 7's triggers keep it)
WRITES = "units_changes"

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
    # 6: the vector leg's int8 blocks (index/vector_pack.py), derived: when a chunk of a block's
    #    units (unit id >> 10) or an embedding they use changes, whoever writes, the block is marked
    #    stale and the unit noted, so that only that unit's rows are computed again
    """
    CREATE TABLE vector_blocks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        model TEXT NOT NULL,
        block INTEGER NOT NULL,
        stale INTEGER NOT NULL DEFAULT 0,
        rows INTEGER NOT NULL,
        dim INTEGER NOT NULL,
        units BLOB NOT NULL,
        rowids BLOB NOT NULL,
        codes BLOB NOT NULL,
        scales BLOB NOT NULL,
        errors BLOB NOT NULL,
        UNIQUE (model, block)
    );
    CREATE INDEX vector_blocks_block ON vector_blocks(block);
    CREATE TABLE vector_dirty (block INTEGER NOT NULL, unit INTEGER NOT NULL, PRIMARY KEY (block, unit)) WITHOUT ROWID;
    CREATE TRIGGER chunks_insert_packs AFTER INSERT ON chunks BEGIN
        INSERT OR IGNORE INTO vector_dirty SELECT NEW.unit >> 10, NEW.unit
            WHERE EXISTS (SELECT 1 FROM vector_blocks WHERE block = NEW.unit >> 10);
        UPDATE vector_blocks SET stale = 1 WHERE block = NEW.unit >> 10 AND stale = 0; END;
    CREATE TRIGGER chunks_delete_packs AFTER DELETE ON chunks BEGIN
        INSERT OR IGNORE INTO vector_dirty SELECT OLD.unit >> 10, OLD.unit
            WHERE EXISTS (SELECT 1 FROM vector_blocks WHERE block = OLD.unit >> 10);
        UPDATE vector_blocks SET stale = 1 WHERE block = OLD.unit >> 10 AND stale = 0; END;
    CREATE TRIGGER chunks_update_packs AFTER UPDATE ON chunks BEGIN
        INSERT OR IGNORE INTO vector_dirty SELECT unit >> 10, unit FROM (SELECT OLD.unit AS unit UNION SELECT NEW.unit)
            WHERE EXISTS (SELECT 1 FROM vector_blocks WHERE block = unit >> 10);
        UPDATE vector_blocks SET stale = 1 WHERE block IN (OLD.unit >> 10, NEW.unit >> 10) AND stale = 0; END;
    CREATE TRIGGER embeddings_insert_packs AFTER INSERT ON embeddings BEGIN
        INSERT OR IGNORE INTO vector_dirty SELECT unit >> 10, unit FROM chunks WHERE hash = NEW.hash
            AND EXISTS (SELECT 1 FROM vector_blocks WHERE block = unit >> 10);
        UPDATE vector_blocks SET stale = 1 WHERE model = NEW.model AND stale = 0
            AND block IN (SELECT unit >> 10 FROM chunks WHERE hash = NEW.hash); END;
    CREATE TRIGGER embeddings_delete_packs AFTER DELETE ON embeddings BEGIN
        INSERT OR IGNORE INTO vector_dirty SELECT unit >> 10, unit FROM chunks WHERE hash = OLD.hash
            AND EXISTS (SELECT 1 FROM vector_blocks WHERE block = unit >> 10);
        UPDATE vector_blocks SET stale = 1 WHERE model = OLD.model AND stale = 0
            AND block IN (SELECT unit >> 10 FROM chunks WHERE hash = OLD.hash); END;
    CREATE TRIGGER embeddings_update_packs AFTER UPDATE ON embeddings BEGIN
        INSERT OR IGNORE INTO vector_dirty SELECT unit >> 10, unit FROM chunks WHERE hash IN (OLD.hash, NEW.hash)
            AND EXISTS (SELECT 1 FROM vector_blocks WHERE block = unit >> 10);
        UPDATE vector_blocks SET stale = 1 WHERE model IN (OLD.model, NEW.model) AND stale = 0
            AND block IN (SELECT unit >> 10 FROM chunks WHERE hash IN (OLD.hash, NEW.hash)); END;
    """,
    # 7: the keyword leg's postings per term and block of 4,096 units, and the rows' token counts
    #    (index/postings.py); ``units_changes`` moves with every write to ``units``, whoever
    #    writes, and the postings are current while ``postings`` equals it; narrow indexes so that
    #    a refresh compares files and hashes without reading every note's text
    """
    CREATE TABLE postings (
        id INTEGER PRIMARY KEY,
        term TEXT NOT NULL,
        block INTEGER NOT NULL,
        units BLOB NOT NULL,
        freqs BLOB NOT NULL
    );
    CREATE UNIQUE INDEX postings_term ON postings(term, block);
    CREATE TABLE posting_sizes (block INTEGER PRIMARY KEY, units BLOB NOT NULL, sizes BLOB NOT NULL);
    INSERT OR REPLACE INTO meta(key, value) VALUES ('units_changes', '0');
    CREATE TRIGGER units_insert_count AFTER INSERT ON units BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'units_changes'; END;
    CREATE TRIGGER units_update_count AFTER UPDATE ON units BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'units_changes'; END;
    CREATE TRIGGER units_delete_count AFTER DELETE ON units BEGIN
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'units_changes'; END;
    CREATE INDEX parsed_stats ON parsed(path, size, mtime_ns);
    CREATE INDEX units_hash ON units(uid, hash);
    """,
    # 8: the few notes that are private or name ``paths:``, found without reading every note's
    #    metadata (a fresh process asks for the private ones before each recall: 26 ms at 10k
    #    notes as a scan); the queries in index/units.py repeat these conditions word for word
    """
    CREATE INDEX units_private ON units(id) WHERE json_extract(meta, '$.private') = 1;
    CREATE INDEX units_with_paths ON units(id) WHERE json_array_length(meta, '$.paths') > 0;
    """,
    # 9: a note's old vectors found by their text's hash alone, whatever the model (an edit
    #    forgets the vectors its old text no longer uses: a scan of every vector at 100k notes,
    #    155 ms of a one-note refresh, before this index)
    """
    CREATE INDEX embeddings_hash ON embeddings(hash);
    """,
    # 10: the link keys each unit answers to (``store/note.py``, ``answer_keys``), so that a
    #     link edit finds its targets by key (a LIKE over every name and path before this: ~80 ms
    #     at 100k notes); current while ``unit_keys`` in meta equals ``units_changes``, as the
    #     postings are
    """
    CREATE TABLE unit_keys (key TEXT NOT NULL, unit INTEGER NOT NULL, PRIMARY KEY (key, unit)) WITHOUT ROWID;
    CREATE INDEX unit_keys_unit ON unit_keys(unit);
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
            for statement in statements(script):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def statements(script: str) -> list[str]:
    """The statements of a migration script, line by line until SQLite calls one complete (a
    trigger's body holds semicolons of its own)."""
    out, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            out.append(pending.strip())
            pending = ""
    if pending.strip():
        out.append(pending.strip())
    return out
