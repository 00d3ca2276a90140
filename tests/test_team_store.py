"""The PostgreSQL backend of the storage seam against the SQLite one, answer for answer: the
keyword leg (FTS5's BM25 over the same tokens, CJK bigrams and Porter stems included), the
fields a term matched, exact vectors, and HNSW — with the namespace filter that must not
starve it — against exact search. The shared test server is started by ``conftest.pg_server``."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import build_store
from memlane.index import SQLiteIndex
from memlane.index.text import query_terms
from memlane.index.unit import Unit, unit_from_note
from memlane.store.scopes import StoreSpec, load_snapshot

PROMPTS = ["cache keys after a rebase", "deploying the release checklist", "migrations block writers",
           "배포 전에 테스트", "上海 镜像", "feedback_ci_cache", "postgres upgrade freeze window", "Linear INFRA board",
           "Jenkins server deployed", "nothing matches zyxwv"]


@pytest.fixture
def both(tmp_path, pg_server):
    """The conftest store in a SQLite index and in a PostgreSQL namespace."""
    root = build_store(tmp_path / "store")
    units = [unit_from_note(n) for n in load_snapshot([StoreSpec(root, "project")]).notes]
    weights = {"name": 4.0, "description": 3.0, "keywords": 4.0, "body": 1.0}
    lite, pg = SQLiteIndex(":memory:", fts_weights=weights), pg_server.storage(fts_weights=weights)
    for store in (lite, pg):
        store.sync(units)
    yield lite, pg
    pg.drop_namespace()
    lite.close()


def by_name(store, pairs):
    names = store.names_of([u for u, _ in pairs])
    return [(names[u], round(s, 9)) for u, s in pairs]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_bm25_scores_are_the_sqlite_index_s_own(both, prompt):
    lite, pg = both
    terms = query_terms(prompt)
    assert by_name(pg, pg.keyword_search(terms)) == by_name(lite, lite.keyword_search(terms))


def test_matched_fields_agree(both):
    lite, pg = both
    terms = query_terms("cache lockfile release checklist 배포 feedback_ci_cache")
    def named(store):
        found = store.matched_fields(terms, store.all_ids())
        names = store.names_of(found)
        return {names[u]: {f: sorted(t) for f, t in fields.items()} for u, fields in found.items() if fields}
    assert named(pg) == named(lite) and named(pg)


def test_the_tsvector_is_weighted_by_field(both):
    _, pg = both
    [(tsv,)] = pg._rows("SELECT tsv::text FROM units WHERE team = %s AND name = 'feedback_ci_cache'", (pg.namespace,))
    assert "'lockfil':" in tsv and "C" in tsv.split("'lockfil':")[1].split(" ")[0]  # the recall keyword: C
    assert "A" in tsv.split("'cach':")[1].split(" ")[0]  # in the name: A


def test_exact_vectors_match_sqlite(both):
    lite, pg = both
    for store in (lite, pg):
        pending = store.pending_chunks("m")  # the same vector for the same text in both
        vectors = np.stack([np.random.default_rng(int(h[:8], 16)).standard_normal(16) for h, _ in pending])
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        store.store_embeddings("m", [h for h, _ in pending], vectors)
    query = np.random.default_rng(9).standard_normal(16).astype(np.float32)
    query /= np.linalg.norm(query)
    def cosines(store):
        found = store.similarities("m", query)
        names = store.names_of(found.units.tolist())
        return {names[u]: round(float(s), 5) for u, s in zip(found.units.tolist(), found.sims.tolist())}
    assert cosines(pg) == cosines(lite)
    assert pg.embedded_units() == lite.embedded_units() == {"m": len(lite.all_ids())}


def unit_vectors(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((8, dim)).astype(np.float32)
    x = rng.standard_normal((n, 8)).astype(np.float32) @ basis + 0.3 * rng.standard_normal((n, dim)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def hnsw_64(pg_server):
    from memlane.team.admin import add_hnsw_index

    add_hnsw_index(pg_server.dsn, 64)


def test_hnsw_finds_what_exact_search_finds_in_a_small_namespace_of_a_big_table(pg_server, hnsw_64):
    """HNSW scans all teams' vectors of a dimension and the namespace filter drops the others'
    afterwards: without hnsw.iterative_scan a small team got fewer than k answers."""
    crowd, small = pg_server.storage(), pg_server.storage(exact_max=0, hnsw_candidates=10)
    try:
        for store, n, seed in ((crowd, 1500, 1), (small, 40, 2)):
            store.sync([Unit(uid=f"u{i}", name=f"n{i}", body=f"text {i}") for i in range(n)])
            pending = store.pending_chunks("m64")
            store.store_embeddings("m64", [h for h, _ in pending], unit_vectors(len(pending), 64, seed))
        query = unit_vectors(1, 64, 7)[0]
        sql = ("SELECT hash FROM embeddings WHERE team = %s AND model = 'm64' AND dim = 64"
               " ORDER BY vec::vector(64) <=> %s::vector(64) LIMIT 10")
        with small._reading() as conn:  # make the planner take the HNSW index for this small team
            conn.execute("SET LOCAL enable_sort = off")
            conn.execute("SET LOCAL hnsw.ef_search = 10")
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, (small.namespace, query)).fetchall())
            starved = len(conn.execute(sql, (small.namespace, query)).fetchall())
            conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
            fed = len(conn.execute(sql, (small.namespace, query)).fetchall())
        assert "embeddings_hnsw_64" in plan and starved < 10 and fed == 10
        approximate = small.nearest_units("m64", query, 10)
        exact = small.nearest_units("m64", query, 10, exact=True)
        assert len(approximate) == 10 and len(set(approximate) & set(exact)) >= 8
        found = small.similarities("m64", query, among=[exact[-1]])
        assert found.cosine_of(exact[-1]) is not None  # a keyword candidate gets its exact cosine
    finally:
        crowd.drop_namespace()
        small.drop_namespace()


def test_namespaces_do_not_see_each_other(pg_server):
    a, b = pg_server.storage(), pg_server.storage()
    try:
        a.sync([Unit(uid="x", name="alpha_note", body="only in a")])
        b.sync([Unit(uid="x", name="beta_note", body="only in b")])
        assert a.keyword_search(["only"]) and b.names_of(b.all_ids()) == {b.all_ids()[0]: "beta_note"}
        assert a.find("beta_note") == [] and a.counts()["units"] == 1
    finally:
        a.drop_namespace()
        b.drop_namespace()


def test_words_past_postgresql_s_tsvector_limits_neither_fail_a_write_nor_a_query(pg_server):
    """A token over 2,046 bytes (a pasted hash) and a note of a megabyte of distinct words were
    refused by PostgreSQL's tsvector ("word is too long", "string is too long for tsvector"): the
    sync of a whole import batch failed, and so did every recall of a prompt holding such a token,
    which left the team store alone for ``retry_s``. Every term still ranks by BM25 as SQLite ranks it."""
    import random
    import string

    rng = random.Random(1)
    words = ["".join(rng.choices(string.ascii_lowercase, k=12)) for _ in range(70_000)]
    units = [Unit(uid="long", name="long_word", body="checksum " + "a1" * 1500),
             Unit(uid="many", name="many_words", body=" ".join(words)),
             Unit(uid="plain", name="plain_note", body="checksum of the release")]
    lite, pg = SQLiteIndex(":memory:"), pg_server.storage()
    try:
        for store in (lite, pg):
            store.sync(units)
        for prompt in ("checksum", words[-1], "release " + "ab" * 1100):
            terms = query_terms(prompt)
            assert by_name(pg, pg.keyword_search(terms)) == by_name(lite, lite.keyword_search(terms)) != []
    finally:
        pg.drop_namespace()
        lite.close()


def test_a_drivers_message_loses_the_password_and_the_key_passphrase():
    pytest.importorskip("psycopg")
    from memlane.team.connect import _scrub

    dsn = "host=db user=me password=hunter2pw sslpassword=keyphrase99 dbname=team"
    said = _scrub("could not load private key: bad decrypt with keyphrase99 for me (hunter2pw)", dsn)
    assert "keyphrase99" not in said and "hunter2pw" not in said and "bad decrypt" in said
