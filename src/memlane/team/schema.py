"""The team database's schema as ordered, append-only migrations (STYLE 7), and the check every
client makes before it reads or writes.

One database can hold several teams: every row carries its ``team``, and row-level security
lets a login role see only the teams the admin-owned ``team_members`` table maps it to — the
boundary is in the database, not in memlane (``FORCE``: the table owner is bound too; a session
setting would be a filter any client may change, not a boundary). The tables:

- **the truth**: ``notes`` (every S1/S2 field, the file text exactly, its ``MEMORY.md`` line, a
  ``version`` the server bumps on every update: compare-and-set) and ``note_versions``, the
  append-only history written by a trigger the team roles cannot bypass. Notes are never deleted
  (no role is granted DELETE; superseded and archived as files are) and never private (a CHECK).
- **the index** (the storage seam, ``index/storage.py``): ``units`` with a weighted ``tsvector``,
  ``chunks``, ``embeddings`` (``vector``, HNSW per dimension), the link graph, ``usage``,
  ``meta``, the parse cache, and ``hits`` — the team's shared hit-log that lifecycle folds.

``migrate`` applies what is pending under an advisory lock (concurrent migrators are safe; each
migration is one transaction with its bookkeeping row); ``check_schema`` refuses a database that
is older than this memlane (naming the command that migrates it) or newer (upgrade memlane).
"""

from __future__ import annotations

import hashlib

from .. import logs

log = logs.get("memlane.team")

MIGRATION_LOCK = 0x6D656D6C616E65  # b"memlane": advisory locks are per database
GROUP_ROLE = "memlane_team"
#: HNSW indexes are built per vector dimension (a partial expression index each)
HNSW_DIMS = (384, 768)
MIGRATE_COMMAND = "memlane team migrate"
#: the oldest PostgreSQL the schema runs on: the membership check asks pg_has_role(..., 'SET'),
#: a privilege PostgreSQL has from 16 on (14 and 15 fail every member query)
MIN_SERVER_VERSION = 160000

#: every table holding a team's rows: all under the same row-level security policy
TEAM_TABLES = ("notes", "note_versions", "units", "postings", "chunks", "embeddings", "edges", "missing_links",
               "graph_nodes", "constellations", "usage", "meta", "parsed", "hits")

_TEAMS = r"""
CREATE EXTENSION IF NOT EXISTS vector;
DO $do$
BEGIN
    CREATE ROLE memlane_team NOLOGIN;  -- cluster-wide: another database may have made it already
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END
$do$;

-- which login role belongs to which team: the admin writes it, no team role may read it
CREATE TABLE team_members (
    member  name NOT NULL,
    team    text NOT NULL CHECK (team <> ''),
    PRIMARY KEY (member, team)
);

-- The teams of a role, for the policies. SECURITY DEFINER: team roles need no right on
-- team_members; asked about a role the caller cannot become, it answers nothing.
CREATE FUNCTION memlane_teams(who name) RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
    SELECT coalesce(array_agg(team), '{}') FROM public.team_members
    WHERE member = who AND pg_has_role(session_user, who, 'SET')
$fn$;
GRANT EXECUTE ON FUNCTION memlane_teams(name) TO PUBLIC;
"""

