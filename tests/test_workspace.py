"""The warm workspace both resident faces share: one throttle (an edited note is seen once the
interval has passed, not before — by the daemon's background refresher and by the MCP server's
inline check alike) and one config watch (a changed config file reopens it)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import write_note
from memlane.adapters import daemon
from memlane.adapters.mcp_server import Engine
from memlane.adapters.workspace import REFRESH_S, Workspace

NOTE = ("---\nname: feedback_ci_cache\ndescription: Key CI caches on the lockfile hash, never on the branch "
        "name\ntype: feedback\n---\nCaches keyed on branch names go stale after a rebase.\n")
EDIT = "Purge the old cache once after switching keys."


class Clock:
    """What the throttle reads, stepped by hand: the test decides when the interval has passed."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def setup(tmp_path, sealed_env):
    store = tmp_path / "store"
    write_note(store, "feedback_ci_cache.md", NOTE)
    return {"store": store, "index": str(tmp_path / "i.sqlite"), "root": str(tmp_path)}


def edit(setup) -> None:
    note = setup["store"] / "feedback_ci_cache.md"
    note.write_text(note.read_text() + EDIT + "\n")


def ask(workspace, session: str) -> str:
    """What the daemon answers a prompt with, from this workspace (a new session each time, so
    nothing is held back as already shown)."""
    payload = json.dumps({"session_id": session, "transcript_path": "/none.jsonl", "cwd": workspace.args[3],
                          "hook_event_name": "UserPromptSubmit", "prompt": "why is the CI cache stale after a rebase?"})
    out = daemon.answer(workspace, "user-prompt-submit", payload, deadline=time.monotonic() + 30)
    assert "feedback_ci_cache" in out
    return out


def open_daemon(setup, **throttle) -> Workspace:
    return daemon.open_workspace(setup["root"], [str(setup["store"])], "none", setup["index"], **throttle)


def open_mcp(setup, **throttle) -> Engine:
    engine = Engine([str(setup["store"])], "none", setup["index"], setup["root"])
    for name, value in throttle.items():  # nothing is open before the first call
        setattr(engine.workspace, name, value)
    return engine


def test_the_daemon_sees_an_edit_after_the_interval_not_before(setup):
    clock = Clock()
    workspace = open_daemon(setup, refresh_s=0.2, clock=clock)  # the refresher thread runs
    try:
        assert EDIT not in ask(workspace, "d1")
        edit(setup)
        time.sleep(1.0)  # the refresher wakes about five times, but the throttle's clock stands still
        assert EDIT not in ask(workspace, "d2")
        clock.advance(0.2)  # the interval has passed: its next wake looks at the files
        deadline, seen, n = time.monotonic() + 10, False, 0
        while not seen and time.monotonic() < deadline:
            time.sleep(0.05)
            n += 1
            seen = EDIT in ask(workspace, f"d3-{n}")
        assert seen
    finally:
        workspace.close()


def test_the_mcp_server_sees_an_edit_at_once_in_a_store_quick_to_walk(setup):
    """A note written a moment ago is found by the next call, as by a recall in a process of its own."""
    engine = open_mcp(setup, refresh_s=5.0, clock=Clock())
    try:
        assert EDIT not in engine.get(["feedback_ci_cache"])["notes"][0]["body"]
        assert engine.workspace.files_cheap_to_check()  # a few notes: a walk takes well under CHEAP_WALK_S
        edit(setup)
        assert EDIT in engine.get(["feedback_ci_cache"])["notes"][0]["body"]
    finally:
        engine.workspace.close()


