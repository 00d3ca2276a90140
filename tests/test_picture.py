"""``memlane graph`` (X5): the picture of memory as data, DOT, Mermaid and one HTML page.

The page is checked in a real headless browser (Debian's ``chromium``; skipped when absent):
it loads with no script error, draws every public note and no private one, and its
screenshot is kept in ``tests/artifacts/graph.png`` (not committed) for a human to look at.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import STORE_NOTES, build_store, write_note
from memlane import Memory
from memlane.adapters.cli import main
from memlane.picture import dot_string, graph_data, mermaid_label, script_json, to_dot, to_html, to_mermaid

ARTIFACTS = Path(__file__).parent / "artifacts"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
ODD_NAME = 'odd "quote" [x] ünï <b>'
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
        description: A name with quotes, brackets, unicode and markup
        type: reference
        status: dormant
        ---
        Linked from nowhere; links to [[alpha]].
        """,
}
PUBLIC = len(STORE_NOTES) + len(EXTRA_NOTES) - 1


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
    assert 'label="odd \\"quote\\" [x] ünï <b>"' in out
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
    assert '"odd #quot;quote#quot; [x] ünï #lt;b#gt;"' in out
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
    assert page.count("</script>") == 3  # the trap, the data, the script: the note's own is escaped
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)  # nothing fetched
    assert "@import" not in page and "url(http" not in page


@pytest.mark.parametrize("target", ["missing-folder/memory.html", "."])
def test_an_unwritable_page_is_a_one_line_error(picture_store, recalled, tmp_path, capsys, target):
    code, out, err = run(capsys, graph_argv(picture_store, recalled, "--html", str(tmp_path / target)))
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("memlane: error: --html ")


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
                           ("user_role", ["Alice is a backend engineer", "Not recalled yet"])):
        target = tmp_path / f"{name}.html"
        shutil.copy(page, target)
        dom, attributes = loaded(target, tmp_path / "profile", fragment=nodes[name]["id"])
        assert attributes["data-errors"] == "[]" and attributes["data-selected"] == nodes[name]["id"]
        panel = re.search(r'<section id="details">(.*?)</section>', dom, re.S).group(1)
        assert all(text in panel for text in expected), panel
        assert TOKEN not in panel


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
