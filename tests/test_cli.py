"""The ``memlane`` command (X2): every command works on a bare folder, stdout is data only,
errors are one line on stderr with exit code 2, and everything has help text."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import STORE_NOTES, build_store
from memlane.adapters.cli import build_parser, main

N_STORE = len(STORE_NOTES)
PROMPT = "release the postgres upgrade"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, out: str, err: str) -> str:
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memlane: error: "), err
    return lines[0]


COMMANDS = [
    ["init"],
    ["index"],
    ["index", "--no-embed"],
    ["recall", PROMPT],
    ["show", "user_role"],
    ["stats"],
    ["doctor"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_every_command_works_on_a_bare_store(capsys, store, embedder, command, as_json, sealed_env):
    """``--store DIR`` with no prior init or index."""
    argv = [*command, "--store", str(store), "--embedder", embedder] + (["--json"] if as_json else [])
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert out.strip()
    if as_json:
        json.loads(out)  # stdout is exactly one JSON document
    assert "Traceback" not in err


def test_init_writes_config_and_user_store_once(capsys, store, sealed_env):
    code, out, _ = run(capsys, "init", "--store", str(store), "--embedder", "none", "--json")
    data = json.loads(out)
    config_file = sealed_env / "config" / "memlane" / "config.toml"
    user_store = sealed_env / "data" / "memlane" / "user"
    assert code == 0 and data["created"] == [str(config_file), str(user_store)]
    assert config_file.is_file() and (user_store / "MEMORY.md").is_file()
    code, out, _ = run(capsys, "init", "--store", str(store), "--embedder", "none")
    assert code == 0 and out.startswith("already initialised")


def test_init_lists_the_user_store_it_has_just_created(capsys, sealed_env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not a git repository: the user store is the one store
    code, out, _ = run(capsys, "init", "--embedder", "none")
    user_store = sealed_env / "data" / "memlane" / "user"
    assert code == 0 and f"created {user_store}" in out
    assert f"stores: {user_store}" in out.splitlines()  # not "(none yet)" right after creating it
    assert "memlane add" in out and "next: memlane index" not in out


def test_index_json_report(capsys, store, embedder):
    code, out, _ = run(capsys, "index", "--store", str(store), "--embedder", embedder, "--json")
    report = json.loads(out)
    assert (report["notes"], report["added"]) == (N_STORE, N_STORE)
    assert report["embedded"] == (N_STORE if embedder == "fake" else 0)
    code, out, _ = run(capsys, "index", "--store", str(store), "--embedder", embedder, "--json")
    assert json.loads(out)["unchanged"] == N_STORE  # same store, same default index: incremental


def test_index_names_each_skipped_file_once(capsys, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ok.md").write_text("---\nname: ok\ndescription: a note\ntype: project\n---\nbody\n", encoding="utf-8")
    (notes / "blob.md").write_bytes(b"---\nname: blob\n---\n\x00\x01")
    code, out, err = run(capsys, "index", "--store", str(notes), "--embedder", "none")
    assert code == 0 and (out + err).count("blob.md") == 1, out + err
    assert f"skipped {notes / 'blob.md'}: binary file" in out  # in the report, which 2>/dev/null keeps


def test_lint_names_each_skipped_file_once(capsys, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ok.md").write_text("---\nname: ok\ndescription: a note\ntype: project\n---\nbody\n", encoding="utf-8")
    (notes / "blob.md").write_bytes(b"---\nname: blob\n---\n\x00\x01")
    code, out, err = run(capsys, "lint", "--store", str(notes), "--embedder", "none")
    assert (out + err).count("blob.md") == 1 and "blob.md" in out, out + err  # in its report


def test_a_skipped_file_is_said_once_not_on_every_later_run(capsys, tmp_path):
    """`memlane add` then `memlane stats` each read the store again after a write: the file they
    skip was said by the first, and only a file newly skipped is said again."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "blob.md").write_bytes(b"---\nname: blob\n---\n\x00\x01")
    said = []
    for i in range(3):
        code, out, err = run(capsys, "add", "--store", str(notes), "--embedder", "none", "--name", f"n{i}",
                             "--description", f"When testing case {i}: do it", "--body", f"case {i}")
        assert code == 0, err
        code, out, err2 = run(capsys, "stats", "--store", str(notes), "--embedder", "none")
        assert code == 0 and "skipped files: 1" in out
        said.append(err + err2)
    assert "".join(said).count("blob.md") == 1 and "blob.md" in said[0], said
    (notes / "blob2.md").write_bytes(b"\x00")
    code, out, err = run(capsys, "stats", "--store", str(notes), "--embedder", "none")
    assert "blob2.md: binary file" in err and "blob.md" not in err.replace("blob2.md", "")


