"""Speed on synthetic memory stores of 1k / 10k / 100k notes.

    .venv/bin/python bench/speed.py                          # all sizes, the default embedder
    .venv/bin/python bench/speed.py --sizes 1000,10000 --embedder none

For each size, in a child process of its own (so its peak RSS is its own):
- index build rate (notes/s) keyword-only: a cold ``Memory.refresh()`` (scan + parse + SQLite/FTS5
  sync), and the no-op refresh a recall pays when nothing changed;
- warm ``rank()`` latency p50/p95 over ~200 queries, keyword-only and hybrid.

The real embedder is far too slow to embed 100k notes here, so: its passage rate is measured
on a sample of generated notes and the "with embeddings" build rate is extrapolated from it;
for hybrid search latency the index is filled with *random unit vectors* under the real
model's name and dimension (same matrix size and search cost, meaningless ranking), the
vector floor is disabled so the vector leg always hands its full candidate list to fusion
(worst case), and the query embedding time (real model, one query at a time, as the hook
does) is reported beside it.

Then a fresh ``memlane recall`` process end to end per size (median of several runs against a
prebuilt index; ``python -c pass`` timed in the same run for the ratio), with its peak RSS.
Figures are printed and written to bench/out/speed.json; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
OUT = REPO / "bench" / "out"

# -- a vocabulary for realistic engineering notes ----------------------------------------------
_WORDS = """
api auth backend batch benchmark binary bootstrap branch broker buffer build bundle cache
callback canary certificate changelog channel checksum chunk cli client cluster codec commit
compiler component config connection consumer container context coverage cron cursor daemon
dashboard database deadline debug dependency deploy deprecation diff directory docker domain
driver endpoint environment error event exception export feature fixture flag flaky fork
frontend function gateway generator git gradle handler hash header heap hook image import index
ingest integration interface invariant iterator job kafka kernel key kubernetes lambda latency
layout library lint loader lock log login loop manifest memory merge message metric middleware
migration mock module monitor monorepo mutex namespace network node notebook notification
offset operator optimizer package pagination parser partition patch payload pipeline plugin
pointer policy pool postgres process profile prompt protocol proxy pull queue quota rate
reader rebase record redis refactor region registry regression release replica repository
request resolver response retry revision rollback rollout router runtime sandbox scheduler
schema scope script sdk secret selector serializer server service session shard shell sidecar
signal snapshot socket source span spec sqlite stack staging storage stream struct subprocess
suite symbol sync syntax table tag task template tenant terraform test thread throttle timeout
timestamp token topic trace transaction transform trigger tuple type upload upstream user
validator variable vector vendor version view volume webhook worker workflow workspace yaml
""".split()
_VERBS = """
add avoid bump cache check clean close configure debug delete deploy disable document enable
ensure fix flush guard handle ignore inspect keep limit log measure merge migrate mock move
pin prefer profile prune push rebase refactor reject release remove rename replay report
require reset restart retry revert review rotate run scan ship skip split squash stage stop
tag test throttle trim update upgrade validate verify wait warn watch wrap write
""".split()
_ADJ = """
async atomic broken cheap cold concurrent critical deprecated dirty duplicate empty expensive
external fast flaky fragile global hidden idempotent incremental internal large legacy local
manual missing nested nightly noisy old optional parallel partial private public quick remote
shared silent slow small stale strict sync temporary transient unstable unused urgent warm
""".split()
_GLUE = """
the a an and or but if when before after because so then with without for from into on in
at by of to not never always only also just still again first every each all any this that
these those we you it is are was be should must can will do does don't
""".split()
_NAMES = "alice bob carol dave erin frank grace heidi ivan judy mallory oscar peggy trent victor".split()
_TYPES = ("feedback", "project", "reference", "user")


def _zipf_weights(n: int) -> list[float]:
    return [1 / (rank + 1) ** 0.7 for rank in range(n)]


class NoteGenerator:
    """Seeded, varied markdown notes in the Claude Code auto-memory layout."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.content = _WORDS + _VERBS + _ADJ
        self.rng.shuffle(self.content)
        self.weights = _zipf_weights(len(self.content))
        self.topic = self.content[:20]

    def words(self, n: int) -> list[str]:
        """Each note has a topic: ~60% of its words come from 20 topic words, the rest from
        the whole vocabulary with Zipf-like frequencies (so IDF means something)."""
        out = self.rng.choices(self.content, weights=self.weights, k=n)
        return [self.rng.choice(self.topic) if self.rng.random() < 0.6 else w for w in out]

    def sentence(self, lo: int, hi: int) -> str:
        out = []
        for word in self.words(self.rng.randint(lo, hi)):
            out.append(word)
            if self.rng.random() < 0.45:
                out.append(self.rng.choice(_GLUE))
        roll = self.rng.random()
        if roll < 0.15:
            out.insert(self.rng.randrange(len(out)), f"`{self.rng.choice(_WORDS)}_{self.rng.choice(_WORDS)}`")
        elif roll < 0.25:
            out.insert(self.rng.randrange(len(out)), f"src/{self.rng.choice(_WORDS)}/{self.rng.choice(_WORDS)}.py")
        elif roll < 0.30:
            out.insert(self.rng.randrange(len(out)), f"#{self.rng.randint(1, 4000)}")
        elif roll < 0.35:
            out.insert(self.rng.randrange(len(out)), self.rng.choice(_NAMES))
        text = " ".join(out)
        return text[0].upper() + text[1:] + "."

    def note(self, number: int, names: list[str]) -> tuple[str, str]:
        rng = self.rng
        self.topic = rng.sample(self.content, 20)
        kind = rng.choices(_TYPES, weights=(5, 3, 2, 1))[0]
        name = f"{kind}_{'_'.join(self.words(rng.randint(2, 4)))}_{number}"
        lines = ["---", f"name: {name}", f"description: {self.sentence(6, 14)}", f"type: {kind}"]
        if rng.random() < 0.2:
            lines.append(f"recall: [{', '.join(self.words(3))}]")
        lines += ["---", ""]
        for _ in range(rng.choices((1, 2, 3, 4, 6), weights=(2, 4, 3, 2, 1))[0]):
            block = rng.random()
            if block < 0.2:
                lines += [f"- {self.sentence(4, 12)}" for _ in range(rng.randint(2, 5))]
            elif block < 0.3:
                lines.append(f"## {self.sentence(2, 5).rstrip('.')}")
                lines.append(self.sentence(8, 30))
            elif block < 0.37:
                lines += ["```", f"{rng.choice(_VERBS)} --{rng.choice(_WORDS)} {rng.choice(_WORDS)}", "```"]
            else:
                lines.append(" ".join(self.sentence(6, 24) for _ in range(rng.randint(1, 4))))
            lines.append("")
        if names and rng.random() < 0.6:  # about one link per note, as in real stores (xray: 20 for 19 notes)
            lines.append("See " + ", ".join(f"[[{rng.choice(names)}]]" for _ in range(rng.randint(1, 3))) + ".")
        return name, "\n".join(lines).rstrip() + "\n"

    def query(self) -> str:
        rng = self.rng
        self.topic = rng.sample(self.content, 20)
        roll = rng.random()
        if roll < 0.4:  # a developer's prompt
            return " ".join([rng.choice(("please", "can you", "let's", "why does", "how do we")),
                             *self.words(rng.randint(3, 10))])
        if roll < 0.8:
            return self.sentence(4, 16)
        return " ".join(self.words(rng.randint(1, 3)))


