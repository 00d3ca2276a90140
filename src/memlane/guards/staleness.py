"""G1: does the working tree still have what a recalled note names?

A note outlives the code it describes. Before a note is injected, what it names is checked
against the repository the agent works in, and what no longer holds is marked inline ("may
be stale: …"). Four kinds of reference, each judged only when the note plainly speaks of
*this* tree — a false alarm costs the agent's trust in every other mark:

- **files**: `` `server/db/0042.sql` `` or a bare ``cmd/backfill/main.go`` whose first folder
  exists here (a path into another repository is not ours to judge);
- **symbols**: an identifier in backticks on the same line as a source file of this tree
  ("`parse_config()` in `src/config.py`"), a definition ("`def load_index`", "`class
  Store`"), or a dotted name rooted in one of the tree's own packages
  (`` `memlane.recall.run_recall` ``): looked for in that file, then in the whole tree
  (``git grep``; outside git, or when git is slow, a symbol is not judged);
- **command flags and scripts**: a flag given to one of the tree's own scripts
  ("`scripts/deploy.sh --skip-tests`"), an ``npm run``/``yarn``/``pnpm`` script, a ``make``
  target;
- **versions**: a dependency or runtime the tree's manifests pin (package.json, .nvmrc,
  pyproject.toml, requirements*.txt, .python-version, go.mod, Cargo.toml, .tool-versions)
  named with a version outside what the manifest now allows ("Node 16" while .nvmrc says 20).
  A note that also names an allowed version (an upgrade story) is left alone.

The tree is read lazily and cached per process for ``TTL_S`` seconds, so a resident daemon
pays for a file or a ``git grep`` once, not on every prompt.
"""

from __future__ import annotations

import json
import os
import re
import time

from ..records import dataclass, field

TTL_S = 30.0
MAX_FILE_BYTES = 2_000_000
GREP_TIMEOUT_S = 1.5
MAX_GREPS = 12  # per tree view (TTL_S): a hook must not spend its budget searching the tree
MAX_FINDINGS = 8
CODE_SUFFIXES = {".py", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".go", ".rs", ".java", ".kt",
                 ".kts", ".rb", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift", ".php", ".scala", ".m",
                 ".mm", ".sh", ".bash", ".zsh", ".lua", ".ex", ".exs", ".dart", ".vue", ".svelte"}

#: repository paths as notes write them: in backticks, or bare with a folder and an extension
_PATH = re.compile(r"`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.@-]+)+/?)`|(?<![\w/.:-])((?:[A-Za-z0-9_-]+/)+[A-Za-z0-9_.-]+\.[A-Za-z0-9]{1,6})(?![\w/])")
_SPAN = re.compile(r"`([^`\n]{1,200})`")
_IDENT = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*)(?:(?:\.|::|#)[A-Za-z_][A-Za-z0-9_]*)*(?:\(\S*\))?$")
_DEFINITION = re.compile(r"^(?:async\s+)?(?:def|class|func|fn|function|interface|struct|enum|trait|type)\s+"
                         r"([A-Za-z_][A-Za-z0-9_]*)")
_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9-]*)")
_PKG_RUN = re.compile(r"^(?:npm run|yarn run|pnpm run|pnpm|yarn|bun run)\s+([A-Za-z0-9:_.-]+)")
_MAKE = re.compile(r"^make\s+([A-Za-z0-9_.-]+)$")
_VERSION = r"v?(\d+(?:\.\d+){0,2})(?![\d.]*\d)(?![\w%])"
#: words that name tools and concepts, not this tree's symbols, when they stand alone in backticks
_NOT_SYMBOLS = {"true", "false", "null", "none", "nil", "self", "this", "main", "init", "todo", "fixme", "async",
                "await", "return", "import", "export", "default", "string", "int", "bool", "float", "list", "dict"}
#: a span that is a file name ("config.yaml"), not a dotted symbol
_FILE_SUFFIXES = CODE_SUFFIXES | {".md", ".json", ".yaml", ".yml", ".toml", ".txt", ".sql", ".lock", ".cfg", ".ini",
                                  ".env", ".html", ".css", ".xml", ".csv", ".log", ".conf", ".gradle", ".proto"}
_YARN_BUILTINS = {"add", "install", "remove", "upgrade", "init", "dlx", "exec", "why", "info", "link", "publish",
                  "test", "start", "run", "build"}


