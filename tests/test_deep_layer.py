"""Layer 4 in its default mode (``inject.deep = "auto"``): when a prompt's recall brings nothing, a
deep recall admits archived notes too. It ranks the same candidates, so it runs only when that
ranking holds an archived note above the threshold; and the menu below still reads the prompt's
own ranking instead of searching again."""

from __future__ import annotations

from memlane import records

import pytest

from conftest import write_note
from memlane import Memory
from memlane.config import Config
from memlane.inject.layers import user_prompt

NOTES = {
    "feedback_ci_cache.md": "---\nname: feedback_ci_cache\ndescription: Key CI caches on the lockfile hash\n"
                            "type: feedback\n---\nCaches keyed on the branch name go stale after a rebase.\n",
    "reference_runners.md": "---\nname: reference_runners\ndescription: The CI runners are two machines in the "
                            "office\ntype: reference\n---\nAsk ops when a runner is down.\n",
    "project_old_ci.md": "---\nname: project_old_ci\ndescription: The Jenkins server's nightly artefacts\ntype: "
                         "project\nstatus: archived\n---\nJenkins kept nightly artefacts for thirty days.\n",
}


@pytest.fixture
def memory(tmp_path):
    for name, text in NOTES.items():
        write_note(tmp_path / "store", name, text)
    with Memory([tmp_path / "store"], embedder="none", index_path=tmp_path / "i.sqlite", cwd=tmp_path) as memory:
        memory.refresh()
        yield memory


def recalls(memory, monkeypatch) -> list[str]:
    """The layer of every ``Memory.recall`` the hook makes from now on."""
    seen: list[str] = []
    original = Memory.recall

    def counted(self, prompt, **kw):
        seen.append(kw.get("layer", "recall"))
        return original(self, prompt, **kw)

    monkeypatch.setattr(Memory, "recall", counted)
    return seen


def prompt(text: str) -> dict:
    return {"session_id": "s1", "prompt": text, "transcript_path": None, "hook_event_name": "UserPromptSubmit"}


def shown(injection) -> list[str]:
    return [s["name"] for s in injection.report["shown"]]


def test_an_archived_note_only_it_answers_comes_from_the_deep_layer(memory, monkeypatch):
    seen = recalls(memory, monkeypatch)
    injection = user_prompt(memory, prompt("how long did Jenkins keep the nightly artefacts?"), dry_run=True)
    assert injection.report["layers"]["L3"]["recalled"] == []
    assert shown(injection) == ["project_old_ci"] and injection.report["layer"] == "L4"
    assert seen == ["L3", "L4"]  # the menu below reads the prompt's own ranking: no third search


def test_nothing_archived_in_the_ranking_means_no_deep_recall(memory, monkeypatch):
    seen = recalls(memory, monkeypatch)
    injection = user_prompt(memory, prompt("which zebra painted the lasagna gallery?"), dry_run=True)
    assert shown(injection) == [] and injection.report["layers"]["L4"]["recalled"] == []
    assert "skipped" in injection.report["layers"]["L4"]  # --explain tells a skipped search from an empty one
    assert seen == ["L3"]


def test_an_archived_note_found_by_words_alone_does_not_send_the_prompt_deep(tmp_path, monkeypatch):
    """Hybrid recall never selects a note the meaning leg calls unrelated that only a word brought,
    archived or not: the deep recall would not select it either."""
    write_note(tmp_path / "store", "project_rota.md", "---\nname: project_rota\ndescription: The office kitchen "
               "rota\ntype: project\nstatus: archived\n---\nWhoever is on the rota refills the coffee.\n")
    write_note(tmp_path / "store", "feedback_ci.md", "---\nname: feedback_ci\ndescription: Key CI caches on the "
               "lockfile hash\ntype: feedback\n---\nCaches keyed on the branch name go stale.\n")
    with Memory([tmp_path / "store"], embedder="fake", index_path=tmp_path / "i.sqlite", cwd=tmp_path) as memory:
        memory.refresh()
        seen = recalls(memory, monkeypatch)
        injection = user_prompt(memory, prompt("how do I brew a good cup of coffee at home"), dry_run=True)
    assert shown(injection) == [] and seen == ["L3"]


def test_a_large_k_still_goes_deep(tmp_path):
    """The deep layer asks for twice ``retrieve.k``, at most the recall's ceiling."""
    for name, text in NOTES.items():
        write_note(tmp_path / "store", name, text)
    config = Config()
    config.retrieve = records.replace(config.retrieve, k=60)
    with Memory([tmp_path / "store"], embedder="none", index_path=tmp_path / "i.sqlite", cwd=tmp_path,
                config=config) as memory:
        injection = user_prompt(memory, prompt("how long did Jenkins keep the nightly artefacts?"), dry_run=True)
    assert shown(injection) == ["project_old_ci"]


def test_a_prompt_with_an_answer_does_not_go_deep(memory, monkeypatch):
    seen = recalls(memory, monkeypatch)
    injection = user_prompt(memory, prompt("why do the CI caches go stale after a rebase?"), dry_run=True)
    assert "feedback_ci_cache" in shown(injection) and "L4" not in injection.report["layers"]
    assert seen == ["L3"]


def test_the_shortcut_holds_only_for_the_ranking_of_that_prompt_on_that_index(memory, tmp_path):
    zebra = "which zebra painted the lasagna gallery?"
    memory.recall(zebra, record=False, include_private=False)
    assert not memory.archived_may_answer(zebra)
    assert memory.archived_may_answer("another prompt about the zebra")
    write_note(tmp_path / "store", "project_new.md", "---\nname: project_new\ndescription: A new note\n"
               "type: project\n---\nSomething new.\n")
    memory.refresh()  # the index moved on: the ranking at hand is no longer this index's
    assert memory.archived_may_answer(zebra)


def test_the_menu_leaves_out_a_note_archived_after_the_ranking(memory, tmp_path):
    """The lifecycle's states move no index generation: the menu reads them as they are now."""
    question = "why do the CI caches and runners go stale?"
    ranked = [r.name for r in memory.recall(question, record=False, include_private=False)]
    assert "reference_runners" in ranked
    with Memory([tmp_path / "store"], embedder="none", index_path=tmp_path / "i.sqlite", cwd=tmp_path) as other:
        other.archive("reference_runners")
    assert "reference_runners" not in [r.name for r in memory.further_candidates(question, after=[], n=5)]
