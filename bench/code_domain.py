"""The code domain on a ~100k-line repository: indexing rate, incremental refresh, recall
latency and a small quality check (Recall@5 on queries whose right symbol is known).

The repository is built from this interpreter's standard library: a fixed list of modules
and packages (their tests left out) is copied into a temporary folder until it holds about
100,000 lines, and committed to git when git is installed (so the git listing is measured).
Nothing is added to this repository but ``bench/out/code_domain.json``.

    .venv/bin/python bench/code_domain.py [--lines 100000] [--ctags] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from memlane.domains.code import CodeDomain  # noqa: E402

OUT = REPO / "bench" / "out" / "code_domain.json"

#: copied in this order until the line budget is reached (the quality queries' targets come first)
MODULES = """datetime.py json shutil.py shlex.py textwrap.py difflib.py base64.py bisect.py heapq.py fnmatch.py
tempfile.py csv.py argparse.py uuid.py ipaddress.py urllib pprint.py statistics.py functools.py collections
zipfile.py tarfile.py email http logging pathlib.py subprocess.py gzip.py configparser.py calendar.py string.py
glob.py copy.py random.py smtplib.py inspect.py dataclasses.py enum.py threading.py typing.py asyncio
importlib concurrent sqlite3 socket.py ssl.py ftplib.py imaplib.py mailbox.py pickle.py tokenize.py ast.py
os.py posixpath.py queue.py selectors.py traceback.py warnings.py weakref.py contextlib.py""".split()

#: (query, accepted qualified names): the symbol a developer asking this would want
QUALITY = [
    ("parse a date string in ISO format", {"datetime.date.fromisoformat", "datetime.datetime.fromisoformat",
                                           "datetime._parse_isoformat_date"}),
    ("deserialize a JSON document from a string", {"json.loads", "json.decoder.JSONDecoder.decode"}),
    ("copy a directory tree recursively", {"shutil.copytree"}),
    ("quote a string for use in a shell command", {"shlex.quote"}),
    ("wrap text to a given width", {"textwrap.wrap", "textwrap.fill", "textwrap.TextWrapper.wrap"}),
    ("unified diff of two lists of lines", {"difflib.unified_diff"}),
    ("encode bytes as base64", {"base64.b64encode", "base64.standard_b64encode"}),
    ("find the insertion point in a sorted list", {"bisect.bisect_left", "bisect.bisect_right", "bisect.insort_left"}),
    ("merge several sorted iterables", {"heapq.merge"}),
    ("match a filename against a shell wildcard pattern", {"fnmatch.fnmatch", "fnmatch.fnmatchcase", "fnmatch.filter"}),
    ("create a temporary directory", {"tempfile.mkdtemp", "tempfile.TemporaryDirectory"}),
    ("read rows from a CSV file as dictionaries", {"csv.DictReader"}),
    ("parse command line arguments", {"argparse.ArgumentParser.parse_args", "argparse.ArgumentParser"}),
    ("generate a random UUID", {"uuid.uuid4"}),
    ("urlencode query parameters", {"urllib.parse.urlencode"}),
    ("split a URL into its components", {"urllib.parse.urlsplit", "urllib.parse.urlparse"}),
    ("pretty print a data structure", {"pprint.pprint", "pprint.pformat", "pprint.PrettyPrinter"}),
    ("median of a list of numbers", {"statistics.median"}),
    ("least recently used cache decorator", {"functools.lru_cache"}),
    ("get_close_matches", {"difflib.get_close_matches"}),
    ("ZipFile.extractall", {"zipfile.ZipFile.extractall"}),
    ("namedtuple", {"collections.namedtuple"}),
]
#: more queries for latency (and two unrelated ones that should recall nothing)
OTHERS = """send an email message through an SMTP server
HTTPConnection request
read a gzip compressed file
walk a directory tree
parse an email address header
getaddrinfo
format a date with strftime
run a subprocess and capture its output
TarFile.extractfile
decode quoted-printable text
compute a checksum of a file
join a relative URL to a base URL
configparser read a section
thread pool executor submit
asyncio gather tasks
event loop run until complete
deep copy an object
shuffle a list randomly
weak reference dictionary
suppress an exception in a context manager
format a traceback as text
pickle an object to bytes
tokenize python source
parse python source into an abstract syntax tree
logging rotating file handler
make a path absolute and resolve symlinks
lock a resource between threads
chocolate cake recipe for a birthday party
the weather in paris tomorrow""".splitlines()


def build_repo(dest: Path, budget: int) -> tuple[int, int]:
    """Copy stdlib modules into ``dest`` until ``budget`` lines; (files, lines)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = lines = 0
    for name in MODULES:
        source = stdlib / name
        if not source.exists() or lines >= budget:
            continue
        paths = [source] if source.is_file() else sorted(p for p in source.rglob("*.py")
                                                         if "test" not in p.relative_to(source).parts[:-1])
        for path in paths:
            target = dest / path.relative_to(stdlib)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            files += 1
            lines += len(path.read_bytes().splitlines())
    return files, lines


