"""What the guards cost on the hook path: secret redaction, control stripping and injection
screening, per note and per prompt.

    .venv/bin/python bench/guards_cost.py [--rounds 5]

Per note: ``redact``, ``strip_controls`` and ``unit_risk`` over every real note of
../shared/bench/agent_notes_dev and the demo store (µs, median / p95). Per prompt: each of the
47 agent_notes_dev prompts through the real UserPromptSubmit path (``adapters.hook.handle_event``,
keyword-only so the model does not blur the difference), with the guards as shipped and with them
replaced by identity functions, in the same process: the difference is what the guards cost
once a note has been seen (a resident process remembers each note's verdicts); the first round
shows the cost of screening every note for the first time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "bench" / "agent_notes_dev"
sys.path.insert(0, str(REPO / "src"))


def _pct(values: list[float]) -> str:
    ordered = sorted(values)
    return f"median {statistics.median(ordered):.1f}, p95 {ordered[int(0.95 * (len(ordered) - 1))]:.1f}"


def per_note() -> None:
    from memlane.guards.exits import unit_risk
    from memlane.guards.sanitize import strip_controls
    from memlane.guards.secrets import redact

    texts = [p.read_text(encoding="utf-8", errors="replace") for p in
             [*SHARED.joinpath("notes").rglob("*.md"), *(REPO / "src/memlane/demo/store").glob("*.md")]
             if p.name != "MEMORY.md"]
    for fn in (redact, strip_controls, unit_risk):
        fn(texts[0])  # compile its rules once
        times = []
        for text in texts:
            started = time.perf_counter()
            fn(text)
            times.append((time.perf_counter() - started) * 1e6)
        print(f"{fn.__name__:<15} per note ({len(texts)} notes): {_pct(times)} µs")


def per_prompt(rounds: int) -> None:
    import memlane.adapters.hook as hook
    import memlane.guards.exits as exits
    import memlane.inject.layers as layers
    import memlane.recall as memory_module  # where a recalled note is redacted (exits screens its row)
    from memlane import Memory

    prompts = [json.loads(line) for line in SHARED.joinpath("prompts.jsonl").read_text().splitlines() if line.strip()]
    work = Path(tempfile.mkdtemp(prefix="memlane-guards-"))
    memories = {}
    for repo in sorted({p["repo"] for p in prompts}):
        folder = next(d for d in SHARED.joinpath("notes").iterdir() if d.name == repo.replace("/", "__"))
        store = next(p.parent for p in sorted(folder.rglob("*.md")))
        memories[repo] = Memory([store], embedder="none", index_path=work / f"{folder.name}.sqlite")
        memories[repo].refresh()
        memories[repo].trust_index()

    def run() -> list[float]:
        times = []
        for n, p in enumerate(prompts):
            payload = {"session_id": f"g{time.monotonic_ns()}{n}", "prompt": p["prompt"], "transcript_path": "/none"}
            started = time.perf_counter()
            hook.handle_event(memories[p["repo"]], "user-prompt-submit", payload)
            times.append((time.perf_counter() - started) * 1000)
        return times

    identity = lambda value, *a, **k: value  # noqa: E731
    shipped, bare = [], []
    first = run()  # every note seen for the first time: nothing remembered yet
    for _ in range(rounds):
        shipped += run()
        saved = (exits.clean, memory_module.redact, layers.unit_risks, exits.unit_risk)
        exits.clean, memory_module.redact = identity, identity
        layers.unit_risks = lambda units, verdicts=None: [None] * len(units)
        exits.unit_risk = lambda *fields: None
        try:
            bare += run()
        finally:
            exits.clean, memory_module.redact, layers.unit_risks, exits.unit_risk = saved
    print(f"hook per prompt, first sight of every note, guards as shipped: {_pct(first)} ms")
    print(f"hook per prompt, guards as shipped: {_pct(shipped)} ms")
    print(f"hook per prompt, guards switched off: {_pct(bare)} ms")
    diffs = [a - b for a, b in zip(sorted(shipped), sorted(bare))]
    print(f"the guards' cost per prompt: {_pct(diffs)} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"needs {SHARED}")
    per_note()
    per_prompt(args.rounds)


if __name__ == "__main__":
    main()
