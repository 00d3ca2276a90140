"""Text for the full-text index (I2): CJK bigrams, query terms, FTS5 quoting (sqlite-utils style
input -> output tables, and every quoted expression run against a real FTS5 table)."""

from __future__ import annotations

import sqlite3

import pytest

from memlane.index.text import fts_match_expression, fts_text, has_cjk, query_terms


@pytest.mark.parametrize("text, expected", [
    ("Hello World", "Hello World"),
    ("", ""),
    ("배포", " 배포 "),
    ("배포전에", " 배포 포전 전에 "),
    ("中国大陆", " 中国 国大 大陆 "),
    ("한", " 한 "),  # a single CJK character stays one token
    ("カタカナ", " カタ タカ カナ "),
    ("mixed 배포 text", "mixed  배포  text"),
    ("CI캐시", "CI 캐시 "),
])
def test_fts_text(text, expected):
    assert fts_text(text) == expected


@pytest.mark.parametrize("text, cjk", [("plain", False), ("한글", True), ("汉字", True), ("かな", True),
                                       ("Déjà vu", False), ("", False)])
def test_has_cjk(text, cjk):
    assert has_cjk(text) is cjk


@pytest.mark.parametrize("text, terms", [
    ("How should I key the CI cache?", ["key", "ci", "cache"]),
    ("the and of to", []),  # stopwords only
    ("thanks!", []),  # conversational filler asks for no memory
    ("ok great, sounds good", []),
    ("谢谢", []),
    ("고마워", []),
    ("thanks, now fix the cache", ["fix", "cache"]),
    ("a b c x", []),  # single ASCII letters carry no intent
    ("Cache cache CACHE", ["cache"]),  # distinct, lower-cased
    ("pre-commit hooks", ["pre", "commit", "hooks"]),
    ("postgres 16 upgrade", ["postgres", "16", "upgrade"]),
    ("Déjà vu", ["déjà", "vu"]),
    ("배포 전에 테스트", ["배포", "전에", "테스", "스트"]),
    ("배포전에 테스트", ["배포", "포전", "전에", "테스", "스트"]),
    ("上海镜像", ["上海", "海镜", "镜像"]),
    ("한", ["한"]),  # one CJK character is a term (unlike one ASCII letter)
    ("AND OR NOT NEAR", ["near"]),  # "and"/"not"/"or" are stopwords; "near" is a plain word
    ('"quoted" col:val x*', ["quoted", "col", "val"]),
])
def test_query_terms(text, terms):
    assert query_terms(text) == terms


def test_query_terms_limit():
    assert query_terms(" ".join(f"word{i}" for i in range(100)), limit=5) == [f"word{i}" for i in range(5)]


@pytest.mark.parametrize("terms, expression", [
    (["cache"], '"cache"'),
    (["cache", "lockfile"], '"cache" OR "lockfile"'),
    (['say "hi"'], '"say ""hi"""'),
    (["AND"], '"AND"'),
    (["NEAR"], '"NEAR"'),
    (["NOT", "OR"], '"NOT" OR "OR"'),
    (["*"], '"*"'),
    (["x*"], '"x*"'),
    (["name:cache"], '"name:cache"'),
    (["^start", "-minus", "(paren)"], '"^start" OR "-minus" OR "(paren)"'),
    (["배포"], '"배포"'),
])
def test_fts_match_expression(terms, expression):
    assert fts_match_expression(terms) == expression


@pytest.fixture(scope="module")
def fts():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(name, body, tokenize = 'porter unicode61 remove_diacritics 2')")
    rows = [("cache", "Key the CI cache on the lockfile"), ("near", "AND OR NOT NEAR are words here"),
            ("quote", 'she said "hi" then left'), ("korean", fts_text("배포 전에 테스트"))]
    conn.executemany("INSERT INTO t(name, body) VALUES (?, ?)", rows)
    yield conn
    conn.close()


@pytest.mark.parametrize("terms, names", [
    (["cache"], ["cache"]),
    (["AND"], ["near"]),
    (["NEAR"], ["near"]),
    (["NOT", "OR"], ["near"]),
    (['said "hi'], ["quote"]),  # a stray quote is text: the phrase "said hi"
    (["hi"], ["quote"]),
    (["*"], []),
    (["name:cache"], []),  # a column filter inside quotes is just text
    (["^start", "-minus", "(paren)"], []),
    (["배포"], ["korean"]),
    (["lockfiles"], ["cache"]),  # porter stemming
])
def test_fts_match_expression_is_never_syntax(fts, terms, names):
    rows = fts.execute("SELECT name FROM t WHERE t MATCH ? ORDER BY name", (fts_match_expression(terms),)).fetchall()
    assert [r[0] for r in rows] == names


@pytest.mark.parametrize("text", ["배포 전에", "한글 자모 정규화"])
def test_decomposed_text_gives_the_same_terms(text):
    # macOS hands out NFD (decomposed) text; a prompt typed elsewhere is NFC
    import unicodedata

    assert query_terms(unicodedata.normalize("NFD", text)) == query_terms(unicodedata.normalize("NFC", text))