def git_commit(root: Path) -> bool:
    if shutil.which("git") is None:
        return False
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "stdlib copy"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    return True


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run(root: Path, index: Path, ctags: bool) -> dict:
    result: dict = {}
    with CodeDomain([root], index_path=index, ctags=ctags) as code:
        full = code.refresh()
        result["full"] = {k: full[k] for k in ("files", "symbols", "parsed", "seconds")} | {
            "skipped": len(full["skipped"]), "partial": len(full["partial"]), "listing": full["listing"]}
        result["noop"] = code.refresh()["seconds"]
        target = root / "json" / "decoder.py"
        original = target.read_text()
        target.write_text(original + "\n\ndef benchmark_marker_function():\n    return None\n")
        edited = code.refresh()
        result["edit_one"] = {"seconds": edited["seconds"], "parsed": edited["parsed"]}
        target.write_text(original)
        code.refresh()
        queries = [q for q, _ in QUALITY] + OTHERS
        cold, warm, found = [], [], {}
        for latencies in (cold, warm):
            for query in queries:
                started = time.perf_counter()
                hits = code.recall(query, 5)
                latencies.append((time.perf_counter() - started) * 1000)
                found[query] = [h.address.rsplit(":", 1)[0] for h in hits]
        quality = []
        for query, accepted in QUALITY:
            got = found[query]
            rank = next((i for i, name in enumerate(got, 1) if name in accepted), None)
            quality.append({"query": query, "rank": rank, "top": got[:3]})
        result["latency_ms"] = {"queries": len(queries), "cold_p50": percentile(cold, 0.5),
                                "cold_p95": percentile(cold, 0.95), "warm_p50": percentile(warm, 0.5),
                                "warm_p95": percentile(warm, 0.95)}
        result["quality"] = {"recall_at_5": sum(q["rank"] is not None for q in quality) / len(quality),
                             "mrr": sum(1 / q["rank"] for q in quality if q["rank"]) / len(quality),
                             "queries": quality}
        result["unrelated_empty"] = [q for q in OTHERS[-2:] if not found[q]]
        result["empty_queries"] = sum(1 for q in queries if not found[q])
        result["stats"] = code.stats()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--ctags", action="store_true", help="let Universal Ctags parse non-Python files (none here)")
    parser.add_argument("--keep", type=Path, help="build the repository here and keep it")
    args = parser.parse_args()
    if not Path(sysconfig.get_paths()["stdlib"], "datetime.py").exists():
        print("skipped: the standard library's sources are not installed")
        return 0
    with tempfile.TemporaryDirectory(prefix="memlane-code-bench-") as tmp:
        root = args.keep or Path(tmp) / "stdlib"
        root.mkdir(parents=True, exist_ok=True)
        files, lines = build_repo(root, args.lines)
        in_git = git_commit(root)
        result = {"repository": {"files": files, "lines": lines, "git": in_git, "python": sys.version.split()[0]}}
        result |= run(root, Path(tmp) / "code.sqlite", args.ctags)
    full = result["full"]
    result["rates"] = {"lines_per_s": round(lines / full["seconds"]), "files_per_s": round(files / full["seconds"]),
                       "symbols_per_s": round(full["symbols"] / full["seconds"])}
    report(result)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwritten: {OUT.relative_to(REPO)}")
    return 0


def report(r: dict) -> None:
    repo, full, lat, q = r["repository"], r["full"], r["latency_ms"], r["quality"]
    rows = [
        ("repository", f"{repo['files']} files, {repo['lines']:,} lines (stdlib {repo['python']}, git: {repo['git']})"),
        ("full index", f"{full['seconds']:.2f} s: {full['symbols']:,} symbols, {full['skipped']} skipped, "
                       f"{full['partial']} partial"),
        ("rate", f"{r['rates']['lines_per_s']:,} lines/s, {r['rates']['files_per_s']:,} files/s, "
                 f"{r['rates']['symbols_per_s']:,} symbols/s"),
        ("refresh, nothing changed", f"{r['noop'] * 1000:.0f} ms"),
        ("refresh, one file edited", f"{r['edit_one']['seconds'] * 1000:.0f} ms ({r['edit_one']['parsed']} parsed)"),
        ("recall latency, cold",
         f"p50 {lat['cold_p50']:.1f} ms, p95 {lat['cold_p95']:.1f} ms ({lat['queries']} queries)"),
        ("recall latency, warm", f"p50 {lat['warm_p50']:.1f} ms, p95 {lat['warm_p95']:.1f} ms"),
        ("Recall@5 / MRR", f"{q['recall_at_5']:.2f} / {q['mrr']:.2f} on {len(q['queries'])} known-target queries"),
        ("unrelated queries empty", f"{len(r['unrelated_empty'])}/2; queries with no hit: {r['empty_queries']}"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print("\nquality queries (rank of the right symbol; top 3):")
    for item in q["queries"]:
        print(f"  {str(item['rank'] or '-'):>2}  {item['query']:<52} {', '.join(item['top'])}")


if __name__ == "__main__":
    raise SystemExit(main())
