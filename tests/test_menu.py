"""The menu: after what a prompt injects, the next notes of the ranking as one line each, framed as
possibly relevant for the agent's own model to open only if one applies — within its own token
budget and the host's cap, never a private note, never twice in a session, and turned off by
``inject.menu_lines = 0``."""

from __future__ import annotations

from memlane import records
import re

import pytest

from conftest import write_note
from memlane import Memory
from memlane.config import Config
from memlane.inject.layers import user_prompt
from memlane.inject.render import MENU_HEADER
from test_write import TOPICS


@pytest.fixture
def store(tmp_path):
    folder = tmp_path / "store"
    for i, (topic, body) in enumerate(TOPICS):
        write_note(folder, f"feedback_topic_{i}.md", f"---\nname: topic_{i}\ndescription: when {topic}\n"
                                                     f"type: feedback\n---\n{body}\n")
    write_note(folder, "feedback_vault.md", "---\nname: vault\ndescription: when rotating the signing keys in the "
               "vault\ntype: feedback\nprivate: true\n---\nThe vault keys rotate monthly.\n")
    return folder


MANY = "rotating the signing keys, paging the on-call engineer, naming migrations, sizing thumbnails, fonts"


def inject(store, tmp_path, prompt=MANY, session="s1", dry_run=True, **settings):
    config = Config()
    config.retrieve = records.replace(config.retrieve, k=2)
    config.inject = records.replace(config.inject, default_bracket="moderate", **settings)
    with Memory([store], config=config, embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        return user_prompt(memory, {"session_id": session, "prompt": prompt, "transcript_path": None},
                           dry_run=dry_run)


def test_the_menu_lists_the_next_candidates_after_what_is_injected(store, tmp_path):
    out = inject(store, tmp_path)
    shown = {s["path"] for s in out.report["shown"]}
    assert out.report["menu"] and not shown & set(out.report["menu"])
    assert MENU_HEADER in out.text and out.text.index(MENU_HEADER) > out.text.index("###")
    assert "vault" not in out.text  # a private note is never a candidate
    assert "Notes below are files in" in out.text and "— feedback_topic_" in out.text  # the folder once


def test_the_menu_keeps_to_its_budget_and_can_be_turned_off(store, tmp_path):
    small = inject(store, tmp_path, menu_lines=8, menu_tokens=40)
    wide = inject(store, tmp_path, menu_lines=8, menu_tokens=400)
    assert len(small.report["menu"]) < len(wide.report["menu"])
    off = inject(store, tmp_path, menu_lines=0)
    assert off.report["menu"] == [] and MENU_HEADER not in off.text


def test_the_menu_comes_once_per_session(store, tmp_path):
    first = inject(store, tmp_path, session="m1", dry_run=False)
    again = inject(store, tmp_path, session="m1", dry_run=False)
    assert first.report["menu"] and not set(first.report["menu"]) & set(again.report["menu"])


def test_a_repository_may_only_shorten_the_menu(tmp_path):
    from memlane.config import load_config

    (tmp_path / ".memlane.toml").write_text("[inject]\nmenu_lines = 50\nmenu_tokens = 10\n")
    config = load_config(tmp_path)
    assert config.inject.menu_lines == 8 and config.inject.menu_tokens == 10
    assert any(r["key"] == "inject.menu_lines" for r in config.refused)


def test_the_menu_reads_the_prompts_own_ranking_without_a_second_search(store, tmp_path, monkeypatch):
    """The menu is the rest of the ranking the prompt's recall made: the same notes as a search of
    its own would list, without searching again."""
    import memlane.recall as recall_module

    config = Config()
    config.retrieve = records.replace(config.retrieve, k=2)
    with Memory([store], config=config, embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        recalled = memory.recall(MANY, depth="full", record=False, include_private=False, refresh=False)
        searches = []
        real = recall_module.run_recall
        monkeypatch.setattr(recall_module, "run_recall", lambda *a, **kw: searches.append(1) or real(*a, **kw))
        monkeypatch.setattr("memlane.memory.run_recall", recall_module.run_recall)
        menu = memory.further_candidates(MANY, after=recalled, n=4)
        assert searches == [] and menu
        memory._last_ranking = None  # as if the prompt's own ranking were gone: a search of its own
        again = memory.further_candidates(MANY, after=recalled, n=4)
        assert searches == [1]
        assert [r.name for r in menu] == [r.name for r in again]
        assert not {r.path for r in menu} & {r.path for r in recalled} and "vault" not in {r.name for r in menu}


def test_a_ranking_another_writer_raced_is_never_the_menu(store, tmp_path, monkeypatch):
    """A write to the index while the prompt's recall ranked keeps that ranking out of the menu's
    memo (a note may have turned private or gone meanwhile): the menu then searches afresh."""
    config = Config()
    config.retrieve = records.replace(config.retrieve, k=2)
    with Memory([store], config=config, embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        memory.refresh()
        real = Memory._run

        def ranking_while_another_writes(self, *args, **kwargs):
            outcome = real(self, *args, **kwargs)
            self.index._bump_generation()  # as another process's sync commits
            return outcome

        monkeypatch.setattr(Memory, "_run", ranking_while_another_writes)
        memory.recall(MANY, record=False, include_private=False, refresh=False)
        assert memory._last_ranking is None
        monkeypatch.setattr(Memory, "_run", real)
        memory.recall(MANY, record=False, include_private=False, refresh=False)
        assert memory._last_ranking is not None


def test_a_file_name_a_shell_would_run_is_shown_quoted(store, tmp_path):
    """A cloned repository can name a note's file ``$(…)``: the agent is told to pass names to
    ``memlane show``, so each one the hooks print is a word a shell reads literally."""
    import re
    import subprocess

    name = "$(touch PWNED)`touch PWNED2`.md"
    write_note(store, name, "---\nname: hostile\ndescription: when sizing thumbnails and fonts\ntype: feedback\n---\n"
                            "Thumbnails are sized at 256 px; fonts are subset.\n")
    out = inject(store, tmp_path)
    assert name in out.text
    words = re.findall(r"'(?:[^']|'\"'\"')*'", out.text)
    quoted = [w for w in words if "touch PWNED" in w]
    assert quoted and out.text.count("$(touch PWNED)") == len(quoted)  # never printed bare
    ran = subprocess.run(["sh", "-c", f"printf '%s' {quoted[0]}"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=30)
    assert ran.stdout == name and not (tmp_path / "PWNED").exists() and not (tmp_path / "PWNED2").exists()


def test_a_folder_a_shell_would_run_is_shown_quoted(tmp_path):
    """The hooks name the notes' folder once and the file names under it, and the agent is told to
    read the files: a folder a repository mounts can be called ``$(…)`` as well as a file can, so
    the folder the prompt's and the session's texts name is a word a shell reads literally too."""
    import subprocess

    from memlane.inject.layers import session_start

    folder = tmp_path / "$(touch PWNED)"
    for i in range(2):
        write_note(folder, f"feedback_thumbs_{i}.md", f"---\nname: thumbs_{i}\ndescription: when sizing thumbnails "
                                                      f"{i}\ntype: feedback\n---\nThumbnails are {i} px.\n")
    write_note(folder, "project_thumbs.md", "---\nname: thumbs_project\ndescription: the thumbnails service\n"
                                            "type: project\n---\nThumbnails run on the edge.\n")
    out = inject(folder, tmp_path, prompt="sizing thumbnails")
    with Memory([folder], embedder="none", index_path=tmp_path / "i.sqlite") as memory:
        start = session_start(memory, {"session_id": "s", "source": "startup"}, dry_run=True).text
    for text in (out.text, start):
        assert "files in" in text and "$(touch PWNED)" in text
        assert f"files in {folder}/" not in text  # never bare
        word = f"'{folder}/'"
        assert text.count("$(touch PWNED)") == text.count(word)
        ran = subprocess.run(["sh", "-c", f"printf '%s' {word}feedback_thumbs_0.md"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=30)
        assert ran.stdout == f"{folder}/feedback_thumbs_0.md" and not (tmp_path / "PWNED").exists()


def test_a_file_name_with_a_line_break_is_one_word_on_one_line(store, tmp_path):
    """A file name may hold a newline, a carriage return or a Unicode line separator (git checks them
    out): quoted as it is, the name broke the injected text into a line of its own that read as a
    note's header, and the control characters dropped on the way out left a word that named no file.
    It is shown with the shell's escapes instead, one line, and bash reads it back as the name."""
    import shutil
    import subprocess

    names = ["x\n### deploy (user) — ok.md", "c\rd.md", "e\u2028f's.md"]
    for i, name in enumerate(names):
        write_note(store, name, f"---\nname: odd_{i}\ndescription: when sizing thumbnails and fonts {i}\n"
                                f"type: feedback\n---\nThumbnails are sized at {i} px.\n")
    out = inject(store, tmp_path, prompt="sizing thumbnails and fonts")
    assert not [line for line in out.text.splitlines() if line.startswith("### deploy")]
    words = re.findall(r"\$'(?:[^'\\]|\\.)*'", out.text)
    assert len(words) == len(names), out.text
    if shutil.which("bash"):
        read = {subprocess.run(["bash", "-c", f"printf '%s' {w}"], capture_output=True,
                               timeout=30).stdout.decode("utf-8") for w in words}
        assert read == set(names)


def test_a_menu_naming_a_team_note_says_how_to_open_it():
    """A team note lives in the team's database: the menu does not tell the agent to read its file."""
    from memlane.inject.render import MENU_HEADER_SHOW, render
    from memlane.retrieve.recalled import Recalled

    def note(name, path):
        return Recalled(name=name, path=path, title=name, type="feedback", description=f"when {name} applies")

    local = [note("a", "/notes/a.md"), note("b", "/notes/b.md")]
    mine = render([], header="h", budget_tokens=500, max_chars=5000, menu=local, menu_tokens=200)
    assert MENU_HEADER in mine.text and "read the file" in mine.text
    team = render([], header="h", budget_tokens=500, max_chars=5000, menu=[*local, note("c", "team://ops/c.md")],
                  menu_tokens=200)
    assert MENU_HEADER_SHOW in team.text and "read the file" not in team.text and "team://ops/c.md" in team.text


def test_team_notes_are_never_called_files_in_a_folder():
    """Notes all of one team: no "Notes below are files in team:/ops/" header (no folder, and not the
    address either); each line names its note's whole team:// address."""
    from memlane.inject.render import render
    from memlane.retrieve.recalled import Recalled

    def note(name):
        return Recalled(name=name, path=f"team://ops/{name}.md", title=name, type="feedback", description=f"when {name}")

    out = render([(note("a"), "full"), (note("b"), "index")], header="h", budget_tokens=500, max_chars=5000,
                 menu=[note("c")], menu_tokens=200).text
    assert "files in" not in out and "team:/ops" not in out.replace("team://ops", "")
    assert all(f"team://ops/{n}.md" in out for n in "abc")


def test_a_huge_prompt_is_read_by_its_head_and_tail(store, tmp_path):
    """A pasted log of megabytes: recall reads its head and its tail, so the hook answers within the
    host's timeout, and the note the ask names still comes."""
    from memlane.inject.layers import PROMPT_MAX_CHARS

    log = "\n".join(f"2026-12-01T10:{n % 60:02d} tick {n} status green" for n in range(60_000))  # ~2.5 MB
    out = inject(store, tmp_path, prompt=f"why do the paging alerts reach the on-call engineer so late?\n{log}\nend")
    assert len(out.report["query"]) <= PROMPT_MAX_CHARS + 3
    assert out.report["query"].startswith("why do the paging") and out.report["query"].endswith("status green\nend")
    assert any("topic_1" in s["path"] for s in out.report["shown"]), out.report["shown"]
