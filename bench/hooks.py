"""The hooks as an agent runs them: latency end to end, and the tokens they inject.

    .venv/bin/python bench/hooks.py                      # both parts
    .venv/bin/python bench/hooks.py --part latency --notes 10000 --prompts 200 [--ahead]
    .venv/bin/python bench/hooks.py --part tokens

**Latency**: a synthetic store (bench/speed.py's generator) indexed once, each note's vector
the real model's embedding of the note's opening (its name and description, ``HEADING_CHARS``):
the search costs what it costs with whole notes, and the meaning leg judges as the real model
does, so a prompt sharing a note's words brings it as it would (random vectors made every
note "unrelated" to the meaning leg, and most prompts injected nothing). The real model embeds
every prompt. Then, one fresh ``memlane-hook user-prompt-submit`` process
per prompt, exactly as Claude Code runs it (stdin JSON, stdout JSON), timed from spawn to
exit, in three setups:
- warm daemon: ``memlane serve`` already up (hybrid recall, real query embedding);
- cold fallback: no daemon (``--no-daemon --index-as-is``): the client answers keyword-only in-process,
  from the index as it is, as while a daemon starts;
- the full CLI in-process with the real model (``memlane hook``), i.e. no daemon and no
  client — what a naive hook costs.
``python -c pass`` is timed in the same run for the ratio. With ``--ahead``, the first daemon is
left idle until its background round has screened every note ahead (as a daemon that has been
up a while has), so no prompt pays the injection guard for a note it brings for the first time;
the setups after it read the same verdicts.

**Tokens**: on ../shared/bench/agent_notes_dev, each prompt through the real injection path
(``inject.layers.user_prompt``) in each context bracket: the characters and estimated tokens
injected, and the recall of the labelled notes (a note counts when it appears at any depth),
against injecting each repository's whole store in full.
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))
OUT = REPO / "bench" / "out"
BIN = Path(sys.executable).parent


def _pct(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"n": len(values), "p50": round(statistics.median(ordered), 1),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1)}


def _time(cmd: list[str], stdin: str, env: dict, cwd: str) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    return (time.perf_counter() - started) * 1000, proc.stdout


#: how much of a note the latency part's index embeds (the unit text opens with name and description)
HEADING_CHARS = 160


def _heading_embedder(real):
    """The real embedder under its own name, embedding only the first ``HEADING_CHARS`` of each
    text: 10k notes index in about a minute instead of a quarter of an hour."""
    from memlane.embed.base import Embedder

    class HeadingEmbedder(Embedder):
        name, dim, max_chars = real.name, real.dim, real.max_chars
        min_cosine, strong_cosine = real.min_cosine, real.strong_cosine

        def embed_batch(self, texts, *, is_query):
            return real.embed_batch([t[:HEADING_CHARS] for t in texts], is_query=is_query)

    return HeadingEmbedder()


def latency(args) -> dict:
    import speed
    from memlane import Memory
    from memlane.embed import DEFAULT_EMBEDDER, load_embedder

    # byte-compile memlane as `pip install` does (an editable install under PYTHONDONTWRITEBYTECODE
    # would otherwise recompile every module in every hook process: ~45 ms)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src" / "memlane")], check=False)
    work = Path(tempfile.mkdtemp(prefix="memlane-hooks-"))
    env = os.environ.copy()
    env.update({"MEMLANE_CACHE_DIR": str(work / "cache"), "XDG_RUNTIME_DIR": str(work / "run")})
    (work / "run").mkdir(mode=0o700)
    os.environ.update({k: env[k] for k in ("MEMLANE_CACHE_DIR", "XDG_RUNTIME_DIR")})
    store = speed.write_store(work / "notes", args.notes, 7)
    index = work / "index.sqlite"
    real = load_embedder(DEFAULT_EMBEDDER)
    started = time.perf_counter()
    with Memory([store], embedder=_heading_embedder(real), index_path=index) as memory:
        memory.refresh()
    print(f"indexed {args.notes} notes, each vector its opening's, in {time.perf_counter() - started:.0f} s")
    prompts = speed.make_queries(args.prompts, 11)
    common = ["--store", str(store), "--index", str(index)]

    def payload(n: int, prompt: str) -> str:
        return json.dumps({"session_id": f"bench-{n}", "transcript_path": str(work / "none.jsonl"),
                           "cwd": str(work), "hook_event_name": "UserPromptSubmit", "prompt": prompt})

    client = [str(BIN / "memlane-hook"), "user-prompt-submit", *common]
    result: dict = {"notes": args.notes, "prompts": len(prompts), "embedder": real.name, "screened_ahead": args.ahead}
    base = [_time([sys.executable, "-c", "pass"], "", env, str(work))[0] for _ in range(30)]
    result["python_pass"] = _pct(base)

    from memlane.adapters.hookclient import ask_daemon, daemon_key, project_root, socket_path

    def warm(embedder: str, label: str) -> None:
        daemon = subprocess.Popen([str(BIN / "memlane"), "serve", *common, "--embedder", embedder,
                                   "--idle-minutes", "10"], env=env, cwd=str(work),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sock = socket_path(daemon_key(project_root(str(work)), [str(store)], embedder, str(index)))
        deadline = time.monotonic() + 600
        while ask_daemon(sock, "ping") is None and time.monotonic() < deadline:
            time.sleep(0.2)
        cmd = [*client, "--embedder", embedder]
        for n, prompt in enumerate(prompts[:10]):
            _time(cmd, payload(10_000 + n, prompt), env, str(work))
        if args.ahead:
            started = time.perf_counter()
            kept = screened_ahead(index, args.notes)
            print(f"  the daemon screened ahead: {kept} verdicts kept in {time.perf_counter() - started:.0f} s")
        times, sizes = [], []
        for n, prompt in enumerate(prompts):
            ms, out = _time(cmd, payload(n, prompt), env, str(work))
            times.append(ms)
            sizes.append(len(out))
        result[label] = _pct(times) | {"mean_output_chars": round(statistics.mean(sizes))}
        ask_daemon(sock, "stop")
        daemon.wait(timeout=60)

    warm(real.name, "warm_daemon")
    warm("none", "warm_daemon_keyword")
    result["itemised"] = itemised(store, index, prompts, real, work)

    # cold fallback: no daemon, keyword-only in the client process
    times = [_time([*client, "--no-daemon", "--index-as-is"], payload(20_000 + n, p), env, str(work))[0] for n, p in enumerate(prompts)]
    result["cold_fallback"] = _pct(times)
    # the whole CLI in-process with the real model: what a hook without a daemon would cost
    cli = [str(BIN / "memlane"), "hook", "user-prompt-submit", *common, "--embedder", real.name]
    sample = prompts[: max(20, len(prompts) // 5)]
    times = [_time(cli, payload(30_000 + n, p), env, str(work))[0] for n, p in enumerate(sample)]
    result["in_process_hybrid"] = _pct(times)
    for name in ("warm_daemon", "warm_daemon_keyword", "cold_fallback", "in_process_hybrid"):
        result[name]["x_python_p50"] = round(result[name]["p50"] / result["python_pass"]["p50"], 1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"\nhook end to end, {args.notes} notes, {len(prompts)} prompts, one process per prompt"
          f"{', every note screened ahead' if args.ahead else ''} "
          f"(`python -c pass` p50 {result['python_pass']['p50']} ms):")
    for name, label in (("warm_daemon", f"warm daemon (hybrid, {real.name})"),
                        ("warm_daemon_keyword", "warm daemon (keyword-only)"), ("cold_fallback", "cold fallback (keyword)"),
                        ("in_process_hybrid", "no daemon, full CLI (hybrid)")):
        r = result[name]
        print(f"  {label:30s} p50 {r['p50']:7.1f} ms  p95 {r['p95']:7.1f} ms  ({r['x_python_p50']}x python, n={r['n']})")
    print("\nwhere a warm hybrid hook's time goes (each stage alone, in one warm process on the same index; the"
          "\nhook process and its round trip measured apart; p50 / p95 ms):")
    for stage, r in result["itemised"].items():
        print(f"  {stage:44s} {r['p50']:7.1f}  {r['p95']:7.1f}")
    return result


def screened_ahead(index: Path | str, notes: int, *, give_up_s: int = 30, limit_s: int = 900) -> int:
    """Wait (the daemon idle) until its background round has kept a verdict for every note, or
    none has come for ``give_up_s`` seconds (a code that screens nothing ahead); the verdicts kept."""
    import sqlite3

    started, kept, still = time.perf_counter(), -1, 0
    while time.perf_counter() - started < limit_s:
        time.sleep(1.0)
        try:
            with sqlite3.connect(f"{index}.screened") as conn:
                now = conn.execute("SELECT count(*) FROM verdicts").fetchone()[0]
        except sqlite3.Error:
            now = 0  # no file yet
        still = still + 1 if now == kept else 0
        if (still and now >= notes) or still >= give_up_s:
            break  # every note's verdict and none new in the last second, or none coming
        kept = now
    return kept


def itemised(store: Path, index: Path, prompts: list[str], real, work: Path) -> dict:
    """Each stage of a warm hybrid hook alone: the hook process (start, read stdin, connect, a
    ping's round trip, exit), embedding the prompt, the search (both legs), association and
    scoring and selection (the pipeline's own timings), and the injection's rendering (the
    whole injection path minus its recall)."""
    from memlane import Memory
    from memlane.adapters.hookclient import ask_daemon, daemon_key, project_root, socket_path
    from memlane.inject import layers
    from memlane.recall import RecallPlan, run_recall
    from memlane.retrieve.search import rank

    out: dict = {}
    env = os.environ.copy()
    common = ["--store", str(store), "--index", str(index)]
    daemon = subprocess.Popen([str(BIN / "memlane"), "serve", *common, "--embedder", "none", "--idle-minutes", "10"],
                              env=env, cwd=str(work), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sock = socket_path(daemon_key(project_root(str(work)), [str(store)], "none", str(index)))
    deadline = time.monotonic() + 300
    while ask_daemon(sock, "ping") is None and time.monotonic() < deadline:
        time.sleep(0.2)
    ping = [sys.executable, "-c", "import sys; sys.path.insert(0, %r); from memlane.adapters.hookclient import ask_daemon;"
            " sys.stdin.read(); ask_daemon(%r, 'ping')" % (str(REPO / "src"), sock)]
    out["hook process: start, stdin, connect, round trip"] = _pct([_time(ping, "{}", env, str(work))[0]
                                                                  for _ in range(60)])
    ask_daemon(sock, "stop")
    daemon.wait(timeout=60)
    with Memory([store], embedder=real, index_path=index) as memory:
        memory.refresh()
        memory.trust_index()  # as the daemon holds it: its own throttle looks at the files, off the request
        memory.auto_lifecycle = False
        config = memory.config
        embed, search, associate, select, render = [], [], [], [], []
        for n, prompt in enumerate(prompts):
            text = f"{prompt} ({n})"  # never the embedder's cached vector
            started = time.perf_counter()
            vector = real.embed_query(text[: real.max_chars])
            embed.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            rank(memory.index, text, config.retrieve, embedder=real, query_vector=vector, apply_threshold=False)
            search.append((time.perf_counter() - started) * 1000)
            outcome = run_recall(memory.index, text, config, embedder=real, plan=RecallPlan())
            associate.append(outcome.timings_ms.get("associate_score", 0.0))
            select.append(outcome.timings_ms.get("select", 0.0))
            payload = {"session_id": f"items-{n}", "transcript_path": str(work / "none.jsonl"), "cwd": str(work),
                       "hook_event_name": "UserPromptSubmit", "prompt": text}
            started = time.perf_counter()
            layers.user_prompt(memory, payload, dry_run=True)
            whole = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            memory.recall(text, refresh=False, record=False, include_private=False)
            render.append(max(0.0, whole - (time.perf_counter() - started) * 1000))
    out["embedding the prompt"] = _pct(embed)
    out["search (keyword + vector legs, fusion)"] = _pct(search)
    out["association and scoring"] = _pct(associate)
    out["selection (constellations)"] = _pct(select)
    out["rendering the injection (path minus recall)"] = _pct(render)
    return out


def tokens(args) -> dict:
    from memlane import Memory
    from memlane.config import Bracket, Config
    from memlane.eval.datasets import load_dataset
    from memlane.eval.metrics import estimate_tokens
    from memlane.inject.layers import user_prompt

    bench = Path(args.bench_dir or os.environ.get("MEMLANE_BENCH_DIR") or "/work/shared/bench") / "agent_notes_dev"
    if not bench.is_dir():
        print(f"skipped tokens: {bench} not found")
        return {}
    dataset = load_dataset(bench)
    prompts = [json.loads(line) for line in (bench / "prompts.jsonl").read_text().splitlines()]
    work = Path(tempfile.mkdtemp(prefix="memlane-tokens-"))
    os.environ.update({"MEMLANE_CACHE_DIR": str(work / "cache"), "XDG_RUNTIME_DIR": str(work)})
    folders = {}
    for repo in {p["repo"] for p in prompts}:
        owner, name = repo.split("/")
        notes = next(d for d in (bench / "notes" / f"{owner}__{name}").rglob("MEMORY.md")).parent \
            if list((bench / "notes" / f"{owner}__{name}").rglob("MEMORY.md")) else None
        if notes is None:
            notes = next(p.parent for p in (bench / "notes" / f"{owner}__{name}").rglob("*.md") if p.name != "LICENSE")
        folders[repo] = notes
    whole = {}
    for repo, folder in folders.items():
        text = "\n\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.glob("*.md")))
        whole[repo] = estimate_tokens(text)
    result: dict = {"whole_store_tokens": whole}
    print(f"\ninjected per prompt on agent_notes_dev ({len(prompts)} prompts) vs the whole store in full "
          f"(mean {statistics.mean(whole[p['repo']] for p in prompts):.0f} tokens per prompt's repository):")
    for bracket in Bracket:
        config = Config()
        config.inject.default_bracket = bracket.value
        totals, found, wanted, ratios = [], 0, 0, []
        for n, prompt in enumerate(prompts):
            folder = folders[prompt["repo"]]
            with Memory([folder], config=config, index_path=work / f"{prompt['repo'].replace('/', '_')}.sqlite",
                        embedder=args.embedder) as memory:
                injection = user_prompt(memory, {"session_id": f"{bracket.value}-{n}", "prompt": prompt["prompt"],
                                                 "transcript_path": None}, dry_run=True)
            used = estimate_tokens(injection.text)
            totals.append(used)
            shown = {Path(s["path"]).name for s in injection.report.get("shown", [])}
            relevant = {Path(r.split(":", 1)[1]).name for r in prompt["relevant"]}
            found += len(relevant & shown)
            wanted += len(relevant)
            if used:
                ratios.append(whole[prompt["repo"]] / used)
        mean_whole = statistics.mean(whole[p["repo"]] for p in prompts)
        recall = found / wanted
        # at equal recall: whole notes drawn from the store without any ranking reach this recall,
        # in expectation, with this share of the store (the labelled notes are as long as any)
        row = {"mean_tokens": round(statistics.mean(totals)), "recall": round(recall, 3),
               "whole_over_injected": round(mean_whole / max(1, statistics.mean(totals)), 1),
               "median_ratio_per_prompt": round(statistics.median(ratios), 1) if ratios else None,
               "equal_recall_tokens": round(recall * mean_whole),
               "equal_recall_ratio": round(recall * mean_whole / max(1, statistics.mean(totals)), 1)}
        result[bracket.value] = row
        print(f"  {bracket.value:9s} {row['mean_tokens']:6d} tokens per prompt, recall of labelled notes "
              f"{row['recall']:.3f}; whole store / injected = {row['whole_over_injected']}x "
              f"(median per prompt {row['median_ratio_per_prompt']}x); at equal recall, unranked whole notes "
              f"need {row['equal_recall_tokens']} tokens = {row['equal_recall_ratio']}x")
    shutil.rmtree(work, ignore_errors=True)
    del dataset
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["latency", "tokens", "all"], default="all")
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--embedder", default="default")
    parser.add_argument("--bench-dir")
    parser.add_argument("--ahead", action="store_true", help="let the daemon screen every note ahead first")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    report = {}
    if args.part in ("tokens", "all"):
        report["tokens"] = tokens(args)
    if args.part in ("latency", "all"):
        report["latency"] = latency(args)
    (OUT / "hooks.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
