"""The schema as a real deployment migrates it: by the database's owner who is no superuser
(managed PostgreSQL), on a server new enough, and with index keys led by the team so one team
can neither squat the ids another needs nor learn which exist."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from memlane.errors import TeamStoreError
from memlane.index.unit import Unit
from memlane.team.admin import add_member, migrate_database
from memlane.team.connect import connect
from memlane.team.notes import TeamNotes
from memlane.team.postgres import PostgresStorage
from memlane.team.schema import MIN_SERVER_VERSION, check_schema, migrate, require_server_version
from team_support import fresh_name

NOTE = "---\nname: deploy_freeze\ndescription: when deploying on Friday\ntype: project\n---\nNo deploys on Friday.\n"


def test_a_database_owner_who_is_no_superuser_migrates_and_members_write(pg_server):
    owner, db = fresh_name("owner"), fresh_name("owndb")
    with connect(pg_server.admin_dsn) as su:
        su.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE PASSWORD 'ownerpw'").format(sql.Identifier(owner)))
        su.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(db), sql.Identifier(owner)))
    with connect(pg_server.url(dbname=db)) as su:
        su.execute("CREATE EXTENSION vector")  # the one step a managed service's superuser does
        # memlane_team is cluster-wide and another database made it already: its owner grants it on
        su.execute(sql.SQL("GRANT memlane_team TO {} WITH ADMIN OPTION").format(sql.Identifier(owner)))
    owner_dsn = pg_server.url(user=owner, password="ownerpw", dbname=db)
    with connect(owner_dsn) as conn:
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (False,)
    assert migrate_database(owner_dsn)
    team = fresh_name("team")
    alice = pg_server.member(team, dsn=owner_dsn)
    storage = PostgresStorage(alice, namespace=team)
    try:
        notes = TeamNotes(storage)
        first = notes.write(NOTE, rel="deploy_freeze.md")
        second = notes.write(NOTE + "\nAsk first.\n", rel=first.rel, expected=first.version)
        assert [v["version"] for v in notes.history("deploy_freeze")] == [1, 2] and second.version == 2
    finally:
        storage.close()
    with connect(alice) as conn:  # the history policy is the owner's alone: a member still cannot forge history
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO note_versions (note_id, version, team, op, data, changed_by)"
                         " VALUES (1, 9, %s, 'insert', '{}', 'x')", (team,))


class _Info:
    def __init__(self, version):
        self.server_version = version


class _Old:
    """A connection to a server too old (only its handshake's version is read)."""

    autocommit = True

    def __init__(self, version):
        self.info = _Info(version)

    def execute(self, *args):  # pragma: no cover - the version check comes first
        raise AssertionError("nothing runs on a server too old")


def test_a_server_older_than_16_is_refused_with_its_version(pg_server):
    for check in (migrate, check_schema):
        with pytest.raises(TeamStoreError, match=r"PostgreSQL 15\.4; .*needs PostgreSQL 16\.0 or newer"):
            check(_Old(150004))
    with connect(pg_server.dsn) as conn:
        assert require_server_version(conn) >= MIN_SERVER_VERSION


def test_one_team_can_neither_squat_another_s_ids_nor_probe_them(pg_server):
    a_team, b_team = fresh_name("ta"), fresh_name("tb")
    alice, bob = pg_server.member(a_team), pg_server.member(b_team)
    a, b = PostgresStorage(alice, namespace=a_team), PostgresStorage(bob, namespace=b_team)
    try:
        b.sync([Unit(uid=f"b{i}", name=f"note_{i}", body=f"see [[note_{(i + 1) % 3}]] text {i}") for i in range(3)])
        ids = b.all_ids()
        with connect(alice) as conn:
            for unit in ids:  # alice cannot see bob's units; a key led by her team finds none of his ids
                with pytest.raises(psycopg.errors.ForeignKeyViolation):
                    conn.execute("INSERT INTO graph_nodes (team, unit, in_degree, pagerank) VALUES (%s, %s, 0, 0)",
                                 (a_team, unit))
                with pytest.raises(psycopg.errors.ForeignKeyViolation):
                    conn.execute("INSERT INTO chunks (team, unit, seq, hash, text) VALUES (%s, %s, 0, 'h', 't')",
                                 (a_team, unit))
        a.sync([Unit(uid="a1", name="mine", body="alice's own")])
        [mine] = a.all_ids()
        with connect(alice) as conn:  # her own unit takes her rows, which no longer share a key with bob's
            conn.execute("INSERT INTO graph_nodes (team, unit, in_degree, pagerank) VALUES (%s, %s, 0, 0)",
                         (a_team, mine))
        b.sync([Unit(uid=f"b{i}", name=f"note_{i}", body=f"see [[note_{(i + 2) % 3}]] now {i}") for i in range(3)])
        from memlane.associate.build import rebuild_graph

        with b.transaction():
            rebuild_graph(b, True)
        assert b.node_count() == 3
    finally:
        a.close()
        b.close()
        for name in (a_team, b_team):
            pg_server.storage(namespace=name).drop_namespace()


def test_a_member_can_neither_log_hits_as_another_nor_unfold_one(pg_server):
    """The shared hit-log says which member's agent recalled a note, and lifecycle counts each
    row once: a row is its writer's whatever the insert names, and a folded row stays folded."""
    team = fresh_name("team")
    alice, bob = pg_server.member(team), pg_server.member(team)
    with connect(bob) as conn:
        bob_role = conn.execute("SELECT current_user").fetchone()[0]
    with connect(alice) as conn:
        me = conn.execute("SELECT current_user").fetchone()[0]
        conn.execute("INSERT INTO hits (team, t, unit, who, folded) VALUES (%s, 1, 'team://x/a.md', %s, true)",
                     (team, bob_role))
        assert conn.execute("SELECT who, folded FROM hits WHERE team = %s", (team,)).fetchall() == [(me, False)]
        conn.execute("UPDATE hits SET folded = true WHERE team = %s", (team,))  # the fold
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="stays folded"):
            conn.execute("UPDATE hits SET folded = false WHERE team = %s", (team,))


