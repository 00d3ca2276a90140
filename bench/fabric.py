"""The recall fabric (issue 6): isolation between domains, and what it costs at realistic sizes.

    .venv/bin/python bench/fabric.py                      # both parts
    .venv/bin/python bench/fabric.py --part isolation
    .venv/bin/python bench/fabric.py --part cost [--notes 10000 --docs 1000 --transcripts 200 --code-lines 100000]

**Isolation**: four domains mounted at once — the demo notes, this project's own docs as a
library, LoCoMo conversations as Claude Code transcripts, memlane's own source as code — and
20 mixed prompts, each written for one domain. For every prompt the buckets are printed (each
domain's best addresses), and compared with what a single mixed ranking by raw activation would
show: how often the prompt's own domain would be pushed out of the top 12 by another.

**Cost**: synthetic sources at the sizes of the issue (10k notes, 1k documents, 200 session
transcripts, a ~100k-line repository — the Python standard library copied), the indexing
rate of each domain, and ``recall_all`` warm, p50/p95 over 50 prompts, with the notes
keyword-only and hybrid (real query embedding, vectors filled as in bench/speed.py).
Written to bench/out/fabric.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the daemon runs (adapters/daemon.tune_threads)
sys.path.insert(0, str(REPO / "bench"))
OUT = REPO / "bench" / "out"

#: (prompt, the domain that should answer it)
MIXED = [
    ("what happens to writes while an ALTER TABLE waits for its lock?", "notes"),
    ("can we ship a release during the Q3 freeze?", "notes"),
    ("the upload resume token gets lost when the app is killed", "notes"),
    ("how should CI cache keys be computed?", "notes"),
    ("who signs off on hotfixes?", "notes"),
    ("how do I install the hooks into Claude Code?", "knowledge"),
    ("which dependencies does memlane need and why?", "knowledge"),
    ("how is the context bracket chosen from the transcript?", "knowledge"),
    ("what does the lint command check?", "knowledge"),
    ("how fast is the hook with a warm daemon?", "knowledge"),
    ("when did Caroline go to the LGBTQ support group?", "transcripts"),
    ("what did Melanie paint?", "transcripts"),
    ("what is Caroline's plan for her career?", "transcripts"),
    ("where did Melanie go camping with her family?", "transcripts"),
    ("what books has Caroline been reading?", "transcripts"),
    ("where is the hit-log rotated when it gets too big?", "code"),
    ("the function that chooses the context bracket", "code"),
    ("spreading activation over the link graph", "code"),
    ("parse the YAML frontmatter of a note", "code"),
    ("redact secrets like API keys before injecting", "code"),
]


def write_locomo_transcripts(folder: Path, bench: Path, conversations: int | None = None, copies: int = 1) -> int:
    """LoCoMo conversations as Claude Code transcripts (bench/locomo_transcripts.py's converter),
    the first ``conversations`` of them, ``copies`` times (as different projects); returns the
    number of transcript files."""
    from locomo_transcripts import convert

    corpus = [json.loads(line) for line in (bench / "locomo" / "corpus.jsonl").read_text().splitlines() if line]
    keep = sorted({row["conversation_id"] for row in corpus})[:conversations]
    rows = [row for row in corpus if row["conversation_id"] in keep]
    for copy in range(copies):
        convert([row | {"conversation_id": f"{row['conversation_id']}-{copy}"} for row in rows], folder)
    return len(list(folder.rglob("*.jsonl")))


def project_docs(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for source in (REPO / "README.md", REPO / "bench" / "README_embedders.md", REPO / "src" / "memlane" / "demo" / "README.md"):
        if source.exists():
            shutil.copy(source, folder / f"{source.parent.name}-{source.name}")


def isolation(args) -> dict:
    from memlane import Memory, demo_store_path
    from memlane.domains.fabric import build_fabric

    bench = Path(args.bench_dir)
    work = Path(tempfile.mkdtemp(prefix="memlane-fabric-"))
    os.environ["MEMLANE_CACHE_DIR"] = str(work / "cache")
    project_docs(work / "docs")
    have_locomo = (bench / "locomo").is_dir()
    if have_locomo:
        write_locomo_transcripts(work / "transcripts", bench, conversations=2)
    memory = Memory([demo_store_path()], embedder=args.embedder, index_path=work / "notes.sqlite")
    fabric = build_fabric(memory, docs=[str(work / "docs")], code=[str(REPO / "src" / "memlane")],
                          transcripts=[str(work / "transcripts")] if have_locomo else None)
    memory.refresh()
    fabric.refresh()
    rows, pushed_out, own_first, overrun = [], 0, 0, 0
    for prompt, domain in MIXED:
        if domain not in fabric.domains:
            continue
        out = fabric.recall_all(prompt)
        buckets = {b["domain"]: b for b in out["buckets"]}
        mixed = sorted((h for b in out["buckets"] for h in b["results"]), key=lambda h: -h["activation"])[:12]
        own_in_mixed = any(h["domain"] == domain for h in mixed)
        wide = fabric.recall_all(prompt, ceiling=12 * len(fabric.domains))  # what each domain would offer alone
        mixed_wide = sorted((h for b in wide["buckets"] for h in b["results"]), key=lambda h: -h["activation"])[:12]
        # drowned: the prompt's own domain has answers (at least 2 in its bucket) but a single mixed
        # ranking by raw activation would leave it at most one of 12 places
        crowded = (sum(h["domain"] == domain for h in mixed_wide) <= 1
                   and len(buckets.get(domain, {}).get("results", [])) >= 2)
        pushed_out += crowded
        overrun += max((n for d, n in ((d, sum(h["domain"] == d for h in mixed_wide)) for d in fabric.domains)
                        if d != domain), default=0) >= 7
        own_first += out["buckets"][0]["domain"] == domain
        rows.append({"prompt": prompt, "domain": domain,
                     "buckets": {name: [h["address"] for h in b["results"][:2]] for name, b in buckets.items()},
                     "activations": {name: b["activation"] for name, b in buckets.items()},
                     "own_domain_answered": bool(buckets.get(domain, {}).get("results")),
                     "own_in_mixed_top12": own_in_mixed, "crowded_out_of_a_mixed_top12": crowded,
                     "mixed_top12_domains": {d: sum(h["domain"] == d for h in mixed_wide) for d in fabric.domains}})
    fabric.close()
    answered = sum(r["own_domain_answered"] for r in rows)
    print(f"\nisolation: {len(rows)} mixed prompts, domains {', '.join(fabric.domains)}")
    for r in rows:
        print(f"- [{r['domain']}] {r['prompt']}")
        for name, addresses in r["buckets"].items():
            mark = "*" if name == r["domain"] else " "
            print(f"   {mark}{name:11s} {r['activations'][name]:.2f}  {'; '.join(addresses) or '-'}")
        print(f"    a single mixed top 12 would hold: {r['mixed_top12_domains']}"
              + ("  <- its own domain drowned" if r["crowded_out_of_a_mixed_top12"] else ""))
    print(f"\nthe prompt's own domain answered in its bucket: {answered}/{len(rows)}; its bucket came first: "
          f"{own_first}/{len(rows)}; a single mixed top 12 would have drowned it (at most 1 of 12 places): "
          f"{pushed_out}/{len(rows)}; another domain would take 7 or more of its 12 places: {overrun}/{len(rows)}")
    return {"prompts": len(rows), "own_domain_answered": answered, "own_bucket_first": own_first,
            "crowded_out_in_a_mixed_ranking": pushed_out, "another_domain_takes_7_of_12": overrun, "rows": rows}


def synthetic_docs(folder: Path, count: int, seed: int) -> None:
    import random

    import speed

    gen = speed.NoteGenerator(seed)
    rng = random.Random(seed)
    for n in range(count):
        sub = folder / f"area{n % 20}"
        sub.mkdir(parents=True, exist_ok=True)
        parts = [f"# {gen.query()[:60]}\n\n{gen.query()}\n"]
        for s in range(rng.randint(3, 9)):
            parts.append(f"## {gen.query()[:50]}\n\n" + " ".join(gen.query() for _ in range(rng.randint(3, 12))) + "\n")
            if rng.random() < 0.3:
                parts.append(f"### {gen.query()[:40]}\n\n{gen.query()} {gen.query()}\n")
        (sub / f"doc{n}.md").write_text("\n".join(parts), encoding="utf-8")


def stdlib_repo(folder: Path, lines: int) -> int:
    """Copy Python standard-library packages until ``lines`` lines of Python are in ``folder``."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    total = 0
    for package in ("email", "json", "http", "asyncio", "xml", "logging", "importlib", "urllib", "concurrent",
                    "multiprocessing", "unittest", "sqlite3", "tomllib", "zoneinfo", "wsgiref", "html", "ctypes",
                    "idlelib", "lib2to3", "pydoc_data", "tkinter", "distutils", "ensurepip", "curses", "dbm"):
        source = stdlib / package
        if not source.is_dir() or total >= lines:
            continue
        shutil.copytree(source, folder / package, ignore=shutil.ignore_patterns("__pycache__", "test*", "*.pyc"))
        total += sum(len(p.read_text(errors="replace").splitlines()) for p in (folder / package).rglob("*.py"))
    subprocess_init(folder)
    return total


def subprocess_init(folder: Path) -> None:
    import subprocess

    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(folder)], check=False)
        subprocess.run(["git", "-C", str(folder), "add", "-A"], check=False)
        subprocess.run(["git", "-C", str(folder), "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "x"],
                       check=False, capture_output=True)


def _pct(values):
    ordered = sorted(values)
    return {"p50": round(statistics.median(ordered), 1), "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 1)}


def cost(args) -> dict:
    import speed
    from memlane import Memory
    from memlane.domains.fabric import build_fabric
    from memlane.embed import load_embedder

    bench = Path(args.bench_dir)
    work = Path(tempfile.mkdtemp(prefix="memlane-fabric-cost-"))
    os.environ["MEMLANE_CACHE_DIR"] = str(work / "cache")
    result: dict = {"sizes": {}}
    store = speed.write_store(work / "notes", args.notes, 7)
    synthetic_docs(work / "docs", args.docs, 5)
    transcripts = 0
    if (bench / "locomo").is_dir():
        copies = max(1, -(-args.transcripts // 10))  # LoCoMo has 10 conversations: one transcript each
        transcripts = write_locomo_transcripts(work / "transcripts", bench, copies=copies)
    code_lines = stdlib_repo(work / "code", args.code_lines)
    result["sizes"] = {"notes": args.notes, "docs": args.docs, "transcript_files": transcripts, "code_lines": code_lines}
    real = load_embedder(None)
    fill = speed._fill_embedder(real.name, real.dim, real.max_chars)
    started = time.perf_counter()
    with Memory([store], embedder=fill, index_path=work / "notes.sqlite") as memory:
        memory.refresh()
    rates = {"notes (filled vectors)": round(args.notes / (time.perf_counter() - started), 1)}
    for hybrid in (False, True):
        memory = Memory([store], embedder=real.name if hybrid else "none", index_path=work / "notes.sqlite")
        memory.refresh()
        memory.trust_index()
        fabric = build_fabric(memory, docs=[str(work / "docs")], code=[str(work / "code")],
                              transcripts=[str(work / "transcripts")] if transcripts else None, embed_docs=False)
        if not hybrid:
            for name, domain in fabric.domains.items():
                if name == "notes":
                    continue
                started = time.perf_counter()
                report = domain.refresh()
                seconds = time.perf_counter() - started
                rates[name] = {"seconds": round(seconds, 1), "report": {k: v for k, v in report.items()
                                                                       if k != "skipped"},
                               "skipped": len(report.get("skipped", []))}
                started = time.perf_counter()
                domain.refresh()
                rates[name]["refresh_unchanged_s"] = round(time.perf_counter() - started, 3)
        prompts = speed.make_queries(60, 13)
        for p in prompts[:10]:
            fabric.recall_all(p)
        times, per_domain = [], {name: [] for name in fabric.domains}
        for p in prompts[10:]:
            started = time.perf_counter()
            out = fabric.recall_all(p)
            times.append((time.perf_counter() - started) * 1000)
            for b in out["buckets"]:
                per_domain[b["domain"]].append(b["ms"])
        label = "hybrid notes" if hybrid else "keyword notes"
        result[f"recall_all_{label.replace(' ', '_')}"] = _pct(times) | {
            "per_domain_p50": {d: round(statistics.median(v), 1) for d, v in per_domain.items() if v}}
        fabric.close()
    result["indexing"] = rates
    print(f"\ncost at {result['sizes']}:")
    for name, r in rates.items():
        print(f"  index {name}: {r}")
    for label in ("keyword_notes", "hybrid_notes"):
        r = result[f"recall_all_{label}"]
        print(f"  recall_all warm ({label.replace('_', ' ')}): p50 {r['p50']} ms, p95 {r['p95']} ms; "
              f"per domain p50 {r['per_domain_p50']}")
    shutil.rmtree(work, ignore_errors=True)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["isolation", "cost", "all"], default="all")
    parser.add_argument("--bench-dir", default=os.environ.get("MEMLANE_BENCH_DIR") or "/work/shared/bench")
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=1_000)
    parser.add_argument("--transcripts", type=int, default=200)
    parser.add_argument("--code-lines", type=int, default=100_000)
    args = parser.parse_args(argv)
    result = {}
    if args.part in ("isolation", "all"):
        result["isolation"] = isolation(args)
    if args.part in ("cost", "all"):
        result["cost"] = cost(args)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"fabric_{args.part}.json").write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
