"""Recall and refresh at scale: 10k and 100k synthetic notes with vectors of a real model's size.

    .venv/bin/python bench/scale.py                          # 10k and 100k
    .venv/bin/python bench/scale.py --sizes 10000 --queries 100
    .venv/bin/python bench/scale.py --sizes 100000 --profile refresh   # cProfile of a one-note refresh

The notes are generated here (seeded; subfolders of 1,000; about one ``[[link]]`` per note, a
few in Korean or Chinese) into a temporary folder that later runs reuse. The index is built
with a deterministic embedder of the real model's dimension (768: e5-minilm) and name: a hashed
bag of words plus a little seeded noise, so vectors are dense, texts sharing words are near,
and 100k notes embed in seconds rather than hours. Its floor is off (``min_cosine = -1``), so
the vector leg always hands its full candidate list to fusion (the worst case).

Every figure comes from a fresh process of its own (the child roles below), so each peak RSS
is that process's own:

- ``build``: generate (or reuse) the store, build the index from nothing; index size on disk;
- ``warm``: one warm process, many prompts: ``Memory.recall`` (no refresh, no hit-log, one
  OpenBLAS thread: as the daemon answers), hybrid and keyword-only, and ``rank()`` alone (the search); p50/p95 of wall
  time and of CPU time;
- ``fresh``: one hybrid ``Memory.recall`` in a fresh process (with its refresh, as the CLI
  does): wall, CPU and peak RSS (``ru_maxrss``); repeated, the worst RSS kept;
- ``refresh``: in a fresh process, the refresh when nothing changed, then after editing one
  note's body, then after adding a link to one note (at 20k notes and up: the note relinked in
  place, then the whole-graph structure settled as the daemon has it settled — by
  ``python -m memlane.associate.settle``, timed), and a second body edit in the same (now warm) process. Every edit is undone
  afterwards.
- ``cli`` (``--cli``): a fresh ``memlane recall`` process with the real embedder (model load and
  query embedding included), its wall time and peak RSS.

Figures are printed and written to ``<workdir>/scale.json``; nothing is asserted.
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
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

DIM = 768  # e5-minilm: multilingual-e5-small (384) beside all-MiniLM-L6-v2 (384)
MODEL = "e5-minilm"
GENERATOR_VERSION = 1

_WORDS = """
api auth backend batch benchmark binary bootstrap branch broker buffer build bundle cache callback canary
certificate changelog channel checksum chunk cli client cluster codec commit compiler component config
connection consumer container context coverage cron cursor daemon dashboard database deadline debug
dependency deploy deprecation diff directory docker domain driver endpoint environment error event exception
export feature fixture flag flaky fork frontend function gateway generator git gradle handler hash header
heap hook image import index ingest integration interface invariant iterator job kafka kernel key kubernetes
lambda latency layout library lint loader lock log login loop manifest memory merge message metric
middleware migration mock module monitor monorepo mutex namespace network node notebook notification offset
operator optimizer package pagination parser partition patch payload pipeline plugin pointer policy pool
postgres process profile prompt protocol proxy pull queue quota rate reader rebase record redis refactor
region registry regression release replica repository request resolver response retry revision rollback
rollout router runtime sandbox scheduler schema scope script sdk secret selector serializer server service
session shard shell sidecar signal snapshot socket source span spec sqlite stack staging storage stream
struct subprocess suite symbol sync syntax table tag task template tenant terraform test thread throttle
timeout timestamp token topic trace transaction transform trigger tuple type upload upstream user validator
variable vector vendor version view volume webhook worker workflow workspace yaml
add avoid bump check clean close configure delete disable document enable ensure fix flush guard handle
ignore inspect keep limit measure migrate move pin prefer prune push reject remove rename replay report
require reset restart revert review rotate run scan ship skip split squash stage stop trim update upgrade
validate verify wait warn watch wrap write async atomic broken cheap cold concurrent critical deprecated
dirty duplicate empty expensive external fast fragile global hidden idempotent incremental internal large
legacy local manual missing nested nightly noisy old optional parallel partial private public quick remote
shared silent slow small stale strict temporary transient unstable unused urgent warm
""".split()
_GLUE = "the a and or but if when before after because so then with without for from into on in at by of to".split()
_CJK = [
    "배포 전에 마이그레이션을 반드시 확인한다", "캐시 무효화는 버전 키로 처리한다", "데이터베이스 연결 풀 크기를 제한한다",
    "테스트가 불안정하면 재시도하지 말고 원인을 찾는다", "로그에는 비밀 값을 남기지 않는다",
    "部署之前检查数据库迁移", "缓存失效策略使用版本号", "测试不稳定时先查明原因", "日志中不要写入密钥", "连接池的大小要有上限",
]
_TYPES = ("feedback", "project", "reference", "user")


class NoteWriter:
    """Seeded notes in the Claude Code auto-memory layout: each note has a topic of 20 words
    (~60% of its words), the rest Zipf-like over the vocabulary, so IDF means something."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.vocab = list(_WORDS)
        self.rng.shuffle(self.vocab)
        self.weights = [1 / (rank + 1) ** 0.7 for rank in range(len(self.vocab))]
        self.topic = self.vocab[:20]

    def words(self, n: int) -> list[str]:
        out = self.rng.choices(self.vocab, weights=self.weights, k=n)
        return [self.rng.choice(self.topic) if self.rng.random() < 0.6 else w for w in out]

    def sentence(self, lo: int, hi: int) -> str:
        out = []
        for word in self.words(self.rng.randint(lo, hi)):
            out.append(word)
            if self.rng.random() < 0.4:
                out.append(self.rng.choice(_GLUE))
        text = " ".join(out)
        return text[0].upper() + text[1:] + "."

    def note(self, number: int, names: list[str]) -> tuple[str, str]:
        rng = self.rng
        self.topic = rng.sample(self.vocab, 20)
        kind = rng.choices(_TYPES, weights=(5, 3, 2, 1))[0]
        name = f"{kind}_{'_'.join(self.words(rng.randint(2, 3)))}_{number}"
        lines = ["---", f"name: {name}", f"description: {self.sentence(6, 14)}", f"type: {kind}"]
        if rng.random() < 0.2:
            lines.append(f"recall: [{', '.join(self.words(3))}]")
        lines += ["---", ""]
        for _ in range(rng.choice((1, 2, 2, 3, 3, 4))):
            if rng.random() < 0.2:
                lines += [f"- {self.sentence(4, 12)}" for _ in range(rng.randint(2, 4))]
            else:
                lines.append(" ".join(self.sentence(6, 20) for _ in range(rng.randint(1, 3))))
            lines.append("")
        if rng.random() < 0.04:  # a little Korean and Chinese
            lines += [" ".join(rng.sample(_CJK, 2)) + ".", ""]
        if names and rng.random() < 0.6:  # about one link per note
            lines.append("See " + ", ".join(f"[[{rng.choice(names)}]]" for _ in range(rng.randint(1, 3))) + ".")
        return name, "\n".join(lines).rstrip() + "\n"

    def prompt(self) -> str:
        rng = self.rng
        self.topic = rng.sample(self.vocab, 20)
        roll = rng.random()
        if roll < 0.05:
            return rng.choice(_CJK)
        if roll < 0.45:
            return " ".join([rng.choice(("please", "can you", "why does", "how do we")), *self.words(rng.randint(3, 9))])
        if roll < 0.85:
            return self.sentence(4, 14)
        return " ".join(self.words(rng.randint(1, 3)))


