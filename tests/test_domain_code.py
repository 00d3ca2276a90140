"""The code domain (D1): symbols of a working tree, one hop of callers, incremental sync, privacy.

Every test builds its own small repository: a Python package whose modules call each other,
a JavaScript and a Go file, and the files a real tree has that must not break indexing (a
syntax error, a binary, a huge file, a latin-1 file, vendored folders, a privacy-excluded file).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from memlane.domains.base import PrivacyGate, Recalled
from memlane.domains.code import CodeDomain, code_query_terms, find_ctags, parse_regex, split_identifier

FILES = {
    "src/shop/__init__.py": '"""The shop package."""\n',
    "src/shop/upload.py": '''
        """Uploads of product photos."""
        import functools


        class Uploader:
            """Sends files to the storage bucket."""

            def __init__(self, bucket):
                self.bucket = bucket

            @functools.lru_cache(maxsize=2)
            def resume_upload(self, token: str) -> bool:
                """Resume an interrupted upload from its token."""
                return self.bucket.put(token)


        def start_upload(path):
            uploader = Uploader("photos")
            return uploader.resume_upload(path)
        ''',
    "src/shop/cart.py": '''
        from .upload import start_upload


        def checkout(cart):
            """Pay for the cart and upload the receipt."""
            return start_upload(cart.receipt)
        ''',
    "src/shop/broken.py": '''
        def refund_order(order):
            return order.total

        def oops(:
            pass
        ''',
    "web/app.js": '''
        // Resume a paused transfer.
        export async function resumeUpload(id, opts) {
          const session = openSession(id);
          return session.send(opts);
        }

        class TransferQueue {
          drainQueue(limit) {
            return resumeUpload(limit, {});
          }
        }
        ''',
    "server/server.go": '''
        package main

        // Server listens for sync requests.
        type Server struct {
        	port int
        }

        // Start opens the listening socket.
        func (s *Server) Start(port int) error {
        	return listenTCP(port)
        }

        func listenTCP(p int) error {
        	return nil
        }
        ''',
    "node_modules/leftpad/index.js": "function leftPadVendored(s) { return s; }\n",
    ".venv/lib/site.py": "def venv_helper_function():\n    pass\n",
    "build/gen.py": "def generated_build_helper():\n    pass\n",
    "config/secrets_loader.py": 'def load_api_token():\n    """Read the deploy token."""\n',
}
CAP = 20_000


def write_repo(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    (root / "assets").mkdir()
    (root / "assets/blob.c").write_bytes(b"\x7fELF\x00\x01\x02int main() {}\n")
    (root / "legacy.rb").write_bytes(b"# caf\xe9\ndef greet\nend\n")
    (root / "src/huge.py").write_text("def huge_function():\n    pass\n" + "x = 1\n" * (CAP // 6 + 10))
    return root


def domain(root: Path, **kwargs) -> CodeDomain:
    options = {"index_path": ":memory:", "ctags": False, "max_file_bytes": CAP,
               "gate": PrivacyGate(exclude=("config/secrets_*",))} | kwargs
    return CodeDomain([root], **options)


@pytest.fixture()
def repo(tmp_path):
    return write_repo(tmp_path / "repo")


@pytest.fixture()
def code(repo):
    with domain(repo) as d:
        d.report = d.refresh()
        yield d


def addresses(hits: list[Recalled]) -> list[str]:
    return [h.address for h in hits]


@pytest.mark.parametrize("name, words", [
    ("resumeUpload", ["resume", "upload"]),
    ("resume_upload", ["resume", "upload"]),
    ("HTTPServer", ["http", "server"]),
    ("parse_HTTPDate2", ["parse", "http", "date", "2"]),
    ("__init__", ["init"]),
])
def test_split_identifier(name, words):
    assert split_identifier(name) == words


@pytest.mark.parametrize("query, terms", [
    ("resumeUpload", ["resume", "upload"]),
    ("where is resume_upload called?", ["resume", "upload", "called"]),
    ("datetime.fromisoformat", ["datetime", "fromisoformat"]),
    ("thanks!", []),
])
def test_code_query_terms(query, terms):
    assert code_query_terms(query) == terms


def test_python_symbols_have_qualified_names_lines_and_source(code, repo):
    hit = code.recall("resume upload", 5, filters={"language": "python"})[0]
    assert hit.domain == "code" and hit.path == str(repo / "src/shop/upload.py")
    assert hit.address == "shop.upload.Uploader.resume_upload:12" and hit.title == "method resume_upload"
    expected = {"kind": "method", "language": "python", "line": 12, "end_line": 14,
                "signature": "def resume_upload(self, token: str) -> bool",
                "decorators": ["functools.lru_cache(maxsize=2)"], "parser": "python-ast",
                "doc": "Resume an interrupted upload from its token."}
    assert {key: hit.meta[key] for key in expected} == expected
    assert hit.text.startswith(  # the exact slice, indentation included
        "    @functools.lru_cache(maxsize=2)\n    def resume_upload(self, token: str) -> bool:")
    assert "python ast" in hit.why and 0 < hit.activation <= 1
    names = {row[0]: row[1:] for row in code.conn.execute("SELECT qualname, kind, line, end_line FROM symbols")}
    assert names["shop.upload"] == ("module", 1, 19)
    assert names["shop"][0] == "module"
    assert names["shop.upload.Uploader"] == ("class", 5, 14)
    assert names["shop.upload.Uploader.__init__"] == ("method", 8, 9)
    assert names["shop.cart.checkout"] == ("function", 4, 6)


def test_callers_one_hop_in_meta_and_text(code, repo):
    hit = code.recall("start_upload", 1)[0]
    assert hit.address == "shop.upload.start_upload:17"
    assert hit.meta["callers"] == [{"symbol": "shop.cart.checkout", "path": str(repo / "src/shop/cart.py"),
                                    "rel": "src/shop/cart.py", "line": 6}]
    assert hit.text.endswith("called from: shop.cart.checkout (src/shop/cart.py:6)")
    method = code.recall("resume_upload", 5, filters={"language": "python"})[0]
    assert [c["symbol"] for c in method.meta["callers"]] == ["shop.upload.start_upload"]  # attribute call
    klass = code.recall("Uploader", 1)[0]
    assert klass.address == "shop.upload.Uploader:5"
    assert [(c["symbol"], c["line"]) for c in klass.meta["callers"]] == [("shop.upload.start_upload", 18)]
    js = code.recall("resumeUpload", 1)[0]
    assert js.address == "resumeUpload:2" and js.meta["callers"][0]["symbol"] == "TransferQueue.drainQueue"


def test_caller_list_is_capped(repo):
    extra = "".join(f"def caller_{i}():\n    start_upload(1)\n" for i in range(8))
    (repo / "src/shop/many.py").write_text("from .upload import start_upload\n" + extra)
    with domain(repo, max_callers=3) as d:
        d.refresh()
        hit = d.recall("start_upload", 1)[0]
    assert len(hit.meta["callers"]) == 3 and hit.meta["callers_total"] == 9
    assert "called from: … 6 more call sites" in hit.text


PARSERS = ["regex", pytest.param("ctags", marks=pytest.mark.skipif(
    find_ctags() is None, reason="Universal Ctags (with JSON output) is not on PATH"))]


@pytest.mark.parametrize("parser", PARSERS)
def test_javascript_and_go_symbols(repo, parser):
    with domain(repo, ctags=parser == "ctags") as d:
        d.refresh()
        label = {"regex": "regex fallback", "ctags": "universal-ctags"}[parser]
        js = d.recall("drainQueue", 1)[0]
        assert js.address == "TransferQueue.drainQueue:8" and js.meta["kind"] == "method"
        assert js.meta["language"] == "javascript" and label in js.why
        go = d.recall("start the server", 3, filters={"language": "go"})
        assert go[0].address == "main.Server.Start:9" and go[0].meta["end_line"] == 11
        assert go[0].meta["doc"] == "Start opens the listening socket."
        assert go[0].text.startswith("func (s *Server) Start(port int) error {")
        listen = d.recall("listenTCP", 1)[0]
        assert listen.meta["callers"][0]["symbol"] == "main.Server.Start"
        struct = d.recall("Server", 5, filters={"kind": "struct"})
        assert addresses(struct) == ["main.Server:4"]


def test_camel_case_and_snake_case_queries_meet(code):
    for query in ("resumeUpload", "resume_upload", "resume an upload"):
        found = addresses(code.recall(query, 5))
        assert "resumeUpload:2" in found and "shop.upload.Uploader.resume_upload:12" in found, (query, found)
    assert code.recall("resumeUpload", 1)[0].address == "resumeUpload:2"  # the exact name first
    assert code.recall("resume_upload", 1)[0].address == "shop.upload.Uploader.resume_upload:12"


@pytest.mark.parametrize("query", ["chocolate cake recipe for a birthday", "thanks!", "", "weather in paris"])
def test_unrelated_query_recalls_nothing(code, query):
    assert code.recall(query, 5) == []


def test_skipped_and_partial_files_are_reported(code, repo):
    report = code.report
    reasons = {Path(s["path"]).relative_to(repo).as_posix(): s["reason"] for s in report["skipped"]}
    assert reasons["assets/blob.c"] == "binary file"
    assert reasons["legacy.rb"].startswith("not utf-8")
    assert reasons["src/huge.py"].startswith("too large")
    partial = {Path(s["path"]).name: s["reason"] for s in report["partial"]}
    assert "syntax error at line 4" in partial["broken.py"]
    hit = code.recall("refund order", 1)[0]  # the regex fallback still finds its definitions
    assert hit.address == "shop.broken.refund_order:1" and "regex fallback" in hit.why and "partially" in hit.why
    assert report["parsed"] == 6 and report["files"] == 6 and report["symbols"] > 10


def test_vendored_and_heavy_dirs_are_never_indexed(code):
    for query in ("leftPadVendored", "venv_helper_function", "generated_build_helper", "huge_function"):
        assert code.recall(query, 5) == [], query
    paths = {row[0] for row in code.conn.execute("SELECT rel FROM files")}
    assert not any(p.startswith(("node_modules/", ".venv/", "build/")) for p in paths)


def test_privacy_gate_keeps_excluded_files_out(repo, monkeypatch):
    opened = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: opened.append(self.name) or real(self))
    with domain(repo) as d:
        report = d.refresh()
        assert report["excluded"] == 1 and "secrets_loader.py" not in opened
        assert d.recall("load api token", 5) == []
        assert not any("secrets" in s["path"] for s in report["skipped"])
    # an index built without the gate loses the file once the gate applies, and recall filters too
    path = repo.parent / "shared.sqlite"
    with domain(repo, gate=PrivacyGate(), index_path=path) as open_domain:
        open_domain.refresh()
        assert addresses(open_domain.recall("load api token", 5)) == ["secrets_loader.load_api_token:1"]
    with domain(repo, index_path=path) as gated:
        assert gated.recall("load api token", 5) == []  # filtered at recall, before any refresh
        assert gated.refresh()["removed"] == 1


def test_incremental_refresh_outside_git(repo):
    with domain(repo) as d:
        first = d.refresh()
        assert first["listing"] == {str(repo): "walk"}
        again = d.refresh()
        assert again["parsed"] == 0 and again["unchanged"] == first["parsed"] + len(first["skipped"])
        cart = repo / "src/shop/cart.py"
        cart.write_text(cart.read_text() + "\n\ndef apply_coupon(cart, code):\n    return checkout(cart)\n")
        edited = d.refresh()
        assert edited["parsed"] == 1
        assert d.recall("apply coupon", 1)[0].address == "shop.cart.apply_coupon:9"
        os.utime(cart, ns=(1, 1))  # touched, same content: re-read, not re-parsed
        assert d.refresh()["parsed"] == 0
        (repo / "web/app.js").unlink()
        gone = d.refresh()
        assert gone["removed"] == 1 and d.recall("drainQueue", 5) == []


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


@needs_git
def test_incremental_refresh_in_git(repo):
    (repo / ".gitignore").write_text("ignored/\n")
    (repo / "ignored").mkdir()
    (repo / "ignored/scratch.py").write_text("def ignored_scratch_helper():\n    pass\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    (repo / "src/shop/fresh.py").write_text("def untracked_fresh_helper():\n    pass\n")  # untracked: indexed
    with domain(repo) as d:
        first = d.refresh()
        assert first["listing"] == {str(repo): "git"}
        assert d.recall("ignored_scratch_helper", 5) == []
        assert addresses(d.recall("untracked_fresh_helper", 5)) == ["shop.fresh.untracked_fresh_helper:1"]
        upload = repo / "src/shop/upload.py"
        upload.write_text(upload.read_text().replace("start_upload", "begin_upload"))
        edited = d.refresh()
        assert edited["parsed"] == 1 and d.recall("begin_upload", 1)[0].address == "shop.upload.begin_upload:17"
        (repo / "src/shop/cart.py").unlink()  # deleted in the work tree, still in git's index
        gone = d.refresh()
        assert gone["removed"] == 1 and d.recall("checkout cart", 5) == []


def test_filters_path_kind_language(code):
    assert {h.meta["language"] for h in code.recall("upload", 10, filters={"path": "web/*"})} == {"javascript"}
    assert [h.meta["kind"] for h in code.recall("upload", 10, filters={"kind": "class"})] == ["class"]
    assert code.recall("resumeUpload", 5, filters={"language": ["go"]}) == []


def test_index_file_persists_and_source_is_cut(repo, tmp_path):
    path = tmp_path / "code.sqlite"
    with domain(repo, index_path=path, max_source_chars=60) as d:
        d.refresh()
    with domain(repo, index_path=path, max_source_chars=60) as d:
        assert d.refresh()["parsed"] == 0
        hit = d.recall("Uploader", 1)[0]
        assert "(cut: " in hit.text and hit.meta["cut"] > 0
        assert not hit.meta["stale"]
        (repo / "src/shop/upload.py").write_text("# moved\n")
        assert d.recall("Uploader", 1)[0].meta["stale"]  # changed since indexed: said, not hidden


@pytest.mark.parametrize("language, source, expected", [
    ("rust", "pub struct Pool {\n    size: usize,\n}\n\nimpl Pool {\n    pub fn acquire(&self) -> u8 {\n"
             "        grab(self.size)\n    }\n}\n\npub trait Lease {}\n",
     [("Pool", "struct", 1, 3), ("Pool.acquire", "method", 6, 8), ("Lease", "trait", 11, 11)]),
    ("java", "public class Cart {\n    public Cart(int n) {\n    }\n\n    private static int totalPrice(int a) {\n"
             "        return a;\n    }\n}\n",
     [("Cart", "class", 1, 8), ("Cart.Cart", "constructor", 2, 3), ("Cart.totalPrice", "method", 5, 7)]),
    ("c", "struct queue {\n  int n;\n};\n\nint queue_push(struct queue *q, int v);\n\n"
          "int queue_push(struct queue *q, int v)\n{\n  return q->n;\n}\n",
     [("queue", "struct", 1, 3), ("queue_push", "function", 7, 10)]),
    ("ruby", "module Billing\n  class Invoice\n    def total_due\n      1\n    end\n  end\nend\n",
     [("Billing", "module", 1, 7), ("Billing.Invoice", "class", 2, 6), ("Billing.Invoice.total_due", "method", 3, 5)]),
    ("typescript", "export interface Job {\n  id: string;\n}\nexport type Id = string;\n"
                   "export const runJob = async (job: Job) => {\n  return job;\n};\n",
     [("Job", "interface", 1, 3), ("Id", "type", 4, 4), ("runJob", "function", 5, 7)]),
])
def test_regex_fallback_definitions(language, source, expected):
    parsed = parse_regex(source, language)
    assert [(s.qualname, s.kind, s.line, s.end_line) for s in parsed.symbols] == expected


def test_pathological_lines_do_not_stall_the_regex_path():
    import time

    started = time.perf_counter()
    parse_regex("int " + "a b " * 20000 + "(x)\n{\n}\n", "c")
    parse_regex("class A {\n  public " + "x " * 20000 + "f(\n}\n", "java")
    assert time.perf_counter() - started < 1.0


@pytest.mark.skipif(find_ctags() is None, reason="Universal Ctags (with JSON output) is not on PATH")
def test_a_repositorys_own_ctags_options_are_never_read(repo):
    # a cloned repository's .ctags.d/ could change what ctags reads (or run its optscript)
    (repo / ".ctags.d").mkdir()
    (repo / ".ctags.d" / "repo.ctags").write_text("--langmap=JavaScript:.zzz\n")  # .js files unread
    with domain(repo, ctags=True) as d:
        d.refresh()
        js = d.recall("drainQueue", 1)[0]
        assert js.address == "TransferQueue.drainQueue:8" and "universal-ctags" in js.why


def test_a_folder_laid_out_as_a_bare_repository_runs_nothing(tmp_path):
    # anyone can commit a folder holding HEAD, config, objects/ and refs/: git takes it for a bare
    # repository, and its config's core.fsmonitor is a command `git ls-files` runs
    from memlane.domains.code import list_files
    from memlane.adapters.install import ensure_git_ignores

    marker = tmp_path / "ran"
    sub = tmp_path / "repo" / "sub"
    for folder in ("objects", "refs"):
        (sub / folder).mkdir(parents=True)
    (sub / "HEAD").write_text("ref: refs/heads/main\n")
    (sub / "config").write_text(f'[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch {marker}; false"\n')
    (sub / "a.py").write_text("x = 1\n")
    listing, method = list_files(sub)
    assert not marker.exists()
    assert "a.py" in listing
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    with open(tmp_path / "repo" / ".git" / "config", "a") as handle:
        handle.write(f'[core]\n\tfsmonitor = "touch {marker}; false"\n')
    ensure_git_ignores(tmp_path / "repo" / ".claude" / "settings.local.json")  # check-ignore runs it too
    assert not marker.exists()
