"""A hook answers within its budget whatever state memlane is in: embeddings pending, the index
locked by another process, the cache folder unusable. It degrades (keyword-only, the index as
it is, an in-memory index) and says why in its log; it never waits the prompt out."""

from __future__ import annotations

import io
import json
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from conftest import stop_daemons
from memlane.adapters.hook import HOOK_BUSY_MS, run_hook
from memlane.embed.base import Embedder


class CountingEmbedder(Embedder):
    """A slow embedder that counts its calls: a hook must not wait for it."""

    name = "counting"
    dim = 8
    min_cosine, strong_cosine = 0.1, 0.9

    def __init__(self):
        self.calls = 0

    def embed_batch(self, texts, *, is_query):
        self.calls += 1
        time.sleep(0.2 * len(texts))
        out = np.ones((len(texts), self.dim), dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _hook(store, index, prompt, embedder="none"):
    out = io.StringIO()
    payload = {"session_id": "live", "cwd": str(store), "prompt": prompt, "transcript_path": "/none"}
    code = run_hook("user-prompt-submit", stores=[str(store)], embedder=embedder, index=str(index),
                    stdin=io.StringIO(json.dumps(payload)), stdout=out)
    assert code == 0
    return out.getvalue()


def test_pending_embeddings_make_the_hook_keyword_only(store, tmp_path):
    slow = CountingEmbedder()
    text = _hook(store, tmp_path / "i.sqlite", "our CI cache goes stale after a rebase", embedder=slow)
    assert "feedback_ci_cache" in text
    assert slow.calls == 0  # nothing embedded in the hook, not even the prompt: the store is not embedded yet


def test_a_locked_index_is_read_as_it_is(store, tmp_path):
    index = tmp_path / "i.sqlite"
    _hook(store, index, "warm the index")  # built once
    (store / "feedback_ci_cache.md").write_text((store / "feedback_ci_cache.md").read_text() + "\nedited\n")
    holder = sqlite3.connect(index, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process is writing, and takes its time
    released = threading.Timer(30, holder.rollback)
    released.start()
    try:
        started = time.monotonic()
        text = _hook(store, index, "our CI cache goes stale after a rebase")
        waited = time.monotonic() - started
    finally:
        released.cancel()
        holder.rollback()
        holder.close()
    assert "feedback_ci_cache" in text
    # a liveness bound, not a speed target: the hook gave up on the lock after its short busy
    # timeout instead of the index's 5 s one (or the other writer's 30 s)
    assert waited < 5.0 - HOOK_BUSY_MS / 1000


@pytest.mark.parametrize("where", ["/dev/null/cache", "file"])
def test_an_unusable_cache_folder_still_answers(store, tmp_path, where, monkeypatch):
    cache = tmp_path / "a-file" if where == "file" else where
    if where == "file":
        cache.write_text("not a folder")
    # no usable runtime folder either: the client's daemon goes under $TMPDIR, here the test's own
    env = {"MEMLANE_CACHE_DIR": str(cache), "XDG_RUNTIME_DIR": str(tmp_path / "run-missing"),
           "TMPDIR": str(tmp_path / "tmpdir")}
    (tmp_path / "tmpdir").mkdir()
    payload = json.dumps({"session_id": "s", "cwd": str(tmp_path), "prompt": "our CI cache goes stale after a rebase",
                          "transcript_path": "/none"})
    import os

    proc = subprocess.run([sys.executable, "-m", "memlane.adapters.hookclient", "user-prompt-submit",
                           "--store", str(store)], input=payload, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})
    stop_daemons(tmp_path / "tmpdir" / f"memlane-{os.getuid()}", appear_s=5.0)  # the one it started
    assert proc.returncode == 0
    assert "feedback_ci_cache" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
