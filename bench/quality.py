"""Retrieval quality on the benchmark sets, per mode (keyword / vector / hybrid / rrf).

    .venv/bin/python bench/quality.py                       # every set, the default embedder
    .venv/bin/python bench/quality.py --embedder none       # keyword only (fast)
    .venv/bin/python bench/quality.py --datasets agent_notes_dev,locomo --limit 100

Sets (from --bench-dir, default $MEMLANE_BENCH_DIR or /work/shared/bench):
- agent_notes_dev: Recall@1/3/5 per kind, must_not in the top k, "a must_not note outranks
  every relevant one", and the semantic gate (docs/design.md, "Evaluation");
- longmemeval_s_trunc500: 470 questions, one haystack each: Hit@5, Recall@5, Recall@10, NDCG@10;
- locomo: categories 1-4 (adversarial excluded), turn level, per conversation: Recall@10, NDCG@10;
- demo: memlane's demo store and prompts (when present), with the CJK slice by lang and cross_lingual.

Embeddings (passages and queries) are cached in bench/out/embeddings.sqlite: a rerun embeds
only new text. Tables are printed; every result is written to bench/out/quality.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memlane.embed import DEFAULT_EMBEDDER  # noqa: E402
from memlane.eval import evaluate_path  # noqa: E402
from memlane.eval.report import format_report, to_json  # noqa: E402

OUT = REPO / "bench" / "out"
DEMO = REPO / "src" / "memlane" / "demo"

# name -> how to run it and what to show
SETS = {
    "agent_notes_dev": {
        "path": "agent_notes_dev", "modes": ("keyword", "vector", "hybrid", "rrf"), "ks": (1, 3, 5),
        "columns": ["recall@1", "recall@3", "recall@5", "hit@5", "mrr"], "groups": ["kind", "scope"],
    },
    "longmemeval_s_trunc500": {
        "path": "longmemeval_s_trunc500", "modes": ("keyword", "vector", "hybrid", "rrf"), "ks": (5, 10),
        "columns": ["hit@5", "recall@5", "recall@10", "ndcg@10"], "groups": ["kind"],
    },
    "locomo": {
        "path": "locomo", "modes": ("keyword", "hybrid"), "ks": (5, 10), "exclude_types": ("5",),
        "columns": ["recall@10", "ndcg@10", "hit@10"], "groups": ["scope", "kind"],
    },
    "demo": {
        "path": None, "modes": ("keyword", "vector", "hybrid", "rrf"), "ks": (1, 3, 5),
        "columns": ["recall@1", "recall@3", "recall@5", "mrr"], "groups": ["kind", "lang", "cross_lingual"],
    },
}
ALIASES = {"longmemeval": "longmemeval_s_trunc500", "lme": "longmemeval_s_trunc500", "agent_notes": "agent_notes_dev"}


def _progress(name: str):
    last = [0.0]

    def report(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] > 5:
            last[0] = now
            print(f"  [{name}] {stage} {done}/{total}", file=sys.stderr, flush=True)

    return report


def _path(name: str, bench_dir: Path) -> Path | None:
    if name == "demo":
        return DEMO if (DEMO / "prompts.jsonl").is_file() and (DEMO / "store").is_dir() else None
    path = bench_dir / SETS[name]["path"]
    return path if path.is_dir() else None


def run_set(name: str, args, bench_dir: Path) -> dict | None:
    spec = SETS[name]
    path = _path(name, bench_dir)
    if path is None:
        print(f"\n=== {name}: not found, skipped\n")
        return None
    modes = tuple(args.modes.split(",")) if args.modes else spec["modes"]
    if args.embedder == "none":
        modes = ("keyword",)
    started = time.perf_counter()
    result = evaluate_path(path, embedder=args.embedder, modes=modes, ks=spec["ks"], limit=args.limit,
                           exclude_types=spec.get("exclude_types", ()), cache_path=OUT / "embeddings.sqlite",
                           group_by=[g for g in spec["groups"] if g != "scope"] + ["scope"],
                           progress=_progress(name))
    result["wall_s"] = round(time.perf_counter() - started, 2)
    print(f"\n=== {name}  ({result['wall_s']} s)\n")
    print(format_report(result, columns=spec["columns"], groups=spec["groups"]))
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default=",".join(SETS),
                        help=f"comma-separated: {', '.join(SETS)} (default: all)")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER,
                        help=f"registered embedder name, or 'none' for keyword only (default: {DEFAULT_EMBEDDER})")
    parser.add_argument("--modes", default=None, help="override the modes, e.g. keyword,hybrid")
    parser.add_argument("--limit", type=int, default=None, help="at most N queries per set, spread over the set")
    parser.add_argument("--bench-dir", default=os.environ.get("MEMLANE_BENCH_DIR", "/work/shared/bench"))
    parser.add_argument("--per-query", action="store_true", help="keep per-query records in quality.json")
    parser.add_argument("--out", default=str(OUT / "quality.json"))
    args = parser.parse_args(argv)

    names = [ALIASES.get(n.strip(), n.strip()) for n in args.datasets.split(",") if n.strip()]
    unknown = [n for n in names if n not in SETS]
    if unknown:
        parser.error(f"unknown dataset(s) {unknown}; known: {', '.join(SETS)}")
    OUT.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in names:
        result = run_set(name, args, Path(args.bench_dir))
        if result is not None:
            if not args.per_query:
                result.pop("per_query", None)
            results[name] = result
    payload = {"embedder": args.embedder, "limit": args.limit, "python": platform.python_version(),
               "machine": platform.machine(), "cpus": os.cpu_count(), "when": time.strftime("%Y-%m-%d %H:%M:%S"),
               "results": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(to_json(payload), encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
