"""Token economics of the MCP server (issue 5): what an agent pays, in tokens, to reach the
notes it needs — progressive depth (ids → summary → full) against full-text results.

    .venv/bin/python bench/mcp_tokens.py [--embedder NAME] [--k 5]

For every prompt of ../shared/bench/agent_notes_dev, against its repository's notes, the exact
answers of the MCP tools (``adapters.mcp_server.Engine``, compact JSON as the server sends
them) are measured with memlane's token estimate:

- **full text**: ``recall(query, depth="full", k)`` — what a search tool that returns whole
  documents costs (the same ranking, so the same notes are reached);
- **ids → full**: ``recall(depth="ids")``, then ``get(the relevant ones among them, "full")``
  — an agent that recognises what it needs from the ids and their reasons;
- **ids → summary → full**: ``recall(ids)``, ``get(all of them, "summary")``, then
  ``get(the relevant ones, "full")`` — an agent that looks once more before fetching.

The relevant notes are the prompt's labels (``relevant`` + ``also_ok``) that recall returned;
a prompt whose top k holds none of them still pays for the ids (and the summaries).
Written to bench/out/mcp_tokens.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
OUT = REPO / "bench" / "out"


def tokens(answer: dict) -> int:
    from memlane.index.text import estimate_tokens

    return estimate_tokens(json.dumps(answer, ensure_ascii=False, separators=(",", ":")))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench-dir", default=os.environ.get("MEMLANE_BENCH_DIR") or "/work/shared/bench")
    parser.add_argument("--embedder", default=None, help="default: memlane's default embedder")
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args(argv)
    bench = Path(args.bench_dir) / "agent_notes_dev"
    if not bench.is_dir():
        print(f"skipped: {bench} not found")
        return 0
    work = Path(tempfile.mkdtemp(prefix="memlane-mcp-tokens-"))
    os.environ["MEMLANE_CACHE_DIR"] = str(work / "cache")
    from memlane.adapters.mcp_server import Engine

    prompts = [json.loads(line) for line in (bench / "prompts.jsonl").read_text().splitlines() if line.strip()]
    engines: dict[str, Engine] = {}
    rows = []
    for prompt in prompts:
        repo = prompt["repo"]
        if repo not in engines:
            folder = next(p.parent for p in sorted((bench / "notes" / repo.replace("/", "__")).rglob("*.md"))
                          if p.name not in ("LICENSE.md", "README.md"))
            engines[repo] = Engine([str(folder)], args.embedder, str(work / f"{repo.replace('/', '_')}.sqlite"), None)
        engine = engines[repo]
        labels = {Path(x.split(":", 1)[1]).name for x in prompt["relevant"] + prompt.get("also_ok", [])}
        ids = engine.recall(prompt["prompt"], depth="ids", k=args.k)
        full = engine.recall(prompt["prompt"], depth="full", k=args.k)
        found = [r["id"] for r in ids["results"]]
        path_of = {r["id"]: r["path"] for r in full["results"]}  # ids carry no path; the ranking is the same
        needed = [r["id"] for r in ids["results"] if Path(path_of.get(r["id"], "")).name in labels]
        summary = engine.get(found, "summary") if found else {}
        fetched = engine.get(needed, "full") if needed else {}
        rows.append({"id": prompt["id"], "found": len(found), "relevant_reached": len(needed),
                     "full_text": tokens(full), "ids": tokens(ids),
                     "summary": tokens(summary) if found else 0, "get_full": tokens(fetched) if needed else 0})
    for row in rows:
        row["ids_then_full"] = row["ids"] + row["get_full"]
        row["ids_summary_full"] = row["ids"] + row["summary"] + row["get_full"]
    reached = [r for r in rows if r["relevant_reached"]]

    def mean(key, subset=rows):
        return round(statistics.mean(r[key] for r in subset), 1)

    result = {"prompts": len(rows), "k": args.k, "prompts_with_a_relevant_note_in_top_k": len(reached),
              "mean_tokens": {key: mean(key) for key in ("full_text", "ids", "summary", "get_full", "ids_then_full",
                                                          "ids_summary_full")},
              "mean_tokens_where_reached": {key: mean(key, reached) for key in ("full_text", "ids_then_full",
                                                                                 "ids_summary_full")},
              "rows": rows}
    m = result["mean_tokens"]
    result["ratio_full_text_over_ids_then_full"] = round(m["full_text"] / m["ids_then_full"], 1)
    result["ratio_full_text_over_ids_summary_full"] = round(m["full_text"] / m["ids_summary_full"], 1)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "mcp_tokens.json").write_text(json.dumps(result, indent=2))
    print(f"agent_notes_dev, {len(rows)} prompts, k={args.k}; a labelled note in the top {args.k} for "
          f"{len(reached)} prompts. Mean tokens per prompt:")
    print(f"  full-text results (recall depth=full)        {m['full_text']:8.1f}")
    print(f"  ids (recall depth=ids)                       {m['ids']:8.1f}")
    print(f"  + get(relevant, full)  = ids -> full         {m['ids_then_full']:8.1f}   "
          f"{result['ratio_full_text_over_ids_then_full']}x fewer than full text")
    print(f"  + get(all, summary) first = ids -> summary -> full {m['ids_summary_full']:6.1f}   "
          f"{result['ratio_full_text_over_ids_summary_full']}x fewer")
    w = result["mean_tokens_where_reached"]
    print(f"  where a relevant note was reached: full text {w['full_text']}, ids -> full {w['ids_then_full']}, "
          f"ids -> summary -> full {w['ids_summary_full']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