_NOTES = r"""
CREATE TABLE notes (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    team          text NOT NULL,
    name          text NOT NULL,
    rel           text NOT NULL,                 -- its file in the S1 layout (export writes it there)
    text          text NOT NULL,                 -- the note file, exactly
    title         text,                          -- its MEMORY.md line: title, hook, heading
    index_hook    text,
    index_section text,
    index_order   integer,                       -- where its line stands in MEMORY.md
    description   text NOT NULL DEFAULT '',
    body          text NOT NULL DEFAULT '',
    type          text,
    recall        text[] NOT NULL DEFAULT '{}',
    paths         text[] NOT NULL DEFAULT '{}',
    importance    real CHECK (importance BETWEEN 0 AND 1),
    supersedes    text[] NOT NULL DEFAULT '{}',
    superseded_by text[] NOT NULL DEFAULT '{}',
    status        text,
    private       boolean NOT NULL DEFAULT false CHECK (NOT private),  -- private notes never enter
    kind          text,
    links         jsonb NOT NULL DEFAULT '[]',
    content_hash  text NOT NULL,
    version       integer NOT NULL DEFAULT 1,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    updated_by    name NOT NULL DEFAULT current_user,
    UNIQUE (team, name)
);

-- the server owns version numbers: whatever a client sends, an insert is version 1 and every
-- update the one after; name and team never change
CREATE FUNCTION notes_versioning() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.version := 1;
        NEW.created_at := now();
    ELSE
        IF NEW.team IS DISTINCT FROM OLD.team OR NEW.name IS DISTINCT FROM OLD.name THEN
            RAISE EXCEPTION 'a note keeps its team and name' USING ERRCODE = 'insufficient_privilege';
        END IF;
        NEW.version := OLD.version + 1;
        NEW.created_at := OLD.created_at;
    END IF;
    NEW.updated_at := now();
    NEW.updated_by := current_user;
    RETURN NEW;
END
$fn$;
CREATE TRIGGER notes_versioning BEFORE INSERT OR UPDATE ON notes
    FOR EACH ROW EXECUTE FUNCTION notes_versioning();

CREATE TABLE note_versions (
    note_id     bigint NOT NULL,              -- no foreign key: history outlives anything
    version     integer NOT NULL,
    team        text NOT NULL,
    op          text NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
    data        jsonb NOT NULL,               -- the row as it was
    changed_by  name NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (note_id, version, op)
);
CREATE INDEX note_versions_team ON note_versions (team, note_id);

-- SECURITY DEFINER: team roles cannot write the history themselves
CREATE FUNCTION notes_record_version() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $fn$
DECLARE r public.notes;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    INSERT INTO public.note_versions (note_id, version, team, op, data, changed_by)
    VALUES (r.id, r.version, r.team, lower(TG_OP), to_jsonb(r),
            CASE WHEN TG_OP = 'DELETE' THEN session_user ELSE r.updated_by END);
    RETURN NULL;
END
$fn$;
CREATE TRIGGER notes_record_version AFTER INSERT OR UPDATE OR DELETE ON notes
    FOR EACH ROW EXECUTE FUNCTION notes_record_version();

CREATE FUNCTION note_versions_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    RAISE EXCEPTION 'note_versions is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$fn$;
CREATE TRIGGER note_versions_append_only BEFORE UPDATE OR DELETE ON note_versions
    FOR EACH ROW EXECUTE FUNCTION note_versions_append_only();
CREATE TRIGGER note_versions_no_truncate BEFORE TRUNCATE ON note_versions
    FOR EACH STATEMENT EXECUTE FUNCTION note_versions_append_only();
"""