def test_the_mcp_server_sees_an_edit_after_the_interval_not_before(setup):
    """A store whose walk is slow (a large one, stood in for here) is walked at most every interval."""
    assert Engine(None, "none", None, None).workspace.refresh_s == REFRESH_S  # the daemon's default too
    clock = Clock()
    engine = open_mcp(setup, refresh_s=5.0, clock=clock)  # checked inline, on each call

    def body() -> str:
        return engine.get(["feedback_ci_cache"])["notes"][0]["body"]

    try:
        assert EDIT not in body()
        memory, walk = engine.workspace.memory, engine.workspace.memory.files_look

        def slow_walk(*args, **kwargs):
            found = walk(*args, **kwargs)
            memory.walk_s = 0.1  # as long as a walk of ~10k files
            return found

        memory.files_look, engine.workspace._walk_s = slow_walk, 0.1
        edit(setup)
        assert EDIT not in body()
        clock.advance(4.9)
        assert EDIT not in body()  # not before the interval ...
        assert "feedback_ci_cache" in json.dumps(engine.recall("CI cache stale after a rebase"))
        clock.advance(0.2)
        assert EDIT in body()  # ... and at the first call after it
        assert EDIT in engine.recall("CI cache stale after a rebase", depth="full")["results"][0]["body"]
    finally:
        engine.workspace.close()


def test_a_changed_config_file_reopens_the_workspace(setup, tmp_path, monkeypatch):
    config = tmp_path / "config.toml"
    config.write_text("[retrieve]\nk = 3\n")
    monkeypatch.setenv("MEMLANE_CONFIG", str(config))
    warm, engine = open_daemon(setup), open_mcp(setup)
    try:
        ask(warm, "c1")
        first = warm.memory
        assert first.config.retrieve.k == 3 and engine.memory.config.retrieve.k == 3
        ask(warm, "c2")
        engine.recall("CI cache")
        assert warm.opened == engine.workspace.opened == 1  # an unchanged config: the same workspace
        config.write_text("[retrieve]\nk = 7\n")
        ask(warm, "c3")  # the daemon reopens and still answers
        assert warm.opened == 2 and warm.memory is not first and warm.memory.config.retrieve.k == 7
        assert engine.memory.config.retrieve.k == 7 and engine.workspace.opened == 2
        ask(warm, "c4")
        assert warm.opened == 2  # once
    finally:
        warm.close()
        engine.workspace.close()


def test_a_background_walk_steps_aside_while_a_request_is_served(setup):
    import threading

    clock = Clock()
    workspace = Workspace([str(setup["store"])], "none", setup["index"], setup["root"], refresh_s=0.2, clock=clock)
    workspace.current()  # opened; no refresher thread: the walk is run by hand below
    try:
        clock.advance(60)  # a walk is due
        with workspace.serving():
            walker = threading.Thread(target=workspace.refresh_files_due)
            walker.start()
            walker.join(0.3)
            assert walker.is_alive()  # waiting for the request to end, not walking beside it
        walker.join(5)
        assert not walker.is_alive()
    finally:
        workspace.close()


def test_a_slow_walk_is_made_less_often(setup, monkeypatch):
    import memlane.adapters.workspace as ws

    clock = Clock()
    workspace = Workspace([str(setup["store"])], "none", setup["index"], setup["root"], refresh_s=0.2, clock=clock)
    workspace.current()
    walks = []

    def slow_look(pause=None):
        walks.append(clock.now)
        workspace.memory.walk_s = 0.1  # a walk of 0.1 s: at WALK_SHARE 5%, due every 2 s rather than every 0.2 s
        return "same", None

    monkeypatch.setattr(workspace.memory, "files_look", slow_look)
    try:
        clock.advance(0.3)
        workspace.refresh_files_due()
        for _ in range(5):
            clock.advance(0.3)
            workspace.refresh_files_due()
        assert len(walks) == 1  # 1.5 s later: not yet
        clock.advance(1.0)
        workspace.refresh_files_due()
        assert len(walks) == 2
        assert ws.WALK_SHARE * (walks[1] - walks[0]) >= 0.1 * 0.9
    finally:
        workspace.close()


def test_the_daemons_warm_up_keeps_its_model_resident(tmp_path, sealed_env, monkeypatch):
    from memlane.embed.fake import FakeEmbedder

    asked = []
    monkeypatch.setattr(FakeEmbedder, "keep_resident", lambda self: asked.append(self.name), raising=False)
    write_note(tmp_path / "store", "a.md", "---\nname: a\ndescription: d\n---\nbody\n")
    workspace = Workspace([str(tmp_path / "store")], "fake", str(tmp_path / "i.sqlite"), str(tmp_path))
    try:
        workspace.current()  # opened on demand (the MCP server's way): nothing asked
        assert asked == []
        workspace.warm()  # the daemon's way
        assert asked == ["fake"]
    finally:
        workspace.close()


