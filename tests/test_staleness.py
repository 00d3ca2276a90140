"""G1: what a recalled note names — files, symbols, command flags and scripts, versions — is
checked against a real working tree (a git repository made here), and only this tree's own
things are judged: a library call, another repository's path or an upgrade story is left
alone."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from memlane.guards import staleness
from memlane.guards.staleness import stale_marks

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "src" / "shop").mkdir(parents=True)
    (root / "scripts").mkdir()
    (root / "src" / "shop" / "upload.py").write_text(
        "import requests\n\n\ndef resume_upload(token):\n    return requests.post('/resume', data=token)\n")
    (root / "src" / "shop" / "store.py").write_text("class Store:\n    def save_order(self):\n        pass\n")
    (root / "scripts" / "deploy.sh").write_text(
        "#!/bin/sh\ncase \"$1\" in\n  --dry-run) DRY=1 ;;\n  --region) shift ;;\nesac\n")
    (root / "package.json").write_text(json.dumps({
        "scripts": {"build": "tsc", "test:e2e": "playwright test"},
        "dependencies": {"react": "^18.2.0", "@tanstack/react-query": "5.8.1"},
        "engines": {"node": ">=20"}}))
    (root / ".nvmrc").write_text("20.11.0\n")
    (root / "pyproject.toml").write_text('[project]\nname = "shop"\nrequires-python = ">=3.11"\n'
                                         'dependencies = ["pydantic>=2.5,<3", "httpx==0.27.0"]\n')
    (root / "Makefile").write_text("build:\n\tpython -m build\n\nlint: build\n\truff check .\n")
    (root / "go.mod").write_text("module example.com/shop\n\ngo 1.22\n\nrequire github.com/gin-gonic/gin v1.9.1\n")
    subprocess.run(["git", "init", "-q", str(root)], check=False, capture_output=True)
    staleness._trees.clear()  # a fresh view of the tree for each test
    return root


def marks(text, root):
    return stale_marks(text, str(root))


def test_files_only_of_this_tree(repo):
    text = "Edit `src/shop/upload.py` and `src/shop/legacy.py`; see other-repo/docs/x.md and ~/n/todo.md."
    assert marks(text, repo) == ["`src/shop/legacy.py` not found in the working tree"]


@needs_git
def test_a_symbol_moved_or_gone_from_the_file_the_note_names(repo):
    assert marks("In `src/shop/upload.py`, `resume_upload()` keeps the token.", repo) == []
    assert marks("`src/shop/upload.py`: `save_order` writes the order.", repo) == [
        "`save_order` is no longer in `src/shop/upload.py` (it is elsewhere in the tree)"]
    assert marks("`src/shop/upload.py` calls `retry_chunk()` on every 503.", repo) == [
        "`retry_chunk` not found in `src/shop/upload.py`"]


@needs_git
def test_definitions_and_own_package_names(repo):
    assert marks("`class Store` owns the orders; `def save_order` commits.", repo) == []
    assert marks("`def refund_order` lives in the store.", repo) == ["`refund_order` not found in the code"]
    assert marks("Call `shop.store.Store` then `shop.billing.charge_card`.", repo) == [
        "`charge_card` not found in the code"]


def test_library_calls_and_words_are_not_judged(repo):
    text = ("Use `asyncio.gather` and `os.replace`, set `lock_timeout`, and never `git push --force`; "
            "see `config.yaml`, `true`, and `npm install`.")
    assert marks(text, repo) == []


def test_flags_of_the_trees_own_scripts(repo):
    assert marks("Run `./scripts/deploy.sh --dry-run --region eu` first.", repo) == []
    assert marks("Run `scripts/deploy.sh --skip-tests` when in a hurry.", repo) == [
        "`scripts/deploy.sh` has no `--skip-tests` option"]


def test_nothing_outside_the_tree_is_read(repo, tmp_path):
    # a note names what the checks read: a file beside the tree, by .. or through a symlink, is not the tree's
    (tmp_path / "secret.sh").write_text("--the-secret-flag\n")
    (repo / "scripts" / "linked.sh").symlink_to(tmp_path / "secret.sh")
    (repo / ".tool-versions").symlink_to(tmp_path / "secret.sh")
    assert marks("Run `../secret.sh --the-secret-flag` or `../secret.sh --other-flag`.", repo) == []
    assert marks("See `../secret.sh` and `../nothing/here.sh`.", repo) == []
    # a link out of the tree is no file of it, whatever it points to: its text is never read
    assert marks("Run `scripts/linked.sh --the-secret-flag` or `scripts/linked.sh --other-flag`.", repo) == [
        "`scripts/linked.sh` not found in the working tree"]
    assert staleness.tree_for(str(repo)).text(".tool-versions") is None


def test_a_folder_outside_the_tree_anchors_no_name(tmp_path):
    """A dotted name counts as the tree's own package when its folder is in the tree: ``src`` linked
    to a folder elsewhere must not tell (by a mark or none) whether that folder holds a package."""
    outside, repo = tmp_path / "outside", tmp_path / "linked-repo"
    (outside / "probepkg").mkdir(parents=True)
    repo.mkdir()
    (repo / "src").symlink_to(outside)
    assert staleness._own_package("probepkg.helper", staleness.Tree(str(repo))) is False
    (repo / "pkgdir").mkdir()
    assert staleness._own_package("pkgdir.helper", staleness.Tree(str(repo))) is True
    assert staleness.Tree(str(repo)).path("bad\0name") is None  # a NUL names no file


def test_package_scripts_and_make_targets(repo):
    assert marks("`npm run build` then `npm run test:e2e`; `make lint`.", repo) == []
    assert marks("`npm run e2e` runs the browser tests; `make release` tags it.", repo) == [
        "`npm run e2e`: package.json has no script `e2e`", "`make release`: the Makefile has no target `release`"]


@pytest.mark.parametrize("text, expected", [
    ("We are on Node 16 here.", ["node 16 named, package.json has >=20"]),
    ("React 17 class components everywhere.", ["react 17 named, package.json has ^18.2.0"]),
    ("pydantic 1.10 validators need the v1 shim.", ["pydantic 1.10 named, pyproject.toml has >=2.5,<3"]),
    ("We pinned httpx==0.26.0 for the proxy bug.", ["httpx 0.26.0 named, pyproject.toml has ==0.27.0"]),
    ("The CI image runs Go 1.20.", ["go 1.20 named, go.mod has 1.22"]),
    ("Node 20 and React 18 are current; Python 3.12 works; pydantic 2.6 is fine.", []),
    ("We moved from Node 16 to Node 20 last spring.", []),  # an upgrade story names the allowed one
    ("go 2 steps back and retry; the react 17 way is gone", ["react 17 named, package.json has ^18.2.0"]),
])
def test_versions_against_the_manifests(repo, text, expected):
    assert marks(text, repo) == expected


def test_no_tree_no_judgement(tmp_path):
    assert stale_marks("Edit `src/x.py` on Node 12.", None) == []
    assert stale_marks("Edit `src/x.py` on Node 12.", str(tmp_path / "missing")) == []


def test_the_injection_marks_them_inline(repo, tmp_path, sealed_env):
    import os
    import sys

    (repo / ".git").mkdir(exist_ok=True)
    store = tmp_path / "store"
    store.mkdir()
    (store / "feedback_deploy.md").write_text(
        "---\nname: feedback_deploy\ndescription: How to deploy the shop\ntype: feedback\n---\n"
        "Deploy with `scripts/deploy.sh --skip-tests` on Node 16.\n")
    payload = json.dumps({"session_id": "s", "transcript_path": "/none", "cwd": str(repo),
                          "hook_event_name": "UserPromptSubmit", "prompt": "how do we deploy the shop?"})
    proc = subprocess.run([sys.executable, "-m", "memlane.adapters.cli", "hook", "user-prompt-submit", "--store",
                           str(store), "--embedder", "none", "--index", str(tmp_path / "i.sqlite")],
                          input=payload, capture_output=True, text=True, timeout=120, cwd=repo, env=os.environ.copy())
    text = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert ("(may be stale: `scripts/deploy.sh` has no `--skip-tests` option; node 16 named, package.json has >=20)"
            in text)
