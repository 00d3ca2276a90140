"""W1–W2: the write path. ``memlane add`` writes Claude Code's format atomically after
comparing with the nearest notes (ADD / UPDATE / SUPERSEDE / NOOP), ``memlane link
--suggest`` proposes links, archive/restore work by hand — and bad or hostile input is
refused before anything is written, concurrent writers never corrupt a file, nothing is
ever deleted."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_note
from memlane import Memory
from memlane.store import StoreSpec
from memlane.store.frontmatter import split_frontmatter
from memlane.store.memory_index import parse_memory_index
from memlane.store.write import Draft, WriteError


def seeded(tmp_path) -> Path:
    store = tmp_path / "store"
    write_note(store, "MEMORY.md", "# Memory\n- [CI cache keys](feedback_ci_cache.md) — key CI caches on the lockfile\n")
    write_note(store, "feedback_ci_cache.md", """---
name: ci_cache
description: when keying CI caches in the workflows
metadata:
  type: feedback
---
Key the CI cache on the lockfile hash. Don't key the cache on the branch name: it goes stale after a rebase.
""")
    write_note(store, "project_release_freeze.md", """---
name: release_freeze
description: when planning a release during the audit
type: project
---
No releases before the Q3 audit closes; hotfixes need the CTO's sign-off.
""")
    return store


def memory(store, tmp_path, **kw):
    return Memory([store], embedder="none", index_path=tmp_path / "i.sqlite", **kw)


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_private_note_gets_no_memory_md_line(tmp_path):
    """Claude Code loads MEMORY.md into every session: a line there would show the agent the note."""
    store = seeded(tmp_path)
    before = (store / "MEMORY.md").read_text()
    draft = Draft(name="bank_pin", description="when paying the office rent", type="project",
                  body="The card PIN is in the safe.", private=True)
    with memory(store, tmp_path) as mem:
        assert mem.add(draft)["applied"]
    assert (store / "project_bank_pin.md").exists()
    assert (store / "MEMORY.md").read_text() == before


def test_add_writes_claude_codes_format_and_its_index_line(tmp_path):
    store = seeded(tmp_path)
    draft = Draft(name="flaky_e2e", description="when an end-to-end test fails only on CI runners", type="feedback",
                  body="Retry the e2e suite once; file an issue if it fails twice.", recall=["flaky", "retry"],
                  importance=0.7, kind="process")
    with memory(store, tmp_path) as mem:
        out = mem.add(draft)
        assert out["advice"] == "ADD" and out["applied"] and out["written"] == str(store / "feedback_flaky_e2e.md")
        assert mem.recall("e2e tests fail only in CI", k=1)[0]["name"] == "flaky_e2e"  # indexed at once
    text = (store / "feedback_flaky_e2e.md").read_text()
    fm = split_frontmatter(text)
    assert fm.problems == [] and fm.fields == {
        "name": "flaky_e2e", "description": "when an end-to-end test fails only on CI runners",
        "metadata": {"type": "feedback"}, "recall": ["flaky", "retry"], "importance": 0.7, "kind": "process"}
    assert fm.body.strip() == "Retry the e2e suite once; file an issue if it fails twice."
    lines = parse_memory_index((store / "MEMORY.md").read_text())
    assert [(l.title, l.file) for l in lines] == [("CI cache keys", "feedback_ci_cache.md"),
                                                  ("flaky_e2e", "feedback_flaky_e2e.md")]
    assert not [p for p in store.iterdir() if p.name.endswith(".tmp")]


def test_a_note_whose_index_line_falls_past_claude_codes_cut_says_so(tmp_path):
    """Claude Code loads only the first 200 lines of MEMORY.md: a note added to a longer index is
    one Claude Code never sees, and the writer is told (a line within the cut says nothing)."""
    store = seeded(tmp_path)
    with memory(store, tmp_path) as mem:
        near = mem.add(Draft(name="flaky_e2e", description="when an end-to-end test fails only on CI runners",
                             type="feedback", body="Retry the e2e suite once."))
        assert near["applied"] and near["warnings"] == []
        with (store / "MEMORY.md").open("a", encoding="utf-8") as index:
            index.writelines(f"- [Old {n}](project_old_{n}.md) — an old pointer\n" for n in range(210))
        far = mem.add(Draft(name="office_plants", description="when watering the office plants", type="project",
                            body="Water the ficus on Mondays."))
    assert far["applied"]
    line = [l.line_no for l in parse_memory_index((store / "MEMORY.md").read_text())
            if l.file == "project_office_plants.md"]
    assert line == [214]
    assert len(far["warnings"]) == 1 and "line 214" in far["warnings"][0]
    assert "Claude Code loads only the first 200 lines" in far["warnings"][0]


def test_a_draft_that_changes_a_figure_is_an_update_not_nothing_new(tmp_path):
    """The user corrects a figure ("16 GB", where the note says "8 GB"): every other word is the
    note's, and it was advised NOOP — with --apply, nothing written, the correction lost."""
    store = tmp_path / "store"
    write_note(store, "feedback_deploy_oom.md", "---\nname: deploy_oom\ndescription: when the deploy fails with "
               "exit 137\ntype: feedback\n---\nThe builder runs out of memory; raise the runner to 8 GB.\n")
    with memory(store, tmp_path) as mem:
        same = Draft(name="deploy_oom_again", description="when the deploy fails with exit 137", type="feedback",
                     body="The builder runs out of memory; raise the runner to 8 GB.")
        assert mem.add(same, dry_run=True)["advice"] == "NOOP"
        changed = Draft(name="deploy_oom_again", description="when the deploy fails with exit 137", type="feedback",
                        body="The builder runs out of memory; raise the runner to 16 GB.")
        out = mem.add(changed, dry_run=True)
        assert out["advice"] == "UPDATE" and out["target"]["name"] == "deploy_oom"
        by_name = Draft(name="deploy_oom", description="when the deploy fails with exit 137", type="feedback",
                        body="The builder runs out of memory; raise the runner to 16 GB.")
        out = mem.add(by_name, apply=True)
        assert out["advice"] == "UPDATE" and out["applied"]
    assert "16 GB" in (store / "feedback_deploy_oom.md").read_text()


