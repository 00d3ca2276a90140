"""``memlane graph``: the picture of memory as data, DOT, Mermaid and one HTML page.

The page is checked in a real headless browser (Debian's ``chromium``; skipped when absent):
it loads with no script error, draws every public note and no private one, and its
screenshots are kept in ``tests/artifacts/`` (not committed) for a human to look at.

The page's three channels are checked too, each meaning one thing: colour is the type
(told apart by colour-blind readers as well), fill the lifecycle state, shape the scope;
labels are titles, the raw names stay in the details panel.
"""

from __future__ import annotations

import html
import itertools
import json
import math
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import STORE_NOTES, build_store, write_note
from memlane import Memory
from memlane.adapters.cli import main
from memlane.adapters.picture import (TYPE_COLOURS, dot_string, graph_data, mermaid_label, note_title, script_json,
                                      to_dot, to_html, to_mermaid)
from memlane.store import StoreSpec

ARTIFACTS = Path(__file__).parent / "artifacts"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
ODD_NAME = 'odd "quote" (x) ünï <b>'  # no bracket: a name no [[link]] can reach is the file's (store/note.py)
PRIVATE_MARK = "PRIVATE-MARKER-do-not-export"
PRIVATE_DESCRIPTION = "The acquisition plan nobody else may read"

EXTRA_NOTES = {
    # a constellation: three notes that all link to each other
    "project_alpha.md": """
        ---
        name: alpha
        description: Alpha service owns uploads
        type: project
        importance: 0.9
        ---
        Works with [[beta]] and [[gamma]]. The plan is in [[secret_plan]].
        """,
    "project_beta.md": """
        ---
        name: beta
        description: Beta service owns downloads
        type: project
        ---
        Works with [[alpha]] and [[gamma]]. Deploy token: TOKEN
        """.replace("TOKEN", TOKEN),
    "project_gamma.md": """
        ---
        name: gamma
        description: Gamma service owns the metadata
        type: project
        ---
        Works with [[alpha]] and [[beta]]. A body may say </script><script>alert(1)</script> and stay text.
        """,
    "secret_plan.md": f"""
        ---
        name: secret_plan
        description: {PRIVATE_DESCRIPTION}
        type: project
        private: true
        ---
        {PRIVATE_MARK}: the alpha service is for sale. See [[alpha]].
        """,
    "odd.md": f"""
        ---
        name: '{ODD_NAME}'
        description: A name with quotes, parentheses, unicode and markup
        type: reference
        status: dormant
        ---
        Linked from nowhere; links to [[alpha]].
        """,
}
PUBLIC = len(STORE_NOTES) + len(EXTRA_NOTES) - 1
USER_NOTE = """
    ---
    name: user_editor_prefs
    description: Alice edits with vim keybindings everywhere
    type: user
    ---
    Suggest vim keybindings first. See [[alpha]].
    """


@pytest.fixture
def picture_store(tmp_path) -> Path:
    root = build_store(tmp_path / "store")
    for filename, text in EXTRA_NOTES.items():
        write_note(root, filename, text)
    return root


@pytest.fixture
def recalled(picture_store, tmp_path) -> Path:
    """The store's index with a few recalls in its hit-log, one of them of the private note."""
    index = tmp_path / "index.sqlite"
    with Memory([picture_store], embedder="none", index_path=index, cwd=tmp_path) as memory:
        assert memory.recall("the acquisition plan for the alpha service", k=3)
        assert memory.recall("run the release checklist", k=2)
    return index


@pytest.fixture
def two_scopes(picture_store, tmp_path) -> dict:
    """The picture store (project scope) with a read-only user store beside it."""
    user = tmp_path / "user-store"
    write_note(user, "user_editor_prefs.md", USER_NOTE)
    specs = [StoreSpec(picture_store.resolve(), "project", label="--store"),
             StoreSpec(user.resolve(), "user", read_only=True, label="user store")]
    with Memory(specs, embedder="none", index_path=tmp_path / "scoped.sqlite", cwd=tmp_path) as memory:
        data = graph_data(memory)
    return {"data": data, "user": user.resolve(), "nodes": {n["name"]: n for n in data["nodes"]}}


