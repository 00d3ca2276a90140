"""Processes embedding into one index take turns (``index.vectors.EmbedTurn``): a second
``memlane index`` (or the daemon's refresh) that finds another process embedding waits for it,
says so, and then embeds only what is still missing — no text is embedded twice. A hook never
takes the turn: while texts are pending it answers by keyword."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

from memlane import Memory
from memlane.embed.fake import FakeEmbedder
from memlane.index.vectors import EmbedTurn, embed_pending
from test_recall_never_waits import store_of


class CountingEmbedder(FakeEmbedder):
    """The fake embedder's vectors, counting the passages this instance embedded; not instant,
    so a hook leaves it to the background."""

    name = "counting-fake"
    instant = False

    def __init__(self):
        super().__init__()
        self.passages = 0

    def embed_passages(self, texts):
        self.passages += len(texts)
        return super().embed_passages(texts)


def turn_of(index_path: Path) -> EmbedTurn:
    """The turn as another process holds it (a second open file: flock tells them apart)."""
    turn = EmbedTurn(f"{index_path}.embedding")
    assert turn.take() is False
    return turn


def test_a_refresh_that_finds_another_process_embedding_waits_and_embeds_nothing_twice(tmp_path):
    store, index_path = store_of(tmp_path / "s", 40), tmp_path / "i.sqlite"
    other, mine = CountingEmbedder(), CountingEmbedder()
    with Memory([store], embedder=other, index_path=index_path) as first, \
            Memory([store], embedder=mine, index_path=index_path) as second:
        first.refresh(embed=False)
        pending = first.index.pending_count(other.name)
        assert pending >= 40
        held = turn_of(index_path)
        waiting = threading.Event()

        class Said(logging.Handler):
            def emit(self, record):
                if "is embedding notes into" in record.getMessage():
                    waiting.set()

        said = Said()
        logging.getLogger("memlane.index").addHandler(said)
        reports = []
        try:
            worker = threading.Thread(target=lambda: reports.append(second.refresh()))  # the daemon's refresh
            worker.start()
            while not waiting.is_set() and worker.is_alive():
                worker.join(0.05)
            assert waiting.is_set(), "the second refresh did not wait for the process embedding"
            assert embed_pending(first.index, other) == pending  # the other process embeds all meanwhile
        finally:
            held.give()
            held.close()
            worker.join()
            logging.getLogger("memlane.index").removeHandler(said)
        assert other.passages == pending and mine.passages == 0
        assert reports[0].embedded == 0 and first.index.pending_count(other.name) == 0


def test_the_turn_is_taken_again_after_a_batch_so_two_runs_share_the_work(tmp_path):
    store, index_path = store_of(tmp_path / "s", 40), tmp_path / "i.sqlite"
    other, mine = CountingEmbedder(), CountingEmbedder()
    with Memory([store], embedder=other, index_path=index_path) as first:
        first.refresh(embed=False)
        total = first.index.pending_count(other.name)
        seen = []
        turn = EmbedTurn(f"{index_path}.embedding")

        def progress(done, of):  # after this run's first batch, another process embeds the rest
            seen.append((done, of))
            if len(seen) == 1:
                theirs = EmbedTurn(f"{index_path}.embedding")
                embed_pending(first.index, other, turn=theirs)  # between two of this run's turns
                theirs.close()

        try:
            assert embed_pending(first.index, mine, batch_size=8, turn=turn, progress=progress) == 8
        finally:
            turn.close()
        assert mine.passages == 8 and other.passages == total - 8
        assert seen[-1] == (total, total)  # what the other embedded counts as done


def test_memlane_index_says_it_waits_for_another_run_and_embeds_only_what_is_left(tmp_path, sealed_env):
    store, index_path = store_of(tmp_path / "s", 30), tmp_path / "i.sqlite"
    other = CountingEmbedder()
    with Memory([store], embedder=other, index_path=index_path) as first:
        first.refresh(embed=False)
        held = turn_of(index_path)
        try:
            run = subprocess.Popen(
                [sys.executable, "-m", "memlane", "index", "--store", str(store), "--index", str(index_path),
                 "--embedder", "fake", "--json"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
            said = []
            for line in run.stderr:
                said.append(line)
                if "is embedding notes into" in line:
                    break
            assert said and "another memlane process" in said[-1], said
            embed_pending(first.index, FakeEmbedder())  # the other run, meanwhile
        finally:
            held.give()
            held.close()
        out, err = run.communicate()
    assert run.returncode == 0, err
    assert json.loads(out)["embedded"] == 0


def test_a_hook_never_takes_the_turn_and_answers_by_keyword_while_texts_are_pending(tmp_path):
    store, index_path = store_of(tmp_path / "s", 20), tmp_path / "i.sqlite"
    embedder = CountingEmbedder()
    with Memory([store], embedder=embedder, index_path=index_path) as memory:
        memory.prepare_for_hook()
        assert "keyword-only for now" in memory.embedder_notice
        assert memory.recall("rotating the signing keys", refresh=False)
    assert embedder.passages == 0
    assert not Path(f"{index_path}.embedding").exists()  # never opened, so never waited on


def test_a_link_or_pipe_where_the_turn_file_goes_is_neither_followed_nor_waited_on(tmp_path):
    """The turn file beside the index is written on every batch stored: a link there to a file
    elsewhere had that file emptied and overwritten (and one to a missing path created it); a
    pipe there is not waited on. Either way the index is embedded, without taking turns."""
    store, index_path = store_of(tmp_path / "s", 6), tmp_path / "i.sqlite"
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    for odd in ("link", "dangling", "pipe"):
        turn_path = Path(f"{index_path}.embedding")
        if turn_path.is_symlink() or turn_path.exists():
            turn_path.unlink()
        if odd == "link":
            turn_path.symlink_to(victim)
        elif odd == "dangling":
            turn_path.symlink_to(tmp_path / "made.txt")
        else:
            os.mkfifo(turn_path)
        embedder = CountingEmbedder()
        embedder.name = f"counting-fake-{odd}"
        with Memory([store], embedder=embedder, index_path=index_path) as memory:
            memory.refresh()
            assert memory.index.pending_count(embedder.name) == 0 and embedder.passages >= 6
        assert victim.read_text() == "the user's own file\n"
        assert not (tmp_path / "made.txt").exists()


def test_a_turn_file_of_another_users_is_not_taken_turns_on(tmp_path):
    """A turn file someone else owns (a shared index folder): its owner could hold the turn for
    good, and every `memlane index` would wait on it; it is refused, and the caller embeds
    without taking turns."""
    import pytest

    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    turn_path = tmp_path / "i.sqlite.embedding"
    turn_path.write_bytes(b"")
    os.chown(turn_path, 65534, 65534)
    with pytest.raises(OSError, match="another user"):
        EmbedTurn(turn_path)


def test_a_text_edited_away_while_it_is_embedded_leaves_no_vector_behind(tmp_path):
    """The daemon embeds apart, the model running outside its lock; a request's refresh meanwhile
    replaced a note's text (its old chunk and vector forgotten): the old text's vector, stored
    after, was kept for a text no note has (a deleted note's meaning, kept until a later prune)."""
    import contextlib

    store, index_path = store_of(tmp_path / "s", 12), tmp_path / "i.sqlite"
    edited = []

    class EditingMeanwhile(CountingEmbedder):
        def embed_passages(self, texts):
            if not edited:  # a refresh between the read of what is pending and the store
                edited.append(1)
                for note in sorted(store.glob("*.md")):
                    note.write_text(note.read_text() + "\nEdited meanwhile.\n")
                memory.refresh(embed=False)
            return super().embed_passages(texts)

    embedder = EditingMeanwhile()
    with Memory([store], embedder=embedder, index_path=index_path) as memory:
        memory.refresh(embed=False)
        memory.embed_apart()
        while not memory.embed_within(hold=contextlib.nullcontext)[1]:
            pass
        orphans = memory.index.conn.execute(
            "SELECT count(*) FROM embeddings WHERE hash NOT IN (SELECT hash FROM chunks)").fetchone()[0]
        assert edited and orphans == 0
        assert memory.index.pending_count(embedder.name) == 0 and memory.embedder is not None
