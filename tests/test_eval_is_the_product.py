"""The benchmark measures the product: what ``memlane eval`` reports as delivered for the product's
mode is exactly what ``memlane recall --json`` returns for the same prompt, on one set (the demo
store and its prompts, with the deterministic test embedder); and the delivered figures are
computed as described (recall, units, relevant share, a must-not note first)."""

from __future__ import annotations

import json
import math

import pytest

from memlane.adapters.cli import main as cli
from memlane.eval.datasets import Query
from memlane.eval.runner import _delivered_metrics
from memlane.memory import demo_store_path


def test_delivered_metrics():
    query = Query(id="q", text="x", scope="s", relevant={"a", "b"}, also_ok={"c"}, must_not={"d"})
    out = _delivered_metrics(["d", "a", "c", "e"], query)
    assert out["delivered_recall"] == 0.5 and out["delivered_hit"] == 1.0
    assert out["relevant_share"] == 0.25 and out["useful_share"] == 0.5 and out["must_not_first"] == 1.0
    empty = _delivered_metrics([], query)
    assert empty["delivered_recall"] == 0.0 and math.isnan(empty["relevant_share"]) and empty["must_not_first"] == 0.0


@pytest.mark.parametrize("embedder", ["none", "fake"])
def test_eval_delivers_what_recall_returns(tmp_path, capsys, sealed_env, embedder):
    from memlane.eval import evaluate_path

    store = demo_store_path()
    prompts = store.parent / "prompts.jsonl"
    config = sealed_env / "config" / "memlane" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[index]\nhit_log = false\n")  # one recall's own use must not move the next one's recency
    mode = "full" if embedder == "fake" else "keyword-full"
    result = evaluate_path(store.parent, modes=[mode], embedder=embedder)
    records = {r["id"]: r for r in result["per_query"]}
    queries = [json.loads(line) for line in prompts.read_text().splitlines() if line.strip()]
    assert len(records) == len(queries) >= 40
    disagreements = []
    for q in queries:
        assert cli(["recall", q["prompt"], "--store", str(store), "--embedder", embedder, "--json", "--wait",
                    "--index", str(tmp_path / f"{embedder}.sqlite")]) == 0
        delivered = [r["path"].removeprefix(str(store) + "/") for r in json.loads(capsys.readouterr().out)["results"]]
        if delivered != records[q["id"]]["modes"][mode]["injected"]:
            disagreements.append((q["id"], delivered, records[q["id"]]["modes"][mode]["injected"]))
    assert disagreements == []
    overall = result["overall"][mode]
    assert overall["injected_units"] == sum(len(r["modes"][mode]["injected"]) for r in records.values()) / len(records)