def test_the_four_advices(tmp_path):
    store = seeded(tmp_path)
    with memory(store, tmp_path) as mem:
        same = Draft(name="ci_cache_again", description="when keying CI caches in the workflows", type="feedback",
                     body="Key the CI cache on the lockfile hash.")
        assert mem.add(same, dry_run=True)["advice"] == "NOOP"
        by_name = Draft(name="ci_cache", description="when keying CI caches", type="feedback",
                        body="The pnpm store key must hash pnpm-lock.yaml too, or installs go stale.")
        out = mem.add(by_name, dry_run=True)
        assert out["advice"] == "UPDATE" and out["target"]["name"] == "ci_cache"
        against = Draft(name="ci_cache_branch", description="when keying CI caches in the workflows", type="feedback",
                        body="Always key the CI cache on the branch name so each branch keeps its own cache.")
        out = mem.add(against, dry_run=True)
        assert out["advice"] == "SUPERSEDE" and out["target"]["name"] == "ci_cache"
        assert "never to" in out["reason"] and out["candidates"][0]["disagreement"]
        other = Draft(name="plants", description="when watering the office plants", type="reference",
                      body="The ficus needs water every Monday.")
        assert mem.add(other, dry_run=True)["advice"] == "ADD"
    assert snapshot(store) == snapshot(seeded(tmp_path / "again"))  # dry runs wrote nothing


def test_apply_update_appends_and_supersede_writes_a_new_note(tmp_path):
    store = seeded(tmp_path)
    before = (store / "feedback_ci_cache.md").read_text()
    with memory(store, tmp_path) as mem:
        by_name = Draft(name="ci_cache", description="when keying CI caches", type="feedback",
                        body="The pnpm store key must hash pnpm-lock.yaml too.")
        assert mem.add(by_name)["applied"] is False  # an UPDATE needs --apply
        assert (store / "feedback_ci_cache.md").read_text() == before
        out = mem.add(by_name, apply=True)
        assert out["applied"] and out["written"] == str(store / "feedback_ci_cache.md")
        after = (store / "feedback_ci_cache.md").read_text()
        assert after.startswith(before.rstrip("\n")) and "Update (" in after and "pnpm-lock.yaml" in after
        against = Draft(name="ci_cache_branch", description="when keying CI caches in the workflows",
                        type="feedback", body="Always key the CI cache on the branch name so each branch keeps "
                                              "its own cache.")
        out = mem.add(against, apply=True)
        assert out["advice"] == "SUPERSEDE" and out["written"] == str(store / "feedback_ci_cache_branch.md")
        assert split_frontmatter((store / "feedback_ci_cache_branch.md").read_text()).fields["supersedes"] == [
            "ci_cache"]
        assert (store / "feedback_ci_cache.md").read_text() == after  # the old note stays as it was
        old_id = mem.index.units_by_path([str(store / "feedback_ci_cache.md")])[0]["id"]
        assert mem.index.superseded() == {old_id: "ci_cache_branch"}  # recall demotes the replaced note
        assert mem.recall("key the CI cache on the branch name", k=5)[0]["name"] == "ci_cache_branch"


