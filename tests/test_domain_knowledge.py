"""The knowledge domain (S4): markdown folders as a library of verbatim ``##`` sections."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memlane.domains.base import Recalled
from memlane.domains.knowledge import KnowledgeDomain, split_sections
from memlane.embed import load_embedder
from memlane.guards.privacy import PrivacyGate

GUIDE = """\
---
title: Ignored Because There Is A Heading
tags: [docs]
---
# Deploy Guide

How we ship the service.

## Install

Use pipx to install the command line tool.

```sh
# comment, not a heading
## not a heading either
pipx install shipit
```

### From source

Clone the repository and run the bootstrap script.

Rollback
--------

Revert the release tag, then redeploy the previous build.

Appendix
========

Glossary of release terms.
"""

ADR = """\
---
title: ADR 7 Message Queue
status: accepted
---
## Context

We need retries for webhook delivery when the receiver is down.

## Decision

Use a Postgres-backed queue with exponential backoff instead of Kafka.
"""

PLAIN = "Nothing but a paragraph about flamingo feeding schedules.\nSecond line.\n"

CJK = """\
# 配置指南

## 数据库迁移

在发布之前必须先运行数据库迁移脚本。
"""


def big_doc() -> str:
    parts = ["# Handbook\n\n## Operations\n\nRunbooks for the on-call engineer.\n\n"]
    for topic in ("backups", "certificates", "paging"):
        parts.append(f"### {topic.title()}\n\n" + f"Everything about {topic}. " * 120 + "\n\n")
    parts.append("## Contacts\n\nAsk the platform team.\n")
    return "".join(parts)


def write(folder: Path, rel: str, content: str | bytes) -> Path:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path


@pytest.fixture
def library(tmp_path):
    root = tmp_path / "docs"
    write(root, "guide.md", GUIDE)
    write(root, "adr/0007-queue.md", ADR)
    write(root, "notes.markdown", PLAIN)
    write(root, "zh.md", CJK)
    write(root, "handbook.md", big_doc())
    write(root, "logo.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR" + bytes(range(256)))
    write(root, "latin1.md", "## Café\n\nCrème brûlée recipe for the caf".encode("utf-8") + b"\xe9 team.\n")
    write(root, "private/salaries.md", "## Salaries\n\nThe deploy budget and everyone's salary.\n")
    write(root, ".hidden/skip.md", "## Hidden\n\ndeploy\n")
    write(root, "readme.txt", "## Not markdown\n\ndeploy\n")
    return root


def domain(root: Path, mode: str = "none", **kw) -> KnowledgeDomain:
    embedder = load_embedder("fake") if mode == "fake" else None
    return KnowledgeDomain([root], gate=PrivacyGate(("private/*",)), index_path=":memory:", embedder=embedder, **kw)


def by_address(dom: KnowledgeDomain) -> dict[str, tuple]:
    return {a: (t, p, s, e, split) for a, t, p, s, e, split in dom.conn.execute(
        "SELECT address, text, path, start_line, end_line, split FROM sections")}


def assert_exact_slice(text: str, path: str, start_line: int, end_line: int) -> None:
    source = Path(path).read_bytes().decode("utf-8", errors="replace")
    lines = source.splitlines(keepends=True)
    assert text == "".join(lines[start_line - 1:end_line])
    assert text in source


def test_sections_are_exact_slices_addressed_by_heading_path(library):
    dom = domain(library)
    report = dom.refresh()
    sections = by_address(dom)
    assert set(sections) == {
        "guide.md#Deploy Guide", "guide.md#Deploy Guide/Install", "guide.md#Deploy Guide/Rollback",
        "guide.md#Appendix",
        "adr/0007-queue.md#ADR 7 Message Queue/Context", "adr/0007-queue.md#ADR 7 Message Queue/Decision",
        "notes.markdown", "zh.md#配置指南/数据库迁移",
        "handbook.md#Handbook/Operations", "handbook.md#Handbook/Operations/Backups",
        "handbook.md#Handbook/Operations/Certificates", "handbook.md#Handbook/Operations/Paging",
        "handbook.md#Handbook/Contacts", "latin1.md#Café",
    }
    for text, path, start, end, _ in sections.values():
        assert_exact_slice(text, path, start, end)
    # front matter is not part of any section; fenced "#" lines do not cut the Install section
    assert sections["guide.md#Deploy Guide"][0] == "# Deploy Guide\n\nHow we ship the service.\n\n"
    install = sections["guide.md#Deploy Guide/Install"][0]
    assert install.startswith("## Install\n") and "## not a heading either" in install
    assert install.endswith("Clone the repository and run the bootstrap script.\n\n")
    assert sections["guide.md#Deploy Guide/Rollback"][0].startswith("Rollback\n--------\n")
    assert sections["notes.markdown"][0] == PLAIN
    assert report["files"] == 7 and report["added"] == 7 and report["excluded"] == 1
    assert report["sections"] == len(sections)
    reasons = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert reasons == {"logo.md": "binary file"}
    assert [Path(w["path"]).name for w in report["warnings"]] == ["latin1.md"]
    assert "replacement" in report["warnings"][0]["reason"]


def test_a_huge_section_splits_at_its_subheadings(library):
    dom = domain(library)
    dom.refresh()
    sections = by_address(dom)
    assert sections["handbook.md#Handbook/Operations"][0] == "## Operations\n\nRunbooks for the on-call engineer.\n\n"
    assert all(sections[f"handbook.md#Handbook/Operations/{t}"][4] for t in ("Backups", "Certificates", "Paging"))
    assert not sections["handbook.md#Handbook/Contacts"][4]
    assert sections["handbook.md#Handbook/Operations/Paging"][0].startswith("### Paging\n")


def test_split_sections_edge_cases():
    assert split_sections("") == ([], "")
    only_fm = "---\ntitle: Just Front Matter\n---\nSome words.\n"
    sections, title = split_sections(only_fm)
    assert title == "Just Front Matter" and sections[0].headings == ["Just Front Matter"]
    assert sections[0].text(only_fm) == "Some words.\n"
    crlf = "# T\r\n\r\n## A\r\n\r\nbody\r\n"
    assert [s.text(crlf) for s in split_sections(crlf)[0]] == ["## A\r\n\r\nbody\r\n"]
    closed = "## Title ##\n\ntext\n\n## Other {#anchor}\n\nmore\n"
    assert [s.headings for s in split_sections(closed)[0]] == [["Title"], ["Other"]]
    tilde = "## A\n\n~~~\n## inside\n~~~\n\n## B\n\nb\n"
    assert [s.headings for s in split_sections(tilde)[0]] == [["A"], ["B"]]
    comment = "## A\n\n<!-- generated\n# not a heading\n-->\n\n## B\n\nb\n"
    assert [s.headings for s in split_sections(comment)[0]] == [["A"], ["B"]]
    rule = "## A\n\nparagraph\n\n---\n\nstill A\n"
    assert len(split_sections(rule)[0]) == 1  # a thematic break after a blank line is no heading


@pytest.mark.parametrize("mode", ["none", "fake"])
def test_recall_returns_verbatim_sections_with_addresses(library, mode):
    dom = domain(library, mode)
    dom.refresh()
    hits = dom.recall("how do I rollback a bad release", k=3)
    assert hits and isinstance(hits[0], Recalled)
    top = hits[0]
    assert top.address == "guide.md#Deploy Guide/Rollback" and top.domain == "knowledge"
    assert top.title == "Rollback" and top.path == str(library / "guide.md")
    assert top.meta["file"] == "guide.md" and top.meta["headings"] == ["Deploy Guide", "Rollback"]
    assert_exact_slice(top.text, top.path, top.meta["start_line"], top.meta["end_line"])
    assert all(0.0 <= h.activation <= 1.0 for h in hits)
    assert [h.activation for h in hits] == sorted((h.activation for h in hits), reverse=True)
    assert dom.recall("why did we pick a postgres queue over kafka")[0].address.endswith("#ADR 7 Message Queue/Decision")
    assert dom.recall("数据库迁移")[0].address == "zh.md#配置指南/数据库迁移"
    assert dom.recall("backups")[0].address == "handbook.md#Handbook/Operations/Backups"


@pytest.mark.parametrize("mode", ["none", "fake"])
def test_unrelated_query_recalls_nothing(library, mode):
    dom = domain(library, mode)
    dom.refresh()
    assert dom.recall("thanks, great!") == []
    assert dom.recall("zebra migration across the serengeti plains") == []
    assert dom.recall("quantum chromodynamics lattice gluon release") == []  # one shared word is not enough


@pytest.mark.parametrize("mode", ["none", "fake"])
def test_privacy_gate_file_is_never_indexed_or_recalled(library, mode):
    dom = domain(library, mode)
    dom.refresh()
    assert not [a for a in by_address(dom) if "alar" in a]
    assert all("private" not in h.path for h in dom.recall("salary budget", k=10))


def test_path_filter(library):
    dom = domain(library)
    dom.refresh()
    hits = dom.recall("queue retries webhook deploy", k=10, filters={"path": "adr/*"})
    assert hits and all(h.meta["file"].startswith("adr/") for h in hits)
    assert dom.recall("queue retries webhook", filters={"path": ["nothing/*"]}) == []


def test_incremental_refresh(library, tmp_path):
    dom = KnowledgeDomain([library], gate=PrivacyGate(("private/*",)), index_path=tmp_path / "k.sqlite",
                          embedder=load_embedder("fake"))
    first = dom.refresh()
    assert first["embedded"] == first["sections"]
    again = dom.refresh()
    assert (again["added"], again["updated"], again["removed"], again["embedded"]) == (0, 0, 0, 0)

    adr = library / "adr" / "0007-queue.md"
    before = {a for a in by_address(dom) if not a.startswith("adr/")}
    ids = dict(dom.conn.execute("SELECT address, id FROM sections WHERE address NOT LIKE 'adr/%'"))
    adr.write_text(ADR + "\n## Consequences\n\nOperators watch the dead-letter table.\n", encoding="utf-8")
    os.utime(adr, ns=(adr.stat().st_atime_ns, adr.stat().st_mtime_ns + 1_000_000_000))
    edited = dom.refresh()
    assert (edited["added"], edited["updated"], edited["removed"]) == (0, 1, 0)
    assert edited["embedded"] == 1  # only the new section: the unchanged ones keep their vectors
    assert dict(dom.conn.execute("SELECT address, id FROM sections WHERE address NOT LIKE 'adr/%'")) == ids
    assert dom.recall("who watches the dead letter table")[0].address.endswith("/Consequences")

    os.utime(library / "guide.md", ns=(0, 10**18))  # touched, same content: re-read, nothing replaced
    assert dom.refresh()["updated"] == 0

    adr.unlink()
    gone = dom.refresh()
    assert gone["removed"] == 1
    assert {a for a in by_address(dom)} == before
    assert dom.recall("postgres queue kafka backoff") == []
    dom.close()
    reopened = KnowledgeDomain([library], gate=PrivacyGate(("private/*",)), index_path=tmp_path / "k.sqlite")
    assert reopened.refresh()["added"] == 0 and reopened.recall("rollback the release")
    reopened.close()


def test_newly_excluded_file_leaves_the_index(library, tmp_path):
    path = tmp_path / "k.sqlite"
    KnowledgeDomain([library], gate=PrivacyGate(("private/*",)), index_path=path).refresh()
    dom = KnowledgeDomain([library], gate=PrivacyGate(("adr/*", "private/*")), index_path=path)
    report = dom.refresh()
    assert report["removed"] == 1 and report["excluded"] == 2
    assert not [a for a in by_address(dom) if a.startswith("adr/")]


def test_huge_and_missing_roots_are_reported(tmp_path):
    root = tmp_path / "docs"
    write(root, "huge.md", "## Huge\n\n" + "x" * 2000)
    dom = KnowledgeDomain([root, tmp_path / "missing"], index_path=":memory:")
    dom.settings.max_file_bytes = 1000
    reasons = [s["reason"] for s in dom.refresh()["skipped"]]
    assert reasons[0] == "not found" and reasons[1].startswith("too big")


def test_a_fifo_named_like_a_document_is_skipped_not_waited_on(tmp_path):
    """A FIFO blocks its open until a writer comes: the refresh (a hook's, the daemon's) would wait for good."""
    import threading

    root = tmp_path / "docs"
    write(root, "deploy.md", "## Deploy\n\nShip with make ship.\n")
    os.mkfifo(root / "pipe.md")
    dom = KnowledgeDomain([root], index_path=":memory:")
    reports = []
    refresher = threading.Thread(target=lambda: reports.append(dom.refresh()), daemon=True)
    refresher.start()
    refresher.join(10)
    assert reports, "the refresh did not return"
    assert [(Path(s["path"]).name, s["reason"]) for s in reports[0]["skipped"]] == [("pipe.md", "not a regular file")]
    assert reports[0]["files"] == 1


def test_several_roots_and_a_single_file_root(library, tmp_path):
    other = tmp_path / "wiki"
    write(other, "guide.md", "## Install\n\nThe wiki's own install page.\n")
    single = write(tmp_path, "CHANGELOG.md", "# Changelog\n\n## 1.0\n\nFirst release.\n")
    dom = KnowledgeDomain([library, other, single], index_path=":memory:")
    dom.refresh()
    addresses = set(by_address(dom))
    assert {"docs/guide.md#Deploy Guide/Install", "wiki/guide.md#Install", "CHANGELOG.md#Changelog/1.0"} <= addresses
    assert dom.section("wiki/guide.md#Install").text == "## Install\n\nThe wiki's own install page.\n"
    assert dom.section("wiki/guide.md#Nope") is None


def test_default_index_path_and_keyword_fallback_for_unknown_embedder(library):
    from memlane import config

    dom = KnowledgeDomain([library], embedder="none")
    assert dom.embedder is None and Path(dom.index_path).parent == config.cache_home() / "domains"
    assert dom.recall("roll back a release")  # first recall refreshes an empty index
    dom.close()


def test_duplicate_heading_paths_get_numbered(tmp_path):
    write(tmp_path, "changes.md", "# Changes\n\n## Fixed\n\none\n\n## Fixed\n\ntwo\n")
    dom = KnowledgeDomain([tmp_path], index_path=":memory:")
    dom.refresh()
    assert set(by_address(dom)) == {"changes.md#Changes/Fixed", "changes.md#Changes/Fixed~2"}