_INDEX = r"""
CREATE TABLE meta (
    team  text NOT NULL,
    key   text NOT NULL,
    value text,
    PRIMARY KEY (team, key)
);
CREATE TABLE units (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    team        text NOT NULL,
    uid         text NOT NULL,
    name        text NOT NULL,
    title       text NOT NULL DEFAULT '',
    description text NOT NULL DEFAULT '',
    keywords    text NOT NULL DEFAULT '',
    body        text NOT NULL DEFAULT '',
    path        text NOT NULL DEFAULT '',
    scope       text NOT NULL DEFAULT 'team',
    type        text,
    meta        jsonb NOT NULL DEFAULT '{}',
    hash        text NOT NULL,
    indexed_at  double precision NOT NULL,
    name_key    text NOT NULL DEFAULT '',     -- store.links.link_key of the name, of the file name
    file_key    text NOT NULL DEFAULT '',
    ntokens     integer NOT NULL DEFAULT 0,   -- FTS5's document length
    tsv         tsvector NOT NULL DEFAULT ''::tsvector,
    UNIQUE (team, uid)
);
CREATE INDEX units_team_name_key ON units (team, name_key);
CREATE INDEX units_team_file_key ON units (team, file_key);
CREATE INDEX units_team_path ON units (team, path);
CREATE INDEX units_tsv ON units USING gin (tsv);
-- the inverted index BM25 reads: each lexeme of each unit, its occurrences per field (name,
-- description, keywords, body) and the unit's length; a query reads only its own lexemes' rows
CREATE TABLE postings (
    team     text NOT NULL,
    lexeme   text NOT NULL,
    unit     bigint NOT NULL REFERENCES units (id) ON DELETE CASCADE,
    a        integer NOT NULL,
    b        integer NOT NULL,
    c        integer NOT NULL,
    d        integer NOT NULL,
    ntokens  integer NOT NULL,
    PRIMARY KEY (team, lexeme, unit) INCLUDE (a, b, c, d, ntokens)
);
CREATE INDEX postings_unit ON postings (unit);
CREATE TABLE chunks (
    team  text NOT NULL,
    unit  bigint NOT NULL REFERENCES units (id) ON DELETE CASCADE,
    seq   integer NOT NULL,
    hash  text NOT NULL,
    text  text NOT NULL,
    PRIMARY KEY (unit, seq)
);
CREATE INDEX chunks_team_hash ON chunks (team, hash);
CREATE TABLE embeddings (
    team   text NOT NULL,
    model  text NOT NULL,
    hash   text NOT NULL,
    dim    integer NOT NULL,
    vec    vector NOT NULL,
    PRIMARY KEY (team, model, hash)
);
CREATE TABLE edges (
    team  text NOT NULL,
    src   bigint NOT NULL REFERENCES units (id) ON DELETE CASCADE,
    dst   bigint NOT NULL REFERENCES units (id) ON DELETE CASCADE,
    kind  text NOT NULL,
    PRIMARY KEY (src, dst, kind)
);
CREATE INDEX edges_team ON edges (team);
CREATE INDEX edges_dst ON edges (dst);
CREATE TABLE missing_links (
    team    text NOT NULL,
    src     bigint NOT NULL REFERENCES units (id) ON DELETE CASCADE,
    target  text NOT NULL,
    kind    text NOT NULL
);
CREATE INDEX missing_links_team ON missing_links (team);
CREATE TABLE graph_nodes (
    team       text NOT NULL,
    unit       bigint PRIMARY KEY REFERENCES units (id) ON DELETE CASCADE,
    in_degree  integer NOT NULL,
    pagerank   double precision NOT NULL,
    cluster    bigint NOT NULL DEFAULT 0
);
CREATE INDEX graph_nodes_team ON graph_nodes (team);
CREATE TABLE constellations (
    team  text NOT NULL,
    id    integer NOT NULL,
    unit  bigint NOT NULL REFERENCES units (id) ON DELETE CASCADE,
    PRIMARY KEY (team, id, unit)
);
CREATE TABLE usage (
    team         text NOT NULL,
    uid          text NOT NULL,
    first_seen   double precision NOT NULL,
    refs         integer NOT NULL DEFAULT 0,
    last_ref     double precision,
    recent       text NOT NULL DEFAULT '[]',
    stability    double precision NOT NULL DEFAULT 1.0,
    state        text NOT NULL DEFAULT 'active',
    state_since  double precision NOT NULL,
    reason       text NOT NULL DEFAULT '',
    PRIMARY KEY (team, uid)
);
CREATE TABLE parsed (
    team      text NOT NULL,
    path      text NOT NULL,
    size      bigint NOT NULL,
    mtime_ns  bigint NOT NULL,
    note      text NOT NULL,
    PRIMARY KEY (team, path)
);
-- the shared hit-log (L2): every recall of a team note, by any member; lifecycle folds it
CREATE TABLE hits (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    team     text NOT NULL,
    t        double precision NOT NULL,
    session  text,
    q        text,
    unit     text NOT NULL,
    name     text,
    rank     integer,
    layer    text,
    depth    text,
    bracket  text,
    score    double precision,
    parts    jsonb NOT NULL DEFAULT '{}',
    who      name NOT NULL DEFAULT current_user,
    folded   boolean NOT NULL DEFAULT false
);
CREATE INDEX hits_unfolded ON hits (team, id) WHERE NOT folded;
"""


