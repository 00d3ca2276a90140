"""The cold fallback alone: `memlane-hook user-prompt-submit --no-daemon --index-as-is` (the index as it is, as
while a daemon starts) in fresh processes on a
keyword-only index of synthetic notes (built in under a minute, no model), each prompt in a new
session. Two rounds: the first screens notes this index's verdict file has not seen, the second the
same prompts again (their verdicts kept). With ``--ahead``, this checkout's index is first served by
a real daemon (keyword-only) until its background round has screened the notes ahead, then stopped:
the first round then shows what a hook answered after the daemon went idle costs (each code's own daemon on its own
index copy, with ``--against``). With ``--against DIR`` (another checkout's ``src``, e.g. a
``git worktree`` of the previous commit) both codes run alternately in the same loop, so the
machine's noise falls on both.

    .venv/bin/python bench/cold_hook.py --notes 10000 --prompts 40 [--ahead] [--against /tmp/old/src]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))


def _pct(values: list[float]) -> str:
    values = sorted(values)
    return f"p50 {statistics.median(values):6.1f}  p95 {values[int(0.95 * (len(values) - 1))]:6.1f} ms"


def build(work: Path, notes: int, prompts: int) -> tuple[Path, Path, list[str]]:
    import speed
    from memlane import Memory

    store = speed.write_store(work / "notes", notes, 7)
    index = work / "index.sqlite"
    started = time.perf_counter()
    with Memory([store], embedder="none", index_path=index) as memory:
        memory.refresh(embed=False)
    print(f"indexed {notes} notes keyword-only in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return store, index, speed.make_queries(prompts, 11)


def ahead(store: Path, index: str, notes: int, work: Path, env: dict) -> None:
    """A real daemon on ``index`` until its background round has screened every note ahead."""
    from hooks import screened_ahead
    from memlane.adapters.hookclient import ask_daemon, daemon_key, project_root, socket_path

    daemon = subprocess.Popen([str(Path(sys.executable).parent / "memlane"), "serve", "--store", str(store),
                               "--index", index, "--embedder", "none", "--idle-minutes", "10"], env=env,
                              cwd=str(work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = socket_path(daemon_key(project_root(str(work)), [str(store)], "none", index))
    started = time.perf_counter()
    try:
        kept = screened_ahead(index, notes, give_up_s=15, limit_s=600)
    finally:
        ask_daemon(sock, "stop")
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a code whose socket is named otherwise
            daemon.terminate()
            daemon.wait(timeout=30)
    print(f"  a daemon screened ahead: {kept} verdicts kept in {time.perf_counter() - started:.0f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--prompts", type=int, default=40)
    parser.add_argument("--ahead", action="store_true", help="let a daemon screen this checkout's notes ahead first")
    parser.add_argument("--against", help="another checkout's src folder, run alternately with this one")
    args = parser.parse_args(argv)
    for tree in [REPO / "src", *([Path(args.against)] if args.against else [])]:  # as `pip install` leaves it
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "memlane")], check=False)
    with tempfile.TemporaryDirectory(prefix="memlane-cold-") as tmp:
        work = Path(tmp)
        (work / "run").mkdir(mode=0o700)
        env = os.environ | {"MEMLANE_CACHE_DIR": str(work / "cache"), "XDG_RUNTIME_DIR": str(work / "run")}
        os.environ.update({k: env[k] for k in ("MEMLANE_CACHE_DIR", "XDG_RUNTIME_DIR")})  # where the daemon is found
        store, index, prompts = build(work, args.notes, args.prompts)
        trees = {"this checkout": REPO / "src"} | ({"--against": Path(args.against)} if args.against else {})
        hooks = {}
        for n, name in enumerate(trees):  # each code its own copy of the index, so its own verdict file
            copy = work / f"index-{n}.sqlite"
            shutil.copyfile(index, copy)
            hooks[name] = [sys.executable, str(REPO / "scripts" / "memlane-hook"), "user-prompt-submit",
                           "--store", str(store), "--index", str(copy), "--no-daemon", "--index-as-is"]
        base = []
        for _ in range(20):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
            base.append((time.perf_counter() - started) * 1000)
        print(f"{args.notes} notes, {len(prompts)} prompts a round, `python -c pass` {_pct(base)}")
        if args.ahead:  # each code's own daemon on its own copy: both first rounds as that code leaves them
            for name, tree in trees.items():
                print(f"  {name}:", end="")
                ahead(store, hooks[name][hooks[name].index("--index") + 1], args.notes, work,
                      env | {"PYTHONPATH": str(tree)})
        tag = uuid.uuid4().hex[:8]
        for round_name in ("first round (new prompts)", "second round (same prompts)"):
            times: dict[str, list[float]] = {name: [] for name in trees}
            empty = dict.fromkeys(trees, 0)
            for n, prompt in enumerate(prompts):
                for name, tree in trees.items():
                    payload = json.dumps({"session_id": f"{tag}-{name[:2]}-{round_name[:2]}-{n}", "cwd": str(work),
                                          "transcript_path": str(work / "none.jsonl"),
                                          "hook_event_name": "UserPromptSubmit", "prompt": prompt})
                    started = time.perf_counter()
                    out = subprocess.run(hooks[name], input=payload, capture_output=True, text=True, cwd=str(work),
                                         env=env | {"PYTHONPATH": str(tree)}).stdout
                    times[name].append((time.perf_counter() - started) * 1000)
                    empty[name] += not out.strip()
            for name in trees:
                print(f"  {round_name:31s} {name:14s} {_pct(times[name])}  (no answer: {empty[name]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
