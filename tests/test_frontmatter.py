"""Frontmatter and note parsing (S1, S2), including the quirks of real agent notes."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlane.store.frontmatter import split_frontmatter
from memlane.store.note import parse_note


def note(text: str, filename: str = "some_note.md"):
    return parse_note(text, path=Path("/store") / filename, rel=filename, scope="project", store=Path("/store"))


# -- split_frontmatter: input -> (fields, body) ------------------------------------------
@pytest.mark.parametrize("text, fields, body", [
    ("---\nname: a\ntype: user\n---\nbody\n", {"name": "a", "type": "user"}, "body\n"),
    ("no frontmatter at all\n", {}, "no frontmatter at all\n"),
    ("---\nname: a\n---", {"name": "a"}, ""),  # closing fence at end of file
    ("---  \nname: a\n---\t\nbody", {"name": "a"}, "body"),  # trailing blanks on fences
    ("---\r\nname: a\r\ntype: user\r\n---\r\nbody\r\nline 2", {"name": "a", "type": "user"}, "body\r\nline 2"),
    ("\ufeff---\nname: a\n---\nbody", {"name": "a"}, "body"),  # UTF-8 BOM before the fence
    ("---\nrecall: [cache, lockfile]\n---\n", {"recall": ["cache", "lockfile"]}, ""),
    ("---\nmetadata:\n  type: feedback\n  node_type: memory\n---\nb",
     {"metadata": {"type": "feedback", "node_type": "memory"}}, "b"),
    ("text\n---\nname: a\n---\n", {}, "text\n---\nname: a\n---\n"),  # a fence not at the start is body
    ("---\n---\nbody", {}, "body"),  # an empty frontmatter block
], ids=["plain", "missing", "eof-fence", "fence-blanks", "crlf", "bom", "flow-list", "nested",
        "not-at-start", "empty-block"])
def test_split_frontmatter(text, fields, body):
    fm = split_frontmatter(text)
    assert (fm.fields, fm.body) == (fields, body)
    assert fm.problems == []


def test_description_with_unquoted_hash_keeps_its_tail():
    # project_security_allowlist.md (agent_notes_dev): a strict YAML parser cuts at " #47"
    fm = split_frontmatter("---\nname: project_security_allowlist\n"
                           "description: Security allowlist fully resolved 2026-03-24 — 0 vulns, #47 closed, #66 closed\n"
                           "type: project\n---\nbody\n")
    assert fm.fields["description"] == "Security allowlist fully resolved 2026-03-24 — 0 vulns, #47 closed, #66 closed"
    assert fm.fields["type"] == "project"


def test_a_real_yaml_comment_is_not_glued_onto_the_value():
    # valid YAML: the comment after `type:` is a comment, not part of the type
    n = note("---\nname: a\ntype: feedback  # from the review\ndescription: fixed #47 today\n---\nb")
    assert n.type == "feedback"
    assert n.description == "fixed #47 today"
    assert n.problems == []


def test_invalid_yaml_description_is_read_leniently():
    # shorthand_fla.md (agent_notes_dev): a quoted word followed by more text is a YAML error
    text = ('---\nname: Shorthand, fla\n'
            'description: "fla" is amit\'s shorthand for "fiat-lux-agents", use this expansion in all '
            'responses, never spell it out unless in docs/issues\n'
            'type: user\n---\n\n"fla" = fiat-lux-agents.\n')
    n = note(text, "shorthand_fla.md")
    assert n.name == "Shorthand, fla"
    assert n.type == "user"
    assert n.description == ('"fla" is amit\'s shorthand for "fiat-lux-agents", use this expansion in all '
                             'responses, never spell it out unless in docs/issues')
    assert n.body == '"fla" = fiat-lux-agents.'
    assert any("not valid YAML" in p for p in n.problems)


def test_lenient_reader_keeps_lists_and_nesting():
    fm = split_frontmatter('---\nname: "x\ndescription: a\nrecall: [one, "two"]\n'
                           'paths:\n  - src/*.py\n  - docs/**\nmetadata:\n  type: reference\n---\nbody')
    assert fm.problems  # the unterminated quote makes YAML refuse
    assert fm.fields["recall"] == ["one", "two"]
    assert fm.fields["paths"] == ["src/*.py", "docs/**"]
    assert fm.fields["metadata"] == {"type": "reference"}
    assert fm.body == "body"


@pytest.mark.parametrize("raw", ["- a\n- b", "just a string", "42"])
def test_frontmatter_that_is_not_a_mapping(raw):
    n = note(f"---\n{raw}\n---\nthe body\n", "user_thing.md")
    assert n.name == "user_thing"  # falls back to the file stem
    assert n.body == "the body"
    assert any("not a mapping" in p for p in n.problems)


# -- parse_note ------------------------------------------------------------------------
@pytest.mark.parametrize("frontmatter, expected", [
    ("type: feedback", "feedback"),
    ("metadata:\n  type: reference\n  node_type: memory", "reference"),
    ("metadata: {node_type: memory, type: Project, originSessionId: abc}", "project"),
    ("type: user\nmetadata:\n  type: feedback", "user"),  # top level wins
    ("", None),
], ids=["top-level", "metadata-block", "metadata-flow", "both", "none"])
def test_type_from_either_form(frontmatter, expected):
    n = note(f"---\nname: x\n{frontmatter}\n---\nbody\n")
    assert n.type == expected
    assert n.problems == []


def test_unknown_type_is_a_problem_not_an_error():
    n = note("---\nname: x\ntype: diary\n---\nb")
    assert n.type == "diary"
    assert n.problems == ["unknown type 'diary'"]


def test_missing_frontmatter_uses_the_file_stem():
    n = note("Just a paragraph with [[other_note]].\n", "project_plain.md")
    assert (n.name, n.description, n.type, n.body) == ("project_plain", "", None, "Just a paragraph with [[other_note]].")
    assert [link.target for link in n.links] == ["other_note"]
    assert n.problems == []


def test_frontmatter_that_is_never_closed_is_a_problem():
    """A header whose closing '---' is missing reads as body, and says so: lint and the logs
    report it, instead of a note that silently lost its name, description and type."""
    n = note("---\nname: deploy\ndescription: when deploying\ntype: project\n\nDeploy on Tuesdays.\n",
             "project_deploy.md")
    assert (n.name, n.description, n.type) == ("project_deploy", "", None)
    assert len(n.problems) == 1 and "not closed" in n.problems[0]
    assert note("--- a rule, not a header\nbody\n", "plain.md").problems == []


def test_bom_without_frontmatter_is_not_part_of_the_body():
    n = note("\ufeffplain body\n", "plain.md")
    assert n.body == "plain body"


def test_crlf_note():
    n = note("---\r\nname: crlf_note\r\ndescription: written on Windows\r\ntype: feedback\r\n---\r\nline 1\r\nline 2\r\n")
    assert (n.name, n.description, n.type) == ("crlf_note", "written on Windows", "feedback")
    assert n.body.splitlines() == ["line 1", "line 2"]


def test_memlane_fields():
    n = note("---\nname: x\nrecall: cache, lockfile\npaths: [src/**/*.go]\nimportance: 3\n"
             "supersedes: old_x\nstatus: Archived\nprivate: yes\nkind: Pitfall\n---\nb")
    assert n.recall == ["cache", "lockfile"]  # a comma string is a list
    assert n.paths == ["src/**/*.go"]
    assert n.importance == 1.0  # clamped to [0, 1]
    assert n.supersedes == ["old_x"]
    assert (n.status, n.private, n.kind) == ("archived", True, "pitfall")


@pytest.mark.parametrize("frontmatter, problem", [
    ("importance: high", "importance 'high' is not a number; ignored"),
    ("status: sleeping", "unknown status 'sleeping'; treated as active"),
])
def test_bad_memlane_fields_are_problems(frontmatter, problem):
    n = note(f"---\nname: x\n{frontmatter}\n---\nb")
    assert n.problems == [problem]
    assert n.importance is None and n.status is None


def test_content_hash_follows_the_text():
    a, b = note("---\nname: x\n---\nbody"), note("---\nname: x\n---\nbody!")
    assert a.content_hash == note("---\nname: x\n---\nbody").content_hash
    assert a.content_hash != b.content_hash


def test_every_real_agent_note_parses(shared_dir):
    """The public agent stores in ../shared: every note has a name, a known type and a body."""
    notes_dir = shared_dir / "bench" / "agent_notes_dev" / "notes"
    if not notes_dir.is_dir():
        pytest.skip(f"{notes_dir} is absent")
    files = [p for p in notes_dir.rglob("*.md") if p.name != "MEMORY.md"]
    assert len(files) > 20
    for path in files:
        n = parse_note(path.read_text(encoding="utf-8"), path=path, rel=path.name, scope="project",
                       store=path.parent)
        assert n.name and n.description, path
        assert n.type in ("user", "feedback", "project", "reference"), (path, n.type)
        assert n.body, path
    by_name = {p.name: p for p in files}
    allow = parse_note(by_name["project_security_allowlist.md"].read_text(encoding="utf-8"),
                       path=Path("/x.md"), rel="x.md", scope="project", store=Path("/"))
    assert "#47 closed, #66 closed" in allow.description
    fla = parse_note(by_name["shorthand_fla.md"].read_text(encoding="utf-8"),
                     path=Path("/x.md"), rel="x.md", scope="project", store=Path("/"))
    assert fla.description.startswith('"fla" is amit\'s shorthand') and fla.description.endswith("docs/issues")


def test_yaml_aliases_are_not_expanded():
    # ~500 bytes of nested anchors load as one list shared 9**9 times: every reader of the note hung
    lines = ["---", "name: bomb", "description: when deploying", 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    text = "\n".join([*lines, "recall: *a8", "paths: *a8", "---", "deploying notes body", ""])
    fm = split_frontmatter(text)
    assert fm.fields["recall"] == "*a8" and fm.fields["name"] == "bomb"
    assert any("alias" in p for p in fm.problems)
    parsed = note(text, "bomb.md")
    assert parsed.name == "bomb" and parsed.description == "when deploying" and parsed.recall == ["*a8"]


def test_a_glob_in_paths_is_no_alias():
    fm = split_frontmatter('---\nname: x\npaths: ["src/*.py", "docs/**"]\n---\nbody\n')
    assert fm.fields["paths"] == ["src/*.py", "docs/**"] and not fm.problems


@pytest.mark.parametrize("line", ["name: [broken", "name: {broken", "name: 'a]]b'", "name: 'a|b'",
                                  'name: "two\\nlines"'])
def test_a_name_no_link_can_reach_is_the_file_s(line):
    """``name: [broken`` (a YAML list left open) was the note's name: ``link --suggest`` proposed
    ``[[[broken]]`` and the hook's menu showed it; the file's name stands in, and says why."""
    note = parse_note(f"---\n{line}\ndescription: d\n---\nbody\n", path=Path("project_x.md"), rel="project_x.md",
                      scope="project", store=Path("."))
    assert note.name == "project_x"
    assert any("no name a [[link]] can spell" in p for p in note.problems)
