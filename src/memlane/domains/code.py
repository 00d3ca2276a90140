"""The code domain (D1): symbol definitions of working trees, found by name and intent, each
shown with its exact source and one hop of callers (seed 001: CodeIntel = symbol FTS + 1-hop
caller enrichment).

How it works, in the order a refresh and a recall run:

- **Listing.** A git working tree is listed by ``git ls-files --cached --others
  --exclude-standard`` (ignored files stay out); any other folder by a walk. Vendored,
  generated and heavy folders (``SKIP_DIRS``) are pruned either way; files the privacy gate
  blocks are never opened (only counted).
- **Incremental sync.** Each file's (mtime, size) is compared with the index; only changed
  files are read, and a file whose content hash did not change is not parsed again. Files
  that left the listing leave the index. Oversized, binary, non-UTF-8 and generated files
  are recorded as skipped with their reason, so every report says what was left out.
- **Parsers.** Python through ``ast`` (modules, classes, functions, methods with qualified
  names, signatures, docstrings, decorators, line ranges); a Python file with a syntax error
  falls back to the regex path (reported as partial). Other languages through Universal
  Ctags when it is on PATH (JSON output), else through careful per-language regular
  expressions for definitions; ends of blocks are found by brace matching (indentation or
  ``end`` for Python and Ruby). Every hit says which parser found it.
- **Callers.** Call sites are stored per file as (callee's last name, line, enclosing
  symbol): ``ast.Call`` for Python (``obj.save()`` counts as a call of ``save``), an
  identifier followed by ``(`` elsewhere. A recalled symbol lists up to ``max_callers`` of
  them — one hop, by name, so overloaded names over-report (documented, not hidden).
- **Search.** FTS5 (porter) over the symbol name split into words (``resumeUpload`` →
  resume upload), the qualified name, signature, doc line and path; BM25 weights the name
  highest. Activation = 0.6 · IDF-weighted coverage of the query terms (each term credited by
  the best field it is found in: name 1.0 … path 0.3) + 0.25 · BM25 relative to the best
  candidate + 0.15 · the share of the query that names the symbol exactly (``Uploader``,
  ``datetime.fromisoformat``: an identifier query wants that symbol, not its stems' cousins).
  Coverage is absolute, so a query whose words the code does not contain stays below
  ``MIN_COVERAGE`` and recalls nothing (R3). Coverage is computed for the BM25 top
  ``CANDIDATES`` only (``highlight()`` per term is the cost of a recall).
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import logging
import math
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import time
import tokenize
from dataclasses import dataclass, field
from functools import lru_cache
from io import BytesIO
from pathlib import Path

from ..index.text import fts_match_expression, query_terms
from ..privacy import PrivacyGate
from .base import DomainHit, index_file

log = logging.getLogger("memlane.domains.code")

SCHEMA_VERSION = "1"
PARSER_VERSION = "1"  # bump when parsing changes: every file is parsed again on the next refresh

SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", ".venv", "venv", "build", "dist", "__pycache__", "target",
    ".tox", ".nox", "site-packages", "vendor", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs",
})
LANGUAGES = {
    ".py": "python", ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".go": "go", ".rs": "rust",
    ".java": "java", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp",
    ".hh": "cpp", ".hxx": "cpp", ".rb": "ruby",
}
PARSER_LABELS = {"python-ast": "python ast", "ctags": "universal-ctags", "regex": "regex fallback"}

#: BM25 column weights (name, qualname, signature, doc, path): the name carries a symbol's intent
BM25_WEIGHTS = (10.0, 4.0, 2.0, 3.0, 1.0)
#: how much of a query term's weight a field earns when the term is found there
FIELD_CREDIT = {"name": 1.0, "qualname": 0.8, "doc": 0.6, "signature": 0.5, "path": 0.3}
FTS_FIELDS = ("name", "qualname", "signature", "doc", "path")
MIN_COVERAGE = 0.34  # below this share of the query's (IDF-weighted) words nothing is recalled
MIN_ACTIVATION = 0.35
CANDIDATES = 60  # the BM25 top that coverage is computed for (its cost grows with this)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY, root TEXT NOT NULL, rel TEXT NOT NULL, mtime_ns INTEGER, size INTEGER,
    hash TEXT, language TEXT, parser TEXT, lines INTEGER, status TEXT NOT NULL, reason TEXT,
    UNIQUE(root, rel));
CREATE TABLE IF NOT EXISTS symbols(
    id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, name TEXT NOT NULL, qualname TEXT NOT NULL,
    kind TEXT NOT NULL, language TEXT, parser TEXT, line INTEGER, end_line INTEGER, start_line INTEGER,
    signature TEXT, doc TEXT, decorators TEXT, source TEXT, cut INTEGER DEFAULT 0);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file_id);
CREATE TABLE IF NOT EXISTS calls(file_id INTEGER NOT NULL, callee TEXT NOT NULL, line INTEGER, caller TEXT);
CREATE INDEX IF NOT EXISTS calls_callee ON calls(callee);
CREATE INDEX IF NOT EXISTS calls_file ON calls(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS symbols_fts USING fts5(
    name, qualname, signature, doc, path, tokenize='porter unicode61');
"""


# ---------------------------------------------------------------- words of identifiers

_WORD_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")


def split_identifier(name: str) -> list[str]:
    """The words of an identifier, lower-cased: ``resumeUpload`` → resume, upload;
    ``parse_HTTPDate`` → parse, http, date."""
    return [w.lower() for part in re.split(r"[_$\W]+", name) for w in _WORD_PART.findall(part)]


