"""Links between notes (S1, A1) and ``MEMORY.md`` index lines, as input -> output tables."""

from __future__ import annotations

import pytest

from memlane.store.links import Link, extract_links, link_key
from memlane.store.memory_index import IndexLine, parse_memory_index


@pytest.mark.parametrize("body, links", [
    ("see [[gates_pattern]] first", [("gates_pattern", "wiki")]),
    ("see [[close-after-smoke|the smoke rule]]", [("close-after-smoke", "wiki")]),
    ("see [[release_checklist#Before tagging]]", [("release_checklist", "wiki")]),
    ("see [[ spaced name ]]", [("spaced name", "wiki")]),
    ("[the cache rule](feedback_ci_cache.md)", [("feedback_ci_cache.md", "markdown")]),
    ("[x](./sub/project_x.md#section \"title\")", [("./sub/project_x.md", "markdown")]),
    ("[x](<feedback_y.md>)", [("feedback_y.md", "markdown")]),
    ("[web](https://example.org/readme.md) and [pic](diagram.png)", []),
    ("Database work: see project_postgres_upgrade.md.", [("project_postgres_upgrade.md", "mention")]),
    ("e.g. notes.md, or feedback-x.md", [("notes.md", "mention"), ("feedback-x.md", "mention")]),
    ("```\n[[in_fence]] and feedback_in_fence.md\n```\nafter [[out]]", [("out", "wiki")]),
    ("```python\n[x](fenced.md)\n```", []),
    ("~~~\n[[tilde_fenced]]\n~~~\n", []),
    ("[[a]] then [[a]] again", [("a", "wiki")]),
    ("[[b]] [[a|A]] [x](c.md)", [("b", "wiki"), ("a", "wiki"), ("c.md", "markdown")]),
    ("[[]] and [[ ]] and [[x", []),
    ("no links here", []),
], ids=["wiki", "wiki-alias", "wiki-heading", "wiki-spaces", "markdown", "markdown-path-anchor-title",
        "markdown-angle", "markdown-not-md", "mention", "mentions", "backtick-fence", "fence-lang",
        "tilde-fence", "dedup", "order", "empty", "none"])
def test_extract_links(body, links):
    assert extract_links(body) == [Link(target, kind) for target, kind in links]


def test_markdown_link_is_not_also_a_mention():
    assert extract_links("see [rule](feedback_rule.md) now") == [Link("feedback_rule.md", "markdown")]


@pytest.mark.parametrize("text, key", [
    ("feedback_ci_cache", "feedback-ci-cache"),
    ("feedback-ci-cache", "feedback-ci-cache"),
    ("Feedback CI Cache", "feedback-ci-cache"),
    ("feedback_ci_cache.md", "feedback-ci-cache"),
    ("FEEDBACK_CI_CACHE.MD", "feedback-ci-cache"),
    ("./sub/dir/feedback_ci_cache.md", "feedback-ci-cache"),
    ("  feedback__ci - cache  ", "feedback-ci-cache"),
    ("_leading_and_trailing_", "leading-and-trailing"),
    ("v1.2_notes", "v1.2-notes"),
    ("배포 노트", "배포-노트"),
    ("", ""),
])
def test_link_key(text, key):
    assert link_key(text) == key


MEMORY_MD = """\
# Memory index

Prose mentioning [a link](not_a_line.md) is not a pointer line.

- [CI cache keys](feedback_ci_cache.md) — key caches on the lockfile hash
- [Release train](project_release.md) - weekly, on Tuesdays
- [Postgres upgrade](project_postgres_upgrade.md)
* [Star bullet](reference_x.md): colon hook
- [Hyphenated-title](a.md) — uses pre-commit — always
- [En dash](b.md) – en dash hook
  - [Nested](sub/c.md) — nested line
- "fla" = fiat-lux-agents (a bullet without a link)
- [shorthand_fla.md](shorthand_fla.md) — "fla" = fiat-lux-agents shorthand
"""


def test_parse_memory_index():
    got = [(line.title, line.file, line.hook, line.line_no) for line in parse_memory_index(MEMORY_MD)]
    assert got == [
        ("CI cache keys", "feedback_ci_cache.md", "key caches on the lockfile hash", 5),
        ("Release train", "project_release.md", "weekly, on Tuesdays", 6),
        ("Postgres upgrade", "project_postgres_upgrade.md", "", 7),
        ("Star bullet", "reference_x.md", "colon hook", 8),
        ("Hyphenated-title", "a.md", "uses pre-commit — always", 9),
        ("En dash", "b.md", "en dash hook", 10),
        ("Nested", "sub/c.md", "nested line", 11),
        ("shorthand_fla.md", "shorthand_fla.md", '"fla" = fiat-lux-agents shorthand', 13),
    ]


@pytest.mark.parametrize("text", ["", "# Only a heading\n", "\n\n", "plain prose\n"])
def test_memory_index_without_lines(text):
    assert parse_memory_index(text) == []


def test_memory_index_crlf():
    assert parse_memory_index("- [T](t.md) — hook\r\n") == [IndexLine("T", "t.md", "hook", 1)]
