"""A recall never waits for embeddings: the first one on a new store answers by keyword at once,
saying so, while the store is embedded in the background; a little that is new is embedded
inline; ``--wait`` (and the demo) embed first. And ``memlane recall`` goes through the warm daemon
when one is up, with the same answer it would give itself."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest

from conftest import write_note
from memlane import Memory
from memlane.adapters import hookclient
from memlane.adapters.cli import main as cli
from memlane.embed.base import Embedder
from memlane.embed.fake import FakeEmbedder
from test_write import TOPICS


class SlowEmbedder(FakeEmbedder):
    """The fake embedder's vectors, but not instant: like a real model, it is left to the background."""

    name = "slow-fake"
    instant = False
    calls = 0

    def embed_batch(self, texts, *, is_query):
        SlowEmbedder.calls += len(texts)
        return super().embed_batch(texts, is_query=is_query)


def store_of(folder, n):
    for i in range(n):
        topic, body = TOPICS[i % len(TOPICS)]
        write_note(folder, f"project_note_{i}.md", f"---\nname: note_{i}\ndescription: when {topic} ({i})\n"
                                                   f"type: project\n---\n{body} Case {i}.\n")
    return folder


def test_a_new_store_is_recalled_by_keyword_at_once_and_says_so(tmp_path):
    store = store_of(tmp_path / "s", 20)
    SlowEmbedder.calls = 0
    with Memory([store], embedder=SlowEmbedder(), index_path=tmp_path / "i.sqlite") as memory:
        assert memory.prepare_for_recall() == 20
        assert SlowEmbedder.calls == 0  # nothing embedded, not even the prompt
        assert "keyword-only for now" in memory.embedder_notice and "background" in memory.embedder_notice
        hits = memory.recall("rotating the signing keys", explain=True, refresh=False)
        assert hits and hits[0].name == "note_0" and hits[0].explain.cosine is None
    with Memory([store], embedder=SlowEmbedder(), index_path=tmp_path / "i.sqlite") as memory:
        assert memory.prepare_for_recall(wait=True) == 0  # `--wait`: embedded first
        assert SlowEmbedder.calls >= 20 and memory.embedder_notice is None
        assert memory.recall("rotating the signing keys", explain=True, refresh=False)[0].explain.cosine is not None


def test_a_little_that_is_new_is_embedded_inline(tmp_path):
    store = store_of(tmp_path / "s", 20)
    with Memory([store], embedder=SlowEmbedder(), index_path=tmp_path / "i.sqlite") as memory:
        memory.prepare_for_recall(wait=True)
    write_note(store, "project_extra.md", "---\nname: extra\ndescription: when paging people at night\ntype: "
                                         "project\n---\nPage through the incident bot.\n")
    with Memory([store], embedder=SlowEmbedder(), index_path=tmp_path / "i.sqlite") as memory:
        assert memory.prepare_for_recall() == 0 and memory.embedder_notice is None


def test_the_cli_answers_by_keyword_and_hands_the_embedding_to_the_background(tmp_path, monkeypatch, capsys):
    import memlane.adapters.cli.recall as recall_cli

    store = store_of(tmp_path / "s", 12)
    started = []
    monkeypatch.setattr(recall_cli, "_embed_in_background", lambda args: started.append(args.store))
    code = cli(["recall", "rotating the signing keys", "--store", str(store), "--index", str(tmp_path / "i.sqlite"),
                "--embedder", "e5-minilm", "--json"])
    out = capsys.readouterr()
    assert code == 0 and json.loads(out.out)["results"][0]["name"] == "note_0"
    assert "keyword-only for now: 12 note text(s) are being embedded in the background" in out.err
    assert started == [[str(store)]]


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets only")
def test_memlane_recall_goes_through_a_warm_daemon_with_the_same_answer(tmp_path, monkeypatch, capsys, sealed_env):
    import memlane.adapters.cli.common as common

    store = store_of(tmp_path / "s", 12)
    index = str(tmp_path / "i.sqlite")
    args = ["--store", str(store), "--embedder", "fake", "--index", index]
    root = hookclient.project_root(None)
    key = hookclient.daemon_key(root, [str(store.resolve())], "fake", index)
    proc = subprocess.Popen([sys.executable, "-m", "memlane.adapters.daemon", "--key", key, "--root", root,
                             "--store", str(store.resolve()), "--embedder", "fake", "--index", index,
                             "--idle-minutes", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = hookclient.socket_path(key)
    try:
        for _ in range(300):
            if hookclient.ask_daemon(path, "ping") is not None:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the daemon did not come up")
        for extra in ([], ["--json", "--explain", "--k", "3"], ["--depth", "full"]):
            assert cli(["recall", "rotating the signing keys", *args, "--wait", *extra]) == 0  # this process
            mine = capsys.readouterr().out
            real_open = common.open_memory
            monkeypatch.setattr(common, "open_memory", lambda *a, **k: pytest.fail("answered in process"))
            monkeypatch.setattr("memlane.adapters.cli.recall.open_memory", common.open_memory)
            assert cli(["recall", "rotating the signing keys", *args, *extra]) == 0  # the daemon
            theirs = capsys.readouterr().out
            monkeypatch.setattr(common, "open_memory", real_open)
            monkeypatch.setattr("memlane.adapters.cli.recall.open_memory", real_open)
            assert theirs == mine and "note_0" in theirs
    finally:
        hookclient.ask_daemon(path, "stop")
        proc.wait(timeout=30)


def test_an_instant_embedder_is_never_left_to_the_background(tmp_path):
    store = store_of(tmp_path / "s", 20)
    with Memory([store], embedder="fake", index_path=tmp_path / "i.sqlite") as memory:
        assert memory.prepare_for_recall() == 0 and memory.embedder_notice is None
    assert isinstance(FakeEmbedder(), Embedder) and FakeEmbedder.instant


def test_doctor_says_how_many_note_texts_wait_for_their_vectors(tmp_path):
    from memlane.adapters.cli.setup import _doctor_lines

    store = store_of(tmp_path / "s", 12)
    with Memory([store], embedder=SlowEmbedder(), index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh(embed=False)  # as a keyword-only first recall leaves it
        data = memory.doctor() | {"agents": {"hooks": {}, "daemon": {"running": False, "socket": "-"}},
                                  "hook_failures": []}
        assert data["index"]["not_embedded"] == 12
        assert any("12 note text(s) not embedded yet" in line and "memlane index" in line
                   for line in _doctor_lines(data, []))
        memory.refresh()
        data = memory.doctor() | {"agents": data["agents"], "hook_failures": []}
        assert data["index"]["not_embedded"] == 0
        assert not any("not embedded yet" in line for line in _doctor_lines(data, []))