def test_the_answer_goes_out_before_the_requests_writes(setup):
    from memlane.inject.session import sessions_dir

    workspace = open_daemon(setup)
    state = sessions_dir() / "w1.json"
    seen = {}

    def reply(out: str) -> None:
        seen.update(out=out, state_on_disk=state.exists())

    payload = json.dumps({"session_id": "w1", "transcript_path": "/none.jsonl", "cwd": setup["root"],
                          "prompt": "why is the CI cache stale after a rebase?"})
    try:
        daemon.answer(workspace, "user-prompt-submit", payload, deadline=time.monotonic() + 30, reply=reply)
    finally:
        workspace.close()
    assert "feedback_ci_cache" in seen["out"]
    assert seen["state_on_disk"] is False  # not yet when the client had its answer ...
    assert "feedback_ci_cache" in state.read_text()  # ... and written before the request let go


def test_the_warm_up_answers_a_dry_run_prompt_and_leaves_no_trace(setup, monkeypatch):
    import memlane.adapters.workspace as ws
    from memlane.inject.session import sessions_dir

    asked = []
    real = ws.Workspace._prime

    def prime(self):
        asked.append(self.memory.index_path)
        real(self)

    monkeypatch.setattr(ws.Workspace, "_prime", prime)
    import memlane.inject.layers as layers

    screened = []
    monkeypatch.setattr(layers, "_screen", lambda items, root, memory=None: (screened.append(len(items)) or (items, [])))
    workspace = open_daemon(setup)
    try:
        assert asked and screened  # a prompt went through the injection path before any request
        hits = Path(setup["index"] + ".hits.jsonl")
        assert not hits.exists() or not hits.read_text().strip()  # recorded nothing
        assert not sessions_dir().exists() or not any(sessions_dir().iterdir())  # no session's state
    finally:
        workspace.close()


def test_the_background_check_hands_its_walk_to_the_refresh(setup, monkeypatch):
    """An edit costs one stat walk, not two: the refresh under the lock takes the walk the check
    made outside it (100k notes: ~0.5 s less with requests waiting)."""
    import memlane.index.refresh as refresh

    clock = Clock()
    workspace = Workspace([str(setup["store"])], "none", setup["index"], setup["root"], refresh_s=0.2, clock=clock)
    workspace.current()
    walks = []
    real_walk = refresh.walk
    monkeypatch.setattr(refresh, "walk", lambda specs, pause=None: walks.append(1) or real_walk(specs, pause))
    try:
        edit(setup)
        clock.advance(0.3)
        workspace.refresh_files_due()
        assert len(walks) == 1
        assert workspace.memory.show("feedback_ci_cache")[0]["body"].rstrip().endswith(EDIT)
    finally:
        workspace.close()


def test_a_store_folder_that_appears_or_comes_back_is_read(tmp_path, sealed_env):
    """The daemon opened while Claude Code's memory folder was not there (not created yet, or
    moved away for a moment by a sync): when it appears, its notes are indexed and answered."""
    import subprocess

    from memlane.store import claude_memory_dir

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    folder = claude_memory_dir(repo.resolve())
    clock = Clock()
    workspace = daemon.open_workspace(str(repo), [], "none", None, clock=clock)  # no folder: nothing to read
    try:
        assert workspace.memory.specs == []
        write_note(folder, "feedback_ci_cache.md", NOTE)
        clock.advance(REFRESH_S)
        workspace.refresh_due()
        assert [s.path for s in workspace.memory.specs] == [folder]
        ask(workspace, "appeared")
        folder.rename(folder.with_name("memory.away"))
        clock.advance(REFRESH_S)
        workspace.refresh_due()
        assert workspace.memory.specs == []
        folder.with_name("memory.away").rename(folder)
        clock.advance(REFRESH_S)
        workspace.refresh_due()
        ask(workspace, "back")
    finally:
        workspace.close()