def _security() -> str:
    policies = "\n".join(
        f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY;\nALTER TABLE {t} FORCE ROW LEVEL SECURITY;\n"
        f"CREATE POLICY {t}_team ON {t} USING (team IN (SELECT unnest(memlane_teams(current_user))))\n"
        f"    WITH CHECK (team IN (SELECT unnest(memlane_teams(current_user))));"
        for t in TEAM_TABLES)
    index_tables = ", ".join(t for t in TEAM_TABLES if t not in ("notes", "note_versions", "hits"))
    return f"""
{policies}
REVOKE ALL ON {", ".join(TEAM_TABLES)}, team_members FROM PUBLIC;
GRANT SELECT ON schema_migrations TO memlane_team;
-- the truth: read, insert and update the content columns only (never id, version, team on
-- update, the stamps: the triggers own them); never delete
GRANT SELECT ON notes TO memlane_team;
GRANT INSERT (team, name, rel, text, title, index_hook, index_section, index_order, description, body, type,
              recall, paths, importance, supersedes, superseded_by, status, private, kind, links, content_hash)
    ON notes TO memlane_team;
GRANT UPDATE (rel, text, title, index_hook, index_section, index_order, description, body, type, recall, paths,
              importance, supersedes, superseded_by, status, private, kind, links, content_hash)
    ON notes TO memlane_team;
GRANT SELECT ON note_versions TO memlane_team;
-- the derived index: any member may keep it in line with the notes
GRANT SELECT, INSERT, UPDATE, DELETE ON {index_tables} TO memlane_team;
GRANT SELECT, INSERT ON hits TO memlane_team;
GRANT UPDATE (folded) ON hits TO memlane_team;
"""


def _hnsw(dims=HNSW_DIMS) -> str:
    return "\n".join(hnsw_index_sql(d) + ";" for d in dims)


def hnsw_index_sql(dim: int) -> str:
    """An HNSW (cosine) index over the vectors of one dimension: a partial expression index, so
    one table holds every model's vectors (pgvector indexes one dimension at a time)."""
    dim = int(dim)
    return (f"CREATE INDEX IF NOT EXISTS embeddings_hnsw_{dim} ON embeddings USING hnsw "
            f"((vec::vector({dim})) vector_cosine_ops) WITH (m = 16, ef_construction = 64) WHERE dim = {dim}")


def _foreign_keys() -> str:
    """Every index table's reference to ``units`` through ``(team, id)``, its key led by the team."""
    refs = (("postings", "unit"), ("chunks", "unit"), ("edges", "src"), ("edges", "dst"),
            ("missing_links", "src"), ("graph_nodes", "unit"), ("constellations", "unit"))
    drops = "\n".join(f"ALTER TABLE {t} DROP CONSTRAINT {t}_{c}_fkey;" for t, c in refs)
    adds = "\n".join(f"ALTER TABLE {t} ADD CONSTRAINT {t}_{c}_fkey FOREIGN KEY (team, {c})"
                     f" REFERENCES units (team, id) ON DELETE CASCADE;" for t, c in refs)
    return f"""
ALTER TABLE units ADD CONSTRAINT units_team_id UNIQUE (team, id);
{drops}
{adds}
ALTER TABLE chunks DROP CONSTRAINT chunks_pkey, ADD PRIMARY KEY (team, unit, seq);
ALTER TABLE graph_nodes DROP CONSTRAINT graph_nodes_pkey, ADD PRIMARY KEY (team, unit);
ALTER TABLE edges DROP CONSTRAINT edges_pkey, ADD PRIMARY KEY (team, src, dst, kind);
"""