@pytest.mark.parametrize("change, message", [
    ({"name": "../escape"}, "one plain file name"),
    ({"name": "/etc/passwd"}, "one plain file name"),
    ({"name": "a/b"}, "one plain file name"),
    ({"name": "x\x00y"}, "one plain file name"),
    ({"name": "日本語メモ"}, "one plain file name of ASCII letters"),  # not a letter memlane writes in a file name
    ({"description": "fine\n---\nprivate: false"}, "one line"),
    ({"title": "t\nname: evil"}, "one line"),
    ({"recall": ["ok", "evil\n---"]}, "must be one line"),
    ({"description": "   "}, "description is empty"),
    ({"type": "secret"}, "type must be"),
    ({"body": "x" * 200_000}, "split it"),
    ({"importance": 3.0}, "between 0 and 1"),
    # bytes that are not UTF-8, as Python reads them from argv or stdin ("caf\xe9" in Latin-1), or half a character
    ({"title": "caf\udce9"}, "not UTF-8"),
    ({"description": "caf\udce9 menu"}, "not UTF-8"),
    ({"body": "caf\udce9"}, "not UTF-8"),
    ({"recall": ["\ud83d"]}, "not UTF-8"),
])
def test_hostile_or_bad_drafts_are_refused_and_nothing_is_written(tmp_path, change, message):
    store = seeded(tmp_path)
    before = snapshot(store)
    fields = {"name": "ok_note", "description": "when testing refusals", "body": "body", "type": "project"} | change
    with memory(store, tmp_path) as mem, pytest.raises(WriteError, match=message):
        mem.add(Draft(**fields), apply=True)
    assert snapshot(store) == before and not (tmp_path / "escape.md").exists()


def test_yaml_lookalikes_are_quoted_and_read_back_exactly(tmp_path):
    store = seeded(tmp_path)
    tricky = Draft(name="quoting", description="when a value says: 'yes' # not a comment, or [a, b]", type="project",
                   body="---\nname: not_the_name\n---\nA body may hold YAML fences; they stay body text.",
                   recall=["on", "null", "- dash"])
    with memory(store, tmp_path) as mem:
        mem.add(tricky)
        [note] = mem.show("quoting")
    assert note["description"] == tricky.description and note["meta"]["recall"] == ["on", "null", "- dash"]
    assert "name: not_the_name" in note["body"]


def test_an_existing_file_is_never_overwritten(tmp_path):
    store = seeded(tmp_path)
    write_note(store, "project_taken.md", "hand-written, no frontmatter\n")
    with memory(store, tmp_path) as mem, pytest.raises(WriteError, match="already exists"):
        mem.add(Draft(name="taken", description="when something is taken", body="new", type="project"))
    assert (store / "project_taken.md").read_text() == "hand-written, no frontmatter\n"


def test_a_read_only_store_is_never_written(tmp_path):
    store = seeded(tmp_path)
    with Memory([StoreSpec(store, "project", read_only=True, label="a mount")], embedder="none",
                index_path=tmp_path / "i.sqlite") as mem:
        with pytest.raises(WriteError, match="no writable memory folder"):
            mem.add(Draft(name="n", description="when x", body="y"))
    (tmp_path / "mine").mkdir()
    with Memory([StoreSpec(store, "project", read_only=True, label="a mount"), StoreSpec(tmp_path / "mine", "user")],
                embedder="none", index_path=tmp_path / "i2.sqlite") as mem:
        with pytest.raises(WriteError, match="read-only store"):  # the advice: UPDATE the mounted note
            mem.add(Draft(name="ci_cache", description="when keying CI caches", type="feedback", body="More words "
                          "about pnpm stores."), apply=True, scope="user")
        # written into a folder of its own: compared with that folder's notes alone, never acted on elsewhere
        out = mem.add(Draft(name="ci_cache", description="when keying CI caches", type="feedback", body="More words "
                            "about pnpm stores."), apply=True, to=tmp_path / "elsewhere")
        assert out["advice"] == "ADD" and out["written"].startswith(str(tmp_path / "elsewhere"))