def searchable_words(text: str) -> str:
    """``text`` plus the split words of every compound identifier in it (for the index)."""
    extra = []
    for ident in _IDENT.findall(text):
        words = split_identifier(ident)
        if len(words) > 1:
            extra.extend(words)
    return f"{text} {' '.join(extra)}" if extra else text


def code_query_terms(query: str) -> list[str]:
    """Search terms of a query; a compound identifier (``resumeUpload``, ``resume_upload``)
    becomes its words, so it meets the split names in the index."""
    spaced = _IDENT.sub(lambda m: " ".join(split_identifier(m.group(0))) or m.group(0), query)
    return query_terms(spaced)


# ---------------------------------------------------------------- parse results

@dataclass
class Symbol:
    name: str
    qualname: str
    kind: str
    line: int
    end_line: int
    start_line: int = 0  # first line of the source shown (decorators included)
    signature: str = ""
    doc: str = ""
    decorators: list[str] = field(default_factory=list)


@dataclass
class Parsed:
    symbols: list[Symbol]
    calls: list[tuple[str, int, str | None]]  # (callee name, line, caller qualname)
    parser: str
    note: str = ""  # set when the parse was partial (e.g. a syntax error → regex fallback)


def _first_line(doc: str | None) -> str:
    for line in (doc or "").strip().splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


# ---------------------------------------------------------------- Python through ast

class _PythonVisitor(ast.NodeVisitor):
    """Definitions with qualified names, and every call with the symbol it sits in."""

    def __init__(self, module: str):
        self.scope: list[tuple[str, str]] = [(module, "module")]
        self.symbols: list[Symbol] = []
        self.calls: list[tuple[str, int, str | None]] = []

    def _define(self, node, kind: str, signature: str) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        parent, parent_kind = self.scope[-1]
        if kind == "function" and parent_kind == "class":
            kind = "method"
        qualname = f"{parent}.{node.name}"
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        self.symbols.append(Symbol(node.name, qualname, kind, node.lineno, node.end_lineno or node.lineno, start,
                                   signature, _first_line(ast.get_docstring(node)),
                                   [ast.unparse(d) for d in node.decorator_list]))
        self.scope.append((qualname, "class" if kind == "class" else "function"))
        for child in node.body:
            self.visit(child)
        self.scope.pop()

    def visit_FunctionDef(self, node) -> None:
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(default)
        self._define(node, "function", f"{prefix} {node.name}({ast.unparse(node.args)}){returns}")

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node) -> None:
        for base in node.bases + [k.value for k in node.keywords]:
            self.visit(base)
        bases = ", ".join([ast.unparse(b) for b in node.bases] + [ast.unparse(k) for k in node.keywords])
        self._define(node, "class", f"class {node.name}({bases})" if bases else f"class {node.name}")

    def visit_Call(self, node) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name:
            self.calls.append((name, node.lineno, self.scope[-1][0]))
        self.generic_visit(node)


def python_module_name(root: Path, rel: str, has_init=None) -> str:
    """``pkg.mod`` for ``src/pkg/mod.py`` when ``src/pkg`` is a package (has ``__init__.py``)."""
    has_init = has_init or (lambda folder: (folder / "__init__.py").is_file())
    path = root / rel
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while folder != root.parent and has_init(folder):
        parts.insert(0, folder.name)
        if folder == root:
            break
        folder = folder.parent
    return ".".join(parts) or path.stem