def graph_argv(store: Path, index: Path, *form: str) -> list[str]:
    return ["graph", "--store", str(store), "--embedder", "none", "--index", str(index), *form]


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# -- the data --------------------------------------------------------------------------------
def test_graph_data_holds_every_public_note_and_nothing_private(picture_store, recalled, tmp_path):
    with Memory([picture_store], embedder="none", index_path=recalled, cwd=tmp_path) as memory:
        data = graph_data(memory, recent=10)
    names = {n["name"] for n in data["nodes"]}
    assert len(data["nodes"]) == PUBLIC and "secret_plan" not in names and ODD_NAME in names
    ids = {n["id"] for n in data["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in data["edges"])
    assert all(set(group) <= ids for group in data["constellations"])
    by_name = {n["name"]: n for n in data["nodes"]}
    assert sorted(by_name[x]["id"] for x in ("alpha", "beta", "gamma")) in [sorted(g) for g in data["constellations"]]
    assert set(data["hubs"]) <= ids and by_name["alpha"]["id"] in data["hubs"]
    assert {r["id"] for r in data["recent"]} <= ids and data["recent"]
    assert by_name["alpha"]["last_recall"]["q"] and by_name["alpha"]["last_recall"]["reached"]
    assert by_name["project_jenkins_deploys"]["state"] == "archived" and by_name[ODD_NAME]["state"] == "dormant"
    assert by_name["alpha"]["size"] > by_name["user_role"]["size"]  # linked-to and declared important
    text = json.dumps(data, ensure_ascii=False)
    # alpha's own text names it ("[[secret_plan]]"); nothing of the private note itself is there
    assert PRIVATE_MARK not in text and PRIVATE_DESCRIPTION not in text and TOKEN not in text
    assert "[redacted secret]" in by_name["beta"]["body"]


def test_recent_is_capped_and_newest_first(picture_store, recalled, tmp_path):
    with Memory([picture_store], embedder="none", index_path=recalled, cwd=tmp_path) as memory:
        data = graph_data(memory, recent=1)
        none = graph_data(memory, recent=0)
    assert len(data["recent"]) == 1 and none["recent"] == []
    assert data["recent"][0]["t"] == max(n["last_recall"]["t"] for n in data["nodes"] if n["last_recall"])


@pytest.mark.parametrize("title, name, shown", [
    ("CI cache keys", "feedback_ci_cache", "CI cache keys"),  # the MEMORY.md title wins
    (None, "feedback_ci_cache_keys", "ci cache keys"),
    ("", "project-jenkins-deploys", "jenkins deploys"),
    (None, "Reference_Linear__board", "Linear board"),
    (None, "release_checklist", "release checklist"),  # no type prefix to drop
    (None, "user", "user"),  # a bare type word stays
    (None, "project_", "project_"),  # nothing left after the prefix: the name
    (None, ODD_NAME, ODD_NAME),
])
def test_note_title(title, name, shown):
    assert note_title(title, name) == shown


def test_nodes_are_titled_and_keep_their_raw_names(picture_store, recalled, tmp_path):
    with Memory([picture_store], embedder="none", index_path=recalled, cwd=tmp_path) as memory:
        data = graph_data(memory)
    titles = {n["name"]: n["title"] for n in data["nodes"]}
    assert titles["feedback_ci_cache"] == "CI cache keys" and titles["release_checklist"] == "Release checklist"
    assert titles["project_jenkins_deploys"] == "jenkins deploys" and titles["user_role"] == "role"
    assert {r["title"] for r in data["recent"]} <= set(titles.values())
    dot, mermaid = to_dot(data), to_mermaid(data)
    assert 'label="CI cache keys"' in dot and 'label="jenkins deploys"' in dot
    assert 'label="feedback_ci_cache"' not in dot and "project_jenkins_deploys" in dot  # the raw name: tooltip
    assert '("CI cache keys")' in mermaid and '"feedback_ci_cache"' not in mermaid


def test_every_note_carries_its_scope_and_store(two_scopes):
    nodes, user = two_scopes["nodes"], two_scopes["user"]
    prefs, alpha = nodes["user_editor_prefs"], nodes["alpha"]
    assert prefs["scope"] == "user" and prefs["store"] == {"path": str(user), "source": "user store", "read_only": True}
    assert alpha["scope"] == "project" and alpha["store"]["source"] == "--store" and not alpha["store"]["read_only"]
    assert {n["scope"] for n in nodes.values()} == {"user", "project"}
    assert prefs["title"] == "editor prefs"


def test_dot_and_mermaid_carry_the_scope(two_scopes):
    data, prefs, alpha = two_scopes["data"], two_scopes["nodes"]["user_editor_prefs"], two_scopes["nodes"]["alpha"]
    dot_lines = {line.split('"')[1]: line for line in to_dot(data).splitlines() if re.match(r'^  "n\d+" \[', line)}
    assert 'label="editor prefs · user scope"' in dot_lines[prefs["id"]]
    assert "shape=box" in dot_lines[prefs["id"]] and 'style="rounded,filled"' in dot_lines[prefs["id"]]
    assert "user_editor_prefs · user scope" in dot_lines[prefs["id"]]  # the tooltip
    assert "shape=ellipse" in dot_lines[alpha["id"]] and "project scope" in dot_lines[alpha["id"]]
    assert 'label="alpha"' in dot_lines[alpha["id"]]  # the project scope goes unsaid in labels
    mermaid = to_mermaid(data)
    assert f'  {prefs["id"]}("editor prefs · user scope")' in mermaid.splitlines()
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tsvg"], input=to_dot(data).encode(), check=True, capture_output=True, timeout=60)


# -- the legend and the colours -------------------------------------------------------------------
def legend_list(page: str, name: str) -> str:
    return re.search(rf'<ul class="legend" id="legend-{name}">(.*?)</ul>', page, re.S).group(1)


def test_the_legend_keeps_type_state_and_scope_apart(two_scopes):
    """Colour means the type and nothing else: the state and scope entries are drawn in the
    neutral ink, each type's entry in its own colour."""
    page = to_html(two_scopes["data"])
    types, states, scopes = (legend_list(page, name) for name in ("type", "state", "scope"))
    assert re.findall(r'class="dot t-(\w+)"', types) == list(TYPE_COLOURS)
    for entries, words in ((states, ("active", "dormant", "archived")), (scopes, ("project", "user", "team"))):
        assert not re.search(r'\bt-\w+', entries), entries  # no type colour class
        assert len(re.findall(r'class="dot neutral"', entries)) == 3
        assert all(word in entries for word in words)
    assert [m for m in re.findall(r'<svg[^>]*class="(s-\w+)"', states)] == ["s-active", "s-dormant", "s-archived"]
    assert "<rect" in scopes and "<polygon" in scopes  # the shapes the graph draws
    ink = re.search(r"--ink:\s*(#[0-9a-fA-F]{6})", page).group(1)
    assert ink.lower() not in {c.lower() for c in TYPE_COLOURS.values()}
    assert not re.search(r"\.neutral\s*\{[^}]*var\(--(?:%s)\)" % "|".join(TYPE_COLOURS), page)


#: Machado, Oliveira & Fernandes (2009), full severity, applied to linear RGB
COLOUR_BLINDNESS = {
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216), (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413), (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779), (-0.078411, 0.930809, 0.147602), (0.004733, 0.691367, 0.303900)),
    "typical vision": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
}