def test_recall_json_rank_order_and_absolute_paths(capsys, store, embedder):
    code, out, _ = run(capsys, "recall", "--store", str(store), "--embedder", embedder, "--json", PROMPT)
    data = json.loads(out)
    assert code == 0 and data["prompt"] == PROMPT
    results = data["results"]
    names = [r["name"] for r in results]
    assert names[0] == "project_postgres_upgrade" and "release_checklist" in names[:3]
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    for r in results:
        assert Path(r["path"]).is_absolute() and Path(r["path"]).is_file()


def test_relative_store_gives_absolute_paths(capsys, store, monkeypatch):
    monkeypatch.chdir(store.parent)
    code, out, _ = run(capsys, "recall", "--store", store.name, "--embedder", "none", "--json", PROMPT)
    paths = [r["path"] for r in json.loads(out)["results"]]
    assert paths and all(Path(p).is_absolute() and Path(p).is_file() for p in paths)


@pytest.mark.parametrize("depth, keys", [
    ("ids", {"rank", "name", "path", "score", "reached"}),
    ("summary", {"rank", "name", "path", "score", "reached", "title", "type", "scope", "preview"}),
    ("full", {"rank", "name", "path", "score", "reached", "title", "type", "scope", "preview", "description", "body",
              "recall", "paths", "kind", "status"}),
])
def test_recall_depth(capsys, store, depth, keys):
    code, out, _ = run(capsys, "recall", "--store", str(store), "--embedder", "none", "--json", "--depth", depth,
                       PROMPT)
    results = json.loads(out)["results"]
    assert results and all(set(r) == keys for r in results)
    code, out, _ = run(capsys, "recall", "--store", str(store), "--embedder", "none", "--depth", depth, PROMPT)
    first = out.splitlines()[0]
    assert first.startswith("1. ")
    if depth == "ids":
        assert first.endswith(str(store / "project_postgres_upgrade.md"))
    else:
        assert "Postgres upgrade" in first  # the MEMORY.md title
    body = "We upgrade the primary database from Postgres 14 to Postgres 16 during the Q3 freeze."
    assert (body in out) is (depth == "full")


def test_recall_explain(capsys, store, embedder):
    code, out, _ = run(capsys, "recall", "--store", str(store), "--embedder", embedder, "--explain", PROMPT)
    assert code == 0
    assert "why: keyword bm25 " in out and "fused " in out
    assert "matched fields: name: postgres, upgrade" in out
    code, out, _ = run(capsys, "recall", "--store", str(store), "--embedder", embedder, "--explain", "--json", PROMPT)
    explain = json.loads(out)["results"][0]["explain"]
    assert {"bm25", "cosine", "fused", "matched_fields"} <= set(explain)


def test_recall_nothing_relevant(capsys, store):
    code, out, _ = run(capsys, "recall", "--store", str(store), "--embedder", "none", "thanks!")
    assert (code, out) == (0, "(nothing relevant)\n")
    code, out, _ = run(capsys, "recall", "--store", str(store), "--embedder", "none", "--json", "thanks!")
    assert json.loads(out) == {"prompt": "thanks!", "results": []}


