"""Associative recall and scoring (issue 3): the ablation hybrid → + spreading → + scoring →
+ constellations, and what the graph layers do to sets without links.

    .venv/bin/python bench/associative.py                    # agent_notes_dev + demo (fast)
    .venv/bin/python bench/associative.py --sets all         # + LongMemEval and LoCoMo (slower)
    .venv/bin/python bench/associative.py --set associate.fan=1.0 --set score.hub_weight=0

Printed per set:
- agent_notes_dev, per kind: Recall@1/3/5 and MRR per mode; for associative prompts, the
  Recall@5 of the note reachable only through the link (the relevant note named in the
  prompt's ``why`` after "Linked"); keyword traps where a must_not note outranks every
  relevant one; units recalled per prompt (thresholds on), mean and max;
- demo: the same per kind, and divergent mode: prompts where it recalls notes from clusters
  convergent mode does not reach;
- longmemeval_s_trunc500 / locomo: Hit@5, Recall@5/10, NDCG@10 for hybrid vs the full pipeline.

Embeddings come from bench/out/embeddings.sqlite (shared with bench/quality.py). Everything
is also written to bench/out/associative.json.
"""

from __future__ import annotations

import argparse
from memlane import records
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memlane.config import Config, ConfigError, _apply  # noqa: E402
from memlane.embed import DEFAULT_EMBEDDER  # noqa: E402
from memlane.eval import evaluate_path  # noqa: E402

OUT = REPO / "bench" / "out"
DEMO = REPO / "src" / "memlane" / "demo"
ABLATION = ("hybrid", "spread", "scored", "full")


def _bench_dir(arg: str | None) -> Path:
    return Path(arg or os.environ.get("MEMLANE_BENCH_DIR") or "/work/shared/bench")


def _config(overrides: list[str]) -> Config:
    config = Config()
    for item in overrides:
        key, _, raw = item.partition("=")
        section, _, name = key.partition(".")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw  # a bare word: a string setting
        _apply(config, {section: {name: value}}, "")
    return config.validate()


def _link_targets(prompts_file: Path) -> dict[str, str]:
    """Associative prompt id -> the relevant note reached through the link (named after
    "Linked" in the prompt's ``why``)."""
    out = {}
    for line in prompts_file.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("kind") != "associative" or "Linked" not in row.get("why", ""):
            continue
        linked = row["why"].split("Linked", 1)[1].lower().replace("-", "_")
        for note in row["relevant"]:
            stem = Path(note.split(":", 1)[1]).stem.lower().replace("-", "_")
            bare = stem.split("_", 1)[1] if stem.split("_", 1)[0] in ("feedback", "project", "reference", "user") else stem
            if stem in linked or bare in linked:
                out[row["id"]] = note
    return out


def _kind_table(result: dict, modes: list[str], columns: list[str]) -> list[str]:
    lines = []
    kinds = result["groups"].get("kind", {})
    header = f"{'kind':14s} {'n':>3s}  " + "  ".join(f"{m:>24s}" for m in modes)
    lines.append(header)
    lines.append(f"{'':14s} {'':3s}  " + "  ".join(f"{' '.join(c.replace('recall@', 'R@') for c in columns):>24s}"
                                                 for _ in modes))
    for kind, per_mode in list(kinds.items()) + [("all", result["overall"])]:
        n = next(iter(per_mode.values()))["n"]
        cells = []
        for mode in modes:
            row = per_mode[mode]
            cells.append(" ".join(f"{row[c]:.3f}" for c in columns).rjust(24))
        lines.append(f"{kind:14s} {n:3d}  " + "  ".join(cells))
    return lines


def _link_only(result: dict, targets: dict[str, str], modes: list[str], k: int = 5) -> dict[str, float]:
    out = {}
    for mode in modes:
        found = [1.0 if targets[r["id"]] in r["modes"][mode]["top"][:k] else 0.0
                 for r in result["per_query"] if r["id"] in targets]
        out[mode] = sum(found) / len(found) if found else 0.0
    return out


def _bounded(result: dict, modes: list[str]) -> dict[str, dict]:
    out = {}
    for mode in modes:
        counts = [len(r["modes"][mode]["injected"]) for r in result["per_query"]]
        out[mode] = {"mean": sum(counts) / len(counts), "max": max(counts)}
    return out


