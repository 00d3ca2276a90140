"""Reading a memory folder safely: every bad file is a skip or a problem with a clear reason,
and nothing else is lost (the rest of the store is indexed and recallable)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import STORE_NOTES, write_note
from memlane import Memory
from memlane.store import StoreSpec, load_snapshot, scan_folder

N_STORE = len(STORE_NOTES)


def _binary(root: Path) -> str:
    (root / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    return "image.md"


def _huge(root: Path) -> str:
    path = root / "huge_log.md"
    with path.open("wb") as f:
        f.write(b"---\nname: huge_log\ndescription: a pasted log\n---\n")
        f.truncate(50 * 1024 * 1024)  # sparse: the size is what matters
    return "huge_log.md"


def _symlink_loop(root: Path) -> str:
    (root / "nested").mkdir()
    (root / "nested" / "back").symlink_to(root, target_is_directory=True)
    return "nested/back"


def _self_link(root: Path) -> str:
    (root / "self.md").symlink_to(root / "self.md")
    return "self.md"


def _latin1_name(root: Path) -> str:
    name = os.fsdecode(b"caf\xe9.md")  # a name from a Latin-1 system: Python reads the byte as a lone surrogate
    write_note(root, name, "---\nname: cafe\ndescription: when ordering coffee\n---\ncoffee\n")
    return name


def _utf32(root: Path) -> str:
    """UTF-32 with its byte-order mark (FF FE 00 00): its first two bytes are UTF-16's mark, but it is no UTF-16."""
    (root / "wide.md").write_bytes("---\nname: wide\ndescription: when it is wide\n---\nwide\n".encode("utf-32"))
    return "wide.md"


def _latin1_folder(root: Path) -> str:
    name = os.fsdecode(b"r\xe9sum\xe9s")
    write_note(root / name, "cv.md", "---\nname: cv\ndescription: when updating the CV\n---\ncv\n")
    return name


@pytest.mark.parametrize("make, reason", [
    (_binary, "binary"),
    (_huge, "too large"),
    (_symlink_loop, "symlink loop"),
    (_self_link, "symbolic links"),
    (_latin1_name, "not UTF-8"),
    (_latin1_folder, "not UTF-8"),
    (_utf32, "binary"),
], ids=["binary", "50MB", "folder-loop", "file-loop", "latin1-name", "latin1-folder", "utf-32"])
def test_bad_file_is_skipped_with_a_reason_and_the_rest_indexed(store, tmp_path, make, reason):
    bad = make(store)
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        report = mem.refresh()
        assert report["notes"] == N_STORE
        assert [(Path(s["path"]).relative_to(store).as_posix(), reason in s["reason"])
                for s in report["skipped"]] == [(bad, True)]
        assert [r["name"] for r in mem.recall("postgres upgrade")] == ["project_postgres_upgrade"]


def test_too_large_names_the_setting(store):
    _huge(store)
    (skip,) = scan_folder(store, "project").skipped
    assert "index.max_file_bytes" in skip.reason


