"""The link graph (A1, S5): typed edges resolved the ways real stores write links; a link to
a note that does not exist is a future-write marker, never an edge."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHARED, write_note
from memlane import Memory
from memlane.associate import resolve_links


def unit(uid: int, name: str, path: str, links=(), supersedes=()) -> dict:
    return {"id": uid, "name": name, "path": path, "scope": "project",
            "meta": {"links": [list(l) for l in links], "supersedes": list(supersedes)}}


def test_targets_resolve_by_name_stem_and_prefixless_stem():
    units = [
        unit(1, "close-after-smoke", "/m/feedback_close_after_smoke.md",
             links=[("feedback_gates_pattern", "wiki"), ("push-without-asking", "wiki"),
                    ("reference_xray_artifacts.md", "markdown"), ("missing_note", "wiki"),
                    ("close_after_smoke", "wiki")]),  # a self-link: dropped
        unit(2, "gates-pattern", "/m/feedback_gates_pattern.md", links=[("close after smoke", "wiki")]),
        unit(3, "Push without asking", "/m/feedback_push_without_asking.md"),
        unit(4, "artifacts", "/m/reference_xray_artifacts.md", links=[("see feedback_gates_pattern.md", "mention")]),
        unit(5, "walg", "/m/reference_backups_walg.md", supersedes=["backups-pgdump"]),
        unit(6, "backups-pgdump", "/m/reference_backups_pgdump.md"),
    ]
    graph = resolve_links(units)
    edges = {(e.src, e.dst, e.kind) for e in graph.edges}
    assert edges == {(1, 2, "wiki"), (1, 3, "wiki"), (1, 4, "markdown"), (2, 1, "wiki"), (5, 6, "supersedes")}
    # only a [[link]] is a future-write marker; an unresolved mention is no edge and no marker
    assert sorted(graph.missing) == [(1, "missing_note", "wiki")]


def test_an_ambiguous_target_prefers_the_linking_notes_folder():
    units = [unit(1, "a", "/one/a.md", links=[("b", "wiki")]), unit(2, "b", "/one/b.md"), unit(3, "b", "/two/b.md")]
    assert [(e.src, e.dst) for e in resolve_links(units).edges] == [(1, 2)]


def test_the_index_keeps_the_graph_in_step_with_the_files(tmp_path):
    store = tmp_path / "mem"
    write_note(store, "feedback_a.md", "---\nname: a\ndescription: x\n---\nsee [[b]] and [[not-written-yet]]\n")
    write_note(store, "feedback_b.md", "---\nname: b\ndescription: y\n---\nback to [[a]]\n")  # a cycle
    with Memory([store], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        mem.refresh()
        ids = {r["name"]: r["id"] for r in (mem.index.find("a") + mem.index.find("b"))}
        assert mem.index.neighbours(ids["a"]) == [(ids["b"], "wiki", "out"), (ids["b"], "wiki", "in")]
        assert mem.index.missing_links() == [(ids["a"], "not-written-yet", "wiki")]
        (store / "feedback_b.md").unlink()
        mem.refresh()
        assert mem.index.neighbours(ids["a"]) == []
        assert sorted(t for _, t, _ in mem.index.missing_links()) == ["b", "not-written-yet"]


@pytest.mark.skipif(not (SHARED / "bench" / "agent_notes_dev").is_dir(), reason="needs ../shared/bench")
@pytest.mark.parametrize("folder, kind, count", [
    ("kmcd__xray/.claude/memory", "wiki", 20),  # PROVENANCE.md: 20 resolved wikilink edges
    ("4444J99__portfolio/.claude/memory", "mention", 5),  # and 5 filename-citation edges
])
def test_agent_notes_dev_edges_match_provenance(tmp_path, folder, kind, count):
    root = SHARED / "bench" / "agent_notes_dev" / "notes" / folder
    with Memory([root], embedder="none", index_path=tmp_path / "i.sqlite") as mem:
        mem.refresh()
        rows = mem.index.conn.execute(
            "SELECT s.path, d.path FROM edges e JOIN units s ON s.id = e.src JOIN units d ON d.id = e.dst"
            " WHERE e.kind = ?", (kind,)).fetchall()
    pairs = {(Path(a).stem, Path(b).stem) for a, b in rows}
    assert len(pairs) == count, sorted(pairs)
    if kind == "wiki":
        assert ("feedback_close_after_smoke", "reference_xray_artifacts") in pairs
        assert ("reference_github_bot_bypass_personal_repo", "project_xray_baseline") in pairs


# -- spreading activation (A2, A6) -------------------------------------------------------------
from memlane.associate import SpreadSettings, spread_activation  # noqa: E402
from memlane.retrieve import Hit, Legs  # noqa: E402


def hit(uid: int, score: float) -> Hit:
    return Hit(uid, score, Legs(fused=score))


def test_one_hop_from_seeds_to_plausible_neighbours_only():
    edges = {1: [(2, "wiki", "out"), (3, "wiki", "out")], 2: [(1, "wiki", "in"), (4, "wiki", "out")],
             3: [(1, "wiki", "in")], 4: [(2, "wiki", "in")]}
    hits = [hit(1, 0.8), hit(2, 0.2), hit(3, 0.05), hit(4, 0.25), hit(5, 0.4)]
    out = spread_activation(hits, lambda u: edges.get(u, []),
                            SpreadSettings(decay=0.5, fan=0.0, blend=1.0, admit=0.5, min_score=0.3),
                            names={1: "seed-note"})
    score = {h.unit_id: round(h.score, 3) for h in out}
    assert score[2] == round(0.2 + 0.8 * 0.5, 3)  # plausible (0.2 >= 0.15): admitted, blended
    assert score[3] == 0.05  # not plausibly relevant on its own: never admitted
    assert score[4] == 0.25  # two hops from the seed through a non-seed: activation does not travel on
    assert score[5] == 0.4  # a seed without links keeps its relevance
    assert [h.unit_id for h in out][:2] == [1, 2]
    by_id = {h.unit_id: h for h in out}
    assert by_id[1].path == ["seed"] and by_id[2].path[0].startswith("via [[seed-note]] (seed 0.800)")
    assert by_id[2].activation == pytest.approx(0.4)


def test_fan_effect_divides_what_a_node_sends():
    star = {1: [(n, "wiki", "out") for n in range(2, 12)]}
    single = {1: [(2, "wiki", "out")]}
    settings = SpreadSettings(decay=0.5, fan=1.0, min_score=0.3)
    from_star = {h.unit_id: h.score for h in spread_activation([hit(1, 0.8)] + [hit(n, 0.2) for n in range(2, 12)],
                                                               lambda u: star.get(u, []), settings)}
    from_single = {h.unit_id: h.score for h in spread_activation([hit(1, 0.8), hit(2, 0.2)],
                                                                 lambda u: single.get(u, []), settings)}
    assert from_single[2] == pytest.approx(0.2 + 0.4)
    assert from_star[2] == pytest.approx(0.2 + 0.4 / 10)  # ten links share the same activation


def test_an_associate_stays_below_the_seed_that_activated_it():
    edges = {1: [(2, "wiki", "out")], 2: [(1, "wiki", "in")]}
    out = spread_activation([hit(1, 0.6), hit(2, 0.55)], lambda u: edges.get(u, []),
                            SpreadSettings(decay=1.0, fan=0.0, blend=1.0, min_score=0.3, margin=0.05))
    assert [h.unit_id for h in out] == [1, 2]
    assert out[1].score == pytest.approx(0.55)  # 0.55 + 0.6 capped at max(own, 0.6 - 0.05)


def test_a_strong_neighbour_spreads_once_more_with_the_whole_path():
    # a -> b -> c: b is a seed itself, so what it received from a travels one more hop to c
    edges = {1: [(2, "wiki", "out")], 2: [(1, "wiki", "in"), (3, "wiki", "out")], 3: [(2, "wiki", "in")]}
    names = {1: "a", 2: "b", 3: "c"}
    settings = SpreadSettings(decay=0.5, fan=0.0, blend=1.0, min_score=0.3, margin=0.0)
    out = {h.unit_id: h for h in spread_activation([hit(1, 0.9), hit(2, 0.35), hit(3, 0.16)],
                                                   lambda u: edges.get(u, []), settings, names)}
    # c hears from b directly (0.35 * 0.5) and from a through b (0.9 * 0.5 * 0.5 = 0.225): the stronger wins
    assert out[3].score == pytest.approx(0.16 + 0.225)
    assert out[3].path == ["via [[a]] (seed 0.900) → [[b]] (wiki 0.450) → here (wiki 0.225)"]


def test_seeds_do_not_gain_from_each_other_when_told_not_to():
    edges = {1: [(2, "wiki", "out")], 2: [(1, "wiki", "in")]}
    out = {h.unit_id: h.score for h in spread_activation(
        [hit(1, 0.9), hit(2, 0.4)], lambda u: edges.get(u, []), SpreadSettings(boost_seeds=False, min_score=0.3))}
    assert out == {1: 0.9, 2: 0.4}


def test_without_edges_spreading_changes_nothing():
    hits = [hit(1, 0.9), hit(2, 0.5), hit(3, 0.1)]
    out = spread_activation(hits, lambda u: [], SpreadSettings())
    assert [(h.unit_id, h.score) for h in out] == [(1, 0.9), (2, 0.5), (3, 0.1)]