def run_notes(name: str, path: Path, config: Config, embedder: str, cache: Path, modes: list[str],
              prompts_file: Path | None, **kwargs) -> dict:
    started = time.time()
    result = evaluate_path(path, modes=modes, ks=(1, 3, 5), embedder=embedder, cache_path=cache, config=config,
                           group_by=["kind"], **kwargs)
    print(f"\n== {name} ({result['dataset']['evaluated']} prompts, {time.time() - started:.0f} s)")
    for line in _kind_table(result, modes, ["recall@1", "recall@3", "recall@5", "mrr"]):
        print(line)
    summary = {"overall": result["overall"], "groups": result["groups"], "bounded": _bounded(result, modes)}
    if prompts_file is not None:
        targets = _link_targets(prompts_file)
        if targets:
            summary["link_only_recall@5"] = _link_only(result, targets, modes)
            print(f"associative, the note reachable only through the link ({len(targets)} prompts), Recall@5: "
                  + ", ".join(f"{m} {v:.3f}" for m, v in summary["link_only_recall@5"].items()))
    if result["must_not"]:
        summary["must_not"] = result["must_not"]
        print("a must_not note outranks every relevant one: " + ", ".join(
            f"{m} {v['outranks_all']['count']}/{v['outranks_all']['prompts']}" for m, v in result["must_not"].items()))
    print("units recalled per prompt (thresholds on), mean/max: " + ", ".join(
        f"{m} {v['mean']:.2f}/{v['max']}" for m, v in summary["bounded"].items()))
    summary["per_query"] = [{"id": r["id"], "kind": r["kind"], **{m: {"top": r["modes"][m]["top"][:5],
                                                                      "injected": r["modes"][m]["injected"]}
                                                                   for m in modes}} for r in result["per_query"]]
    return summary


def divergent_report(path: Path, config: Config, embedder: str, cache: Path) -> dict:
    """Prompts where divergent mode recalls notes from clusters convergent mode does not reach."""
    from memlane.memory import Memory

    prompts = [json.loads(line) for line in (path / "prompts.jsonl").read_text(encoding="utf-8").splitlines()]
    out = []
    with Memory([path / "store"], index_path=":memory:", embedder=embedder, config=config) as mem:
        mem.refresh()
        clusters = mem.index.clusters()
        ids = {row["path"]: uid for uid, row in mem.index.units_by_id(mem.index.all_ids()).items()}
        for prompt in prompts:
            if prompt.get("lang", "en") != "en":
                continue
            convergent = mem.recall(prompt["prompt"], refresh=False, explain=True)
            divergent = mem.recall(prompt["prompt"], refresh=False, divergent=True, explain=True)
            home = {clusters.get(ids[r["path"]]) for r in convergent}
            extra = [r for r in divergent if r["path"] not in {c["path"] for c in convergent}
                     and clusters.get(ids[r["path"]]) not in home]
            out.append({"prompt": prompt["prompt"], "convergent": [r["name"] for r in convergent],
                        "remote": [{"name": r["name"], "reached": r["reached"]} for r in extra]})
    with_remote = [o for o in out if o["remote"]]
    linked = [o for o in with_remote if any(" via " in r["reached"] for r in o["remote"])]
    print(f"\n== divergent mode on the demo store ({len(set(clusters.values()))} clusters): "
          f"{len(with_remote)}/{len(out)} English prompts gain notes from clusters convergent recall does not "
          f"reach, {len(linked)} of them through a link path; convergent recalls "
          f"{sum(len(o['convergent']) for o in out) / len(out):.2f} units per prompt (max "
          f"{max(len(o['convergent']) for o in out)}), divergent "
          f"{sum(len(o['convergent']) + len(o['remote']) for o in out) / len(out):.2f}")
    for o in (linked + [o for o in with_remote if o not in linked])[:4]:
        print(f"  {o['prompt'][:80]}")
        print(f"    convergent: {', '.join(o['convergent'])}")
        for r in o["remote"]:
            print(f"    remote:     {r['name']}  ({r['reached']})")
    return {"prompts": len(out), "with_remote": len(with_remote), "through_links": len(linked),
            "examples": (linked + with_remote)[:10]}


