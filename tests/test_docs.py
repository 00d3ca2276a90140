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
    claim = re.search(r"recall finds `([\w-]+)` in (first|second|third)\s+place", README)
    assert claim, "the README says which note the quick start finds, and where"
    expected, place = claim.group(1), ["first", "second", "third"].index(claim.group(2))
    assert names.index(expected) == place, names
    behind = re.search(r"It comes behind\s+`([\w-]+)`", README)
    assert place == 0 or (behind and names[0] == behind.group(1)), names


def test_the_code_cites_only_what_is_in_the_repository():
    outside = re.compile(r"seed 0\d\d|PRODUCT\.md|STYLE ?§|STYLE\.md|agents-and-mcp|reference/agents|(?<!~)/work/|\.\./shared")
    cited = [(str(p.relative_to(ROOT)), n) for p in sorted((ROOT / "src").rglob("*"))
             if p.suffix in (".py", ".js", ".css", ".html", ".toml")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1) if outside.search(line)]
    assert cited == []
    headings = {re.sub(r"`", "", h) for h in re.findall(r"^#+ (.+)$", README, re.M)}
    sections = [(str(p.relative_to(ROOT)), section) for p in sorted((ROOT / "src").rglob("*.py"))
                for section in re.findall(r'README "([^"]+)"', p.read_text(encoding="utf-8"))]
    assert [(path, section) for path, section in sections if section not in headings] == []
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


DOCS = sorted((ROOT / "docs").glob("*.md"))


def test_every_bench_and_helper_script_compiles_on_this_python():
    """The docs cite bench/ and scripts/ by name; each must at least parse on the oldest Python
    memlane supports (3.11: no nested quotes of the same kind in an f-string)."""
    for path in sorted([*(ROOT / "bench").glob("*.py"), *(ROOT / "scripts").glob("*.py")]):
        compile(path.read_text(encoding="utf-8"), str(path), "exec")


def test_the_readme_and_docs_cite_only_what_is_in_the_repository():
    outside = re.compile(r"seed 0\d\d|PRODUCT\.md|STYLE\.md|agents-and-mcp|\.\./shared|\.\./\.library")
    for path in [ROOT / "README.md", *DOCS]:
        text = path.read_text(encoding="utf-8")
        assert not outside.search(text), (path.name, outside.search(text).group(0))
        prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", prose):  # every relative link resolves
            if not target.startswith(("http://", "https://")):
                assert (path.parent / target).exists(), (path.name, target)
        for cited in re.findall(r"`((?:src/memlane|scripts|bench|tests|docs)/[\w./-]+)`", text):  # and every file named
            assert (ROOT / cited).exists(), (path.name, cited)


def test_the_readme_for_users_speaks_without_feature_codes():
    code = re.compile(r"(?<![\w-])[SIRAJLGDWXEPT][0-9](?![\w-])")
    assert not code.search(README), code.search(README).group(0)


def test_the_dependency_table_matches_the_extras():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    table = README.split("## Dependencies, and why each", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("dependency", "---"):
            for name in cells[0].split(", "):
                rows[name.lower()] = set(re.findall(r"`(\w+)`", cells[1]))
    def bare(requirement):
        return re.split(r"[<>=\[ ;]", requirement, 1)[0].lower()
    for dep in project["dependencies"]:
        assert rows.get(bare(dep)) == set(), dep  # always installed
    for extra, deps in extras.items():
        for dep in deps:
            if bare(dep) == "memlane":
                continue
            assert extra in rows.get(bare(dep), set()), (extra, dep)
    listed = {name for name, where in rows.items() for extra in where}
    used = {bare(d) for deps in extras.values() for d in deps} | {bare(d) for d in project["dependencies"]}
    assert listed <= used, listed - used  # no row for something no extra installs


def test_the_configuration_doc_lists_every_setting_with_its_default():
    from memlane import records
    import enum

    from memlane.config import DEFAULT_CONFIG_TOML, Config

    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")

    def walk(obj, prefix=""):
        for field in records.fields(obj):
            value = getattr(obj, field.name)
            if records.is_dataclass(value):
                yield from walk(value, f"{prefix}{field.name}.")
            elif prefix:
                yield f"{prefix}{field.name}", value.value if isinstance(value, enum.Enum) else value

    for key, value in walk(Config()):
        row = re.search(rf"^\| `{re.escape(key)}` \| `([^`]*)` \|", doc, re.M)
        assert row, f"docs/configuration.md does not list {key}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert float(row.group(1)) == float(value), (key, row.group(1), value)
    assert DEFAULT_CONFIG_TOML.rstrip() in doc


def test_every_anchor_a_doc_links_to_exists():
    def anchors(text):
        return {re.sub(r"[^\w\- ]", "", h.lower()).strip().replace(" ", "-") for h in re.findall(r"^#+ (.+)$", text, re.M)}

    for path in [ROOT / "README.md", *DOCS]:
        for target, anchor in re.findall(r"\]\(([^)#]*)#([^)]+)\)", path.read_text(encoding="utf-8")):
            dest = (path.parent / target) if target else path
            assert anchor in anchors(dest.read_text(encoding="utf-8")), (path.name, target, anchor)