def write_store(folder: Path, size: int, seed: int) -> Path:
    """Write ``size`` notes under ``folder`` (in subfolders of 1000), reused when present."""
    marker = folder / ".generated.json"
    spec = {"size": size, "seed": seed, "version": 2}
    if marker.is_file() and json.loads(marker.read_text()) == spec:
        return folder
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    gen = NoteGenerator(seed)
    names: list[str] = []
    for number in range(size):
        name, text = gen.note(number, names[-500:])
        names.append(name)
        sub = folder / f"topic-{number // 1000:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{name}.md").write_text(text, encoding="utf-8")
    marker.write_text(json.dumps(spec))
    return folder


def make_queries(n: int, seed: int) -> list[str]:
    gen = NoteGenerator(seed + 1)
    return [gen.query() for _ in range(n)]


# -- child: one size ------------------------------------------------------------------------------
def _fill_embedder(real_name: str, dim: int, max_chars: int):
    """An embedder that stores random unit vectors under the real model's name: same matrix
    size and search cost as the real thing, no model run."""
    import numpy as np

    from memlane.embed.base import Embedder
    from memlane.index.chunking import text_hash

    class FillEmbedder(Embedder):
        name = real_name
        min_cosine = -1.0  # the vector leg always hands its full candidate list to fusion

        def embed_batch(self, texts, *, is_query):
            out = np.empty((len(texts), dim), dtype=np.float32)
            for row, text in enumerate(texts):
                rng = np.random.default_rng(int(text_hash(text)[:12], 16))
                vec = rng.standard_normal(dim).astype(np.float32)
                out[row] = vec / np.linalg.norm(vec)
            return out

    FillEmbedder.dim, FillEmbedder.max_chars = dim, max_chars
    return FillEmbedder()