# Migration 6. The history trigger runs as the function's owner (the database owner who
# migrated), and FORCE binds the owner to the policy, whose teams it has none of: without a
# policy of its own every member's write failed unless a superuser had migrated. The owner may
# write the history (it owns the table: it could lift the policy anyway); a team role cannot
# become it. Team keys: an index row's key leads with its team and it references its unit
# through (team, id), so one team can neither squat the ids another needs nor learn which exist.
# A note's file is unique in its team, case-insensitively (one unit, one export file per note):
# files two notes shared already are renamed (name-<id>.md) first.
_OWNER_AND_KEYS = r"""
CREATE POLICY note_versions_history ON note_versions FOR INSERT
    WITH CHECK (current_user = (SELECT pg_get_userbyid(relowner) FROM pg_class
                                WHERE oid = 'public.note_versions'::regclass));
""" + _foreign_keys() + r"""
ALTER TABLE notes NO FORCE ROW LEVEL SECURITY;
UPDATE notes n SET rel = regexp_replace(n.rel, '(\.md)?$', '-' || n.id || '.md')
FROM (SELECT id, row_number() OVER (PARTITION BY team, lower(rel) ORDER BY id) AS k FROM notes) d
WHERE n.id = d.id AND d.k > 1;
ALTER TABLE notes FORCE ROW LEVEL SECURITY;
CREATE UNIQUE INDEX notes_team_file ON notes (team, lower(rel));
"""

# 7: a note's file key as a stored column with its unique index: under row-level security a query
# may use an index only through leakproof operators, and lower() is not one (a member's per-note
# file check scanned the table: an import of 100k notes was quadratic).
_FILE_KEY = r"""
ALTER TABLE notes ADD COLUMN rel_key text GENERATED ALWAYS AS (lower(rel)) STORED;
DROP INDEX notes_team_file;
CREATE UNIQUE INDEX notes_team_file ON notes (team, rel_key);
"""

# 8: a hit-log row says who recalled what, and lifecycle folds each row once. A member could
# insert rows under another member's name (``who`` had only a default) and set a folded row
# back to unfolded (the fold's one updatable column), counting a use again at every fold.
_HITS_OWN = r"""
CREATE FUNCTION hits_own() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.who := current_user;
        NEW.folded := false;
    ELSIF OLD.folded AND NOT NEW.folded THEN
        RAISE EXCEPTION 'a folded hit stays folded' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$fn$;
CREATE TRIGGER hits_own BEFORE INSERT OR UPDATE ON hits FOR EACH ROW EXECUTE FUNCTION hits_own();
"""

# 9: a hit-log row's id is the server's. Its identity is one sequence for every team, and
# OVERRIDING SYSTEM VALUE let a member insert the ids the sequence gives next (squatting them:
# every other team's recall then failed to log its hits, and its notes slid to dormant) or probe
# which exist. A member inserts every column but the id.
_HITS_ID = r"""
REVOKE INSERT ON hits FROM memlane_team;
GRANT INSERT (team, t, session, q, unit, name, rank, layer, depth, bracket, score, parts, who, folded)
    ON hits TO memlane_team;
"""

# 10: a member folds only the hit-log rows they logged. Folding marks a row counted, and a folded
# row stays folded (8): a member who folded every row of the team — one UPDATE, counting nothing —
# hid the others' uses from lifecycle for good. Each member's memlane folds (counts) its own rows;
# an UPDATE of another's row matches nothing.
_HITS_FOLD_OWN = r"""
CREATE POLICY hits_fold_own ON hits AS RESTRICTIVE FOR UPDATE USING (who = current_user);
"""

#: (version, name, script): append-only; an applied script is never edited (its checksum is kept)
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "teams and membership", _TEAMS),
    (2, "notes and their history", _NOTES),
    (3, "the index of the storage seam", _INDEX),
    (4, "row-level security and grants", _security()),
    (5, "HNSW indexes", _hnsw()),
    (6, "a non-superuser owner's history; team-led index keys; one file per note", _OWNER_AND_KEYS),
    (7, "the file key a member's lookup can use", _FILE_KEY),
    (8, "a hit-log row is its writer's, folded once", _HITS_OWN),
    (9, "a hit-log row's id is the server's", _HITS_ID),
    (10, "a member folds only the hit-log rows they logged", _HITS_FOLD_OWN),
)
LATEST = MIGRATIONS[-1][0]