def seen_as_lab(colour: str, matrix) -> tuple[float, float, float]:
    """``colour`` (#rrggbb) as a reader with that vision sees it, in CIE L*a*b* (D65)."""
    rgb = [(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
           for c in (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))]
    r, g, b = (min(1.0, max(0.0, sum(m * c for m, c in zip(row, rgb)))) for row in matrix)
    xyz = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b, \
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    fx, fy, fz = (t ** (1 / 3) if t > 216 / 24389 else (24389 / 27 * t + 16) / 116 for t in xyz)
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def test_type_colours_stay_apart_for_colour_blind_readers():
    """Every two type colours, and each against the neutral ink of the legend, stay at least
    15 ΔE*ab apart under simulated protanopia, deuteranopia and tritanopia (the Okabe–Ito
    palette's own closest pair, blue and bluish green for tritanopes, is 17)."""
    page = to_html({"nodes": [], "edges": [], "constellations": [], "hubs": [], "recent": [], "generated": "now",
                    "stores": [], "counts": {"notes": 0, "clusters": 0}})
    ink = re.search(r"--ink:\s*(#[0-9a-fA-F]{6})", page).group(1)
    colours = dict(TYPE_COLOURS, ink=ink)
    assert all(re.search(rf"--{kind}:{colour}", page) for kind, colour in TYPE_COLOURS.items())
    for vision, matrix in COLOUR_BLINDNESS.items():
        for (a, ca), (b, cb) in itertools.combinations(colours.items(), 2):
            distance = math.dist(seen_as_lab(ca, matrix), seen_as_lab(cb, matrix))
            assert distance >= 15, f"{a} {ca} and {b} {cb} are {distance:.1f} apart under {vision}"