TOPICS = [("rotating the signing keys", "Rotate the APK signing key only through the vault workflow."),
          ("paging the on-call engineer", "Page through the incident bot; phone numbers change weekly."),
          ("naming database migrations", "Migrations are named by timestamp and ticket number."),
          ("choosing a font for the docs site", "The docs site uses the system font stack, nothing hosted."),
          ("sizing thumbnails on upload", "Thumbnails are 320 pixels wide, generated by the worker."),
          ("translating the mobile app", "Strings go through Weblate; never edit the json bundles."),
          ("benchmarking the sync protocol", "Benchmark sync on a throttled 3G profile, not office wifi."),
          ("archiving old invoices", "Invoices older than seven years move to cold storage.")]


def _add_in_process(args):
    store, index, name, topic = args
    with Memory([store], embedder="none", index_path=index) as mem:
        try:
            out = mem.add(Draft(name=name, description=f"when {topic[0]}", type="project", body=topic[1]))
            return "written" if out["written"] else out["advice"]
        except WriteError as exc:
            return str(exc)


def test_concurrent_adds_never_corrupt_or_lose_a_line(tmp_path):
    store = seeded(tmp_path)
    index = tmp_path / "i.sqlite"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        contested = ("creating the contested note", "Only one writer may create this file.")
        same = pool.map(_add_in_process, [(store, index, "contested", contested)] * 4)
        different = pool.map(_add_in_process, [(store, index, f"writer_{n}", TOPICS[n]) for n in range(8)])
    # one writer creates it; the others find it (advice UPDATE or NOOP, not applied) or lose the
    # race to create it (a clear error) — never a second file, never a torn one
    assert same.count("written") == 1, same
    assert all(r in ("UPDATE", "NOOP") or "already exists" in r for r in same if r != "written"), same
    assert different == ["written"] * 8, different
    lines = parse_memory_index((store / "MEMORY.md").read_text())
    files = [line.file for line in lines]
    assert files.count("project_contested.md") == 1
    assert all(f"project_writer_{n}.md" in files for n in range(8))
    for path in store.glob("*.md"):
        if path.name != "MEMORY.md":
            assert split_frontmatter(path.read_text()).problems == [], path


def test_link_suggestions_and_apply(tmp_path):
    store = seeded(tmp_path)
    write_note(store, "feedback_lockfile.md", """---
name: lockfile_hash
description: when a CI cache restores stale dependencies
type: feedback
---
Hash the lockfile into every CI cache key; rebases otherwise restore stale caches.
""")
    with memory(store, tmp_path) as mem:
        out = mem.suggest_links("lockfile_hash")
        assert [s["name"] for s in out["suggestions"]][:1] == ["ci_cache"] and "score" in out["suggestions"][0]["why"]
        assert "release_freeze" not in [s["name"] for s in out["suggestions"]]
        before = (store / "feedback_lockfile.md").read_text()
        assert mem.suggest_links("lockfile_hash", apply=True)["applied"]
        after = (store / "feedback_lockfile.md").read_text()
        assert after.startswith(before.rstrip("\n")) and after.rstrip().endswith("Related: [[ci_cache]]")
        assert mem.suggest_links("lockfile_hash")["suggestions"] == []  # now linked
        with pytest.raises(WriteError, match="no note called"):
            mem.suggest_links("nope")


def test_archive_by_hand_sticks_until_restored(tmp_path):
    store = seeded(tmp_path)
    with memory(store, tmp_path) as mem:
        assert mem.archive("release_freeze")["changed"] == 1
        assert "release_freeze" not in [r["name"] for r in mem.recall("release during the audit")]
        mem.usage.maintain(every_seconds=0)  # the hourly lifecycle does not undo it
        assert "release_freeze" not in [r["name"] for r in mem.recall("release during the audit")]
        assert mem.restore("release_freeze")["changed"] == 1
        assert "release_freeze" in [r["name"] for r in mem.recall("release during the audit")]
    assert (store / "project_release_freeze.md").exists()