def checksum(script: str) -> str:
    return hashlib.sha256(script.encode()).hexdigest()[:16]


def applied(conn) -> dict[int, str]:
    """version -> checksum of what the database has applied ({} for an empty database)."""
    if conn.execute("SELECT to_regclass('public.schema_migrations')").fetchone()[0] is None:
        return {}
    return dict(conn.execute("SELECT version, checksum FROM schema_migrations").fetchall())


def migrate(conn, migrations=MIGRATIONS) -> list[int]:
    """Apply the pending migrations in order on ``conn`` (autocommit; the database owner or a
    superuser); returns the versions applied. Concurrent migrators take turns on an advisory
    lock and the later ones find nothing left to do."""
    from ..errors import TeamStoreError

    if not conn.autocommit:
        raise TeamStoreError("migrate needs an autocommit connection (one transaction per migration)")
    require_server_version(conn)
    done: list[int] = []
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        conn.execute("""CREATE TABLE IF NOT EXISTS schema_migrations (
                            version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
                            applied_at timestamptz NOT NULL DEFAULT now())""")
        have = applied(conn)
        _refuse_foreign(have, migrations)
        for version, name, script in migrations:
            if version in have:
                continue
            with conn.transaction():
                conn.execute(script)
                conn.execute("INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                             (version, name, checksum(script)))
            log.info("team store: applied migration %s (%s)", version, name)
            done.append(version)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    return done


def _refuse_foreign(have: dict[int, str], migrations) -> None:
    from ..errors import TeamStoreError

    known = {v: checksum(s) for v, _, s in migrations}
    for version, digest in sorted(have.items()):
        if version not in known:
            raise TeamStoreError(f"the team database has schema version {max(have)}, newer than this memlane "
                                 f"knows ({max(known)}): upgrade memlane")
        if known[version] != digest:
            raise TeamStoreError(f"the team database's migration {version} differs from this memlane's: it was "
                                 "edited after it was applied; restore it from a backup or ask its admin")


def require_server_version(conn) -> int:
    """The server's version number (``server_version_num``), or a ``TeamStoreError`` when it is
    older than :data:`MIN_SERVER_VERSION` (no round trip: libpq knows it from the handshake)."""
    from ..errors import TeamStoreError

    version = int(conn.info.server_version)
    if version < MIN_SERVER_VERSION:
        raise TeamStoreError(f"the team database runs PostgreSQL {_version_text(version)}; memlane's team store "
                             f"needs PostgreSQL {_version_text(MIN_SERVER_VERSION)} or newer (with pgvector 0.8+)")
    return version


def _version_text(num: int) -> str:
    return f"{num // 10000}.{num % 10000}" if num >= 100000 else f"{num // 10000}.{num // 100 % 100}"


def check_schema(conn) -> int:
    """The database's schema version, when it is exactly this memlane's; otherwise a
    ``TeamStoreError`` that says what to run (or that the server is too old)."""
    from ..errors import TeamStoreError

    require_server_version(conn)
    have = applied(conn)
    if not have:
        raise TeamStoreError(f"the team database has no memlane schema yet: run `{MIGRATE_COMMAND}` (as the "
                             "database owner) to create it")
    _refuse_foreign(have, MIGRATIONS)
    version = max(have)
    if version < LATEST:
        raise TeamStoreError(f"the team database has schema version {version}, older than this memlane's "
                             f"{LATEST}: run `{MIGRATE_COMMAND}` (as the database owner) to migrate it")
    return version


__all__ = ["GROUP_ROLE", "HNSW_DIMS", "LATEST", "MIGRATE_COMMAND", "MIGRATIONS", "MIN_SERVER_VERSION",
           "require_server_version", "TEAM_TABLES", "applied",
           "check_schema", "hnsw_index_sql", "migrate"]