class _GatedEmbedder:
    """The fake embedder, as slow as the gate says: a passage batch waits until ``gate`` is set
    (a real model embedding a folder copied in takes ~25 s); passages raise once ``fail`` is set."""

    def __new__(cls, gate, fail=None, failed=None):
        from memlane.embed.fake import FakeEmbedder

        class Gated(FakeEmbedder):
            name, instant = "fake", False

            def embed_batch(self, texts, *, is_query):
                if not is_query:
                    if fail is not None and fail.is_set():
                        failed.append(len(texts))
                        raise RuntimeError("the model failed on a text")
                    assert gate.wait(30), "the test never opened the gate"
                return super().embed_batch(texts, is_query=is_query)

        return Gated()


def _open_gated(setup, gate, clock, *args):
    """The daemon's workspace with the gated embedder, the gate open while it opens."""
    gate.set()
    return daemon.open_workspace(setup["root"], [str(setup["store"])], _GatedEmbedder(gate, *args), setup["index"],
                                 refresh_s=0.2, clock=clock)


def _copy_in(setup, notes: int, *, answer: int | None = None) -> None:
    """``notes`` notes copied into the store at once; note ``answer`` says what the rebase hook rewrites."""
    for n in range(notes):
        body = "The rebase hook rewrites the CI cache key." if n == answer else f"Nothing of note {n}."
        write_note(setup["store"], f"bulk_{n}.md", f"---\nname: bulk_{n}\ndescription: copied note {n}\n---\n{body}\n")


