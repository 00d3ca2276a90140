"""The first minute with memlane, and the CLI beside a warm daemon.

    .venv/bin/python bench/first_minute.py --notes DIR [--notes DIR ...] [--synthetic 300] [--calls 30]

**First recall**: for each store (real memory folders given with ``--notes``, and a synthetic one
of ``--synthetic`` notes written by bench/speed.py's generator), in a fresh cache: the wall time
of the first ``memlane recall`` process on the never-indexed store (it answers by keyword, says
so on stderr, and starts the daemon that embeds the store in the background), then how long until
a recall answers with meaning too (the daemon is up), and the time the old way took — ``memlane
recall --wait``, which embeds everything first.

**The CLI beside a warm daemon**: ``--calls`` fresh ``memlane recall`` processes with the daemon
up, against the same with no daemon (``--wait`` keeps it in process), with the outputs compared.
``python -c pass`` is timed in the same run for the ratio. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
BIN = Path(sys.executable).parent
PROMPTS = ["why does the deploy keep failing?", "ready to merge this change?", "how should I name the migration?",
           "the tests pass locally, can we close the issue?", "which version of the toolchain do we pin?"]


def _pct(values: list[float]) -> str:
    ordered = sorted(values)
    return (f"p50 {statistics.median(ordered):.0f} ms / p95 "
            f"{ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]:.0f} ms (n={len(ordered)})")


def _run(args: list[str], env: dict, cwd: str) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run([str(BIN / "memlane"), *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=1800)
    return (time.perf_counter() - started) * 1000, proc


def _fresh_env(root: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMLANE_", "XDG_"))}
    runtime = root / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env.update(HOME=str(root / "home"), MEMLANE_CACHE_DIR=str(root / "cache"), XDG_RUNTIME_DIR=str(runtime),
               XDG_CONFIG_HOME=str(root / "config"), XDG_DATA_HOME=str(root / "data"))
    return env


def _stop(store: Path, env: dict, cwd: str) -> None:
    _run(["serve", "--stop", "--store", str(store)], env, cwd)


def first_recall(store: Path, label: str) -> None:
    count = sum(1 for p in store.rglob("*.md") if p.name != "MEMORY.md")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env, cwd = _fresh_env(root), str(root)
        ms, proc = _run(["recall", PROMPTS[0], "--store", str(store)], env, cwd)
        said = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "(nothing on stderr)"
        started = time.perf_counter()
        hybrid_after = None
        while time.perf_counter() - started < 1800:
            _, probe = _run(["recall", PROMPTS[1], "--store", str(store)], env, cwd)
            if "keyword-only" not in probe.stderr:
                hybrid_after = time.perf_counter() - started
                break
            time.sleep(1.0)
        _stop(store, env, cwd)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wait_ms, _ = _run(["recall", PROMPTS[0], "--store", str(store), "--wait"], _fresh_env(root), str(root))
    print(f"{label} ({count} notes): first recall {ms:.0f} ms, said: {said}")
    print(f"  recall with meaning {'after %.1f s more' % hybrid_after if hybrid_after is not None else 'not reached'}"
          f" (background); the old way, everything embedded first (--wait): {wait_ms / 1000:.1f} s")


def cli_beside_daemon(store: Path, calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env, cwd = _fresh_env(root), str(root)
        config = root / "config" / "memlane" / "config.toml"  # no hit-log: a recall's own use would move the
        config.parent.mkdir(parents=True)                      # next one's recency, and the outputs could not match
        config.write_text("[index]\nhit_log = false\n")
        _run(["index", "--store", str(store)], env, cwd)
        bare = []
        for _ in range(calls):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            bare.append((time.perf_counter() - started) * 1000)
        alone, outputs_alone = [], []
        for n in range(calls):
            ms, proc = _run(["recall", PROMPTS[n % len(PROMPTS)], "--store", str(store), "--wait"], env, cwd)
            alone.append(ms)
            outputs_alone.append(proc.stdout)
        _run(["serve", "--daemon", "--store", str(store), "--wait", "600"], env, cwd)
        warm, outputs_warm = [], []
        for n in range(calls):
            ms, proc = _run(["recall", PROMPTS[n % len(PROMPTS)], "--store", str(store)], env, cwd)
            warm.append(ms)
            outputs_warm.append(proc.stdout)
        _stop(store, env, cwd)
    same = sum(a == b for a, b in zip(outputs_alone, outputs_warm))
    print(f"memlane recall, no daemon: {_pct(alone)}")
    print(f"memlane recall, warm daemon: {_pct(warm)}; identical output {same}/{calls}")
    print(f"python -c pass: {_pct(bare)}; warm p50 = {statistics.median(warm) / statistics.median(bare):.1f}x")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", action="append", default=[], help="a real memory folder (repeatable)")
    parser.add_argument("--synthetic", type=int, default=300, help="notes in the synthetic store (0: none)")
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args(argv)
    stores = [(Path(p), Path(p).name) for p in args.notes]
    tmp = None
    if args.synthetic:
        import speed

        tmp = Path(tempfile.mkdtemp())
        speed.write_store(tmp / "synthetic", args.synthetic, seed=7)
        stores.append((tmp / "synthetic", "synthetic"))
    try:
        for store, label in stores:
            first_recall(store, label)
        cli_beside_daemon(stores[0][0], args.calls)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