@dataclass
class Tree:
    """What the checks read of one working tree, read lazily and cached."""

    root: str
    made: float = field(default_factory=time.monotonic)
    _files: dict = field(default_factory=dict)
    _grep: dict = field(default_factory=dict)
    _manifests: dict | None = None
    _git: bool | None = None
    _greps: int = 0
    _real: str = ""

    def path(self, rel: str) -> str | None:
        """``rel`` under the root, or None when it leads out of the tree (``..``, an absolute path,
        a symlink to elsewhere): a note names what the checks read, and only this tree is theirs."""
        path = os.path.join(self.root, rel)
        self._real = self._real or os.path.realpath(self.root)
        try:
            real = os.path.realpath(path)
        except ValueError:  # a NUL in the name: no file is called that
            return None
        return path if real == self._real or real.startswith(self._real.rstrip(os.sep) + os.sep) else None

    def exists(self, rel: str) -> bool:
        path = self.path(rel)
        return path is not None and os.path.exists(path)

    def text(self, rel: str) -> str | None:
        if rel not in self._files:
            path = self.path(rel)
            try:
                if path is None or not os.path.isfile(path) or os.path.getsize(path) > MAX_FILE_BYTES:
                    raise OSError
                with open(path, "rb") as handle:
                    data = handle.read()
                self._files[rel] = None if b"\x00" in data[:8192] else data.decode("utf-8", "replace")
            except OSError:
                self._files[rel] = None
        return self._files[rel]

    def in_code(self, word: str) -> bool | None:
        """Whether ``word`` occurs as a whole word in the tree's files (tracked or untracked,
        not ignored); None when that cannot be told quickly (no git, a timeout, or the view's
        ``MAX_GREPS`` searches spent)."""
        if word in self._grep:
            return self._grep[word]
        found = None
        if self.is_git() and self._greps < MAX_GREPS:
            import subprocess

            from ..store.discovery import git_argv

            self._greps += 1
            try:
                proc = subprocess.run(git_argv(self.root, "grep", "-q", "-I", "-w", "-F", "--untracked",
                                               "-e", word), capture_output=True, timeout=GREP_TIMEOUT_S,
                                      stdin=subprocess.DEVNULL)
                found = {0: True, 1: False}.get(proc.returncode)
            except (OSError, subprocess.SubprocessError):
                found = None
        self._grep[word] = found
        return found

    def is_git(self) -> bool:
        if self._git is None:
            self._git = os.path.exists(os.path.join(self.root, ".git"))
        return self._git

    def manifests(self) -> dict[str, list[tuple[str, str]]]:
        """dependency or runtime (lower case) -> [(version spec, file)] from the tree's manifests."""
        if self._manifests is None:
            self._manifests = {}
            for reader in (_package_json, _one_line("node", ".nvmrc"), _one_line("node", ".node-version"),
                           _one_line("python", ".python-version"), _pyproject, _requirements, _go_mod, _cargo,
                           _tool_versions):
                try:
                    for name, spec, source in reader(self):
                        if spec and re.search(r"\d", spec):
                            self._manifests.setdefault(name.lower(), []).append((spec.strip(), source))
                except (ValueError, TypeError, AttributeError, KeyError):
                    continue  # a manifest we cannot read says nothing
        return self._manifests


_trees: dict[str, Tree] = {}


def tree_for(root: str | None) -> Tree | None:
    """The cached view of ``root`` (None when there is no such folder)."""
    if not root or not os.path.isdir(root):
        return None
    tree = _trees.get(root)
    if tree is None or time.monotonic() - tree.made > TTL_S:
        tree = _trees[root] = Tree(root)
    return tree


def stale_marks(text: str, root: str | None) -> list[str]:
    """What ``text`` names that the working tree at ``root`` no longer has, each phrased for
    the injection ("`x.py` not found in the working tree")."""
    tree = tree_for(root)
    if tree is None or not text:
        return []
    marks = [f"`{p}` not found in the working tree" for p in stale_paths(text, root, tree=tree)]
    marks += _stale_symbols(text, tree)
    marks += _stale_commands(text, tree)
    marks += _stale_versions(text, tree)
    return list(dict.fromkeys(marks))[:MAX_FINDINGS]


# -- files ----------------------------------------------------------------------------------------
def stale_paths(text: str, root: str | None, *, limit: int = 20, tree: Tree | None = None) -> list[str]:
    """Repository paths ``text`` names that do not exist under ``root`` (relative paths only;
    URLs, home and absolute paths are not the working tree's to judge)."""
    tree = tree or tree_for(root)
    if tree is None:
        return []
    missing, seen = [], set()
    for path in _paths_in(text):
        if path in seen:
            continue
        seen.add(path)
        if len(seen) > limit:
            break
        if "*" in path or path.count("/") > 8:
            continue
        if not tree.exists(path.split("/", 1)[0]):
            continue  # the note speaks of some other tree (another repo, a remote path): not ours to judge
        if not tree.exists(path):
            missing.append(path)
    return missing


