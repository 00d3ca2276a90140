"""Scopes (S3): user (cross-project) and project; on a conflict the narrower scope wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_note
from memlane import Memory
from memlane.store import StoreSpec, load_snapshot, scope_rank


@pytest.fixture
def scoped(tmp_path) -> tuple[Path, Path]:
    user, project = tmp_path / "user", tmp_path / "project"
    write_note(user, "deploy_style.md", """
        ---
        name: deploy_style
        description: Deploy with the blue-green script from your laptop
        type: user
        ---
        Blue-green deploys from the laptop.
        """)
    write_note(project, "deploy_style.md", """
        ---
        name: deploy_style
        description: This project deploys through the release pipeline only
        type: project
        ---
        Never deploy from a laptop here.
        """)
    write_note(user, "user_rollout.md", """
        ---
        name: user_rollout
        description: Every rollout starts with a canary; watch the canary for an hour
        type: user
        recall: [rollout]
        ---
        Rollout with canaries first.
        """)
    write_note(project, "project_rollout.md", """
        ---
        name: project_rollout
        description: In this repository a rollout goes region by region, never with canaries
        type: project
        recall: [rollout]
        ---
        Region by region.
        """)
    write_note(project, "project_plan.md", """
        ---
        name: project_plan
        description: The quarterly plan lives in the planning doc
        type: project
        ---
        See the plan. Some words about the canary bird and the weather, an hour long.
        """)
    return user, project


@pytest.fixture
def scoped_memory(scoped, tmp_path, embedder):
    user, project = scoped
    specs = [StoreSpec(user, "user"), StoreSpec(project, "project")]
    with Memory(specs, embedder=embedder, index_path=tmp_path / "i.sqlite", cwd=tmp_path) as mem:
        yield mem


def test_scope_rank_orders_narrower_higher():
    assert scope_rank("project") > scope_rank("user")
    assert scope_rank("some-mount") == scope_rank("project")


@pytest.mark.parametrize("order", ["user-first", "project-first"])
def test_same_name_project_wins_user_shadowed(scoped, order):
    user, project = scoped
    specs = [StoreSpec(user, "user"), StoreSpec(project, "project")]
    snap = load_snapshot(specs if order == "user-first" else specs[::-1])
    styles = [n for n in snap.notes if n.name == "deploy_style"]
    assert [(n.scope, n.path) for n in styles] == [("project", project / "deploy_style.md")]
    assert [(hidden.path, winner.path) for hidden, winner in snap.shadowed] == [
        (user / "deploy_style.md", project / "deploy_style.md")]


def test_shadowed_note_is_never_recalled_or_shown(scoped_memory, scoped):
    user, project = scoped
    report = scoped_memory.refresh()
    assert report["shadowed"] == [{"path": str(user / "deploy_style.md"), "by": str(project / "deploy_style.md")}]
    hits = scoped_memory.recall("how do we deploy from a laptop", k=10)
    assert [(h["name"], h["scope"]) for h in hits if h["name"] == "deploy_style"] == [("deploy_style", "project")]
    assert str(user / "deploy_style.md") not in {h["path"] for h in hits}
    assert [s["path"] for s in scoped_memory.show("deploy_style")] == [str(project / "deploy_style.md")]
    assert scoped_memory.stats()["shadowed"] == 1


@pytest.mark.parametrize("prompt", [
    "rollout",
    "how do we do a rollout?",
    "Rollout: canary for an hour?",
    "canary rollout",
])
def test_recall_keyword_conflict_only_project_note_recalled(scoped_memory, prompt):
    names = [h["name"] for h in scoped_memory.recall(prompt, k=10)]
    assert "project_rollout" in names
    assert "user_rollout" not in names


def test_user_note_without_conflict_is_recalled(scoped, tmp_path, embedder):
    user, project = scoped
    write_note(user, "user_editor.md", """
        ---
        name: user_editor
        description: The user edits with vim keybindings everywhere
        type: user
        recall: [vim]
        ---
        Vim keybindings in every editor.
        """)
    specs = [StoreSpec(user, "user"), StoreSpec(project, "project")]
    with Memory(specs, embedder=embedder, index_path=tmp_path / "i.sqlite") as mem:
        hits = mem.recall("set up vim keybindings", k=10)
    assert [(h["name"], h["scope"]) for h in hits][:1] == [("user_editor", "user")]
