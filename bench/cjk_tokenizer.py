"""Does the CJK bigram rewrite help? Keyword-only recall on the demo store's Korean/Chinese
prompts, with memlane's bigrams versus SQLite's plain ``unicode61`` tokens.

    .venv/bin/python bench/cjk_tokenizer.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

import memlane.index.units as db  # noqa: E402 (where units are written to the full-text index)
import memlane.index.text as text  # noqa: E402
import memlane.retrieve.search as search  # noqa: E402
from memlane.config import RetrieveConfig  # noqa: E402
from memlane.index import Index, unit_from_note  # noqa: E402
from memlane.retrieve import rank  # noqa: E402
from memlane.store.scan import scan_folder  # noqa: E402

DEMO = REPO / "src" / "memlane" / "demo"


def measure(label: str) -> None:
    prompts = [json.loads(line) for line in (DEMO / "prompts.jsonl").open(encoding="utf-8")]
    slices = {
        "ko/zh prompts": [p for p in prompts if p.get("lang", "en") != "en"],
        "CJK slice (+ cross-lingual en)": [p for p in prompts if p.get("lang", "en") != "en" or p.get("cross_lingual")],
    }
    scan = scan_folder(DEMO / "store", "project")
    index = Index(":memory:")
    index.sync([unit_from_note(n) for n in scan.notes])
    rel_of = {str(n.path): n.rel for n in scan.notes}
    for name, group in slices.items():
        recall5, matched = [], 0
        for p in group:
            hits = rank(index, p["prompt"], RetrieveConfig(), embedder=None, fusion="keyword", apply_threshold=False)
            rows = index.units_by_id([h.unit_id for h in hits])
            ranked = [rel_of[rows[h.unit_id]["uid"]] for h in hits]
            relevant = set(p["relevant"])
            recall5.append(len(relevant & set(ranked[:5])) / len(relevant))
            matched += bool(ranked)
        print(f"{label:22s} {name:32s} n={len(group):2d}  Recall@5={sum(recall5) / len(recall5):.3f}  "
              f"prompts matching anything: {matched}/{len(group)}")


def plain_terms(prompt: str, limit: int = 64) -> list[str]:
    seen: dict[str, None] = {}
    for token in re.findall(r"\w+", prompt.lower()):
        if token not in text.STOPWORDS and not (len(token) == 1 and token.isascii()):
            seen.setdefault(token, None)
    return list(seen)[:limit]


if __name__ == "__main__":
    measure("bigrams (memlane)")
    db.fts_text = lambda t: t or ""  # documents: no rewrite
    search.query_terms = plain_terms  # queries: plain word tokens
    measure("plain unicode61")