def _paths_in(text: str):
    for match in _PATH.finditer(text or ""):
        path = (match.group(1) or match.group(2) or "").rstrip("/")
        if path and not path.startswith(("~", "/", "http", "www.")) and "://" not in path:
            yield path


# -- symbols --------------------------------------------------------------------------------------
def _stale_symbols(text: str, tree: Tree) -> list[str]:
    marks = []
    for line in text.splitlines():
        spans = _SPAN.findall(line)
        if not spans:
            continue
        files = [p for p in _paths_in(line) if os.path.splitext(p)[1].lower() in CODE_SUFFIXES and tree.exists(p)]
        for span in spans:
            span = span.strip()
            definition = _DEFINITION.match(span)
            if definition:
                name, anchored = definition.group(1), True
            elif _IDENT.match(span) and os.path.splitext(span)[1].lower() not in _FILE_SUFFIXES:
                name = _last_part(span)
                anchored = bool(files) or _own_package(span, tree)
            else:
                continue
            if not anchored or len(name) < 3 or name.lower() in _NOT_SYMBOLS:
                continue
            if files and any(_has_word(tree.text(f), name) for f in files):
                continue
            if files:
                elsewhere = tree.in_code(name)
                where = ", ".join(f"`{f}`" for f in files[:2])
                if elsewhere is True:
                    marks.append(f"`{name}` is no longer in {where} (it is elsewhere in the tree)")
                elif elsewhere is False or not tree.is_git():
                    marks.append(f"`{name}` not found in {where}")
            elif tree.in_code(name) is False:
                marks.append(f"`{name}` not found in the code")
    return marks


def _last_part(span: str) -> str:
    return re.split(r"\.|::|#", span.split("(", 1)[0])[-1]


def _own_package(span: str, tree: Tree) -> bool:
    """A dotted name whose first part is one of the tree's own top-level packages."""
    if "." not in span and "::" not in span:
        return False
    head = re.split(r"\.|::", span, maxsplit=1)[0]
    return len(head) >= 3 and any(path is not None and os.path.isdir(path)
                                  for path in (tree.path(head), tree.path(os.path.join("src", head))))