def _latency(index, queries, settings, *, embedder, fusion, qvecs=None) -> dict:
    from memlane.eval.metrics import latency_summary
    from memlane.retrieve import rank

    for q in queries[:10]:  # warm: page cache, vector matrix load, SQLite statement cache
        rank(index, q, settings, embedder=embedder, fusion=fusion, query_vector=None if qvecs is None else qvecs[0])
    times = []
    for i, q in enumerate(queries):
        started = time.perf_counter()
        rank(index, q, settings, embedder=embedder, fusion=fusion, query_vector=None if qvecs is None else qvecs[i])
        times.append((time.perf_counter() - started) * 1000)
    return latency_summary(times)


def _pipeline(index, queries, config, *, embedder, fusion, qvecs=None) -> dict:
    """The whole recall pipeline (recall.py) against relevance alone, on the same index: what
    the graph and scoring stages add per recall (issue 3 target: <= 5 ms warm at 10k)."""
    from memlane.eval.metrics import latency_summary
    from memlane.recall import RecallPlan, run_recall

    plans = {"relevance": RecallPlan(fusion, spread=False, score=False, constellations=False),
             "full": RecallPlan(fusion)}
    out = {}
    for name, plan in plans.items():
        for i, q in enumerate(queries[:10]):
            run_recall(index, q, config, embedder=embedder, plan=plan, query_vector=None if qvecs is None else qvecs[i])
        totals, stages = [], {}
        for i, q in enumerate(queries):
            started = time.perf_counter()
            outcome = run_recall(index, q, config, embedder=embedder, plan=plan,
                                 query_vector=None if qvecs is None else qvecs[i])
            totals.append((time.perf_counter() - started) * 1000)
            for stage, ms in outcome.timings_ms.items():
                stages.setdefault(stage, []).append(ms)
        out[name] = {"total": latency_summary(totals),
                     "stages_p50": {k: round(statistics.median(v), 2) for k, v in stages.items()}}
    # the graph and scoring stages, from the per-stage medians (a difference of two noisy totals is not)
    out["graph_scoring_p50_ms"] = round(out["full"]["stages_p50"].get("associate_score", 0.0)
                                        + out["full"]["stages_p50"].get("select", 0.0), 2)
    return out