# -- DOT and Mermaid ---------------------------------------------------------------------------
@pytest.mark.parametrize("text, quoted", [
    ("plain", '"plain"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("back\\slash", '"back\\\\slash"'),
    ("two\nlines", '"two\\nlines"'),
    ("[x] ünï {y}", '"[x] ünï {y}"'),
])
def test_dot_string(text, quoted):
    assert dot_string(text) == quoted


@pytest.mark.parametrize("text, label", [
    ("plain", '"plain"'),
    ('say "hi"', '"say #quot;hi#quot;"'),
    ("a #1; b", '"a #35;1#59; b"'),
    ("<b> & `x`", '"#lt;b#gt; #amp; #96;x#96;"'),
    ("[x] (y) ünï", '"[x] (y) ünï"'),
    ("two\nlines", '"two lines"'),
])
def test_mermaid_label(text, label):
    assert mermaid_label(text) == label


def test_dot_output(picture_store, recalled, capsys):
    code, out, _ = run(capsys, graph_argv(picture_store, recalled, "--dot"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "digraph memlane {" and lines[-1] == "}"
    node_lines = [line for line in lines if re.match(r'^  "n\d+" \[', line)]
    edge_lines = [line for line in lines if re.match(r'^  "n\d+" -> "n\d+" \[', line)]
    assert len(node_lines) == PUBLIC and edge_lines
    assert 'label="odd \\"quote\\" (x) ünï <b>"' in out
    assert "secret_plan" not in out and PRIVATE_MARK not in out and TOKEN not in out
    assert "subgraph cluster_1 {" in out
    if shutil.which("dot"):  # Graphviz, when installed, must accept it
        subprocess.run(["dot", "-Tsvg"], input=out.encode(), check=True, capture_output=True, timeout=60)


def test_mermaid_output(picture_store, recalled, capsys):
    code, out, _ = run(capsys, graph_argv(picture_store, recalled, "--mermaid"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "flowchart LR"
    node_lines = [line for line in lines if re.match(r'^  n\d+\(\(?"[^"]*"\)\)?$', line)]
    assert len(node_lines) == PUBLIC
    assert any(re.match(r"^  n\d+ (-->|-\.->|==>\|supersedes\||-\.-) n\d+$", line) for line in lines)
    assert '"odd #quot;quote#quot; (x) ünï #lt;b#gt;"' in out
    assert "secret_plan" not in out and PRIVATE_MARK not in out
    assert 'subgraph c1["constellation 1"]' in out and lines.count("  end") >= 1


def test_json_output(picture_store, recalled, capsys):
    code, out, _ = run(capsys, graph_argv(picture_store, recalled, "--mermaid", "--json", "--recent", "3"))
    assert code == 0
    data = json.loads(out)
    assert {"nodes", "edges", "constellations", "hubs", "recent", "mermaid"} <= set(data)
    assert len(data["nodes"]) == PUBLIC and 0 < len(data["recent"]) <= 3
    assert PRIVATE_MARK not in out and PRIVATE_DESCRIPTION not in out
    assert "secret_plan" not in {n["name"] for n in data["nodes"]}


def test_html_cli_writes_the_page(picture_store, recalled, tmp_path, capsys):
    out_file = tmp_path / "memory.html"
    code, out, _ = run(capsys, graph_argv(picture_store, recalled, "--html", str(out_file)))
    assert code == 0 and out.startswith(f"wrote {out_file}: {PUBLIC} notes")
    page = out_file.read_text(encoding="utf-8")
    assert PRIVATE_MARK not in page and PRIVATE_DESCRIPTION not in page and TOKEN not in page
    assert page.count("</script>") == 4  # the trap, the data, the layout, the script: the note's own is escaped
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)  # nothing fetched
    assert "@import" not in page and "url(http" not in page


@pytest.mark.parametrize("target", ["missing-folder/memory.html", "."])
def test_an_unwritable_page_is_a_one_line_error(picture_store, recalled, tmp_path, capsys, target):
    code, out, err = run(capsys, graph_argv(picture_store, recalled, "--html", str(tmp_path / target)))
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("memlane: error: --html ")


def test_a_page_file_missing_from_the_install_is_a_one_line_error(picture_store, recalled, tmp_path, capsys,
                                                                   monkeypatch):
    """The page's files are package data: an install built without them says so in one line."""
    from memlane.adapters.picture import formats

    bare = tmp_path / "bare-install"
    bare.mkdir()
    (bare / "page.html").write_text(formats.page_file("page.html"), encoding="utf-8")  # the script files are gone
    monkeypatch.setattr(formats.resources, "files", lambda package: bare)
    code, out, err = run(capsys, graph_argv(picture_store, recalled, "--html", str(tmp_path / "m.html")))
    assert code == 2 and out == "" and not (tmp_path / "m.html").exists()
    assert len(err.splitlines()) == 1 and "page file page.css is missing from this memlane install" in err


def test_the_page_files_are_read_only_when_a_page_is_written():
    """Importing the picture (as ``memlane graph --dot`` does) opens none of the page's files."""
    code = ("import importlib.resources as r\n"
            "def refuse(*a, **k): raise SystemExit('a page file was opened at import')\n"
            "r.files = refuse\n"
            "import memlane.adapters.picture, memlane.adapters.picture.formats\n"
            "print('imported')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout == "imported\n", result.stderr


def test_script_json_cannot_close_its_element():
    data = {"body": "</script><script>alert(1)</script> <!-- & \u2028"}
    text = script_json(data)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == data


def test_an_empty_store(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    with Memory([empty], embedder="none", index_path=tmp_path / "index.sqlite", cwd=tmp_path) as memory:
        data = graph_data(memory)
    assert data["nodes"] == data["edges"] == data["constellations"] == data["recent"] == []
    assert to_dot(data).splitlines()[0] == "digraph memlane {" and to_mermaid(data).startswith("flowchart LR")
    code, out, _ = run(capsys, graph_argv(empty, tmp_path / "index.sqlite", "--dot", "--json"))
    assert code == 0 and json.loads(out)["nodes"] == []


# -- in a real browser ------------------------------------------------------------------------------
def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no chromium binary (Debian: apt-get install chromium; .ci/run installs it)")


def browse(page: Path, profile: Path, *extra: str, fragment: str = "") -> subprocess.CompletedProcess:
    """Open ``page`` headless with no network, give its layout virtual time to finish."""
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={profile}", "--enable-logging=stderr",
            "--v=0", "--virtual-time-budget=20000", "--window-size=1500,950", *extra,
            page.resolve().as_uri() + (f"#{fragment}" if fragment else "")]
    return subprocess.run(argv, capture_output=True, text=True, timeout=180)


def loaded(page: Path, profile: Path, fragment: str = "") -> tuple[str, dict]:
    """The page's DOM after the layout, and the attributes of its <html> and <svg>."""
    result = browse(page, profile, "--dump-dom", fragment=fragment)
    assert "Uncaught" not in result.stderr, result.stderr[-2000:]
    dom = result.stdout
    html_tag = re.search(r"<html[^>]*>", dom).group(0)
    svg_tag = re.search(r'<svg id="graph"[^>]*>', dom).group(0)
    attributes = dict(re.findall(r'([\w-]+)="([^"]*)"', html_tag + svg_tag))
    return dom, attributes


def test_the_page_in_a_browser(picture_store, recalled, tmp_path, capsys):
    chromium()
    page = tmp_path / "memory.html"
    assert main(graph_argv(picture_store, recalled, "--html", str(page))) == 0
    capsys.readouterr()
    dom, attributes = loaded(page, tmp_path / "profile")
    assert attributes["data-errors"] == "[]", attributes["data-errors"]
    assert attributes["data-status"] == "ready"
    assert attributes["data-nodes"] == str(PUBLIC) and len(re.findall(r'<g class="node ', dom)) == PUBLIC
    assert int(attributes["data-constellations"]) >= 1 and 'class="hull"' in dom
    assert int(attributes["data-recent"]) > 0 and 'class="ring"' in dom
    assert 'data-name="alpha"' in dom and 'data-state="archived"' in dom and 'data-state="dormant"' in dom
    labels = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>",
                                                    re.search(r'<g id="labels"[^>]*>(.*?)</g>', dom, re.S).group(1))]
    assert len(labels) == PUBLIC  # few notes: every one is named
    assert "CI cache keys" in labels and "jenkins deploys" in labels and ODD_NAME in labels
    assert not {"feedback_ci_cache", "project_jenkins_deploys", "user_role"} & {t.split(" ⟲")[0] for t in labels}
    assert re.search(r'<g class="node t-feedback s-active scope-disc[^"]*" data-id="n\d+" data-name="feedback_ci_cache" '
                     r'data-title="CI cache keys"', dom)
    assert 'data-name="secret_plan"' not in dom and PRIVATE_MARK not in dom and TOKEN not in dom
    assert "<script>alert(1)" not in dom.split('id="memlane-data"')[0]  # note text never became markup

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "graph.png"
    shot.unlink(missing_ok=True)
    result = browse(page, tmp_path / "profile", f"--screenshot={shot}")
    assert "Uncaught" not in result.stderr, result.stderr[-2000:]
    assert shot.is_file() and shot.stat().st_size > 20_000  # a drawn picture, not a blank page
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_linked_note_opens_with_its_text_and_why(picture_store, recalled, tmp_path, capsys):
    """``page.html#<id>`` selects that note: the side panel shows its redacted text and its
    last recall (what a click shows)."""
    chromium()
    page = tmp_path / "memory.html"
    assert main(graph_argv(picture_store, recalled, "--html", str(page), "--json")) == 0
    nodes = {n["name"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    for name, expected in (("beta", ["Beta service owns downloads", "[redacted secret]", "Last recalled", "constellation"]),
                           ("user_role", ["Alice is a backend engineer", "Not recalled yet", "<h2>role</h2>",
                                          '<dd class="where-name">user_role</dd>', "project scope"])):
        target = tmp_path / f"{name}.html"
        shutil.copy(page, target)
        dom, attributes = loaded(target, tmp_path / "profile", fragment=nodes[name]["id"])
        assert attributes["data-errors"] == "[]" and attributes["data-selected"] == nodes[name]["id"]
        panel = re.search(r'<section id="details">(.*?)</section>', dom, re.S).group(1)
        assert all(text in panel for text in expected), panel
        assert TOKEN not in panel


def test_the_scope_in_a_browser(two_scopes, tmp_path):
    """A user-scope note is drawn as a rounded square (a project note stays a disc), its panel
    names its scope and store, and the legend lists both stores."""
    chromium()
    data, prefs = two_scopes["data"], two_scopes["nodes"]["user_editor_prefs"]
    page = tmp_path / "scoped.html"
    page.write_text(to_html(data), encoding="utf-8")
    dom, attributes = loaded(page, tmp_path / "profile", fragment=prefs["id"])
    assert attributes["data-errors"] == "[]" and attributes["data-selected"] == prefs["id"]
    node = re.search(rf'<g class="node [^"]*" data-id="{prefs["id"]}"[^>]*>(.*?)</g>', dom, re.S)
    assert "scope-square" in node.group(0) and 'data-scope="user"' in node.group(0)
    assert re.search(r'<rect class="dot t-user"', node.group(1)) and "<circle" not in node.group(1)
    discs = re.findall(r'<g class="node [^"]*scope-disc[^"]*"[^>]*>\s*(?:<circle class="ring"[^>]*>(?:</circle>)?)?'
                       r'<circle class="dot', dom)
    assert len(discs) == PUBLIC  # every project note
    panel = re.search(r'<section id="details">(.*?)</section>', dom, re.S).group(1)
    assert "<h2>editor prefs</h2>" in panel and '<dd class="where-name">user_editor_prefs</dd>' in panel
    assert ">user scope<" in panel and f"{two_scopes['user']} · from user store · read-only" in panel
    stores = re.search(r'<ul id="store-list">(.*?)</ul>', dom, re.S).group(1)
    assert "user scope · 1 note · from user store · read-only" in stores
    assert f"project scope · {PUBLIC} notes · from --store" in stores

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "graph-scopes.png"
    shot.unlink(missing_ok=True)
    browse(page, tmp_path / "profile", f"--screenshot={shot}", fragment=prefs["id"])
    assert shot.is_file() and shot.stat().st_size > 20_000


def test_an_empty_page_in_a_browser(tmp_path, capsys):
    chromium()
    empty = tmp_path / "empty"
    empty.mkdir()
    page = tmp_path / "empty.html"
    assert main(graph_argv(empty, tmp_path / "index.sqlite", "--html", str(page))) == 0
    capsys.readouterr()
    dom, attributes = loaded(page, tmp_path / "profile")
    assert attributes["data-errors"] == "[]" and attributes["data-status"] == "ready"
    assert attributes["data-nodes"] == "0" and re.search(r'<div id="empty">', dom)


def synthetic(n: int) -> dict:
    """A graph of ``n`` notes in clusters of 20 (a ring each, plus a hub), some recalled."""
    nodes = [{"id": f"n{i}", "name": f"note-{i}", "title": f"Note {i}", "type": ["user", "feedback", "project",
              "reference", "other"][i % 5], "scope": "project", "state": ["active", "active", "dormant", "archived"][i % 4],
              "kind": None, "importance": None, "pagerank": 1 / n, "in_degree": 1, "cluster": i // 20, "uses": 0,
              "path": f"note-{i}.md", "description": "", "body": "text", "size": (i % 20 == 0) * 0.8 + 0.1,
              "hub": i % 100 == 0, "last_recall": None} for i in range(n)]
    edges = [{"source": f"n{i}", "target": f"n{i + 1 if (i + 1) % 20 else i - 19}", "kind": "wiki"} for i in range(n)]
    edges += [{"source": f"n{i}", "target": f"n{i - i % 20}", "kind": "mention"} for i in range(n) if i % 20]
    recent = [{"id": f"n{i}", "name": f"note-{i}", "t": 0, "time": "2026-01-01T00:00:00Z", "q": "ab", "layer": "recall",
               "rank": 1, "reached": "seed"} for i in range(0, n, 97)]
    return {"generated": "now", "stores": [], "nodes": nodes, "edges": edges, "hubs": [f"n{i}" for i in range(0, n, 100)],
            "constellations": [[f"n{i}", f"n{i + 1}", f"n{i + 2}"] for i in range(0, n, 200)], "recent": recent,
            "counts": {"notes": n, "clusters": n // 20}}


@pytest.mark.slow
def test_two_thousand_notes_lay_out_without_freezing(tmp_path):
    chromium()
    page = tmp_path / "big.html"
    page.write_text(to_html(synthetic(2000)), encoding="utf-8")
    started = time.monotonic()
    _, attributes = loaded(page, tmp_path / "profile")
    assert attributes["data-errors"] == "[]" and attributes["data-status"] == "ready"
    assert attributes["data-nodes"] == "2000" and int(attributes["data-iterations"]) > 0
    assert time.monotonic() - started < 120