def parse_python(text: str, module: str) -> Parsed:
    """Symbols and calls of a Python source; a syntax error falls back to the regex path."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes in the source
        parsed = parse_regex(text, "python", module=module)
        parsed.note = f"syntax error at line {getattr(exc, 'lineno', '?')}: {getattr(exc, 'msg', exc)}; regex fallback"
        return parsed
    visitor = _PythonVisitor(module)
    visitor.visit(tree)
    lines = max(1, len(text.splitlines()))
    name = module.rsplit(".", 1)[-1]
    head = Symbol(name, module, "module", 1, lines, 1, f"module {module}", _first_line(ast.get_docstring(tree)))
    return Parsed([head] + visitor.symbols, visitor.calls, "python-ast")


# ---------------------------------------------------------------- other languages: regex

_MODS_JAVA = r"(?:(?:public|private|protected|static|final|abstract|synchronized|native|default|sealed)[ \t]+)"
_RUST_VIS = r"(?:pub(?:\([^)]*\))?[ \t]+)?"
_JS = [
    (r"^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?function\b[ \t]*\*?[ \t]*(?P<name>[\w$]+)[ \t]*[(<]",
     "function"),
    (r"^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:abstract[ \t]+)?class[ \t]+(?P<name>[\w$]+)", "class"),
    (r"^[ \t]*(?:export[ \t]+)?(?:const|let|var)[ \t]+(?P<name>[\w$]+)[ \t]*(?::[^=]+)?=[ \t]*(?:async[ \t]+)?"
     r"(?:function\b|\([^)]*\)[ \t]*(?::[^=]+)?=>|[\w$]+[ \t]*=>)", "function"),
    (r"^[ \t]+(?:(?:static|async|public|private|protected|readonly|override|get|set)[ \t]+)*"
     r"(?P<name>[\w$]+)[ \t]*\([^)]*\)[ \t]*(?::[^{]+)?\{", "method"),
]
_TS = _JS + [
    (r"^[ \t]*(?:export[ \t]+)?(?:declare[ \t]+)?interface[ \t]+(?P<name>[\w$]+)", "interface"),
    (r"^[ \t]*(?:export[ \t]+)?(?:declare[ \t]+)?type[ \t]+(?P<name>[\w$]+)[ \t]*(?:<[^>]*>)?[ \t]*=", "type"),
    (r"^[ \t]*(?:export[ \t]+)?(?:const[ \t]+)?enum[ \t]+(?P<name>[\w$]+)", "enum"),
]
_C = [
    (r"^[ \t]*(?:typedef[ \t]+)?(?P<kw>struct|union|enum|class)[ \t]+(?P<name>\w+)[^;()]*$", "struct"),
    (r"^[ \t]*namespace[ \t]+(?P<name>\w+)", "namespace"),
    (r"^(?!(?:if|for|while|switch|return|else|do|typedef|struct|enum|union|case|goto)\b)"
     r"(?:[\w][\w \t\*&:<>,~]*?[ \t\*&])?(?P<name>[A-Za-z_~][\w:~]*)[ \t]*\([^;]*$", "function"),
]
DEFINITIONS = {
    "python": [(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(?P<name>\w+)", "function"),
               (r"^[ \t]*class[ \t]+(?P<name>\w+)", "class")],
    "javascript": _JS, "typescript": _TS, "c": _C, "cpp": _C,
    "go": [(r"^func[ \t]*(?:\([ \t]*\w*[ \t]*\*?[ \t]*(?P<recv>\w+)[^)]*\)[ \t]*)?(?P<name>\w+)[ \t]*[\[(]",
            "function"),
           (r"^type[ \t]+(?P<name>\w+)[ \t]+struct\b", "struct"),
           (r"^type[ \t]+(?P<name>\w+)[ \t]+interface\b", "interface"),
           (r"^type[ \t]+(?P<name>\w+)\b", "type")],
    "rust": [(rf"^[ \t]*{_RUST_VIS}(?:(?:const|async|unsafe|extern[ \t]+\"[^\"]*\")[ \t]+)*fn[ \t]+(?P<name>\w+)",
              "function"),
             (rf"^[ \t]*{_RUST_VIS}struct[ \t]+(?P<name>\w+)", "struct"),
             (rf"^[ \t]*{_RUST_VIS}enum[ \t]+(?P<name>\w+)", "enum"),
             (rf"^[ \t]*{_RUST_VIS}(?:unsafe[ \t]+)?trait[ \t]+(?P<name>\w+)", "trait"),
             (rf"^[ \t]*{_RUST_VIS}type[ \t]+(?P<name>\w+)", "type"),
             (r"^[ \t]*impl\b(?:[ \t]*<[^>]*>)?[ \t]+(?:[\w:]+(?:<[^>]*>)?[ \t]+for[ \t]+)?(?P<name>\w+)", "impl")],
    "java": [(rf"^[ \t]*{_MODS_JAVA}*(?P<kw>class|interface|enum|record)[ \t]+(?P<name>\w+)", "class"),
             (rf"^[ \t]+{_MODS_JAVA}+(?:<[^>]*>[ \t]+)?[\w<>\[\],.? ]+?[ \t]+(?P<name>\w+)[ \t]*\(", "method"),
             (r"^[ \t]+(?:public|private|protected)[ \t]+(?P<name>[A-Z]\w*)[ \t]*\(", "constructor")],
    "ruby": [(r"^[ \t]*def[ \t]+(?:self\.)?(?P<name>[\w?!=]+)", "method"),
             (r"^[ \t]*class[ \t]+(?P<name>[\w:]+)", "class"),
             (r"^[ \t]*module[ \t]+(?P<name>[\w:]+)", "module")],
}
_COMPILED: dict[str, list] = {}
MAX_DEFINITION_LINE = 400
CONTAINERS = frozenset({"class", "struct", "interface", "impl", "trait", "module", "namespace", "enum", "union"})
NEEDS_BODY = frozenset({"function", "struct", "union", "enum", "class", "namespace"})  # in C and C++
KEYWORDS = frozenset("""if for while switch return catch function sizeof typeof func fn def new else elif do case
    match loop with try except print assert yield await lambda not and or in is super self this delete void
    defined alignof decltype static_assert require import export throw raise""".split())
_CALL = re.compile(r"(?<![\w$])([A-Za-z_$][\w$]*)[ \t]*\(")
_STRINGS = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
_LINE_COMMENT = {"python": "#", "ruby": "#"}


def _patterns(language: str) -> list:
    if language not in _COMPILED:
        _COMPILED[language] = [(re.compile(p), kind) for p, kind in DEFINITIONS.get(language, [])]
    return _COMPILED[language]


def block_end(lines: list[str], index: int, language: str, kind: str = "function") -> tuple[int, bool]:
    """(0-based last line of the block opened at ``lines[index]``, whether it has a body).
    Braces are counted outside strings and line comments; a ``;`` before any ``{`` means a
    declaration without a body; a type alias without ``{`` on its line ends there."""
    if language in ("python", "ruby"):
        return _indent_end(lines, index, language), True
    if kind == "type" and "{" not in lines[index]:
        return index, False
    depth, opened = 0, False
    for i in range(index, min(len(lines), index + 5000)):
        if not opened and i - index > 30:
            return index, False  # no body within 30 lines: a declaration, not a block
        line = _STRINGS.sub('""', lines[i]) if language != "rust" else re.sub(r'"(?:\\.|[^"\\])*"', '""', lines[i])
        line = line.split("//", 1)[0]
        for ch in line:
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}":
                depth -= 1
                if opened and depth <= 0:
                    return i, True
            elif ch == ";" and not opened and depth == 0:
                return i, False
    return index, False


def _indent_end(lines: list[str], index: int, language: str) -> int:
    indent = len(lines[index]) - len(lines[index].lstrip())
    if language == "ruby" and re.search(r"\bend\s*$", lines[index]):
        return index
    last = index
    for i in range(index + 1, len(lines)):
        stripped = lines[i].strip()
        if not stripped:
            continue
        current = len(lines[i]) - len(lines[i].lstrip())
        if current <= indent:
            if language == "ruby" and re.match(r"end\b", stripped) and current == indent:
                return i
            if language == "python" and stripped[0] in ")]}":
                last = i
                continue
            return last
        last = i
    return last


def leading_comment(lines: list[str], index: int, language: str) -> str:
    """The first line of the comment block right above a definition (its doc, outside Python)."""
    marks = ("#",) if language in ("ruby", "python") else ("//", "/*", "*", "///")
    found: list[str] = []
    i = index - 1
    while i >= 0 and (lines[i].strip().startswith(("@", "#[")) and language not in ("ruby", "python")):
        i -= 1  # annotations and attributes sit between a doc comment and its definition
    while i >= 0 and lines[i].strip().startswith(marks) and len(found) < 20:
        found.insert(0, lines[i].strip().lstrip("/#*!").strip().rstrip("*/").strip())
        i -= 1
    return _first_line("\n".join(found))


def nest(symbols: list[Symbol], prefix: str = "") -> list[Symbol]:
    """Qualified names from line ranges: a symbol inside a container is ``Container.name``;
    impl blocks give their type as scope and are not symbols themselves."""
    symbols.sort(key=lambda s: (s.line, -s.end_line))
    out: list[Symbol] = []
    containers: list[Symbol] = []
    for sym in symbols:
        while containers and not (containers[-1].line < sym.line <= containers[-1].end_line):
            containers.pop()
        if sym.qualname == sym.name:  # not already qualified (a Go receiver, a ctags scope)
            parent = containers[-1].qualname if containers else prefix
            sym.qualname = f"{parent}.{sym.name}" if parent else sym.name
            if containers and sym.kind == "function":
                sym.kind = "method"
        if sym.kind in CONTAINERS:
            containers.append(sym)
        if sym.kind != "impl":
            out.append(sym)
    return out


def parse_regex(text: str, language: str, *, module: str = "") -> Parsed:
    """Definitions by per-language regular expressions; calls as ``identifier(``."""
    lines = text.splitlines()
    symbols: list[Symbol] = []
    for index, line in enumerate(lines):
        if len(line) > MAX_DEFINITION_LINE:
            continue  # no definition is that long; the patterns could backtrack for a long time on it
        for pattern, kind in _patterns(language):
            match = pattern.match(line)
            if not match or match.group("name") in KEYWORDS:
                continue
            kind = _kind_of(match, kind)
            end, has_body = block_end(lines, index, language, kind)
            if language in ("c", "cpp") and kind in NEEDS_BODY and not has_body:
                break  # a prototype or forward declaration, not a definition
            name = match.group("name").replace("::", ".").split(".")[-1]
            sym = Symbol(name, name, kind, index + 1, max(end, index) + 1, index + 1, line.strip().rstrip("{").strip(),
                         leading_comment(lines, index, language))
            receiver = match.groupdict().get("recv")
            if receiver:
                sym.qualname, sym.kind = f"{receiver}.{name}", "method"
            symbols.append(sym)
            break
    if language == "go" and not module:  # Go names are qualified by their package
        package = re.search(r"^package[ \t]+(\w+)", text, re.M)
        module = package.group(1) if package else ""
        for sym in symbols:
            if sym.qualname != sym.name:
                sym.qualname = f"{module}.{sym.qualname}" if module else sym.qualname
    symbols = nest(symbols, module)
    return Parsed(symbols, find_calls(lines, symbols, language, module or None), "regex")


def _kind_of(match: re.Match, kind: str) -> str:
    keyword = match.groupdict().get("kw")
    if keyword:
        return {"record": "class"}.get(keyword, keyword)
    return kind


def find_calls(lines: list[str], symbols: list[Symbol], language: str,
               top: str | None) -> list[tuple[str, int, str | None]]:
    """``identifier(`` call sites, each with its innermost enclosing symbol (``top`` outside any)."""
    comment = _LINE_COMMENT.get(language, "//")
    defined = {(s.line, s.name) for s in symbols}
    spans = sorted(((s.start_line or s.line, s.end_line, s.qualname) for s in symbols if s.kind != "module"),
                   key=lambda span: span[1] - span[0])
    calls = []
    for index, raw in enumerate(lines):
        if "(" not in raw:
            continue
        line = _STRINGS.sub('""', raw).split(comment, 1)[0]
        for match in _CALL.finditer(line):
            name, lineno = match.group(1), index + 1
            if name in KEYWORDS or (lineno, name) in defined:
                continue
            caller = next((q for start, end, q in spans if start <= lineno <= end), top)
            calls.append((name, lineno, caller))
    return calls


# ---------------------------------------------------------------- other languages: ctags

CTAGS_KINDS = {
    "function": "function", "func": "function", "method": "method", "singletonMethod": "method",
    "constructor": "constructor", "class": "class", "struct": "struct", "interface": "interface",
    "typedef": "type", "type": "type", "alias": "type", "enum": "enum", "trait": "trait", "module": "module",
    "namespace": "namespace", "union": "union", "record": "class",
}


@lru_cache(maxsize=4)
def find_ctags(command: str = "ctags") -> str | None:
    """The path of a Universal Ctags with JSON output, or None (Exuberant Ctags has no JSON)."""
    path = shutil.which(command)
    if not path:
        return None
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
        features = subprocess.run([path, "--list-features"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "Universal Ctags" in version and re.search(r"^json\b", features, re.M) else None


def run_ctags(ctags: str, root: Path, rels: list[str]) -> dict[str, list[dict]]:
    """Tags of ``rels`` (relative to ``root``), by file; an empty dict when ctags fails."""
    tags: dict[str, list[dict]] = {}
    for start in range(0, len(rels), 500):
        batch = [r for r in rels[start:start + 500] if "\n" not in r]
        try:
            proc = subprocess.run([ctags, "--output-format=json", "--fields=+neKS", "--sort=no", "-f", "-", "-L", "-"],
                                  input="\n".join(batch) + "\n", cwd=root, capture_output=True, text=True,
                                  timeout=300, errors="replace")
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("ctags failed (%s); regex fallback", exc)
            return {}
        for raw in proc.stdout.splitlines():
            try:
                tag = json.loads(raw)
            except ValueError:
                continue
            if tag.get("_type") == "tag":
                tags.setdefault(tag.get("path", ""), []).append(tag)
    return tags


def parse_ctags(text: str, language: str, tags: list[dict]) -> Parsed:
    """Symbols from Universal Ctags tags; ends, docs and calls from the text."""
    lines = text.splitlines()
    symbols = []
    for tag in tags:
        kind, line = CTAGS_KINDS.get(tag.get("kind", "")), int(tag.get("line") or 0)
        source = lines[line - 1] if 0 < line <= len(lines) else ""
        if kind is None and tag.get("kind") in ("constant", "variable") and re.search(r"=>|\bfunction\b", source):
            kind = "function"  # const f = (…) => …
        if kind is None or not line:
            continue
        scope = (tag.get("scope") or "").replace("::", ".")
        if kind == "function" and tag.get("scopeKind") in CONTAINERS | {"implementation"}:
            kind = "method"
        end = int(tag["end"]) if tag.get("end") else block_end(lines, line - 1, language, kind)[0] + 1
        name = tag["name"]
        symbols.append(Symbol(name, f"{scope}.{name}" if scope else name, kind, line, max(end, line), line,
                              source.strip().rstrip("{").strip(), leading_comment(lines, line - 1, language)))
    symbols = nest(symbols)
    return Parsed(symbols, find_calls(lines, symbols, language, None), "ctags")


# ---------------------------------------------------------------- listing working trees

def skipped_dir(rel: str) -> bool:
    parts = rel.split("/")[:-1]
    return any(p in SKIP_DIRS or p.endswith(".egg-info") for p in parts)


def list_files(root: Path) -> tuple[list[str], str]:
    """Paths (relative, posix) of the files of ``root`` and how they were listed: "git" or "walk"."""
    try:
        proc = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        if proc.returncode == 0:
            names = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
            return sorted({n for n in names if n and not skipped_dir(n)}), "git"
    except (OSError, subprocess.SubprocessError):
        pass  # no git: a plain walk
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".") and not d.endswith(".egg-info")]
        base = Path(folder).relative_to(root)
        found.extend((base / f).as_posix() for f in files)
    return sorted(found), "walk"


def language_of(rel: str) -> str | None:
    return LANGUAGES.get(os.path.splitext(rel)[1].lower())


def decode_source(data: bytes, language: str) -> tuple[str | None, str]:
    """(text, reason): the text, or None and why it was left out."""
    if b"\0" in data[:8192]:
        return None, "binary file"
    encoding = "utf-8-sig"
    if language == "python":
        try:
            encoding = tokenize.detect_encoding(BytesIO(data).readline)[0]
        except SyntaxError as exc:
            return None, f"bad encoding declaration: {exc}"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None, f"not {encoding} text"
    head = text[:2000]
    if "@generated" in head or re.search(r"Code generated .* DO NOT EDIT", head):
        return None, "generated file"
    lines = text.count("\n") + 1
    if len(text) > 5000 and len(text) / lines > 500:
        return None, "minified (average line over 500 characters)"
    return text, ""


# ---------------------------------------------------------------- the domain

class CodeDomain:
    """Symbols of working trees, recalled with their exact source and one hop of callers."""

    name = "code"

    def __init__(self, roots: list[Path], *, gate: PrivacyGate = PrivacyGate(), index_path: Path | str | None = None,
                 embedder=None, ctags: bool | str | None = None, max_file_bytes: int = 1_000_000,
                 max_source_chars: int = 4000, max_callers: int = 5):
        from .. import config

        self.roots = [Path(r).expanduser().resolve() for r in roots]
        self.gate = gate
        self.embedder = embedder  # accepted for the contract; code is ranked by its names (keyword only)
        self.max_file_bytes, self.max_source_chars, self.max_callers = max_file_bytes, max_source_chars, max_callers
        self._ctags_choice = ctags
        self.index_path = str(index_path if index_path is not None
                              else index_file(config.cache_home(), "code", self.roots))
        self.conn = self._open()
        self._idf_cache: dict[str, float] = {}

    # -- the index file

    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            from ..index.db import is_corruption

            if self.index_path == ":memory:" or not is_corruption(exc):
                raise
            log.warning("code index %s is corrupt (%s): rebuilding", self.index_path, exc)
            for suffix in ("", "-wal", "-shm"):
                Path(self.index_path + suffix).unlink(missing_ok=True)
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.index_path, timeout=5.0)
        conn.execute("PRAGMA busy_timeout = 5000")
        if self.index_path != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
        row = conn.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone()
        version = row and conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if version and version[0] != SCHEMA_VERSION:  # derived data: drop and rebuild
            for table in ("symbols_fts", "calls", "symbols", "files", "meta"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.executescript(SCHEMA)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        conn.commit()
        conn.create_function("path_glob", 3, lambda pattern, rel, path: int(
            fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(path, pattern)), deterministic=True)
        return conn

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "CodeDomain":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def ctags(self) -> str | None:
        if self._ctags_choice is False:
            return None
        return find_ctags(self._ctags_choice if isinstance(self._ctags_choice, str) else "ctags")

    # -- refresh

    def refresh(self) -> dict:
        """Bring the index in line with the working trees; report what was done."""
        started = time.perf_counter()
        report = {"files": 0, "symbols": 0, "parsed": 0, "unchanged": 0, "removed": 0, "excluded": 0,
                  "skipped": [], "partial": [], "listing": {}, "seconds": 0.0}
        self._check_parser_version()
        self.conn.execute(f"DELETE FROM files WHERE root NOT IN ({','.join('?' * len(self.roots))})",
                          [str(r) for r in self.roots])
        for root in self.roots:
            self._refresh_root(root, report)
        self._drop_orphans()
        self._idf_cache.clear()
        report["files"] = self.conn.execute("SELECT count(*) FROM files WHERE status != 'skipped'").fetchone()[0]
        report["symbols"] = self.conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
        for root, rel, status, reason in self.conn.execute(
                "SELECT root, rel, status, reason FROM files WHERE status != 'ok' ORDER BY root, rel"):
            report["skipped" if status == "skipped" else "partial"].append(
                {"path": str(Path(root) / rel), "reason": reason})
        report["seconds"] = round(time.perf_counter() - started, 3)
        return report

    def _check_parser_version(self) -> None:
        stamp = f"{PARSER_VERSION}|ctags={'yes' if self.ctags else 'no'}|cap={self.max_file_bytes}"
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'parsers'").fetchone()
        if row is None or row[0] != stamp:
            with self.conn:
                self.conn.execute("DELETE FROM files")
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('parsers', ?)", (stamp,))

    def _refresh_root(self, root: Path, report: dict) -> None:
        known = {rel: (fid, mtime, size) for fid, rel, mtime, size in self.conn.execute(
            "SELECT id, rel, mtime_ns, size FROM files WHERE root = ?", (str(root),))}
        if root.is_dir():
            listing, method = list_files(root)
        else:
            listing, method = [], "missing"
        report["listing"][str(root)] = method
        seen, todo = set(), []
        for rel in listing:
            language = language_of(rel)
            if language is None:
                continue
            path = root / rel
            if self.gate.blocks(path, root):
                report["excluded"] += 1  # never opened; the path is not reported either
                continue
            try:
                info = os.lstat(path)
            except OSError:
                continue  # listed by git but gone from the working tree
            if not stat.S_ISREG(info.st_mode):
                continue
            seen.add(rel)
            previous = known.get(rel)
            if previous and previous[1:] == (info.st_mtime_ns, info.st_size):
                report["unchanged"] += 1
            else:
                todo.append((rel, language, info))
        gone = [known[rel][0] for rel in known.keys() - seen]
        with self.conn:
            for file_id in gone:
                self._forget(file_id)
                self.conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
        report["removed"] += len(gone)
        self._index_files(root, todo, report)

    def _index_files(self, root: Path, todo: list, report: dict) -> None:
        read: list[tuple[str, str, os.stat_result, str, str]] = []
        for rel, language, info in todo:
            if info.st_size > self.max_file_bytes:
                self._save(root, rel, language, info, None, status="skipped",
                           reason=f"too large ({info.st_size} bytes > {self.max_file_bytes})")
                continue
            try:
                data = (root / rel).read_bytes()
            except OSError as exc:
                self._save(root, rel, language, info, None, status="skipped", reason=f"unreadable: {exc.strerror}")
                continue
            digest = hashlib.sha1(data).hexdigest()
            row = self.conn.execute("SELECT id, hash, status FROM files WHERE root = ? AND rel = ?",
                                    (str(root), rel)).fetchone()
            if row and row[1] == digest and row[2] != "skipped":
                self.conn.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?",
                                  (info.st_mtime_ns, info.st_size, row[0]))
                report["unchanged"] += 1  # touched, not changed: no parse
                continue
            text, reason = decode_source(data, language)
            if text is None:
                self._save(root, rel, language, info, None, status="skipped", reason=reason, digest=digest)
                continue
            read.append((rel, language, info, text, digest))
        others = [rel for rel, language, *_ in read if language != "python"]
        tags = run_ctags(self.ctags, root, others) if others and self.ctags else {}
        has_init = lru_cache(maxsize=None)(lambda folder: (folder / "__init__.py").is_file())
        for count, (rel, language, info, text, digest) in enumerate(read, start=1):
            parsed = self._parse(root, rel, language, text, tags, has_init)
            self._save(root, rel, language, info, parsed, text=text, digest=digest,
                       status="partial" if parsed.note else "ok", reason=parsed.note or None)
            report["parsed"] += 1
            if count % 200 == 0:
                self.conn.commit()
        self.conn.commit()

    def _parse(self, root: Path, rel: str, language: str, text: str, tags: dict, has_init) -> Parsed:
        try:
            if language == "python":
                return parse_python(text, python_module_name(root, rel, has_init))
            if tags.get(rel):
                parsed = parse_ctags(text, language, tags[rel])
                if parsed.symbols:
                    return parsed
            return parse_regex(text, language)
        except (RecursionError, MemoryError, ValueError) as exc:  # never a crash: keep the file, say why
            return Parsed([], [], "none", f"parse failed: {type(exc).__name__}")

    def _save(self, root: Path, rel: str, language: str, info, parsed: Parsed | None, *, text: str = "",
              status: str, reason: str | None = None, digest: str | None = None) -> None:
        conn = self.conn
        old = conn.execute("SELECT id FROM files WHERE root = ? AND rel = ?", (str(root), rel)).fetchone()
        if old:
            self._forget(old[0])
        lines = len(text.splitlines())
        file_id = conn.execute(
            "INSERT OR REPLACE INTO files(id, root, rel, mtime_ns, size, hash, language, parser, lines, status, reason)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (old[0] if old else None, str(root), rel, info.st_mtime_ns, info.st_size, digest, language,
             parsed.parser if parsed else None, lines, status, reason)).lastrowid
        if not parsed:
            return
        source_lines = text.splitlines()
        words_path = searchable_words(rel)
        for sym in parsed.symbols:
            source, cut = self._source_of(source_lines, sym)
            symbol_id = conn.execute(
                "INSERT INTO symbols(file_id, name, qualname, kind, language, parser, line, end_line, start_line,"
                " signature, doc, decorators, source, cut) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (file_id, sym.name, sym.qualname, sym.kind, language, parsed.parser, sym.line, sym.end_line,
                 sym.start_line or sym.line, sym.signature[:300], sym.doc, json.dumps(sym.decorators), source,
                 cut)).lastrowid
            conn.execute("INSERT INTO symbols_fts(rowid, name, qualname, signature, doc, path) VALUES (?,?,?,?,?,?)",
                         (symbol_id, searchable_words(sym.name), searchable_words(sym.qualname),
                          searchable_words(sym.signature[:300]), sym.doc, words_path))
        conn.executemany("INSERT INTO calls(file_id, callee, line, caller) VALUES (?,?,?,?)",
                         [(file_id, name, line, caller) for name, line, caller in parsed.calls])

    def _source_of(self, lines: list[str], sym: Symbol) -> tuple[str, int]:
        """The symbol's exact source, cut at a line boundary to ``max_source_chars``; (text, lines cut)."""
        chosen, size = [], 0
        span = lines[(sym.start_line or sym.line) - 1: sym.end_line]
        for line in span:
            size += len(line) + 1
            if size > self.max_source_chars and chosen:
                break
            chosen.append(line)
        return "\n".join(chosen), len(span) - len(chosen)

    def _forget(self, file_id: int) -> None:
        self.conn.execute("DELETE FROM symbols_fts WHERE rowid IN (SELECT id FROM symbols WHERE file_id = ?)",
                          (file_id,))
        self.conn.execute("DELETE FROM symbols WHERE file_id = ?", (file_id,))
        self.conn.execute("DELETE FROM calls WHERE file_id = ?", (file_id,))

    def _drop_orphans(self) -> None:
        """Symbols and calls of files no longer indexed (a root dropped from the set)."""
        with self.conn:
            self.conn.execute("DELETE FROM symbols_fts WHERE rowid IN "
                              "(SELECT id FROM symbols WHERE file_id NOT IN (SELECT id FROM files))")
            self.conn.execute("DELETE FROM symbols WHERE file_id NOT IN (SELECT id FROM files)")
            self.conn.execute("DELETE FROM calls WHERE file_id NOT IN (SELECT id FROM files)")

    # -- recall

    def recall(self, query: str, k: int = 5, *, filters: dict | None = None) -> list[DomainHit]:
        """At most ``k`` symbols above the threshold, best first."""
        terms = code_query_terms(query)
        if not terms or k <= 0:
            return []
        candidates = self._candidates(terms, filters or {})
        if not candidates:
            return []
        found = self._term_fields(terms, list(candidates))
        idf = {term: self._idf(term) for term in terms}
        total, best = sum(idf.values()), max(candidates.values())
        named = self._names(list(candidates))
        exact = {token.rsplit(".", 1)[-1]: sum(idf.get(t, 0.0) for t in code_query_terms(token)) / total
                 for token in _DOTTED.findall(query)}
        folded = {name.lower(): share / 2 for name, share in exact.items()}  # NamedTuple for namedtuple: half
        scored = []
        for rowid, bm25 in candidates.items():
            fields = found.get(rowid, {})
            coverage = sum(idf[t] * FIELD_CREDIT[f] for t, f in fields.items()) / total
            activation = (0.6 * coverage + 0.25 * (bm25 / best if best > 0 else 0.0)
                          + 0.15 * exact.get(named.get(rowid, ""), folded.get(named.get(rowid, "").lower(), 0.0)))
            if coverage >= MIN_COVERAGE and activation >= MIN_ACTIVATION:
                scored.append((activation, bm25, rowid, fields))
        scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
        hits = []
        for activation, _bm25, rowid, fields in scored:
            hit = self._hit(rowid, activation, fields)
            if hit is not None:
                hits.append(hit)
            if len(hits) >= k:
                break
        return hits

    def _candidates(self, terms: list[str], filters: dict) -> dict[int, float]:
        where, params = filter_sql(filters)
        sql = (f"SELECT rowid, -bm25(symbols_fts, {', '.join(map(str, BM25_WEIGHTS))}) AS score FROM symbols_fts "
               f"WHERE symbols_fts MATCH ?{where} ORDER BY score DESC LIMIT {CANDIDATES}")
        return dict(self.conn.execute(sql, [fts_match_expression(terms), *params]).fetchall())

    def _term_fields(self, terms: list[str], rowids: list[int]) -> dict[int, dict[str, str]]:
        """For each candidate, each query term's best field (by ``FIELD_CREDIT``)."""
        marks = ",".join("?" * len(rowids))
        flags = ", ".join(f"instr(highlight(symbols_fts, {i}, char(1), char(2)), char(1)) > 0"
                          for i in range(len(FTS_FIELDS)))
        out: dict[int, dict[str, str]] = {}
        for term in terms:
            rows = self.conn.execute(f"SELECT rowid, {flags} FROM symbols_fts WHERE symbols_fts MATCH ? "
                                     f"AND rowid IN ({marks})", [fts_match_expression([term]), *rowids])
            for rowid, *hit in rows:
                fields = [f for f, on in zip(FTS_FIELDS, hit) if on]
                if fields:
                    out.setdefault(rowid, {})[term] = max(fields, key=FIELD_CREDIT.get)
        return out

    def _names(self, rowids: list[int]) -> dict[int, str]:
        marks = ",".join("?" * len(rowids))
        return {rowid: name for rowid, name in
                self.conn.execute(f"SELECT id, name FROM symbols WHERE id IN ({marks})", rowids)}

    def _idf(self, term: str) -> float:
        """Okapi BM25's IDF (made non-negative), cached until the next refresh."""
        if term not in self._idf_cache:
            n = self.conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
            df = self.conn.execute("SELECT count(*) FROM symbols_fts WHERE symbols_fts MATCH ?",
                                   (fts_match_expression([term]),)).fetchone()[0]
            self._idf_cache[term] = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return self._idf_cache[term]

    def _hit(self, rowid: int, activation: float, fields: dict[str, str]) -> DomainHit | None:
        row = self.conn.execute(
            "SELECT s.name, s.qualname, s.kind, s.language, s.parser, s.line, s.end_line, s.signature, s.doc,"
            " s.decorators, s.source, s.cut, f.root, f.rel, f.mtime_ns, f.size, f.status, f.reason"
            " FROM symbols s JOIN files f ON f.id = s.file_id WHERE s.id = ?", (rowid,)).fetchone()
        if row is None:
            return None
        (name, qualname, kind, language, parser, line, end_line, signature, doc, decorators, source, cut,
         root, rel, mtime_ns, size, status, reason) = row
        path = Path(root) / rel
        if self.gate.blocks(path, root):
            return None
        callers, total = self.callers(name, qualname, kind, language)
        text = source + (f"\n… (cut: {cut} more lines, to line {end_line})" if cut else "")
        for caller in callers:
            text += f"\ncalled from: {caller['symbol']} ({caller['rel']}:{caller['line']})"
        if total > len(callers):
            text += f"\ncalled from: … {total - len(callers)} more call sites"
        matched = ", ".join(f"{t} ({f})" for t, f in fields.items())
        why = f"{PARSER_LABELS.get(parser, parser)} symbol; matched {matched}"
        if status == "partial":
            why += f"; file parsed partially ({reason})"
        stale = _changed_since(path, mtime_ns, size)
        if stale:
            why += "; the file changed since it was indexed"
        meta = {"kind": kind, "language": language, "line": line, "end_line": end_line, "signature": signature,
                "doc": doc, "decorators": json.loads(decorators or "[]"), "parser": parser, "root": root, "rel": rel,
                "callers": callers, "callers_total": total, "cut": cut, "stale": stale}
        return DomainHit("code", str(path), f"{qualname}:{line}", text, round(min(1.0, activation), 4),
                         f"{kind} {name}", why, meta)

    def callers(self, name: str, qualname: str, kind: str, language: str) -> tuple[list[dict], int]:
        """Up to ``max_callers`` call sites of ``name`` (one hop, by name) and how many there are."""
        if kind == "module":
            return [], 0
        query = ("FROM calls c JOIN files f ON f.id = c.file_id "
                 "WHERE c.callee = ? AND coalesce(c.caller, '') != ?")
        total = self.conn.execute(f"SELECT count(*) {query}", (name, qualname)).fetchone()[0]
        rows = self.conn.execute(f"SELECT c.caller, c.line, f.root, f.rel {query} "
                                 "ORDER BY (f.language = ?) DESC, f.rel, c.line LIMIT ?",
                                 (name, qualname, language, 4 * self.max_callers)).fetchall()
        visible = [(caller, line, root, rel) for caller, line, root, rel in rows
                   if not self.gate.blocks(Path(root) / rel, root)]  # defence in depth: never indexed anyway
        out = [{"symbol": caller or "<top level>", "path": str(Path(root) / rel), "rel": rel, "line": line}
               for caller, line, root, rel in visible[: self.max_callers]]
        return out, total - (len(rows) - len(visible))

    def stats(self) -> dict:
        """Counts of the index: files by status, symbols by language and parser."""
        conn = self.conn
        return {"files": dict(conn.execute("SELECT status, count(*) FROM files GROUP BY status").fetchall()),
                "symbols": dict(conn.execute("SELECT language, count(*) FROM symbols GROUP BY language").fetchall()),
                "parsers": dict(conn.execute("SELECT parser, count(*) FROM symbols GROUP BY parser").fetchall()),
                "calls": conn.execute("SELECT count(*) FROM calls").fetchone()[0]}


def filter_sql(filters: dict) -> tuple[str, list]:
    """The SQL restricting candidates to ``filters``: path (glob), kind, language (a value or a list)."""
    clauses, params = [], []
    for key, column in (("kind", "s.kind"), ("language", "s.language")):
        value = filters.get(key)
        if value:
            values = [value] if isinstance(value, str) else list(value)
            clauses.append(f"{column} IN ({','.join('?' * len(values))})")
            params.extend(values)
    if filters.get("path"):
        clauses.append("path_glob(?, f.rel, f.root || '/' || f.rel)")
        params.append(filters["path"])
    if not clauses:
        return "", []
    return (" AND rowid IN (SELECT s.id FROM symbols s JOIN files f ON f.id = s.file_id WHERE "
            + " AND ".join(clauses) + ")"), params


def _changed_since(path: Path, mtime_ns: int, size: int) -> bool:
    try:
        info = path.stat()
    except OSError:
        return True
    return (info.st_mtime_ns, info.st_size) != (mtime_ns, size)


__all__ = ["CodeDomain", "code_query_terms", "parse_python", "parse_regex", "split_identifier"]