def test_recall_prompt_from_stdin(capsys, store, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("release the postgres upgrade\n"))
    code, out, _ = run(capsys, "recall", "--store", str(store), "--embedder", "none", "--json", "-")
    assert json.loads(out)["prompt"] == PROMPT


def test_archived_flag(capsys, store):
    _, out, _ = run(capsys, "recall", "--store", str(store), "--embedder", "none", "--json", "jenkins deploys")
    assert json.loads(out)["results"] == []
    _, out, _ = run(capsys, "recall", "--store", str(store), "--embedder", "none", "--json", "--archived",
                    "jenkins deploys")
    assert [r["name"] for r in json.loads(out)["results"]] == ["project_jenkins_deploys"]


def test_show_prints_the_note(capsys, store):
    code, out, _ = run(capsys, "show", "--store", str(store), "--embedder", "none", "user_role.md")
    assert code == 0
    assert out.splitlines()[:2] == ["# user_role  (user note, project scope)", str(store / "user_role.md")]
    assert "Alice writes backend services in Go. Keep answers short." in out


def test_stdout_is_only_data_when_there_are_warnings(capsys, store, embedder):
    (store / "binary.md").write_bytes(b"\x00\x01")
    (store / "latin1.md").write_bytes(b"---\nname: latin1\n---\ncaf\xe9\n")
    code, out, err = run(capsys, "recall", "--store", str(store), "--embedder", embedder, "--json", PROMPT)
    assert code == 0
    assert json.loads(out)["results"]


@pytest.mark.parametrize("argv, says", [
    (["recall", "--store", "{missing}", "x"], "not a folder"),
    (["index", "--store", "{missing}"], "not a folder"),
    (["show", "--store", "{store}", "no_such_note"], "no_such_note"),
    (["show", "--store", "{store}", "--json", "no_such_note"], "no_such_note"),
    (["recall", "--store", "{store}", ""], "prompt"),
    (["recall", "--store", "{store}", "--embedder", "no-such-embedder", "x"], "no-such-embedder"),
], ids=["missing-store-recall", "missing-store-index", "unknown-note", "unknown-note-json", "empty-prompt",
        "unknown-embedder"])
def test_errors_exit_2_with_one_line(capsys, store, tmp_path, argv, says):
    argv = [a.format(store=store, missing=tmp_path / "missing") for a in argv]
    if "--embedder" not in argv:
        argv += ["--embedder", "none"]
    line = one_line_error(*run(capsys, *argv))
    assert says in line


@pytest.mark.parametrize("option, value, source", [("--since", "2026-01-01", "--transcripts"),
                                                    ("--in-session", "abc", "--transcripts"),
                                                    ("--path", "*.md", "--docs")])
def test_a_filter_of_a_source_the_recall_does_not_search_is_refused(capsys, store, option, value, source):
    """--since on a recall of the notes alone narrowed nothing and the answer said nothing of it."""
    line = one_line_error(*run(capsys, "recall", "--store", str(store), "--embedder", "none", option, value, PROMPT))
    assert f"{option} narrows" in line and source in line


def test_a_date_that_is_not_one_is_refused_before_recalling(capsys, store, tmp_path):
    """--since garbage with --transcripts failed the transcripts' list alone, inside an answer that exited 0."""
    (tmp_path / "t").mkdir()
    with pytest.raises(SystemExit) as exit_info:
        main(["recall", "--store", str(store), "--embedder", "none", "--transcripts", str(tmp_path / "t"),
              "--since", "last tuesday", PROMPT])
    assert exit_info.value.code == 2
    assert "argument --since: 'last tuesday' is not an ISO date" in capsys.readouterr().err
    code, out, err = run(capsys, "recall", "--store", str(store), "--embedder", "none", "--transcripts",
                         str(tmp_path / "t"), "--since", "2026-01-01", "--until", "2026-02-01T10:00", PROMPT)
    assert code == 0 and "failed" not in out + err


