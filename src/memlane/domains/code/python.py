"""Python definitions and calls through ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

from .regex import parse_regex
from .symbols import _first_line, Parsed, Symbol


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