def child_size(args) -> dict:
    from memlane import Memory
    from memlane.config import RetrieveConfig
    from memlane.modes import Fusion
    from memlane.embed.base import Embedder

    size = args.child_size
    work = Path(args.workdir)
    started = time.perf_counter()
    store = write_store(work / f"notes-{size}", size, args.seed)
    out = {"size": size, "generate_s": round(time.perf_counter() - started, 2)}
    queries = make_queries(args.queries, args.seed)
    settings = RetrieveConfig()

    kw_index = work / f"index-{size}-keyword.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{kw_index}{suffix}").unlink(missing_ok=True)
    memory = Memory([store], embedder="none", index_path=kw_index)
    started = time.perf_counter()
    report = memory.refresh()
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    memory.refresh()
    noop_s = time.perf_counter() - started
    # one note edited: what the next recall pays after any change to the store
    edited = next(store.glob("topic-*/*.md"))
    original = edited.read_text(encoding="utf-8")
    edited.write_text(original + "\nOne more line.\n", encoding="utf-8")
    started = time.perf_counter()
    memory.refresh()
    one_changed_s = time.perf_counter() - started
    edited.write_text(original, encoding="utf-8")
    memory.refresh()
    out["keyword_build"] = {"notes": report["notes"], "seconds": round(build_s, 2),
                            "notes_per_s": round(report["notes"] / build_s, 1),
                            "noop_refresh_s": round(noop_s, 3), "one_changed_refresh_s": round(one_changed_s, 3),
                            "index_mb": round(kw_index.stat().st_size / 1e6, 1)}
    out["keyword_rank_ms"] = _latency(memory.index, queries, settings, embedder=None, fusion=Fusion.KEYWORD)
    out["keyword_pipeline"] = _pipeline(memory.index, queries, memory.config, embedder=None, fusion=Fusion.KEYWORD)
    out["edges"] = memory.index.conn.execute("SELECT count(*) FROM edges").fetchone()[0]

    if args.embedder != "none":
        spec = json.loads(args.embedder_spec)
        fill: Embedder = _fill_embedder(spec["name"], spec["dim"], spec["max_chars"])
        hy_index = work / f"index-{size}-hybrid.sqlite"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{hy_index}{suffix}").unlink(missing_ok=True)
        memory = Memory([store], embedder=fill, index_path=hy_index)
        started = time.perf_counter()
        report = memory.refresh()
        out["fill_build"] = {"seconds": round(time.perf_counter() - started, 2), "vectors": report["embedded"]}
        qvecs = fill.embed_batch(queries, is_query=True)
        out["hybrid_rank_ms"] = _latency(memory.index, queries, settings, embedder=fill, fusion=Fusion.HYBRID,
                                         qvecs=qvecs)
        out["hybrid_pipeline"] = _pipeline(memory.index, queries, memory.config, embedder=fill,
                                           fusion=Fusion.HYBRID, qvecs=qvecs)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return out


