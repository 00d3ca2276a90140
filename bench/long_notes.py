"""How to embed long notes (`embed.long_notes`): the whole note, a description-weighted text, or chunks
with max-sim, measured with the default embedder on agent_notes_dev and the demo store.

    .venv/bin/python bench/long_notes.py [--embedder NAME]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memlane.config import Config  # noqa: E402
from memlane.embed import DEFAULT_EMBEDDER, load_embedder  # noqa: E402
from memlane.eval import evaluate_path  # noqa: E402
from memlane.config import ChunkStrategy  # noqa: E402

SETS = {"agent_notes_dev": REPO.parent / "shared" / "bench" / "agent_notes_dev", "demo": REPO / "src" / "memlane" / "demo"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER)
    args = parser.parse_args()
    embedder = load_embedder(args.embedder)
    cache = REPO / "bench" / "out" / "embeddings.sqlite"
    print(f"embedder {embedder.name}; Recall@5 (intent / all prompts) per strategy and mode")
    for name, path in SETS.items():
        if not path.exists():
            print(f"{name}: not found, skipped")
            continue
        for strategy in ChunkStrategy:
            config = Config()
            config.embed.long_notes = strategy.value
            res = evaluate_path(path, modes=["vector", "hybrid"], ks=[5], embedder=embedder, config=config,
                                cache_path=cache, group_by=["kind"])
            cells = []
            for mode in ("vector", "hybrid"):
                intent = res["groups"]["kind"]["intent"][mode]["recall@5"]
                cells.append(f"{mode} {intent:.3f} / {res['overall'][mode]['recall@5']:.3f}")
            print(f"{name:16s} {strategy.value:12s} " + "   ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
