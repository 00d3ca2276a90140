"""The keyword leg's own postings (index/postings.py) rank exactly as FTS5's bm25() does: the
same units, the same scores, the same order, after every kind of write — a differential check
on seeded random stores (CJK, stems, diacritics, snake_case, notes with no token at all,
long notes, edits, deletions, partial syncs, non-integer column weights)."""

from __future__ import annotations

import random

import pytest

from memlane.index import Index, Unit
from memlane.index.text import query_terms

pytest.importorskip("numpy")

WORDS = ("running runs runner ran connection connections connected connect café cafe naïve naive résumé resume "
         "über uber snake_case_name snake case foo_bar foo bar bazQux deploy deploying deployed database "
         "配置文件 数据库连接 배포전에 배포 東京タワー api v2 x86_64 C++ e-mail e_mail 1.2.3 ÅNGSTRÖM straße strasse "
         "ﬁle file naïveté tokens token tokenizer tokenization").split()


def _units(rng: random.Random, ids) -> list[Unit]:
    def text(n):
        return " ".join(rng.choice(WORDS) for _ in range(n))

    out = []
    for i in ids:
        kind = rng.random()
        if kind < 0.05:
            out.append(Unit(uid=f"u{i}", name="—", body="!!! ??? …"))  # not one token
        elif kind < 0.08:
            out.append(Unit(uid=f"u{i}", name=f"long_{i}", body=text(rng.randint(2000, 4000))))
        else:
            out.append(Unit(uid=f"u{i}", name=rng.choice(WORDS) + f"_{i % 7}", description=text(rng.randint(0, 8)),
                            keywords=text(rng.randint(0, 3)), body=text(rng.randint(0, 60)),
                            title=text(rng.randint(0, 2))))
    return out


def _mismatches(index: Index, rng: random.Random) -> list:
    assert index.postings_current()
    bad = []
    for _ in range(40):
        terms = query_terms(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))))
        for limit in (1, 5, 200):
            if terms and index.keyword_search(terms, limit=limit) != index._fts5_search(terms, limit):
                bad.append((terms, limit))
    return bad


@pytest.mark.parametrize("weights", [None, {"name": 0.1, "description": 0.7, "keywords": 1.3, "body": 0.3}])
def test_the_postings_rank_as_fts5_does_after_every_kind_of_write(tmp_path, weights):
    rng = random.Random(7)
    index = Index(tmp_path / "i.sqlite", fts_weights=weights)
    units = _units(rng, range(300))
    index.sync(units)
    assert _mismatches(index, rng) == []
    for k in rng.sample(range(len(units)), 40):  # edits, deletions, additions
        units[k] = _units(rng, [k])[0]
    del units[:20]
    units += _units(rng, range(1000, 1030))
    index.sync(units)
    assert _mismatches(index, rng) == []
    index.sync(_units(rng, range(1000, 1005)), prune=False)  # a partial sync
    assert _mismatches(index, rng) == []
    index.sync([])
    assert index.keyword_search(["foo"]) == [] == index._fts5_search(["foo"], 200)
    index.close()


def test_a_note_with_no_token_still_counts_as_a_row(tmp_path):
    """FTS5 counts every row in its N, tokens or not; so must the postings (else every IDF moves)."""
    index = Index(tmp_path / "i.sqlite")
    index.sync([Unit(uid="a", name="deploy", body="deploy the api"), Unit(uid="b", name="api", body="api v2"),
                Unit(uid="c", name="—", body="!!! …")])
    for terms in (["deploy"], ["api"], ["api", "deploy"]):
        assert index.keyword_search(terms) == index._fts5_search(terms, 200)
    index.close()


def test_a_fresh_keyword_only_recall_of_a_small_store_never_loads_numpy(tmp_path):
    """A cold hook answers keyword-only in its own process: on a store under POSTINGS_MIN_UNITS it
    asks FTS5 (the same ranking) rather than pay numpy's import for the postings."""
    import subprocess
    import sys

    from memlane import Memory

    store = tmp_path / "notes"
    store.mkdir()
    for i in range(5):
        (store / f"n{i}.md").write_text(f"---\nname: n{i}\ndescription: deploy step {i}\n---\nrun the deploy {i}\n")
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
    code = ("import sys; from memlane import Memory\n"
            f"m = Memory([{str(store)!r}], embedder='none', index_path={str(tmp_path / 'i.sqlite')!r})\n"
            "m.refresh(); found = m.recall('deploy', refresh=False, record=False)\n"
            "print(len(found), 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["5", "False"], out.stderr


def test_each_query_term_is_tokenized_alone():
    """The term tokenizer reuses one in-memory FTS5 table: no term keeps a token of the one before."""
    from memlane.index.postings import Tokenizer

    tokenizer = Tokenizer()
    assert [tokenizer.tokens(w) for w in ("connections", "配置文件", "snake_case_name", "Straße", "deploying")] == [
        ("connect",), ("配置文件",), ("snake", "case", "name"), ("straß",), ("deploi",)]