@pytest.mark.parametrize("command", [["show"], ["archive"], ["restore"], ["link", "--suggest"]])
def test_a_name_no_note_has_is_quoted_back_capped(capsys, store, command):
    """A page pasted where a note's name goes is not printed back whole (twice, by show)."""
    line = one_line_error(*run(capsys, *command, "deploy " * 500, "--store", str(store), "--embedder", "none"))
    assert "no note" in line and "deploy deploy" in line and len(line) < 400


@pytest.mark.parametrize("argv", [["recall", "--store", "{weird}", "x"],
                                  ["recall", "--store", "{store}", "--prompt-json", "{weird}"]],
                         ids=["store", "prompt-json"])
def test_an_error_shows_the_controls_of_what_it_quotes_escaped(capsys, store, tmp_path, argv):
    """A path typed with an escape sequence or a bidi override in it is named with them written out
    (\\x1b, \\u202e): the terminal runs none of them, and the user sees what is there."""
    weird = str(tmp_path / "x\x1b]0;title\x07y\u202e.json")
    line = one_line_error(*run(capsys, *[a.format(store=store, weird=weird) for a in argv], "--embedder", "none"))
    assert "\x1b" not in line and "\x07" not in line and "\u202e" not in line
    assert "x\\x1b]0;title\\x07y\\u202e.json" in line


def test_an_unknown_option_shows_its_controls_escaped(capsys):
    with pytest.raises(SystemExit):
        main(["recall", "x", "--bogus\x1b[2J"])
    err = capsys.readouterr().err
    assert "\x1b" not in err and "--bogus\\x1b[2J" in err


def test_bad_config_exits_2_with_one_line(capsys, store, tmp_path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_text("[retrieve]\nbogus = 1\n")
    monkeypatch.setenv("MEMLANE_CONFIG", str(bad))
    line = one_line_error(*run(capsys, "recall", "--store", str(store), "--embedder", "none", PROMPT))
    assert "retrieve.bogus" in line


def test_no_command_prints_help_and_exits_2(capsys):
    code, out, err = run(capsys)
    assert (code, out) == (2, "")
    assert "usage: memlane" in err


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def test_every_subcommand_and_option_has_help():
    parser = build_parser()
    (sub_action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {c.dest: c.help for c in sub_action._choices_actions}
    commands = _subparsers(parser)
    assert {"init", "index", "recall", "show", "stats", "doctor"} <= set(commands)
    for name, sub in commands.items():
        assert helps.get(name), f"{name} has no help text"
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help and action.help != argparse.SUPPRESS, f"{name} {action.dest} has no help"


def test_every_commands_help_has_an_example_line():
    """The README: every command has `--help` with an example — a line that runs it (``memlane
    NAME …``, the command's whole name for one under ``team``), as a person would type it."""

    def commands(parser, path):
        for name, sub in _subparsers(parser).items():
            nested = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
            yield f"{path} {name}", sub, bool(nested)
            if nested:
                yield from commands(sub, f"{path} {name}")

    missing = []
    for name, sub, has_subcommands in commands(build_parser(), "memlane"):
        lines = [line.strip() for line in (sub.epilog or "").splitlines()]
        if not any(line == name or line.startswith(f"{name} ") for line in lines) and not has_subcommands:
            missing.append(name)
    assert missing == [], f"no `memlane …` example line in the help of: {missing}"


def test_each_module_names_the_commands_it_registers():
    """A command line that names a command builds only its module's parser: each module's COMMAND_NAMES
    must be exactly what it registers, or its commands would be missing from that parser."""
    from memlane.adapters.cli import COMMANDS

    for module in COMMANDS:
        parser = argparse.ArgumentParser()
        module.register(parser.add_subparsers())
        assert set(_subparsers(parser)) == set(module.COMMAND_NAMES), module.__name__
    assert set(_subparsers(build_parser())) == {name for module in COMMANDS for name in module.COMMAND_NAMES}
    assert set(_subparsers(build_parser("show"))) == {"show", "stats", "status", "decay"}


def test_a_command_line_builds_the_parser_of_its_own_command_alone(capsys, monkeypatch):
    import memlane.adapters.cli as cli

    built = []
    monkeypatch.setattr(cli, "build_parser", lambda command=None: built.append(command) or build_parser(command))
    with pytest.raises(SystemExit):
        main(["recall", "--no-such-option"])
    with pytest.raises(SystemExit):
        main(["recal", "x"])  # a typo: every command, so the error can list them
    assert built == ["recall", None]
    assert "invalid choice: 'recal'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, usage", [(["recall", "--top", "3", "x"], "memlane recall"),
                                         (["team", "status", "--bogus"], "memlane team status"),
                                         (["--bogus"], "memlane")])
def test_an_unknown_option_is_told_with_its_commands_usage(capsys, argv, usage):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith(f"usage: {usage} [")
    assert f"{usage}: error: unrecognized arguments: " in err


@pytest.mark.parametrize("command", ["init", "index", "recall", "show", "stats", "doctor"])
def test_help_exits_0(capsys, command):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: memlane {command}") and "--store DIR" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("memlane ")


def test_real_subprocess(store, tmp_path):
    """One run of the installed command in a real process: exit code, pure JSON stdout."""
    proc = subprocess.run([sys.executable, "-m", "memlane", "recall", "--store", str(store), "--embedder", "none",
                           "--json", PROMPT], capture_output=True, text=True, timeout=120, env=os.environ.copy(),
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert results[0]["name"] == "project_postgres_upgrade"
    assert all(line.startswith("memlane: ") for line in proc.stderr.splitlines())  # diagnostics only
    assert "keyword-only" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "memlane", "show", "--store", str(store), "--embedder", "none",
                           "nope"], capture_output=True, text=True, timeout=120, env=os.environ.copy(), cwd=tmp_path)
    assert (proc.returncode, proc.stdout, len(proc.stderr.splitlines())) == (2, "", 1)