def test_cli_add_and_link(tmp_path):
    store = seeded(tmp_path)
    base = [sys.executable, "-m", "memlane.adapters.cli"]
    common = ["--store", str(store), "--embedder", "none", "--index", str(tmp_path / "i.sqlite")]
    proc = subprocess.run([*base, "add", *common, "--name", "flaky_e2e", "--description",
                           "when an end-to-end test fails only on CI", "--type", "feedback", "--body", "-", "--json"],
                          input="Retry once, then file an issue.", capture_output=True, text=True, timeout=120,
                          env=os.environ.copy())
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["advice"] == "ADD" and Path(out["written"]).read_text().endswith("Retry once, then file an issue.\n")
    bad = subprocess.run([*base, "add", *common, "--name", "../x", "--description", "d"], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "one plain file name" in bad.stderr
    with open(os.devnull if not Path("/dev/zero").exists() else "/dev/zero", "rb") as endless:  # a body without end
        zero = subprocess.run([*base, "add", *common, "--name", "zero", "--description", "d", "--body", "-"],
                              stdin=endless, capture_output=True, text=True, timeout=120)
    assert zero.returncode == 2 and "memlane: error:" in zero.stderr and "Traceback" not in zero.stderr
    link = subprocess.run([*base, "link", *common, "--suggest", "flaky_e2e"], capture_output=True, text=True,
                          timeout=120)
    assert link.returncode == 0 and link.stdout.startswith("links for flaky_e2e")


@pytest.mark.slow
def test_advice_with_the_default_embedder_on_the_demo_store(tmp_path):
    """The real model's closeness: a paraphrase of a note is a NOOP, a note on its subject
    that says the opposite supersedes it, an unrelated one is added."""
    import shutil

    from memlane import demo_store_path
    from memlane.embed import EmbedderUnavailable, load_embedder

    try:
        load_embedder(None)
    except EmbedderUnavailable as exc:
        pytest.skip(f"the default embedder is not installed: {exc}")
    store = tmp_path / "demo"
    shutil.copytree(demo_store_path(), store)
    with Memory([store], index_path=tmp_path / "i.sqlite") as mem:
        paraphrase = Draft(name="ci_cache_keys2", type="feedback", description="when editing the GitHub Actions "
                           "workflows, or a build behaves differently in CI than locally",
                           body="In the workflows the Go build cache key must hash go.sum and .mise.toml (the toolchain "
                                "version), and the pnpm store key must hash pnpm-lock.yaml. Don't key on github.sha.")
        assert mem.add(paraphrase, dry_run=True)["advice"] == "NOOP"
        opposite = Draft(name="ci_cache_sha", type="feedback", description="when editing the GitHub Actions workflows "
                         "cache keys", body="Always key the Go build cache on github.sha so every commit gets a fresh "
                                            "cache.")
        out = mem.add(opposite, dry_run=True)
        assert out["advice"] == "SUPERSEDE" and out["target"]["name"] == "ci-cache-keys"
        plants = Draft(name="office_plants", type="reference", description="when watering the office plants",
                       body="The ficus needs water every Monday; the cactus once a month.")
        assert mem.add(plants, dry_run=True)["advice"] == "ADD"


def test_a_folder_kept_without_an_index_gets_none(tmp_path):
    folder = tmp_path / "plain"
    write_note(folder, "project_a.md", "---\nname: a\ndescription: when alpha happens\ntype: project\n---\nAlpha.\n")
    with memory(folder, tmp_path) as mem:
        mem.add(Draft(name="b", description="when beta happens", body="Beta.", type="project"))
    assert (folder / "project_b.md").exists() and not (folder / "MEMORY.md").exists()
    fresh = tmp_path / "fresh"
    with Memory([fresh], embedder="none", index_path=tmp_path / "j.sqlite") as mem:
        mem.add(Draft(name="c", description="when gamma happens", body="Gamma.", type="project"), to=fresh)
    assert [l.file for l in parse_memory_index((fresh / "MEMORY.md").read_text())] == ["project_c.md"]


def test_the_advice_and_the_candidates_list_show_one_closeness():
    """0.94505 is kept as 0.945 and listed as 0.94: the advice says 0.94 too, not 0.95 by a rounding
    of its own."""
    from memlane.write.consolidate import Candidate

    for value in (0.94449, 0.9449, 0.94505, 0.12345, 0.5):
        candidate = Candidate("n", "/n.md", value, 0.1, None)
        assert candidate.shown == f"{candidate.as_dict()['closeness']:.2f}", value


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_memory_index_that_is_not_a_regular_file_is_refused_not_waited_on(tmp_path):
    """A FIFO named MEMORY.md would block the add's read for good (and MCP remember with it)."""
    store = tmp_path / "store"
    store.mkdir()
    os.mkfifo(store / "MEMORY.md")
    draft = Draft(name="flaky_e2e", description="when an end-to-end test fails only on CI runners", type="feedback",
                  body="Retry the e2e suite once.")
    with memory(store, tmp_path) as mem:
        with pytest.raises(WriteError, match="not a regular file"):
            mem.add(draft)
    assert not (store / "feedback_flaky_e2e.md").exists()
