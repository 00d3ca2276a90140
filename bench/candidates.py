"""Candidates for intent prompts (issue 15 item 6): what recall delivers and how the full ranking
looks, on every shared set, for the configuration as it is and with settings changed.

    .venv/bin/python bench/candidates.py                                  # agent_notes_dev + demo
    .venv/bin/python bench/candidates.py --sets all --limit-lme 200 --limit-locomo 400
    .venv/bin/python bench/candidates.py --set retrieve.min_score=0.25 --label lower-floor
    .venv/bin/python bench/candidates.py --holdout kmcd/xray,aabtzu/libertas-travel

Printed per set, for the full pipeline (what ``memlane recall`` runs):
- **delivered**: the share of each prompt's relevant notes that recall returns as configured
  (threshold, ``k``, constellations), per kind, language and, with ``--holdout``, per half of
  agent_notes_dev; keyword traps whose first delivered note is a must_not note;
- **ranked** (the diagnostic): Recall@5/10/20 of the full ranking, thresholds off;
- LongMemEval: Hit@5 and Recall@10; LoCoMo (categories 1-4): Recall@10;
- **foreign prompts**, the over-recall check: every agent_notes_dev prompt asked of the other
  three repos' stores and of the demo store, every demo prompt of each agent_notes_dev store.
  These sets have no prompt without a relevant note, so lowering a threshold always looks free
  on them; a foreign prompt mostly has nothing to find (a few rules, such as commit style, exist
  in several stores), so the units it gets are the price of a looser recall.

Embeddings come from memlane's evaluation cache (~/.cache/memlane/eval/embeddings.sqlite). The
figures are also written as JSON to ``--out`` (default bench/out/candidates-<label>.json).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from associative import _bench_dir, _config  # noqa: E402  (bench/: the sets' folder and --set overrides, read alike)
from memlane.config import Config, cache_home  # noqa: E402
from memlane.eval import Dataset, Query, evaluate_path, load_dataset, run_eval  # noqa: E402

OUT = REPO / "bench" / "out"
DEMO = REPO / "src" / "memlane" / "demo"
KS = (1, 5, 10, 20)


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def _delivered(record: dict, mode: str) -> float:
    injected = record["modes"][mode]["injected"]
    relevant = record["relevant"]
    return sum(uid in relevant for uid in injected) / len(relevant) if relevant else 0.0


def _must_not_first(record: dict, mode: str) -> bool:
    injected = record["modes"][mode]["injected"]
    return bool(injected) and injected[0] in record["must_not"]


def _slice(records: list[dict], mode: str) -> dict:
    out = {"n": len(records), "delivered": _mean(_delivered(r, mode) for r in records),
           "units": _mean(len(r["modes"][mode]["injected"]) for r in records)}
    for k in KS:
        out[f"R@{k}"] = _mean(r["modes"][mode]["metrics"][f"recall@{k}"] for r in records)
    out["MRR"] = _mean(r["modes"][mode]["metrics"]["mrr"] for r in records)
    return out


def summarise(result: dict, mode: str, holdout: set[str]) -> dict:
    """Delivered and ranked figures overall and per kind, language and held-out half."""
    records = result["per_query"]
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        groups["all"].append(record)
        if record["kind"]:
            groups[f"kind={record['kind']}"].append(record)
        if "lang" in record["tags"]:
            groups[f"lang={record['tags']['lang']}"].append(record)
        if holdout:
            half = "held-out" if record["scope"] in holdout else "tuned"
            groups[f"{half}"].append(record)
            if record["kind"] in ("intent", "associative"):
                groups[f"{half} kind={record['kind']}"].append(record)
    out = {name: _slice(rows, mode) for name, rows in sorted(groups.items())}
    traps = [r for r in records if r["must_not"]]
    if traps:
        out["must_not_first"] = {"count": sum(_must_not_first(r, mode) for r in traps), "prompts": len(traps)}
    return out


def _run(path: Path, config: Config, *, limit: int | None = None, exclude: tuple[str, ...] = ()) -> dict:
    return evaluate_path(path, modes=("full",), ks=KS, limit=limit, config=config, exclude_types=exclude)


def foreign_dataset(notes: Path, demo: Path) -> Dataset:
    """Prompts asked of stores they were not written for (see the module's docstring)."""
    own, other = load_dataset(notes), load_dataset(demo)
    stores = dict(own.units) | {"demo": next(iter(other.units.values()))}
    asked = [(q, scope) for q in own.queries for scope in stores if scope != q.scope]
    asked += [(q, s) for q in other.queries for s in own.units]
    queries = [Query(f"{q.id}@{scope}", q.text, scope, q.kind, relevant={"-": 1.0}) for q, scope in asked]
    return Dataset("foreign", "notes", stores, queries)


def _foreign(notes: Path, config: Config) -> dict:
    result = run_eval(foreign_dataset(notes, DEMO), modes=("full",), ks=(5,), embedder=config.embed.model,
                      cache_path=cache_home() / "eval" / "embeddings.sqlite", config=config)
    units = [len(r["modes"]["full"]["injected"]) for r in result["per_query"]]
    row = {"n": len(units), "units": _mean(units), "any": _mean(u > 0 for u in units)}
    print(f"\nforeign prompts  n {row['n']}  units delivered per prompt {row['units']:.2f}  "
          f"prompts delivered anything {row['any']:.3f}")
    return row


def _print_set(name: str, summary: dict, seconds: float, p50: float) -> None:
    print(f"\n{name}  ({seconds:.0f} s, recall p50 {p50:.1f} ms)")
    print(f"  {'slice':34s} {'n':>4s} {'deliv':>6s} {'R@1':>6s} {'R@5':>6s} {'R@10':>6s} {'R@20':>6s} {'MRR':>6s} "
          f"{'units':>5s}")
    for key, row in summary.items():
        if key == "must_not_first":
            continue
        print(f"  {key:34s} {row['n']:4d} {row['delivered']:6.3f} {row['R@1']:6.3f} {row['R@5']:6.3f} "
              f"{row['R@10']:6.3f} {row['R@20']:6.3f} {row['MRR']:6.3f} {row['units']:5.2f}")
    if "must_not_first" in summary:
        mn = summary["must_not_first"]
        print(f"  must_not delivered first: {mn['count']} of {mn['prompts']}")


def _corpus_line(name: str, result: dict, seconds: float) -> dict:
    o = result["overall"]["full"]
    row = {"n": o["n"], "Hit@5": o["hit@5"], "R@5": o["recall@5"], "R@10": o["recall@10"],
           "R@20": o["recall@20"], "NDCG@10": o["ndcg@10"],
           "delivered": _mean(_delivered(r, "full") for r in result["per_query"]),
           "p50_ms": result["latency_ms"]["full"]["p50"]}
    print(f"\n{name}  ({seconds:.0f} s)  n {row['n']}  Hit@5 {row['Hit@5']:.3f}  R@5 {row['R@5']:.3f}  "
          f"R@10 {row['R@10']:.3f}  R@20 {row['R@20']:.3f}  NDCG@10 {row['NDCG@10']:.3f}  "
          f"delivered {row['delivered']:.3f}  p50 {row['p50_ms']:.1f} ms")
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="notes,demo,foreign",
                        help="notes, demo, foreign, longmemeval, locomo, or all")
    parser.add_argument("--bench-dir", help="where the shared sets are (default $MEMLANE_BENCH_DIR or /work/shared/bench)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="a setting to change")
    parser.add_argument("--limit-lme", type=int, help="LongMemEval queries (default all)")
    parser.add_argument("--limit-locomo", type=int, help="LoCoMo queries (default all of categories 1-4)")
    parser.add_argument("--holdout", default="", help="agent_notes_dev repos reported apart (comma list)")
    parser.add_argument("--label", default="current")
    parser.add_argument("--out", help="JSON file to write (default bench/out/candidates-<label>.json)")
    args = parser.parse_args(argv)
    sets = {"notes", "demo", "foreign", "longmemeval", "locomo"} if args.sets == "all" else set(args.sets.split(","))
    bench, config, holdout = _bench_dir(args.bench_dir), _config(args.set), {s for s in args.holdout.split(",") if s}
    print(f"label {args.label}; settings changed: {', '.join(args.set) or 'none'}")
    report: dict = {"label": args.label, "settings": args.set, "holdout": sorted(holdout), "sets": {}}
    runs = [("agent_notes_dev", "notes", bench / "agent_notes_dev", {}),
            ("demo", "demo", DEMO, {}),
            ("longmemeval_s_trunc500", "longmemeval", bench / "longmemeval_s_trunc500", {"limit": args.limit_lme}),
            ("locomo", "locomo", bench / "locomo", {"limit": args.limit_locomo, "exclude": ("5",)})]
    for name, key, path, extra in runs:
        if key not in sets:
            continue
        started = time.perf_counter()
        result = _run(path, config, **extra)
        seconds = time.perf_counter() - started
        if key in ("notes", "demo"):
            summary = summarise(result, "full", holdout if key == "notes" else set())
            _print_set(name, summary, seconds, result["latency_ms"]["full"]["p50"])
            report["sets"][name] = {"summary": summary,
                                    "per_query": {r["id"]: {"injected": r["modes"]["full"]["injected"],
                                                            "top": r["modes"]["full"]["top"][:10]}
                                                  for r in result["per_query"]}}
        else:
            report["sets"][name] = {"summary": _corpus_line(name, result, seconds)}
    if "foreign" in sets:
        report["sets"]["foreign"] = {"summary": _foreign(bench / "agent_notes_dev", config)}
    out = Path(args.out) if args.out else OUT / f"candidates-{args.label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