def test_recall_without_any_store_says_how_to_add_one(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not a git repository, no config, no user store
    code, out, err = run(capsys, "recall", "--embedder", "none", "anything at all")
    assert "--store DIR" in one_line_error(code, out, err)


def test_a_line_the_log_writes_to_stderr_is_redacted(capsys, tmp_path):
    """stderr is an exit too: a secret a log line quotes (a path, a prompt, an error) is redacted on
    its way out, though the guard loads only with the first line."""
    import logging

    from memlane.adapters.cli import _stderr_logging

    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    _stderr_logging(verbose=False)
    logging.getLogger("memlane.test").warning("could not read %s", tmp_path / token)
    err = capsys.readouterr().err
    assert "memlane: could not read" in err and token not in err and "[redacted secret]" in err


def test_a_line_the_log_writes_to_stderr_shows_its_controls_escaped(capsys, tmp_path):
    """`memlane stats` names a note it skipped on stderr: a file name holding an escape sequence is
    written out, not run by the terminal."""
    (tmp_path / "bad\x1b]0;pwned\x07.md").write_bytes(b"\x00binary")
    (tmp_path / "ok.md").write_text("---\nname: ok\ndescription: when it is ok\ntype: project\n---\nok\n")
    main(["stats", "--store", str(tmp_path), "--embedder", "none", "--index", str(tmp_path / "i.sqlite")])
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "bad\\x1b]0;pwned\\x07.md: binary file" in err


def test_a_command_after_a_hook_in_one_process_still_logs_to_stderr(capsys):
    """A hook (or the daemon) sends memlane's lines to ``hook.log``; a later command in the same
    process takes its stderr back (the test above passed or failed by whether a hook test had run
    before it)."""
    from memlane import logs
    from memlane.adapters.cli import _stderr_logging
    from memlane.adapters.hook import _file_logging

    _file_logging()
    hook_log = logs.sink()
    assert hook_log is not None
    _stderr_logging(verbose=False)
    logs.get("memlane.test").warning("the index is locked")
    assert "memlane: the index is locked" in capsys.readouterr().err
    assert logs.sink() is None
    written = Path(hook_log.path)
    assert not written.exists() or "the index is locked" not in written.read_text(encoding="utf-8")

def test_an_error_line_and_a_notice_are_redacted(capsys, tmp_path):
    """An error may quote what the user typed (a note name, a path) and a notice the daemon's words:
    a secret in either leaves through stderr redacted."""
    from memlane.adapters.cli.common import say_once

    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    code, out, err = run(capsys, "show", "--store", str(tmp_path), "--embedder", "none", f"deploy {token}")
    assert code == 2 and "memlane: error:" in err and token not in err and "[redacted secret]" in err
    say_once(f"memlane: the daemon says {token}")
    err = capsys.readouterr().err
    assert "the daemon says [redacted secret]" in err and token not in err


NOT_UTF8_COMMANDS = [["recall", PROMPT], ["index"], ["doctor"], ["show", "user_role"], ["stats"], ["status"],
                     ["lint"], ["graph", "--dot"], ["link", "--suggest", "user_role"], ["archive", "user_role"],
                     ["add", "--name", "deploy_x", "--type", "project", "--description", "when deploying",
                      "--body", "make ship"]]


@pytest.mark.parametrize("command", NOT_UTF8_COMMANDS, ids=lambda c: c[0])
def test_a_store_whose_path_is_not_utf8_is_one_line_error(capsys, tmp_path, command):
    """A memory folder whose path holds bytes of another encoding (Latin-1's ``ü``): the index keeps
    paths as UTF-8, so each command that takes a folder says so in one line (the bytes escaped), no
    traceback; nothing is written."""
    store = build_store(tmp_path / os.fsdecode(b"notizen-\xfcbersicht"))
    before = sorted(os.listdir(store))
    line = one_line_error(*run(capsys, *command, "--store", str(store), "--embedder", "none"))
    assert "notizen-\\xfcbersicht" in line and "not UTF-8" in line and "(--store)" in line
    assert sorted(os.listdir(store)) == before


def test_a_configured_folder_whose_path_is_not_utf8_is_one_line_error(capsys, tmp_path, monkeypatch, sealed_env):
    """The same for the folders the environment and the config name: the user store
    ($XDG_DATA_HOME), a mounted folder relative to a config file, documentation to recall."""
    odd = tmp_path / os.fsdecode(b"daten-\xfc")
    monkeypatch.setenv("XDG_DATA_HOME", str(odd))
    build_store(odd / "memlane" / "user")
    assert "(user store)" in one_line_error(*run(capsys, "recall", PROMPT, "--embedder", "none"))
    monkeypatch.setenv("XDG_DATA_HOME", str(sealed_env / "data"))
    config = odd / "config.toml"
    config.write_text('[stores]\nmounts = [{path = "notes"}]\n')
    build_store(odd / "notes")
    monkeypatch.setenv("MEMLANE_CONFIG", str(config))
    assert "(config)" in one_line_error(*run(capsys, "index", "--embedder", "none"))
    monkeypatch.delenv("MEMLANE_CONFIG")
    line = one_line_error(*run(capsys, "recall", PROMPT, "--store", str(build_store(tmp_path / "plain")),
                               "--embedder", "none", "--docs", str(odd / "notes")))
    assert "the knowledge folder" in line and "daten-\\xfc" in line
    line = one_line_error(*run(capsys, "eval", str(odd), "--embedder", "none"))
    assert "the benchmark folder" in line
    line = one_line_error(*run(capsys, "team", "trial", str(odd / "trial")))
    assert "the team store's folder" in line and not (odd / "trial").exists()


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_file_name_not_utf8_is_printed_not_a_traceback(store, as_json):
    """A note whose file name holds bytes of another encoding is skipped, and said to be, and a page
    written to such a file name is named: each line shows U+FFFD for those bytes, on a stdout that
    writes only UTF-8 (a UTF-8 locale's)."""
    (store / os.fsdecode(b"caf\xe9.md")).write_text("---\nname: cafe\ndescription: when ordering coffee\n---\nx\n")
    page = store.parent / os.fsdecode(b"bild-\xfc.html")
    for command, shown in ((["index"], "caf\ufffd.md"), (["lint"], "caf\ufffd.md"),
                           (["graph", "--html", str(page)], "bild-\ufffd.html")):
        proc = subprocess.run([sys.executable, "-m", "memlane", *command, "--store", str(store),
                               "--embedder", "none", *(["--json"] if as_json else [])], capture_output=True,
                              env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"}, timeout=120)
        out = proc.stdout.decode("utf-8")
        assert proc.returncode in (0, 1) and b"Traceback" not in proc.stderr, proc.stderr
        assert shown in (json.dumps(json.loads(out), ensure_ascii=False) if as_json else out)

def test_a_warning_quoting_a_secret_is_redacted(capsys, tmp_path, monkeypatch):
    """``add``'s and ``install``'s warnings quote paths (the MEMORY.md a note's line falls past Claude
    Code's cut in, where ``memlane-hook`` resolves): a secret in one leaves through stderr redacted,
    as the error line and the notices do."""
    from memlane.adapters import install

    token = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    store = build_store(tmp_path / f"notes-{token}")
    with (store / "MEMORY.md").open("a", encoding="utf-8") as index:
        index.writelines(f"- [Old {n}](project_old_{n}.md) — an old pointer\n" for n in range(210))
    code, out, err = run(capsys, "add", "--store", str(store), "--embedder", "none", "--name", "office_plants",
                         "--type", "project", "--description", "when watering the office plants",
                         "--body", "Water the ficus on Mondays.", "--apply")
    assert code == 0 and "memlane: warning:" in err and "Claude Code never sees the note" in err
    assert token not in err and "[redacted secret]" in err
    repo = tmp_path / "repo"
    (repo / ".git" / "info").mkdir(parents=True)
    monkeypatch.chdir(repo)
    monkeypatch.setattr(install, "portable_problem", lambda name=install.PORTABLE_HOOK: f"`{name}` resolves into "
                        f"/home/me/{token}/.venv/bin/{name}; teammates without it on their PATH get a broken hook")
    for argv in (["install", "claude", "--shared"], ["install", "claude", "--shared", "--mcp"]):
        code, out, err = run(capsys, *argv)
        assert code == 0 and "memlane: warning: `memlane" in err and token not in err and "[redacted secret]" in err


def test_ctrl_c_during_index_says_what_is_kept_and_the_next_run_carries_on(tmp_path, sealed_env):
    """A Ctrl-C (SIGINT) in the middle of embedding: exit 130, and stderr says what the index
    kept and that `memlane index` carries on; the next run embeds only what is left."""
    from test_recall_never_waits import store_of

    store, index = store_of(tmp_path / "s", 80), tmp_path / "i.sqlite"
    argv = ["index", "--store", str(store), "--index", str(index), "--embedder", "fake"]
    code = ("import os, signal, sys; from memlane.embed.fake import FakeEmbedder; from memlane.adapters.cli import main\n"
            "batches = []\nreal = FakeEmbedder.embed_passages\n"
            "def embed(self, texts):\n"
            "    batches.append(len(texts))\n"
            "    if len(batches) == 2:\n"
            "        os.kill(os.getpid(), signal.SIGINT)  # the person's Ctrl-C, in the second batch\n"
            "    return real(self, texts)\n"
            "FakeEmbedder.embed_passages = embed\n"
            f"sys.exit(main({argv!r}))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=os.environ.copy())
    assert proc.returncode == 130, proc.stderr
    said = proc.stderr.strip().splitlines()[-1]
    assert "interrupted" in said and "80 note(s) in the index, 32 of them embedded" in said, proc.stderr
    assert "(48 note text(s) still to embed)" in said and "Run `memlane index` again to carry on" in said
    again = subprocess.run([sys.executable, "-m", "memlane", *argv, "--json"], capture_output=True, text=True,
                           timeout=120, env=os.environ.copy())
    assert again.returncode == 0 and json.loads(again.stdout)["embedded"] == 48, again.stderr