def test_non_utf8_note_is_kept_with_a_problem(store, tmp_path):
    (store / "latin1_note.md").write_bytes(
        b"---\nname: latin1_note\ndescription: caf\xe9 menu for the offsite\n---\nthe na\xefve offsite menu\n")
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        report = mem.refresh()
        assert report["notes"] == N_STORE + 1 and report["skipped"] == []
        (hit,) = mem.recall("offsite menu", depth="full")
        assert hit["name"] == "latin1_note"
        assert hit["description"] == "caf\ufffd menu for the offsite"
        (shown,) = mem.show("latin1_note")
        assert any("not UTF-8" in p for p in shown["meta"]["problems"])


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_note_with_its_byte_order_mark_is_read(store, tmp_path, encoding):
    """Windows PowerShell's `>` writes UTF-16 with a byte-order mark: the note is read, not skipped as binary."""
    text = "---\nname: ps_note\ndescription: when the nightly build on Windows hangs\n---\nKill the stale msbuild nodes.\n"
    (store / "ps_note.md").write_bytes(("\ufeff" if encoding.endswith("be") else "").encode(encoding) + text.encode(encoding))
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        report = mem.refresh()
        assert report["notes"] == N_STORE + 1 and report["skipped"] == []
        (hit,) = mem.recall("nightly Windows build hangs", depth="full")
        assert (hit["name"], hit["description"]) == ("ps_note", "when the nightly build on Windows hangs")
        assert any("UTF-16" in p for p in mem.show("ps_note")[0]["meta"]["problems"])


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads files whatever their mode, so chmod 000 cannot make one unreadable")
def test_unreadable_file_is_skipped(store, tmp_path):
    path = write_note(store, "secret.md", "---\nname: secret\n---\nx\n")
    path.chmod(0)
    try:
        scan = scan_folder(store, "project")
    finally:
        path.chmod(0o644)
    assert [(Path(s.path).name, s.reason.startswith("unreadable")) for s in scan.skipped] == [("secret.md", True)]
    assert len(scan.notes) == N_STORE


def test_duplicate_names_in_one_scope_are_both_kept_and_reported(store):
    write_note(store, "archive/user_role.md", "---\nname: user_role\ndescription: an older copy\n---\nold\n")
    snap = load_snapshot([StoreSpec(store, "project")])
    dupes = [n for n in snap.notes if n.name == "user_role"]
    assert sorted(n.rel for n in dupes) == ["archive/user_role.md", "user_role.md"]  # nothing lost
    assert snap.shadowed == []  # same scope: neither shadows the other
    for n in dupes:
        assert any("duplicate" in p.lower() for p in n.problems), n.rel


def test_empty_folder(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    scan = scan_folder(empty, "project")
    assert (scan.notes, scan.skipped, scan.has_index) == ([], [], False)
    with Memory([empty], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        assert mem.recall("anything at all") == []


def test_folder_without_memory_md(store, tmp_path):
    (store / "MEMORY.md").unlink()
    scan = scan_folder(store, "project")
    assert scan.has_index is False and scan.index_lines == []
    assert len(scan.notes) == N_STORE and all(n.title is None for n in scan.notes)
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        (hit,) = mem.recall("how should I key the CI cache?")
        assert hit["title"] == "feedback_ci_cache"  # no MEMORY.md line: the name is the title


def test_memory_md_is_the_index_not_a_note(store):
    scan = scan_folder(store, "project")
    assert scan.has_index and "MEMORY.md" not in {n.rel for n in scan.notes}
    by_rel = {n.rel: n for n in scan.notes}
    assert (by_rel["feedback_ci_cache.md"].title, by_rel["feedback_ci_cache.md"].index_hook) == (
        "CI cache keys", "key caches on the lockfile hash")
    assert by_rel["project_postgres_upgrade.md"].index_hook == ""


def test_missing_folder_is_a_skip_and_other_stores_still_load(store, tmp_path):
    missing = tmp_path / "no_such_folder"
    snap = load_snapshot([StoreSpec(missing, "user"), StoreSpec(store, "project")])
    assert len(snap.notes) == N_STORE
    assert [(s.path, s.reason) for s in snap.skipped] == [(str(missing), "not a folder")]


def test_skipped_dirs_and_non_markdown_are_ignored(store):
    write_note(store, ".git/HEAD.md", "not a note")
    write_note(store, "node_modules/pkg/README.md", "not a note")
    (store / "notes.txt").write_text("not markdown")
    scan = scan_folder(store, "project")
    assert len(scan.notes) == N_STORE and scan.skipped == []


def test_subfolders_are_scanned_with_posix_rel(store):
    write_note(store, "team/deep/project_nested.md", "---\nname: project_nested\n---\nnested body\n")
    rels = {n.rel for n in scan_folder(store, "project").notes}
    assert "team/deep/project_nested.md" in rels