def child_embed(args) -> dict:
    """The real embedder: passage rate on a sample of generated notes, query latency."""
    from memlane.embed import load_embedder
    from memlane.eval.metrics import latency_summary
    from memlane.index.chunking import chunk_texts
    from memlane.index.unit import unit_from_note
    from memlane.store.note import parse_note

    started = time.perf_counter()
    embedder = load_embedder(args.embedder)
    load_s = time.perf_counter() - started
    gen = NoteGenerator(args.seed + 2)
    texts = []
    for number in range(args.embed_sample):
        name, text = gen.note(number, [])
        path = Path(f"/sample/{name}.md")
        note = parse_note(text, path=path, rel=path.name, scope="project", store=path.parent)
        texts += chunk_texts(unit_from_note(note), "whole", max_chars=embedder.max_chars)
    embedder.embed_passages(texts[:2])  # warm
    started = time.perf_counter()
    for start in range(0, len(texts), 32):
        embedder.embed_passages(texts[start:start + 32])
    passage_s = time.perf_counter() - started
    queries = make_queries(args.queries, args.seed)
    embedder.embed_query(queries[0])
    times = []
    for q in queries:
        started = time.perf_counter()
        embedder.embed_query(q)
        times.append((time.perf_counter() - started) * 1000)
    return {"embedder": embedder.name, "dim": embedder.dim, "max_chars": embedder.max_chars,
            "load_s": round(load_s, 2), "sample_notes": len(texts),
            "mean_chars": round(sum(map(len, texts)) / len(texts)), "passages_per_s": round(len(texts) / passage_s, 2),
            "query_ms": latency_summary(times),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


# -- parent ---------------------------------------------------------------------------------------
def _child(args, *extra: str) -> dict:
    cmd = [sys.executable, __file__, "--workdir", args.workdir, "--seed", str(args.seed), "--queries",
           str(args.queries), "--embedder", args.embedder, "--embed-sample", str(args.embed_sample), *extra]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        return {"error": f"child {' '.join(extra)} exited with {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _timed_process(cmd: list[str], env: dict, runs: int) -> dict:
    """Median wall time and max peak RSS of ``runs`` fresh processes (one untimed warm-up)."""
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times, rss, code = [], [], 0
    for _ in range(runs):
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.perf_counter() - started)
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stderr.close()
        code = code or proc.returncode
        rss.append(usage.ru_maxrss / 1024)
    return {"median_ms": round(statistics.median(times) * 1000, 1), "min_ms": round(min(times) * 1000, 1),
            "peak_rss_mb": round(max(rss), 1), "exit_code": code}


def end_to_end(args, size: int, baseline: dict) -> dict:
    memlane = Path(sys.executable).parent / "memlane"
    base = [str(memlane)] if memlane.exists() else [sys.executable, "-m", "memlane.adapters.cli"]
    work = Path(args.workdir)
    env = os.environ | {"XDG_CONFIG_HOME": str(work / "xdg-config"), "MEMLANE_CACHE_DIR": str(work / "cache")}
    prompt = make_queries(1, args.seed + 3)[0]
    store = str(work / f"notes-{size}")
    out = {}
    variants = [("keyword", "none", f"index-{size}-keyword.sqlite")]
    if args.embedder != "none":
        variants.append(("hybrid", args.embedder, f"index-{size}-hybrid.sqlite"))
    for label, embedder, index in variants:
        cmd = [*base, "recall", "--store", store, "--index", str(work / index), "--embedder", embedder, prompt]
        result = _timed_process(cmd, env, args.recall_runs)
        result["x_python"] = round(result["median_ms"] / baseline["median_ms"], 1)
        out[label] = result
    return out


def _row(cells, widths) -> str:
    return "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))


def print_report(data: dict) -> None:
    emb = data.get("embed")
    print(f"\nspeed — {data['cpus']} CPU(s), Python {data['python']}, {data['queries']} queries per size, "
          f"seed {data['seed']}")
    if emb and "error" not in emb:
        print(f"embedder {emb['embedder']} (real model, sample of {emb['sample_notes']} generated notes, "
              f"{emb['mean_chars']} chars each on average): {emb['passages_per_s']} passages/s; "
              f"query embedding p50 {emb['query_ms']['p50']:.1f} ms, p95 {emb['query_ms']['p95']:.1f} ms; "
              f"model load {emb['load_s']} s")
    elif emb:
        print(f"embedder: {emb['error']}")
    widths = [8, 10, 10, 9, 9, 8, 8, 9, 9, 8, 8]
    print("\nindex build (notes/s), refresh (s), warm rank() latency (ms), index size and peak RSS (MB)")
    print(_row(["notes", "kw build/s", "+embed/s*", "no-op", "1 edited", "kw p50", "kw p95", "hyb p50†",
                "hyb p95†", "index", "RSS"], widths))
    for s in data["sizes"]:
        if "error" in s:
            print(f"{s.get('size')}: {s['error']}")
            continue
        kb = s["keyword_build"]
        with_embed = "-"
        if emb and "passages_per_s" in emb:
            with_embed = f"{1 / (1 / kb['notes_per_s'] + 1 / emb['passages_per_s']):.1f}"
        hy = s.get("hybrid_rank_ms")
        print(_row([s["size"], kb["notes_per_s"], with_embed, kb["noop_refresh_s"], kb["one_changed_refresh_s"],
                    f"{s['keyword_rank_ms']['p50']:.2f}", f"{s['keyword_rank_ms']['p95']:.2f}",
                    f"{hy['p50']:.2f}" if hy else "-", f"{hy['p95']:.2f}" if hy else "-", kb["index_mb"],
                    s["peak_rss_mb"]], widths))
    print("* extrapolated: keyword build rate combined with the real embedder's passage rate on the sample")
    print("\nthe recall pipeline (recall.py) warm, p50 ms: relevance alone vs the full pipeline (+ spreading,"
          " scoring, constellations); 'graph+scoring' = the median of those stages in the full pipeline")
    for s in data["sizes"]:
        for leg in ("keyword_pipeline", "hybrid_pipeline"):
            p = s.get(leg)
            if p:
                stages = ", ".join(f"{k} {v}" for k, v in p["full"]["stages_p50"].items())
                print(f"  {s['size']:>7} {leg.split('_')[0]:8s} relevance {p['relevance']['total']['p50']:.2f}  "
                      f"full {p['full']['total']['p50']:.2f} (p95 {p['full']['total']['p95']:.2f})  "
                      f"graph+scoring {p['graph_scoring_p50_ms']:.2f}   [{stages}]")
    print("† random unit vectors under the real model's name (search cost only), vector floor off; add the "
          "query embedding time above for a real hybrid recall")
    base = data["python_pass"]
    print(f"\nfresh `memlane recall` process (median of {data['recall_runs']}; `python -c pass` = "
          f"{base['median_ms']} ms, {base['peak_rss_mb']} MB)")
    print(_row(["notes", "mode", "median ms", "x python", "RSS MB", "exit"], [8, 8, 10, 9, 8, 5]))
    for size, modes in data["end_to_end"].items():
        for mode, r in modes.items():
            print(_row([size, mode, r["median_ms"], r["x_python"], r["peak_rss_mb"], r["exit_code"]],
                       [8, 8, 10, 9, 8, 5]))
    print("(hybrid end to end: real model load + query embedding + search over the random-filled vectors)")


def main(argv: list[str] | None = None) -> int:
    from memlane.embed import DEFAULT_EMBEDDER

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER, help="real embedder name, or 'none'")
    parser.add_argument("--embed-sample", type=int, default=64, help="notes embedded for the real passage rate")
    parser.add_argument("--recall-runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", default=str(OUT / "speed"), help="generated stores and indexes (reused)")
    parser.add_argument("--child-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child-embed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--embedder-spec", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child_size:
        print(json.dumps(child_size(args)))
        return 0
    if args.child_embed:
        print(json.dumps(child_embed(args)))
        return 0

    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    data = {"python": platform.python_version(), "cpus": os.cpu_count(), "seed": args.seed,
            "queries": args.queries, "recall_runs": args.recall_runs, "embedder": args.embedder, "embed": None}
    spec_args: list[str] = []
    if args.embedder != "none":
        print(f"measuring the embedder {args.embedder} on a sample ...", file=sys.stderr, flush=True)
        data["embed"] = _child(args, "--child-embed")
        if "error" in data["embed"]:
            args.embedder = "none"
        else:
            spec = {k: data["embed"][k] for k in ("dim", "max_chars")} | {"name": data["embed"]["embedder"]}
            spec_args = ["--embedder-spec", json.dumps(spec)]
    if args.embedder == "none":
        spec_args = []
    data["sizes"], data["end_to_end"] = [], {}
    data["python_pass"] = _timed_process([sys.executable, "-c", "pass"], dict(os.environ), args.recall_runs)
    for size in [int(s) for s in args.sizes.split(",")]:
        print(f"size {size}: generate, build, measure ...", file=sys.stderr, flush=True)
        result = _child(args, "--child-size", str(size), *spec_args)
        result.setdefault("size", size)
        data["sizes"].append(result)
        if "error" not in result:
            data["end_to_end"][str(size)] = end_to_end(args, size, data["python_pass"])
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "speed.json").write_text(json.dumps(data, indent=2))
    print_report(data)
    print(f"\nwrote {OUT / 'speed.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