def _has_word(text: str | None, word: str) -> bool:
    return bool(text) and re.search(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", text) is not None


# -- commands -------------------------------------------------------------------------------------
def _stale_commands(text: str, tree: Tree) -> list[str]:
    marks = []
    for span in _SPAN.findall(text):
        span = span.strip()
        run = _PKG_RUN.match(span)
        if run and tree.exists("package.json"):
            script = run.group(1)
            if span.startswith(("yarn", "pnpm")) and " run " not in span and script in _YARN_BUILTINS:
                continue
            scripts = _json(tree, "package.json").get("scripts") or {}
            if isinstance(scripts, dict) and scripts and script not in scripts:
                marks.append(f"`{span}`: package.json has no script `{script}`")
            continue
        make = _MAKE.match(span)
        if make and tree.exists("Makefile"):
            target = make.group(1)
            if not re.search(rf"(?m)^{re.escape(target)}\s*:(?!=)", tree.text("Makefile") or ""):
                marks.append(f"`{span}`: the Makefile has no target `{target}`")
            continue
        flags = _FLAG.findall(span)
        if not flags:
            continue
        script = next((t for t in span.split() if "/" in t or os.path.splitext(t)[1] in CODE_SUFFIXES), None)
        script = script.removeprefix("./") if script else None
        if not script or not tree.exists(script):
            continue
        source = tree.text(script)
        if source is None:
            continue
        for flag in flags:
            bare = flag[2:]
            if not any(form in source for form in (flag, bare, bare.replace("-", "_"))):
                marks.append(f"`{script}` has no `{flag}` option")
    return marks


def _json(tree: Tree, rel: str) -> dict:
    try:
        data = json.loads(tree.text(rel) or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


# -- versions -------------------------------------------------------------------------------------
def _stale_versions(text: str, tree: Tree) -> list[str]:
    pinned = tree.manifests()
    if not pinned:
        return []
    marks = []
    for name, specs in pinned.items():
        if len(name) < 2 or name.lower() not in text.lower():
            continue
        pattern = re.compile(rf"(?i)(?<![\w/@.-]){re.escape(name)}(?:\s*(?:==|>=|~=|=|@|:|\s)\s*|\s+v){_VERSION}")
        # a short name ("go") is a version claim only with a dotted version ("Go 1.21")
        named = [m.group(1) for m in pattern.finditer(text) if len(name) >= 4 or "." in m.group(1)]
        if not named:
            continue
        verdicts = [(v, [(spec, src) for spec, src in specs if _allows(spec, v) is False]) for v in named]
        if any(not against for _, against in verdicts):
            continue  # some version it names still holds (an upgrade story): leave it
        version, against = verdicts[0]
        spec, source = against[0]
        marks.append(f"{name} {version} named, {source} has {spec}")
    return marks


def _vtuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def _allows(spec: str, version: str) -> bool | None:
    """Whether a manifest's ``spec`` allows the ``version`` a note names, compared on the parts
    both give ("Node 18" against "18.17.0" holds); None when the spec is too complex to say."""
    spec = spec.strip().strip("\"'")
    if "||" in spec or spec in ("*", "latest"):
        return None
    named = _vtuple(version)
    clauses = [c.strip() for c in re.split(r"[,\s]+(?=[<>=!~^])|,", spec) if c.strip()]
    verdict = None
    for clause in clauses:
        op = re.match(r"^(\^|~=|~|>=|<=|==|!=|>|<|=|v)?", clause).group(1) or ""
        bound = _vtuple(clause)
        if not bound:
            continue
        n = min(len(named), len(bound))
        a, b = named[:n], bound[:n]
        if op in ("", "=", "==", "v"):
            ok = a == b
        elif op == "^":
            ok = named[:1] == bound[:1] if bound[0] > 0 else a == b
        elif op == "~":
            k = min(2, len(named), len(bound))
            ok = named[:k] == bound[:k]
        elif op in (">=", "~="):
            ok = a >= b
        elif op == ">":
            ok = a >= b
        else:
            continue  # upper bounds and exclusions: not judged
        if not ok:
            return False
        verdict = True
    return verdict


def _package_json(tree: Tree):
    data = _json(tree, "package.json")
    for section in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
        for name, spec in (data.get(section) or {}).items():
            if isinstance(spec, str) and not spec.startswith(("file:", "link:", "git", "http", "workspace:")):
                yield name.split("/")[-1], spec, "package.json"
    engines = data.get("engines") or {}
    if isinstance(engines, dict) and isinstance(engines.get("node"), str):
        yield "node", engines["node"], "package.json"


def _one_line(name: str, rel: str):
    def read(tree: Tree):
        value = (tree.text(rel) or "").strip().splitlines()[:1]
        if value:
            yield name, value[0].removeprefix("v"), rel
    return read


def _pyproject(tree: Tree):
    source = tree.text("pyproject.toml")
    if not source:
        return
    import tomllib

    data = tomllib.loads(source)
    project = data.get("project") or {}
    if isinstance(project.get("requires-python"), str):
        yield "python", project["requires-python"], "pyproject.toml"
    for req in project.get("dependencies") or []:
        parsed = _requirement(req)
        if parsed:
            yield (*parsed, "pyproject.toml")
    poetry = ((data.get("tool") or {}).get("poetry") or {}).get("dependencies") or {}
    for name, spec in poetry.items():
        spec = spec.get("version") if isinstance(spec, dict) else spec
        if isinstance(spec, str):
            yield name, spec, "pyproject.toml"


def _requirement(line: str) -> tuple[str, str] | None:
    match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([<>=!~^][^;#]*)", line)
    return (match.group(1), match.group(2).strip()) if match else None


def _requirements(tree: Tree):
    for rel in ("requirements.txt", "requirements-dev.txt", "requirements/base.txt"):
        for line in (tree.text(rel) or "").splitlines():
            parsed = _requirement(line)
            if parsed:
                yield (*parsed, rel)


def _go_mod(tree: Tree):
    for line in (tree.text("go.mod") or "").splitlines():
        line = line.strip().removeprefix("require ").strip()
        if re.match(r"^go\s+\d", line):
            yield "go", line.split()[1], "go.mod"
        elif re.match(r"^[\w.-]+(?:/[\w.-]+)+\s+v\d", line):
            module, version = line.split()[:2]
            yield module.rstrip("/").split("/")[-1], version.removeprefix("v"), "go.mod"


def _cargo(tree: Tree):
    source = tree.text("Cargo.toml")
    if not source:
        return
    import tomllib

    for name, spec in (tomllib.loads(source).get("dependencies") or {}).items():
        spec = spec.get("version") if isinstance(spec, dict) else spec
        if isinstance(spec, str):
            yield name, spec if spec[:1] in "^~=<>*" else "^" + spec, "Cargo.toml"


def _tool_versions(tree: Tree):
    for line in (tree.text(".tool-versions") or "").splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.lstrip().startswith("#"):
            yield {"nodejs": "node"}.get(parts[0], parts[0]), parts[1], ".tool-versions"
