"""``Memory.recall`` and friends (X1, J2): plain data, rank order, depths, explanations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_note
from memlane.retrieve.recalled import Recalled
from memlane import Depth, Memory

PROMPT = "release the postgres upgrade"  # two or more notes in both modes

IDS_KEYS = {"rank", "name", "path", "score", "reached"}
SUMMARY_KEYS = IDS_KEYS | {"title", "type", "scope", "preview"}
FULL_KEYS = SUMMARY_KEYS | {"description", "body", "recall", "paths", "kind", "status"}
EXPLAIN_KEYS = {"bm25", "bm25_norm", "cosine", "vector", "fused", "bm25_rank", "vector_rank", "matched_fields",
                "notes", "activation", "relevance", "importance", "recency", "base_level", "state", "path", "risk"}


def test_results_in_rank_order_with_absolute_paths(memory, store):
    hits = memory.recall(PROMPT)
    assert len(hits) >= 2
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    names = [h["name"] for h in hits]
    assert names[0] == "project_postgres_upgrade" and "release_checklist" in names[:3]
    for h in hits:
        path = Path(h["path"])
        assert path.is_absolute() and path.is_file() and path.parent == store.resolve()


@pytest.mark.parametrize("depth, keys", [("ids", IDS_KEYS), ("summary", SUMMARY_KEYS), ("full", FULL_KEYS),
                                         (Depth.FULL, FULL_KEYS)])
def test_depth_fields(memory, depth, keys):
    hits = memory.recall(PROMPT, depth=depth)
    assert hits and all(set(h.as_dict()) == keys for h in hits)


def test_summary_and_full_values(memory, store):
    (hit,) = memory.recall("how should I key the CI cache?", depth="full", k=1)
    assert hit["name"] == "feedback_ci_cache"
    assert (hit["title"], hit["type"], hit["scope"]) == ("CI cache keys", "feedback", "project")
    assert hit["preview"] == "key caches on the lockfile hash"  # the MEMORY.md hook
    assert hit["description"] == "Key CI caches on the lockfile hash, never on the branch name"
    assert hit["body"].startswith("Caches keyed on the branch name go stale")
    assert hit["body"] in (store / "feedback_ci_cache.md").read_text()  # an exact slice, never a paraphrase
    assert (hit["recall"], hit["paths"], hit["kind"], hit["status"]) == (["cache", "lockfile"], [], None, None)


def test_preview_is_at_most_80_characters(store, tmp_path):
    write_note(store, "feedback_verbose.md", "---\nname: feedback_verbose\ndescription: " + "verbose words " * 20
               + "\n---\nbody\n")
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        (hit,) = mem.recall("verbose words")
    preview = hit["preview"]
    assert len(preview) <= 80 and preview.endswith("…") and preview[:-1].split()[-1] in ("verbose", "words")


def test_explain_fields(memory):
    hits = memory.recall(PROMPT, explain=True)
    assert hits
    for h in hits:
        e = h["explain"]
        assert set(e) == EXPLAIN_KEYS
        assert h["score"] == pytest.approx(e["relevance"] * e["importance"] * e["recency"], abs=2e-3)  # L1
        assert e["relevance"] == pytest.approx(e["fused"] + e["activation"], abs=2e-3)
        assert 0 <= e["bm25_norm"] <= 1
    top = hits[0]["explain"]
    assert top["bm25"] > 0 and top["bm25_rank"] == 1 and top["bm25_norm"] == 1.0
    assert top["matched_fields"]["name"] == ["postgres", "upgrade"]
    assert set(top["matched_fields"]) <= {"name", "description", "keywords", "body"}
    if memory.embedder is None:
        assert all(h["explain"]["cosine"] is None and h["explain"]["vector_rank"] is None for h in hits)
    else:
        assert isinstance(top["cosine"], float) and top["vector_rank"] == 1


def test_keywords_field_is_matched(memory):
    (hit,) = memory.recall("lockfile", explain=True, k=1)
    assert hit["name"] == "feedback_ci_cache"
    assert hit["explain"]["matched_fields"]["keywords"] == ["lockfile"]


def test_no_explain_by_default(memory):
    assert all("explain" not in h for h in memory.recall(PROMPT))


def test_archived_notes_excluded_by_default(memory):
    assert memory.recall("jenkins deploys") == []
    hits = memory.recall("jenkins deploys", include_archived=True, depth="full")
    assert [(h["name"], h["status"]) for h in hits] == [("project_jenkins_deploys", "archived")]


@pytest.mark.parametrize("prompt, name", [
    ("배포 전에 테스트", "user_language_ko"),
    ("배포하기 전에 스테이징에서 테스트해야 하나요?", "user_language_ko"),
    ("上海镜像", "reference_cn_mirror"),
    ("国内用户从哪里下载安装包", "reference_cn_mirror"),
])
def test_cjk_note_found_by_a_cjk_query(memory, prompt, name):
    assert [h["name"] for h in memory.recall(prompt)][:1] == [name]


def test_decomposed_hangul_note_found_by_a_composed_query(store, tmp_path):
    import unicodedata

    text = "---\nname: project_sync_nfd\ndescription: 동기화 서버는 파일 이름을 비교한다\n---\n동기화 충돌 사본\n"
    (store / "project_sync_nfd.md").write_text(unicodedata.normalize("NFD", text), encoding="utf-8")
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        assert [h["name"] for h in mem.recall("동기화 충돌")][:1] == ["project_sync_nfd"]


def test_k_limits_results(memory):
    assert len(memory.recall(PROMPT, k=1)) == 1
    assert len(memory.recall(PROMPT, k=10)) >= 2


def test_rrf_fusion_per_call(memory):
    hits = memory.recall(PROMPT, fusion="rrf", explain=True)
    # RRF scores sit close together (1/(60+rank)), so importance may swap neighbours
    assert "project_postgres_upgrade" in [h["name"] for h in hits[:2]]
    assert max(h["explain"]["fused"] for h in hits) == pytest.approx(1.0)
    assert all(0 < h["explain"]["fused"] <= 1 for h in hits)


def test_results_serialise_to_plain_data(memory):
    results = memory.recall(PROMPT, depth="full", explain=True)
    assert results and all(isinstance(r, Recalled) and r.explain is not None for r in results)
    for data in ([r.as_dict() for r in results], memory.show("user_role"), memory.stats(), memory.doctor(),
                 memory.refresh().as_dict()):
        assert json.loads(json.dumps(data)) == data


def test_the_library_never_prints(store, tmp_path, embedder, capsys):
    (store / "binary.md").write_bytes(b"\x00\x01\x02")  # a skip, logged as a warning
    with Memory([store], embedder=embedder, index_path=tmp_path / "i.sqlite") as mem:
        mem.recall(PROMPT, explain=True)
        mem.show("user_role")
        mem.stats()
        mem.doctor()
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("query", ["user_role", "user_role.md", "User Role", "{store}/user_role.md"])
def test_show_by_name_file_or_path(memory, store, query):
    (found,) = memory.show(query.format(store=store))
    assert (found["name"], found["path"], found["type"]) == ("user_role", str(store / "user_role.md"), "user")
    assert found["body"] == "Alice writes backend services in Go. Keep answers short."


def test_show_unknown_is_empty(memory):
    assert memory.show("no_such_note") == []


def test_refresh_false_uses_the_index_as_it_is(memory, store):
    memory.refresh()
    write_note(store, "project_fresh.md", "---\nname: project_fresh\ndescription: zeppelin hangar\n---\nz\n")
    assert memory.recall("zeppelin hangar", refresh=False) == []
    assert [h["name"] for h in memory.recall("zeppelin hangar")] == ["project_fresh"]


def test_a_superseded_note_yields_to_its_replacement(tmp_path):
    """L1: superseded notes score ×0.1 (kept, explained, never deleted)."""
    from conftest import write_note

    store = tmp_path / "mem"
    write_note(store, "reference_backups_pgdump.md", """
        ---
        name: backups-pgdump
        description: how nightly database backups are taken with pg_dump and where they are kept
        ---
        Nightly pg_dump of the database to the backups bucket; restore with pg_restore.
        """)
    write_note(store, "reference_backups_walg.md", """
        ---
        name: backups-walg
        description: database backups now use wal-g continuous archiving
        supersedes: backups-pgdump
        ---
        Backups moved to wal-g: continuous WAL archiving plus a nightly base backup.
        """)
    with Memory([store], embedder="fake", index_path=tmp_path / "i.sqlite") as mem:
        before = mem.config.retrieve.min_score
        mem.config.retrieve.min_score = 0.0  # keep everything, to see the demotion itself
        hits = mem.recall("how are the database backups taken", explain=True)
        assert [h["name"] for h in hits] == ["backups-walg", "backups-pgdump"]
        assert any("superseded by backups-walg" in n for n in hits[1]["explain"]["notes"])
        assert hits[1]["score"] == pytest.approx(hits[1]["explain"]["fused"] * 0.1, abs=1e-3)
        mem.config.retrieve.min_score = before
        assert "backups-pgdump" not in [h["name"] for h in mem.recall("how are the database backups taken")]
        old = mem.index.find("backups-pgdump")[0]
        assert mem.index.superseded() == {old["id"]: "backups-walg"}


def _off_topic_store(tmp_path):
    store = tmp_path / "offtopic"
    write_note(store, "feedback_api_versioning.md", "---\nname: api_versioning\ndescription: when changing the "
               "public API\ntype: feedback\n---\nThe v2 API is additive only: make openapi-diff guard every change to "
               "the schema, and never remove a field from a response.\n")
    write_note(store, "feedback_lockfile.md", "---\nname: lockfile_cache\ndescription: when CI caches go stale\n"
               "type: feedback\n---\nKey the CI cache on the lockfile hash, never on the branch name.\n")
    return store


def test_a_prompt_no_note_applies_to_brings_nothing_on_words_alone(tmp_path):
    """The best keyword match of any prompt scales to 1.0, which alone reached the threshold: a
    note the meaning leg calls unrelated now needs more than a shared word."""
    from memlane.embed.fake import FakeEmbedder

    store = _off_topic_store(tmp_path)
    with Memory([store], embedder=FakeEmbedder(), index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        prompt = "make espresso at home"
        assert memory.recall(prompt, k=5, refresh=False, include_private=False) == []  # as the hooks ask
        assert memory._last_ranking is not None  # the menu reads this ranking's rest ...
        assert memory.further_candidates(prompt, after=[], n=5) == []  # ... and lists nothing of it either
        assert [r.name for r in memory.recall("why do the CI cache keys go stale?", refresh=False)][:1] == [
            "lockfile_cache"]
        # a prompt of a word or two is a lookup: its words are what it means
        assert [r.name for r in memory.recall("openapi-diff", refresh=False)] == ["api_versioning"]
    with Memory([store], embedder="none", index_path=tmp_path / "k.sqlite") as memory:  # by words: words decide
        assert [r.name for r in memory.recall("make espresso at home")] == ["api_versioning"]


def test_a_note_found_by_words_alone_seeds_no_association(tmp_path, monkeypatch):
    from memlane.embed.fake import FakeEmbedder

    store = _off_topic_store(tmp_path)
    with Memory([store], embedder=FakeEmbedder(), index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        asked = []
        real = type(memory.index).neighbours_of
        monkeypatch.setattr(type(memory.index), "neighbours_of",
                            lambda self, ids: asked.append(list(ids)) or real(self, ids))
        memory.recall("make espresso at home", refresh=False)
        assert asked == [[]]  # its only match, api_versioning, seeds nothing


def test_divergent_mode_brings_no_note_found_by_words_alone(tmp_path):
    from memlane.embed.fake import FakeEmbedder

    store = _off_topic_store(tmp_path)
    with Memory([store], embedder=FakeEmbedder(), index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        assert memory.recall("make espresso at home", divergent=True, refresh=False) == []