def write_store(folder: Path, size: int, seed: int) -> Path:
    """``size`` notes under ``folder`` (reused when a previous run wrote the same ones)."""
    marker = folder / ".generated.json"
    spec = {"size": size, "seed": seed, "version": GENERATOR_VERSION}
    if marker.is_file() and json.loads(marker.read_text()) == spec:
        return folder
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    writer, names = NoteWriter(seed), []
    for number in range(size):
        name, text = writer.note(number, names[-2000:])
        names.append(name)
        sub = folder / f"topic-{number // 1000:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{name}.md").write_text(text, encoding="utf-8")
    marker.write_text(json.dumps(spec))
    return folder


def prompts(n: int, seed: int) -> list[str]:
    writer = NoteWriter(seed + 1)
    return [writer.prompt() for _ in range(n)]


def scale_embedder(name: str = MODEL, dim: int = DIM):
    """A deterministic embedder of ``dim`` floats under ``name``: a hashed bag of words (CJK
    read as bigrams, as the fake embedder does) plus seeded noise, unit length."""
    import numpy as np

    from memlane.embed.base import Embedder
    from memlane.embed.fake import _words

    slots: dict[str, tuple[int, float]] = {}

    class ScaleEmbedder(Embedder):
        min_cosine = -1.0  # the vector leg always hands its full candidate list to fusion
        strong_cosine = 0.8

        def embed_batch(self, texts, *, is_query):
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            for row, text in enumerate(texts):
                idx, signs = [], []
                for word in _words(text.lower()):
                    hit = slots.get(word)
                    if hit is None:
                        h = zlib.crc32(word.encode())
                        hit = slots[word] = (h % self.dim, 1.0 if (h >> 16) & 1 else -1.0)
                    idx.append(hit[0])
                    signs.append(hit[1])
                bag = np.bincount(np.asarray(idx, dtype=np.int64), weights=signs, minlength=self.dim)
                noise = np.random.default_rng(zlib.crc32(text.encode("utf-8", "surrogatepass"))).standard_normal(self.dim)
                bag = bag / (np.linalg.norm(bag) or 1.0) + 0.3 * noise / np.linalg.norm(noise)
                out[row] = bag / np.linalg.norm(bag)
            return out

    ScaleEmbedder.name, ScaleEmbedder.dim = name, dim
    return ScaleEmbedder()