def _epoch(stamp: str) -> float | None:
    """LongMemEval's ``2023/05/20 (Sat) 02:21`` or LoCoMo's ISO ``2023-05-08T13:56:00``."""
    from datetime import datetime, timezone

    for fmt, text in (("%Y/%m/%d %H:%M", stamp.replace(stamp[stamp.find("("):stamp.find(")") + 2], "")
                       if "(" in stamp else stamp), ("%Y-%m-%dT%H:%M:%S", stamp)):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            continue
    return None


def _dated_eval(path: Path, config: Config, embedder: str, cache: Path, limit, extra: dict) -> dict:
    """The same evaluation with each unit dated by its session timestamp (as a note's last edit)."""
    from memlane.eval.datasets import load_dataset
    from memlane.eval.runner import run_eval

    dataset = load_dataset(path, limit=limit, **extra)
    dated = 0
    for units in dataset.units.values():
        for unit in units:
            when = _epoch(str(unit.meta.get("timestamp") or ""))
            if when is not None:
                unit.meta["mtime"] = when
                dated += 1
    print(f"(dated {dated} units by their session timestamp)")
    return run_eval(dataset, modes=["hybrid", "full"], ks=(5, 10), embedder=embedder, cache_path=cache,
                    config=config, limit=limit, group_by=[])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir")
    parser.add_argument("--sets", default="agent_notes_dev,demo",
                        help="comma list of agent_notes_dev, demo, longmemeval, locomo, or 'all'")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER)
    parser.add_argument("--modes", default=",".join(ABLATION))
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a setting, e.g. associate.fan=1.0")
    parser.add_argument("--limit", type=int, help="queries per large set (LongMemEval, LoCoMo)")
    parser.add_argument("--dated", action="store_true",
                        help="LongMemEval/LoCoMo: date each session by its timestamp, so recency varies "
                             "(judged as of the day after the last session)")
    parser.add_argument("--out", default=str(OUT / "associative.json"))
    args = parser.parse_args(argv)
    try:
        config = _config(args.set)
    except (ConfigError, ValueError) as exc:
        parser.error(str(exc))
    bench = _bench_dir(args.bench_dir)
    sets = ["agent_notes_dev", "demo", "longmemeval", "locomo"] if args.sets == "all" else args.sets.split(",")
    modes = args.modes.split(",")
    cache = OUT / "embeddings.sqlite"
    OUT.mkdir(parents=True, exist_ok=True)
    report: dict = {"embedder": args.embedder, "overrides": args.set,
                    "config": {"associate": records.asdict(config.associate),
                               "score": records.asdict(config.score)}}
    if "agent_notes_dev" in sets and (bench / "agent_notes_dev").is_dir():
        report["agent_notes_dev"] = run_notes("agent_notes_dev", bench / "agent_notes_dev", config, args.embedder,
                                              cache, modes, bench / "agent_notes_dev" / "prompts.jsonl")
    if "demo" in sets:
        report["demo"] = run_notes("demo", DEMO, config, args.embedder, cache, modes, None)
        report["demo"]["divergent"] = divergent_report(DEMO, config, args.embedder, cache)
    for name, folder, extra in (("longmemeval", "longmemeval_s_trunc500", {}),
                                ("locomo", "locomo", {"exclude_types": ("5",)})):
        if name in sets and (bench / folder).is_dir():
            started = time.time()
            if args.dated:
                result = _dated_eval(bench / folder, config, args.embedder, cache, args.limit, extra)
            else:
                result = evaluate_path(bench / folder, modes=["hybrid", "full"], ks=(5, 10), embedder=args.embedder,
                                       cache_path=cache, config=config, limit=args.limit, group_by=[], **extra)
            print(f"\n== {name} ({result['dataset']['evaluated']} queries, {time.time() - started:.0f} s)")
            for mode in ("hybrid", "full"):
                row = result["overall"][mode]
                print(f"{mode:8s} Hit@5 {row['hit@5']:.3f}  R@5 {row['recall@5']:.3f}  R@10 {row['recall@10']:.3f}"
                      f"  NDCG@10 {row['ndcg@10']:.3f}")
            report[name] = {"overall": result["overall"]}
    Path(args.out).write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
