"""The recall-tokens frontier of whole sessions: the session eval (``memlane eval --session``) run
with several injection settings — the session-start budgets, the menu of further candidates, the
bracket — on every memory-folder set, each point printed with its tokens per prompt, delivered
recall at any depth and in full, per kind.

    .venv/bin/python bench/session_frontier.py [--sets agent_notes_dev,demo] [--embedder NAME]

Indexes are kept per set in bench/out/session-index/, so after the first run a setting costs
only the hooks. Figures are printed, never asserted.
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
from memlane.eval.report import format_table  # noqa: E402
from memlane.eval.session import evaluate_sessions  # noqa: E402

OUT = REPO / "bench" / "out"
SETS = {"agent_notes_dev": "agent_notes_dev", "demo": str(REPO / "src" / "memlane" / "demo")}
#: (label, inject settings)
VARIANTS = [
    ("no menu, session start 200+500", {"menu_lines": 0}),
    ("menu 8, session start 200+500 (default)", {}),
    ("menu 8, session start 150+250", {"identity_tokens": 150, "project_tokens": 250}),
    ("menu 12, session start 150+250", {"identity_tokens": 150, "project_tokens": 250, "menu_lines": 12,
                                         "menu_tokens": 350}),
    ("menu 8, no project briefing", {"project_tokens": 0}),
    ("menu 4, session start 150+250", {"identity_tokens": 150, "project_tokens": 250, "menu_lines": 4,
                                        "menu_tokens": 150}),
    # how many notes come in full in the moderate bracket (the depleted one shows none in full)
    ("menu 8, 2 in full", {"moderate_full": 2}),
    ("menu 8, 3 in full", {"moderate_full": 3}),
    ("menu 8, 2 in full, session start 150+250", {"moderate_full": 2, "identity_tokens": 150, "project_tokens": 250}),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--brackets", default="moderate,depleted")
    parser.add_argument("--only", help="run only the settings whose label holds this text (and the first)")
    parser.add_argument("--bench-dir", default=os.environ.get("MEMLANE_BENCH_DIR", "/work/shared/bench"))
    args = parser.parse_args(argv)
    for name in args.sets.split(","):
        path = Path(SETS[name]) if Path(SETS[name]).is_absolute() else Path(args.bench_dir) / SETS[name]
        if not path.exists():
            print(f"{name}: {path} not found, skipped")
            continue
        index_dir = OUT / "session-index" / name
        index_dir.mkdir(parents=True, exist_ok=True)
        rows = []
        for label, overrides in VARIANTS:
            if args.only and args.only not in label and label != VARIANTS[0][0]:
                continue
            config = Config()
            config.inject = records.replace(config.inject, **overrides)
            result = evaluate_sessions(path, embedder=args.embedder, config=config, keyword_baseline=False,
                                       baselines=label == VARIANTS[0][0], brackets=args.brackets.split(","),
                                       index_dir=index_dir)
            for method, m in result["methods"].items():
                o, kinds = m["overall"], m["kinds"]
                rows.append([f"{method} | {label}" if method.startswith("memlane") else method, o["tokens"],
                             o["recall"], o["full"], kinds.get("intent", {}).get("recall", float("nan")),
                             kinds.get("intent", {}).get("full", float("nan"))])
        rows.sort(key=lambda r: r[1])
        print(format_table(["method | setting", "tokens/prompt", "recall", "in full", "intent", "intent in full"],
                           rows, title=f"{name}: the frontier, cheapest first"))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