# -- the child roles ------------------------------------------------------------------------------
def _paths(args) -> tuple[Path, Path]:
    work = Path(args.workdir)
    return work / f"notes-{args.size}", work / f"index-{args.size}.sqlite"


def _memory(args, embedder="scale"):
    from memlane import Memory

    store, index = _paths(args)
    memory = Memory([store], embedder=scale_embedder() if embedder == "scale" else embedder, index_path=index,
                    cwd=args.workdir)
    memory.auto_lifecycle = False  # as the daemon runs: lifecycle in the background
    return memory


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _timed(fn, profile: bool = False):
    """(result, wall ms, CPU ms) of ``fn()``; with ``profile`` its cProfile goes to stderr."""
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    wall, cpu = (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000
    if prof is not None:
        import pstats

        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    return result, round(wall, 1), round(cpu, 1)


def index_size(index: Path) -> dict:
    files = {suffix or "main": Path(f"{index}{suffix}").stat().st_size
             for suffix in ("", "-wal") if Path(f"{index}{suffix}").exists()}
    out = {"total_mb": round(sum(files.values()) / 1e6, 1), "files_mb": {k: round(v / 1e6, 1) for k, v in files.items()}}
    import sqlite3

    try:
        conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 12").fetchall()
        out["tables_mb"] = {name: round(size / 1e6, 1) for name, size in rows}
        conn.close()
    except sqlite3.Error:
        pass  # no dbstat in this SQLite build
    return out


def role_build(args) -> dict:
    store, index = _paths(args)
    _, gen_ms, _ = _timed(lambda: write_store(store, args.size, args.seed))
    for suffix in ("", "-wal", "-shm", ".memlane"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    memory = _memory(args)
    report, wall, cpu = _timed(memory.refresh)
    memory.close()
    return {"generate_s": round(gen_ms / 1000, 1), "build_s": round(wall / 1000, 1), "build_cpu_s": round(cpu / 1000, 1),
            "notes": report.notes, "embedded": report.embedded, "index": index_size(index), "rss_mb": _rss_mb()}


def _summary(values: list[float]) -> dict:
    values = sorted(values)
    return {"p50": round(statistics.median(values), 2), "p95": round(values[int(0.95 * (len(values) - 1))], 2)}


def role_warm(args) -> dict:
    from memlane.modes import Fusion
    from memlane.retrieve import rank

    memory = _memory(args)
    memory.refresh()
    memory.min_refresh_interval = float("inf")
    qs = prompts(args.queries, args.seed)
    embedder = memory.embedder
    calls = {
        "recall_hybrid": lambda q: memory.recall(q, refresh=False, record=False, include_private=False),
        "recall_keyword": lambda q: memory.recall(q, refresh=False, record=False, include_private=False,
                                                  fusion=Fusion.KEYWORD),
        "search_hybrid": lambda q: rank(memory.index, q, memory.config.retrieve, embedder=embedder,
                                        fusion=Fusion.HYBRID),
    }
    out = {}
    for label, call in calls.items():
        for q in qs[:10]:
            call(q)  # warm: the vector matrix, the page cache, SQLite's statement cache
        walls, cpus, _ = [], [], None
        for q in qs:
            _, wall, cpu = _timed(lambda: call(q))
            walls.append(wall)
            cpus.append(cpu)
        out[label] = {"wall_ms": _summary(walls), "cpu_ms": _summary(cpus)}
    if args.profile == "warm":
        _timed(lambda: [calls["recall_hybrid"](q) for q in qs[:50]], profile=True)
    out["rss_mb"] = _rss_mb()
    return out


def role_fresh(args) -> dict:
    memory = _memory(args)
    q = prompts(args.runs + 1, args.seed + 5)[args.run]
    results, wall, cpu = _timed(lambda: memory.recall(q, record=False, include_private=False),
                                profile=args.profile == "fresh")
    return {"recall_ms": wall, "recall_cpu_ms": cpu, "results": len(results), "rss_mb": _rss_mb()}


def _edit(path: Path, extra: str) -> str:
    original = path.read_text(encoding="utf-8")
    path.write_text(original.rstrip("\n") + "\n\n" + extra + "\n", encoding="utf-8")
    return original


def role_refresh(args) -> dict:
    store, _ = _paths(args)
    files = sorted(store.glob("topic-*/*.md"))
    rng = random.Random(args.seed + 9)
    body_note, link_note, warm_note = rng.sample(files, 3)
    target = rng.choice(files).stem
    memory = _memory(args)
    out: dict = {}
    originals = {}
    try:
        report, wall, cpu = _timed(memory.refresh)
        out["nothing_changed"] = {"wall_ms": wall, "cpu_ms": cpu, "up_to_date": report.up_to_date}
        steps = [("body_edit", body_note, "One more line about the flaky deploy."),
                 ("link_added", link_note, f"Also see [[{target}]]."),
                 ("body_edit_warm", warm_note, "Another line, in the same process.")]
        for label, path, extra in steps:
            originals[path] = _edit(path, extra)
            report, wall, cpu = _timed(memory.refresh, profile=args.profile == "refresh" and label == "body_edit")
            out[label] = {"wall_ms": wall, "cpu_ms": cpu, "updated": report.updated, "embedded": report.embedded}
            if label == "link_added" and memory.graph_unsettled():  # hubs, clusters, constellations: later
                started = time.perf_counter()  # as the daemon settles them: a process of its own
                code = subprocess.run([sys.executable, "-m", "memlane.associate.settle", str(memory.index_path)]).returncode
                out["settled_aside"] = {"wall_ms": round((time.perf_counter() - started) * 1000, 1), "exit": code,
                                        "settled": not memory.graph_unsettled()}
    finally:
        for path, text in originals.items():
            path.write_text(text, encoding="utf-8")
        memory.refresh()
    out["rss_mb"] = _rss_mb()
    return out


ROLES = {"build": role_build, "warm": role_warm, "fresh": role_fresh, "refresh": role_refresh}


# -- the parent -----------------------------------------------------------------------------------
def _child(args, role: str, size: int, *extra: str) -> dict:
    cmd = [sys.executable, __file__, "--role", role, "--size", str(size), "--workdir", args.workdir,
           "--seed", str(args.seed), "--queries", str(args.queries), "--runs", str(args.runs), *extra]
    if args.profile:
        cmd += ["--profile", args.profile]
    # the warm figures are a resident process's: its BLAS on one thread, as the daemon sets it
    env = os.environ | ({"OPENBLAS_NUM_THREADS": "1"} if role == "warm" else {})
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)
    if proc.returncode != 0:
        return {"error": f"{role} exited with {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _cli(args, size: int) -> dict:
    """A fresh ``memlane recall`` process with the real embedder: wall time and peak RSS."""
    memlane = Path(sys.executable).parent / "memlane"
    store, index = Path(args.workdir) / f"notes-{size}", Path(args.workdir) / f"index-{size}.sqlite"
    env = os.environ | {"XDG_CONFIG_HOME": str(Path(args.workdir) / "xdg-config"),
                        "MEMLANE_CACHE_DIR": str(Path(args.workdir) / "cache")}
    walls, rss, code = [], [], 0
    for n, q in enumerate(prompts(args.runs + 1, args.seed + 7)):
        cmd = [str(memlane), "recall", "--store", str(store), "--index", str(index), "--embedder", MODEL, q]
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=args.workdir)
        _, status, usage = os.wait4(proc.pid, 0)
        if n:  # the first run warms the page cache
            walls.append((time.perf_counter() - started) * 1000)
            rss.append(usage.ru_maxrss / 1024)
        code = code or os.waitstatus_to_exitcode(status)
    return {"median_ms": round(statistics.median(walls), 1), "rss_mb": round(max(rss), 1), "exit": code}


def measure(args, size: int) -> dict:
    print(f"{size} notes: build ...", file=sys.stderr, flush=True)
    out = {"size": size, "build": _child(args, "build", size) if not args.reuse else None}
    print(f"{size} notes: warm recall ...", file=sys.stderr, flush=True)
    out["warm"] = _child(args, "warm", size)
    print(f"{size} notes: fresh processes ...", file=sys.stderr, flush=True)
    fresh = [_child(args, "fresh", size, "--run", str(run)) for run in range(args.runs)]
    fresh = [f for f in fresh if "error" not in f] or fresh
    out["fresh"] = {"recall_ms": statistics.median(f.get("recall_ms", 0) for f in fresh),
                    "recall_cpu_ms": statistics.median(f.get("recall_cpu_ms", 0) for f in fresh),
                    "rss_mb": max(f.get("rss_mb", 0) for f in fresh), "runs": len(fresh)}
    print(f"{size} notes: refresh after one edit ...", file=sys.stderr, flush=True)
    out["refresh"] = _child(args, "refresh", size)
    if args.cli:
        print(f"{size} notes: memlane recall with the real model ...", file=sys.stderr, flush=True)
        out["cli"] = _cli(args, size)
    out["index"] = index_size(Path(args.workdir) / f"index-{size}.sqlite")
    return out


def report(data: dict) -> None:
    print(f"\nscale — {data['cpus']} CPU(s), Python {data['python']}, {data['queries']} prompts, "
          f"{DIM}-dim vectors, seed {data['seed']}")
    for s in data["sizes"]:
        print(f"\n{s['size']:,} notes")
        if s.get("build"):
            b = s["build"]
            print(f"  build: {b.get('build_s')} s (CPU {b.get('build_cpu_s')} s), {b.get('notes')} notes, "
                  f"RSS {b.get('rss_mb')} MB")
        for label, w in (s["warm"] or {}).items():
            if isinstance(w, dict):
                print(f"  warm {label:15s} p50 {w['wall_ms']['p50']:7.2f} ms  p95 {w['wall_ms']['p95']:7.2f} ms"
                      f"   (CPU p50 {w['cpu_ms']['p50']:.2f}, p95 {w['cpu_ms']['p95']:.2f})")
        print(f"  warm process RSS {s['warm'].get('rss_mb')} MB")
        f = s["fresh"]
        print(f"  fresh hybrid recall: {f['recall_ms']} ms (CPU {f['recall_cpu_ms']} ms), peak RSS {f['rss_mb']} MB"
              f" (worst of {f['runs']})")
        for label, r in s["refresh"].items():
            if isinstance(r, dict):
                print(f"  refresh {label:15s} {r['wall_ms'] / 1000:7.3f} s"
                      + (f"  (CPU {r['cpu_ms'] / 1000:.3f} s)" if "cpu_ms" in r else f"  exit {r.get('exit')}")
                      + (f"  updated {r['updated']}, embedded {r['embedded']}" if "updated" in r else ""))
        if s.get("cli"):
            print(f"  memlane recall (real model): {s['cli']['median_ms']} ms, peak RSS {s['cli']['rss_mb']} MB,"
                  f" exit {s['cli']['exit']}")
        idx = s["index"]
        print(f"  index on disk: {idx['total_mb']} MB {idx['files_mb']}")
        if idx.get("tables_mb"):
            print("    " + ", ".join(f"{k} {v}" for k, v in idx["tables_mb"].items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200, help="prompts for the warm figures")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per size")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "memlane-scale"),
                        help="generated stores and indexes (reused between runs)")
    parser.add_argument("--reuse", action="store_true", help="keep the indexes already built")
    parser.add_argument("--cli", action="store_true", help="also time `memlane recall` with the real model")
    parser.add_argument("--profile", choices=("warm", "fresh", "refresh"), help="cProfile one phase to stderr")
    parser.add_argument("--out", help="write the figures here too (JSON)")
    parser.add_argument("--role", choices=sorted(ROLES), help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.role:
        print(json.dumps(ROLES[args.role](args)))
        return 0
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    data = {"python": platform.python_version(), "cpus": os.cpu_count(), "seed": args.seed, "queries": args.queries,
            "sizes": [measure(args, int(size)) for size in args.sizes.split(",")]}
    (Path(args.workdir) / "scale.json").write_text(json.dumps(data, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(data, indent=2))
    report(data)
    print(f"\nwrote {Path(args.workdir) / 'scale.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
