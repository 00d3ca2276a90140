"""Definitions and calls of other languages through per-language regular expressions (the fallback
when Universal Ctags is not on PATH), with block ends found by brace matching."""

from __future__ import annotations

import re

from .symbols import _first_line, Parsed, Symbol


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