def test_a_member_folds_only_the_hits_they_logged(pg_server):
    """Folding marks a hit-log row counted: a member who folded every row of the team (with one
    UPDATE of their own, counting nothing) hid the other members' uses from lifecycle for good —
    a folded row stays folded — and the notes they use slid to dormant. A member folds their own rows."""
    from memlane.team.usage import TeamHitLog, TeamUsage

    team = fresh_name("team")
    alice, bob = (PostgresStorage(pg_server.member(team), namespace=team) for _ in range(2))
    try:
        for storage, session in ((alice, "a1"), (alice, "a2"), (bob, "b1")):
            assert TeamHitLog(storage).record("deploy", [{"path": f"team://{team}/a.md", "name": "a"}],
                                              session=session)
        with connect(bob._dsn) as conn:
            me = conn.execute("SELECT current_user").fetchone()[0]
            folded = conn.execute("UPDATE hits SET folded = true WHERE team = %s RETURNING who", (team,)).fetchall()
            assert folded == [(me,)]  # his own row, none of Alice's
            conn.commit()
        with connect(alice._dsn) as conn:
            assert conn.execute("SELECT count(*) FROM hits WHERE team = %s AND NOT folded", (team,)).fetchone() == (2,)
        from memlane.config import LifecycleConfig

        assert TeamUsage(alice, TeamHitLog(alice), LifecycleConfig()).consume() == 2  # her two sessions, still counted
        assert TeamUsage(bob, TeamHitLog(bob), LifecycleConfig()).consume() == 0
    finally:
        alice.close()
        bob.close()


def test_a_member_cannot_squat_the_hit_log_ids_another_team_s_inserts_need(pg_server):
    """``hits.id`` is one identity for every team: with OVERRIDING SYSTEM VALUE a member of one
    team inserted the ids the sequence hands out next, and every other team's hit-log insert
    failed on them (its recall's uses lost, its notes sliding to dormant)."""
    from memlane.team.usage import TeamHitLog

    mine, theirs = fresh_name("team"), fresh_name("team")
    mallory = pg_server.member(mine)
    storage = PostgresStorage(pg_server.member(theirs), namespace=theirs)
    try:
        log = TeamHitLog(storage)
        assert log.record("deploy", [{"path": f"team://{theirs}/a.md", "name": "a"}])
        with connect(mallory) as conn:
            conn.execute("INSERT INTO hits (team, t, unit) VALUES (%s, 1, 'u')", (mine,))
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("INSERT INTO hits (id, team, t, unit) OVERRIDING SYSTEM VALUE SELECT g, %s, 1, 'u'"
                             " FROM generate_series((SELECT max(id) FROM hits) + 1, (SELECT max(id) FROM hits) + 20) g",
                             (mine,))
            conn.rollback()
        assert log.record("deploy", [{"path": f"team://{theirs}/a.md", "name": "a"}])
        with connect(mallory) as conn:  # an insert as the hit-log writes one still works
            conn.execute("INSERT INTO hits (team, t, unit, who, folded) VALUES (%s, 2, 'u', 'x', true)", (mine,))
    finally:
        storage.close()
