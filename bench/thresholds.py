"""The relevance threshold on a measured curve: what recall delivers (the product's pipeline,
``full`` mode) as ``retrieve.min_score`` moves, per set and per language.

    .venv/bin/python bench/thresholds.py                          # every set, the default embedder
    .venv/bin/python bench/thresholds.py --sets agent_notes_dev,demo --scores 0.1,0.2,0.3

For each threshold: the delivered recall (the share of relevant units recall brings), the units
it brings per prompt, their relevant share, prompts left with nothing, and a must-not unit first.
LongMemEval and LoCoMo are scored at k = 10 (their ranking depth); the notes sets at the
configured k (5). Sets come from --bench-dir (default $MEMLANE_BENCH_DIR or /work/shared/bench)
and the demo store in the package. Embeddings are cached in bench/out/embeddings.sqlite, so each
threshold after the first costs only the ranking.

The other side of the curve (``--off-topic``, on by default for the notes sets): what the same
recall brings for prompts that no note of a coding project's memory applies to — a fixed list
written here, the same for every store — per threshold, the units brought and the prompts
brought anything at all. A threshold that lets these through injects noise into every prompt.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
from memlane import records
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memlane.config import Config  # noqa: E402
from memlane.embed import DEFAULT_EMBEDDER  # noqa: E402
from memlane.eval import evaluate_path  # noqa: E402
from memlane.eval.report import format_table  # noqa: E402

OUT = REPO / "bench" / "out"
SETS = {
    "agent_notes_dev": {"path": "agent_notes_dev", "k": 5, "groups": ("kind",)},
    "demo": {"path": str(REPO / "src" / "memlane" / "demo"), "k": 5, "groups": ("kind", "lang")},
    "longmemeval": {"path": "longmemeval_s_trunc500", "k": 10, "groups": (), "limit": 200},
    "locomo": {"path": "locomo", "k": 10, "groups": (), "exclude": ("5",), "limit": 400},
}


#: prompts that no note of a coding project's memory applies to (chosen before any was measured)
OFF_TOPIC = (
    "what's a good name for a golden retriever puppy?",
    "write me a haiku about autumn leaves",
    "how many tablespoons are in a cup?",
    "summarise the plot of Pride and Prejudice in two sentences",
    "what time zone is Auckland in?",
    "recommend a board game for four players",
    "translate 'good morning' into Portuguese",
    "thanks, that's all for today",
    "what is the capital of Mongolia?",
    "how do I get red wine out of a carpet?",
    "suggest a vegetarian dinner for tonight",
    "is it going to rain this weekend?",
)


def off_topic(name: str, spec: dict, scores: list[float], args) -> None:
    """Per threshold: units recall brings for the OFF_TOPIC prompts, over each folder of the set."""
    from memlane.memory import Memory
    from memlane.recall import RecallPlan

    path = Path(spec["path"]) if Path(spec["path"]).is_absolute() else Path(args.bench_dir) / spec["path"]
    folders = sorted(p for p in (path / "notes").iterdir() if p.is_dir()) if (path / "notes").is_dir() else [path / "store"]
    rows = {score: [0, 0] for score in scores}
    work = OUT / "off_topic"
    for folder in folders:
        config = Config()
        config.retrieve = records.replace(config.retrieve, k=spec["k"])
        with Memory([folder], embedder=args.embedder, index_path=work / f"{name}-{folder.name}.sqlite", cwd=folder,
                    config=config) as memory:
            memory.prepare_for_recall(wait=True)
            for prompt in OFF_TOPIC:
                for score in scores:
                    got = memory.recall(prompt, refresh=False, record=False, plan=RecallPlan(min_score=score))
                    rows[score][0] += len(got)
                    rows[score][1] += bool(got)
    n = len(OFF_TOPIC) * len(folders)
    print(format_table(["min_score", "prompts", "units per prompt", "prompts brought anything"],
                       [[f"{s:.2f}", n, u / n, f"{a}/{n}"] for s, (u, a) in rows.items()],
                       title=f"{name}: off-topic prompts (nothing applies), as min_score moves"))
    print()


def curve(name: str, spec: dict, scores: list[float], args) -> None:
    path = Path(spec["path"]) if Path(spec["path"]).is_absolute() else Path(args.bench_dir) / spec["path"]
    if not path.exists():
        print(f"{name}: {path} not found, skipped\n")
        return
    rows, group_rows = [], []
    for score in scores:
        config = Config()
        config.retrieve = records.replace(config.retrieve, min_score=score, k=spec["k"])
        result = evaluate_path(path, modes=["full"], embedder=args.embedder, config=config,
                               cache_path=OUT / "embeddings.sqlite", limit=spec.get("limit") if not args.all else None,
                               exclude_types=spec.get("exclude", ()), ks=(spec["k"],))
        agg = result["overall"]["full"]
        first = result.get("must_not", {}).get("full", {}).get("first_delivered")
        rows.append([f"{score:.2f}", agg["n"], agg["delivered_recall"], agg["delivered_hit"], agg["injected_units"],
                     agg["relevant_share"], agg["delivered_none"],
                     f"{first['count']}/{first['prompts']}" if first else "-", round(agg["injected_tokens"])])
        for field in spec["groups"]:
            for value, by_mode in result["groups"].get(field, {}).items():
                g = by_mode["full"]
                group_rows.append([f"{field}={value} @ {score:.2f}", g["n"], g["delivered_recall"],
                                   g["injected_units"], g["relevant_share"]])
    print(format_table(["min_score", "n", "recall", "hit", "units", "relevant", "none", "must_not first", "tokens"],
                       rows, title=f"{name}: delivered at k = {spec['k']} as min_score moves"))
    if group_rows:
        group_rows.sort(key=lambda r: (r[0].split(" @ ")[0], r[0]))
        print(format_table(["group @ min_score", "n", "recall", "units", "relevant"], group_rows))
    print()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--scores", default="0.0,0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.5")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER)
    parser.add_argument("--bench-dir", default=os.environ.get("MEMLANE_BENCH_DIR", "/work/shared/bench"))
    parser.add_argument("--no-off-topic", action="store_true", help="skip the off-topic prompts")
    parser.add_argument("--all", action="store_true", help="every query of the large sets (default: a spread sample)")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    scores = [float(s) for s in args.scores.split(",")]
    for name in args.sets.split(","):
        curve(name, SETS[name], scores, args)
        if SETS[name]["k"] == 5 and not args.no_off_topic:
            off_topic(name, SETS[name], scores, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
