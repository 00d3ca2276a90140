"""Docs that cannot drift: the README's quick start is exactly two commands, CI
runs the second one verbatim, the first one's recall really finds its note, and every
command the README shows exists."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memlane.adapters.cli import build_parser
from memlane.embed import DEFAULT_EMBEDDER, EmbedderUnavailable, load_embedder

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def quick_start() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


def test_quick_start_is_exactly_two_commands():
    commands = quick_start()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)
    assert "memlane recall --demo" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert quick_start()[1] in ci.splitlines()


def test_every_command_in_the_readme_exists():
    subcommands = set(build_parser()._subparsers._group_actions[0].choices)
    blocks = "\n".join(re.findall(r"```sh\n(.*?)```", README, re.S))
    shown = set(re.findall(r"^memlane (\w+)", blocks, re.M)) | set(re.findall(r"`memlane (\w+)[ `]", README))
    assert shown and shown <= subcommands, shown - subcommands


@pytest.mark.slow
def test_quick_start_recall_finds_the_note(tmp_path):
    """The first quick-start command, run with this interpreter: its prompt shares no word
    with the note it should recall, and the default embedder must put that note in the top 3."""
    try:
        load_embedder(DEFAULT_EMBEDDER)
    except EmbedderUnavailable as exc:
        pytest.skip(f"the default embedder is not installed: {exc}")
    command = quick_start()[0].split("&& ")[-1]
    argv = shlex.split(command)
    assert argv[0].endswith("memlane") and argv[1] == "recall"
    out = subprocess.run([sys.executable, "-m", "memlane", *argv[1:], "--json", "--index", str(tmp_path / "i.sqlite")],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    import json

    names = [r["name"] for r in json.loads(out.stdout)["results"]][:3]
    expected = re.search(r"recall finds `([\w-]+)`", README).group(1)
    assert expected in names, names


def test_the_code_cites_only_what_is_in_the_repository():
    outside = re.compile(r"seed 0\d\d|PRODUCT\.md|STYLE ?§|STYLE\.md|agents-and-mcp|reference/agents")
    cited = [(str(p.relative_to(ROOT)), n) for p in sorted((ROOT / "src").rglob("*"))
             if p.suffix in (".py", ".js", ".css", ".html", ".toml")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1) if outside.search(line)]
    assert cited == []
    assert "## Glossary of feature ids" in (ROOT / "docs" / "design.md").read_text(encoding="utf-8")


def test_every_command_has_a_description_and_an_example_and_speaks_without_codes():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    code = re.compile(r"\b[SIRAJLGDWXEPT][0-9]\b")
    for name, sub in commands.items():
        text = sub.format_help()
        assert sub.description and len(sub.description) > 40, name
        assert sub.epilog and f"memlane {name}" in sub.epilog or "memlane" in (sub.epilog or ""), name
        assert not code.search(text), (name, code.search(text).group(0))
    assert not code.search(parser.format_help())
    assert "cli_recall" not in parser.format_help() and "``" not in parser.format_help()