def _until(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_a_bulk_change_is_embedded_apart_while_prompts_answer_keyword_only(setup):
    """Twenty notes copied into the store while the daemon runs: its refresh syncs them and
    leaves their vectors to the background, a batch at a time outside the lock, so a prompt
    meanwhile is answered within its deadline, by words (the new note found), not made to
    wait out the model; once every text has a vector, recall uses meaning again."""
    import threading

    gate, clock = threading.Event(), Clock()
    workspace = _open_gated(setup, gate, clock)
    try:
        memory = workspace.memory
        assert memory.embedder is not None and memory.pending_to_embed() == 0  # one note, embedded inline
        gate.clear()  # from now on the model takes as long as the test says
        _copy_in(setup, 20, answer=7)
        clock.advance(1.0)
        assert _until(lambda: workspace._embed_due), "the refresh never left the new notes' vectors to the background"
        payload = json.dumps({"session_id": "b1", "transcript_path": "/none.jsonl", "cwd": setup["root"],
                              "hook_event_name": "UserPromptSubmit", "prompt": "what does the rebase hook rewrite?"})
        out = daemon.answer(workspace, "user-prompt-submit", payload, deadline=time.monotonic() + 2)
        assert "bulk_7" in out  # answered within the deadline, by words, while the model waits at the gate
        assert memory.embedder is None and "keyword-only for now" in memory.embedder_notice
        gate.set()
        assert _until(lambda: not workspace._embed_due), "the background never finished embedding"
        with workspace.held(time.monotonic() + 5):
            assert memory.pending_to_embed() == 0 and memory.embedder is not None
            assert memory.embedder_notice is None
    finally:
        gate.set()
        workspace.close()


def test_a_model_that_fails_in_the_background_gives_meaning_back_and_stops_trying(setup):
    import threading

    clock, gate, fail, failed = Clock(), threading.Event(), threading.Event(), []
    workspace = _open_gated(setup, gate, clock, fail, failed)
    try:
        fail.set()
        _copy_in(setup, 20)
        clock.advance(1.0)
        assert _until(lambda: failed)  # left to the background, which fails at once ...
        assert _until(lambda: not workspace._embed_due)
        time.sleep(0.3)
        assert len(failed) == 1 and not workspace._embed_due  # ... and does not try again and again
        with workspace.held(time.monotonic() + 5):
            assert workspace.memory.embedder is not None  # the vectors it has are searched again
    finally:
        workspace.close()


@pytest.mark.parametrize("embedder", ["none", "fake"])
def test_a_prompt_after_the_daemons_refresh_does_not_look_at_the_files_again(setup, embedder):
    """The daemon's background round refreshed the index after an edit (embedding what it
    must): the prompts after it answer from that index, none walks the files or refreshes
    inside its request (a walk at 10k notes costs ~70 ms of a prompt)."""
    clock = Clock()
    workspace = daemon.open_workspace(setup["root"], [str(setup["store"])], embedder, setup["index"],
                                      refresh_s=0.2, clock=clock)
    try:
        import threading

        ask(workspace, "r1")
        in_requests = []  # the refreshes made by this thread, which asks as a request does
        files = workspace.memory._files
        real_refresh = files.refresh
        files.refresh = lambda *a, **k: (in_requests.append(1) if threading.current_thread() is threading.main_thread()
                                         else None) or real_refresh(*a, **k)
        try:
            edit(setup)
            clock.advance(1.0)
            assert _until(lambda: EDIT in ask(workspace, f"r2-{time.monotonic()}"))
            for n in range(3):
                ask(workspace, f"r3-{n}")
        finally:
            files.refresh = real_refresh
        assert in_requests == []
    finally:
        workspace.close()


@pytest.mark.parametrize("notes", [2, 20])
def test_the_daemon_leaves_embedding_to_another_process_that_has_the_turn(setup, notes):
    """A `memlane index` run holds the turn at embedding into this index: the daemon's refresh
    neither waits for it (a few texts included: the prompt is answered by keyword meanwhile) nor
    embeds what the run embeds; once the turn is free it embeds what is left."""
    from memlane.index.vectors import EmbedTurn

    clock, embedded = Clock(), []
    workspace = daemon.open_workspace(setup["root"], [str(setup["store"])], _Counting(embedded), setup["index"],
                                      refresh_s=0.2, clock=clock)
    other = EmbedTurn(f"{setup['index']}.embedding")
    try:
        assert other.take() is False  # the other process's turn, from now on
        embedded.clear()
        _copy_in(setup, notes, answer=1)
        clock.advance(1.0)
        assert _until(lambda: workspace._embed_due)
        payload = json.dumps({"session_id": "t1", "transcript_path": "/none.jsonl", "cwd": setup["root"],
                              "hook_event_name": "UserPromptSubmit", "prompt": "what does the rebase hook rewrite?"})
        assert "bulk_1" in daemon.answer(workspace, "user-prompt-submit", payload, deadline=time.monotonic() + 2)
        time.sleep(1.5)
        assert embedded == []  # the turn is the other process's: nothing embedded twice
        other.give()
        assert _until(lambda: not workspace._embed_due)
        assert sum(embedded) == notes and workspace.memory.pending_to_embed() == 0
    finally:
        other.close()
        workspace.close()


class _Counting:
    """The fake embedder, not instant (as a real model), counting the passages it embeds."""

    def __new__(cls, embedded):
        from memlane.embed.fake import FakeEmbedder

        class Counting(FakeEmbedder):
            name, instant = "fake", False

            def embed_batch(self, texts, *, is_query):
                if not is_query:
                    embedded.append(len(texts))
                return super().embed_batch(texts, is_query=is_query)

        return Counting()


def test_a_note_refreshed_just_as_the_background_finishes_does_not_leave_recall_keyword_only(setup):
    """The background embedded the last pending text and gave meaning back, and before it marked
    its work done a request (``memlane recall`` through the daemon) refreshed a new note, which
    left the texts apart again: the background carries on with them (recall stayed keyword-only
    for good, the notice saying a text was being embedded, when the work was marked done anyway)."""
    import threading

    gate, clock = threading.Event(), Clock()
    workspace = _open_gated(setup, gate, clock)
    try:
        memory = workspace.memory
        real_within, raced = memory.embed_within, []

        def within_then_a_request(**kw):  # the request that gets the lock between the two of the round
            done, finished = real_within(**kw)
            if finished and not raced:
                raced.append(1)
                write_note(setup["store"], "late.md", "---\nname: late\ndescription: a late note\n---\nlate\n")
                with workspace.held(time.monotonic() + 5) as warm:
                    warm.check_files()
            return done, finished

        memory.embed_within = within_then_a_request
        _copy_in(setup, 20)
        clock.advance(1.0)
        assert _until(lambda: raced and not workspace._embed_due)
        with workspace.held(time.monotonic() + 5):
            assert memory.embedder is not None and memory.embedder_notice is None  # meaning is back
            assert memory.pending_to_embed() == 0
    finally:
        gate.set()
        workspace.close()


def test_another_process_that_takes_the_turn_just_after_the_daemon_looked_is_not_waited_for(setup):
    """A `memlane index` run took the turn at embedding right after the daemon's refresh found
    it free, before the daemon embedded its few new texts: the daemon leaves them to the
    background rather than wait for the turn under its lock (every prompt meanwhile waited out its
    deadline; and the daemon's own background round, holding the turn, waited for that lock)."""
    from memlane.adapters.workspace import Busy
    from memlane.index.vectors import EmbedTurn

    clock, embedded = Clock(), []
    workspace = daemon.open_workspace(setup["root"], [str(setup["store"])], _Counting(embedded), setup["index"],
                                      refresh_s=0.2, clock=clock)
    other = EmbedTurn(f"{setup['index']}.embedding")
    memory = workspace.memory
    real_pending, looked = memory.pending_to_embed, []

    def counted_then_taken():  # the other process takes the turn just after the daemon counted what is pending
        found = real_pending()
        if found and not looked:
            looked.append(False)
            other.take()
        return found

    memory.pending_to_embed = counted_then_taken
    try:
        write_note(setup["store"], "few.md", "---\nname: few\ndescription: a new note\n---\nThe rebase hook.\n")
        clock.advance(1.0)
        assert _until(lambda: looked)
        try:
            with workspace.held(time.monotonic() + 3):  # the lock not held while the turn is the other's
                assert looked == [False] and memory.embedder is None and workspace._embed_due
        except Busy:
            pytest.fail("the daemon waited for another process's turn under its lock")
        other.give()
        assert _until(lambda: not workspace._embed_due)
        assert memory.pending_to_embed() == 0 and memory.embedder is not None
    finally:
        other.give()
        other.close()
        workspace.close()


def test_an_index_locked_in_the_background_is_tried_again_not_given_up(setup, monkeypatch):
    """Another process writing the index (`memlane index`, a sync) makes a batch's store wait past
    SQLite's timeout: the background tries again a second later instead of giving meaning back
    with texts still unembedded (which no later round would embed until the next change)."""
    import sqlite3

    from memlane.index.vectors import VectorStore

    clock, embedded = Clock(), []
    workspace = daemon.open_workspace(setup["root"], [str(setup["store"])], _Counting(embedded), setup["index"],
                                      refresh_s=0.2, clock=clock)
    real_store, locked = VectorStore.store_embeddings, []

    def store_once_locked(self, *args, **kwargs):
        if not locked:
            locked.append(1)
            raise sqlite3.OperationalError("database is locked")
        return real_store(self, *args, **kwargs)

    monkeypatch.setattr(VectorStore, "store_embeddings", store_once_locked)
    try:
        _copy_in(setup, 20)
        clock.advance(1.0)
        assert _until(lambda: locked) and _until(lambda: not workspace._embed_due)
        with workspace.held(time.monotonic() + 5):
            assert workspace.memory.pending_to_embed() == 0 and workspace.memory.embedder is not None
    finally:
        workspace.close()


def test_another_process_embedding_leaves_the_daemon_its_meaning_when_it_has_nothing_to_embed(setup):
    """A `memlane index` run (of another model, or done with what this change brought) holds the
    turn while the daemon refreshes a change with no new text for it (a note removed): recall
    keeps its meaning; only texts of its own to embed would make it answer by keyword."""
    from memlane.index.vectors import EmbedTurn

    clock, embedded = Clock(), []
    write_note(setup["store"], "gone.md", "---\nname: gone\ndescription: a note to remove\n---\nSoon gone.\n")
    workspace = daemon.open_workspace(setup["root"], [str(setup["store"])], _Counting(embedded), setup["index"],
                                      refresh_s=0.2, clock=clock)
    other = EmbedTurn(f"{setup['index']}.embedding")
    try:
        assert other.take() is False
        (setup["store"] / "gone.md").unlink()
        clock.advance(1.0)
        assert _until(lambda: workspace.memory.index.counts()["units"] == 1)
        time.sleep(0.3)
        with workspace.held(time.monotonic() + 5):
            assert workspace.memory.embedder is not None and not workspace._embed_due
    finally:
        other.close()
        workspace.close()
