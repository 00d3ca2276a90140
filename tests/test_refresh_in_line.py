"""A refresh in a process that already found the index in line with the files: an edit is found
by comparing two stat walks, not by reading the parse cache's row of every note — and never when
another process changed the index since (its state is then read from the index, as in a fresh
process)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import write_note
from memlane import Memory
from memlane.index.incremental import walk
from memlane.store.scopes import StoreSpec

NOTE = "---\nname: {name}\ndescription: {text}\ntype: feedback\n---\n{text}\n"


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    for number in range(5):
        write_note(store, f"feedback_{number}.md", NOTE.format(name=f"feedback_{number}", text=f"rule number {number}"))
    return store


def _memory(store: Path, tmp_path: Path) -> Memory:
    return Memory([store], embedder="none", index_path=tmp_path / "i.sqlite")


def _indexed_elsewhere_and_gone(store: Path, tmp_path: Path) -> None:
    """A keyword-only process (a hook's refresh) indexes a new note, which is then deleted."""
    extra = write_note(store, "feedback_extra.md", NOTE.format(name="feedback_extra", text="an extra rule"))
    with _memory(store, tmp_path) as other:
        assert other.refresh(embed=False).added == 1
    extra.unlink()


def test_an_edit_in_the_same_process_is_found_without_the_parse_cache(tmp_path, monkeypatch):
    store = _store(tmp_path)
    with _memory(store, tmp_path) as mem:
        mem.refresh()
        reads = []
        real = type(mem.index).parsed_stats
        monkeypatch.setattr(type(mem.index), "parsed_stats", lambda self: reads.append(1) or real(self))
        for round_ in range(2):  # the second edit is compared with the walk the first refresh made
            note = store / "feedback_1.md"
            note.write_text(note.read_text() + f"edit {round_}\n")
            report = mem.refresh(recheck=True)
            assert (report.updated, report.added, report.removed) == (1, 0, 0)
            assert mem.show("feedback_1")[0]["body"].rstrip().endswith(f"edit {round_}")
        assert reads == []


def test_another_process_refreshing_in_between_is_not_missed(tmp_path):
    """This process's last walk and today's files agree, but the index moved meanwhile: another
    process indexed a note that has since gone. Compared with the old walk, nothing changed; the
    index's own state says a note is gone."""
    store = _store(tmp_path)
    with _memory(store, tmp_path) as first:
        first.refresh()
        _indexed_elsewhere_and_gone(store, tmp_path)
        first.refresh(recheck=True)
        assert first.index.counts()["units"] == 5  # read before ``show``, which refreshes again
        assert first.show("feedback_extra") == []


def test_a_walk_gives_each_file_as_os_stat_does_and_its_last_root(tmp_path):
    store = _store(tmp_path)
    inner = store / "inner"
    write_note(inner, "feedback_inner.md", NOTE.format(name="feedback_inner", text="inside"))
    found = walk([StoreSpec(store, "project"), StoreSpec(inner, "project")])
    for path in found.stats:
        st = os.stat(path)
        size, mtime_ns, mtime, root = found.file(path)
        assert (size, mtime_ns, mtime) == (st.st_size, st.st_mtime_ns, st.st_mtime)
        assert root == (1 if "inner" in path else 0)


def test_a_note_that_appeared_after_the_walk_and_went_is_not_kept(tmp_path):
    """The daemon's refresh takes a walk made earlier: a note written after that walk is indexed
    by the complete refresh, but the walk cannot say when it goes — so it is not the baseline."""
    store = _store(tmp_path)
    with _memory(store, tmp_path) as mem:
        mem.refresh()
        write_note(store, "feedback_a.md", NOTE.format(name="feedback_a", text="added before the walk"))
        _, walked = mem.files_look()
        late = write_note(store, "feedback_late.md", NOTE.format(name="feedback_late", text="added after the walk"))
        assert mem.refresh(recheck=True, walked=walked).added == 2  # (``show`` would refresh again)
        late.unlink()
        note = store / "feedback_1.md"
        note.write_text(note.read_text() + "an edit\n")
        mem.refresh(recheck=True)
        assert mem.show("feedback_late") == []
        assert mem.show("feedback_1")[0]["body"].rstrip().endswith("an edit")


def test_a_refresh_under_another_embedders_stamp_is_not_missed(tmp_path):
    """Hooks refresh without embedding, the daemon with its model: two stamps, one index. A note
    the other one indexed and that is gone since must not stay behind an edit."""
    store = _store(tmp_path)
    with Memory([store], embedder="fake", index_path=tmp_path / "i.sqlite") as daemon_side:
        daemon_side.refresh()
        _indexed_elsewhere_and_gone(store, tmp_path)
        note = store / "feedback_2.md"
        note.write_text(note.read_text() + "an edit\n")
        daemon_side.refresh(recheck=True)
        assert daemon_side.index.counts()["units"] == 5  # read before ``show``, which refreshes again
        assert daemon_side.show("feedback_extra") == []


def test_a_note_only_the_outer_root_reads_keeps_its_root_after_an_edit(tmp_path):
    """Nested roots: a symlink in the inner folder to a note outside it is the inner root's to
    skip, and the outer root's note — as a complete refresh reads it, so does an edit's."""
    store = _store(tmp_path)
    inner = store / "inner"
    inner.mkdir()
    (inner / "linked.md").symlink_to(store / "feedback_3.md")
    found = walk([StoreSpec(store, "project"), StoreSpec(inner, "user")])
    assert found.file(str(inner / "linked.md"))[3] == 0
    assert found.file(str(store / "feedback_3.md"))[3] == 0


def test_a_note_another_embedders_refresh_indexed_and_that_went_is_not_kept(tmp_path):
    """No edit at all: the files are back as this process last saw them, but the index moved (a
    keyword-only process indexed a note that is gone since). The stamp holds the count of writes
    to the notes, so "nothing changed" is not taken on the files' word alone."""
    store = _store(tmp_path)
    with Memory([store], embedder="fake", index_path=tmp_path / "i.sqlite") as daemon_side:
        daemon_side.refresh()
        _indexed_elsewhere_and_gone(store, tmp_path)
        report = daemon_side.refresh(recheck=True)
        assert not report.up_to_date and report.removed == 1
        assert daemon_side.index.counts()["units"] == 5
        assert daemon_side.refresh(recheck=True).up_to_date  # and then it is


def test_a_complete_refresh_whose_manifest_was_not_written_leaves_no_stamp(tmp_path, monkeypatch):
    """The manifest is what the next refresh finds an edit against: a refresh that could not write
    it (a lock at that moment) must not call the index in line, or the next edit would be read
    against an older refresh's manifest."""
    from memlane.index import refresh as refresh_module

    store = _store(tmp_path)
    with _memory(store, tmp_path) as mem:
        real = refresh_module.Refresher._set
        monkeypatch.setattr(refresh_module.Refresher, "_set", lambda self, key, value:
                            False if key == refresh_module.MANIFEST else real(self, key, value))
        assert mem.refresh().added == 5
        assert not mem.refresh(recheck=True).up_to_date  # it looks again
        monkeypatch.setattr(refresh_module.Refresher, "_set", real)
        mem.refresh(recheck=True)
        assert mem.refresh(recheck=True).up_to_date
