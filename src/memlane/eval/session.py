"""The session eval: memory as the agent receives it. For every labelled prompt, a fresh session
goes through the real hook path — SessionStart (layers 1 and 2), then the prompt (layer 3, and 4
when it applies) — in each context bracket, and what reached the agent is scored: a relevant note
counts when it appears at any depth (a line naming it, or in full), and separately when it came in
full; the tokens are those of both injections.

Side by side, on the same prompts: the whole store in full (every note, every time), Claude
Code's own loading (its MEMORY.md up to its limits, 200 lines or 25 KB; the side model that then
picks up to five notes to read cannot run here, so only the index is scored) and keyword-only.
The frontier is every method's (tokens per prompt, delivered recall), cheapest first.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path
from collections.abc import Callable, Sequence

from ..config import Bracket, Config
from ..index.text import estimate_tokens
from ..records import replace
from ..store.memory_index import INDEX_FILE
from .datasets import Dataset, detect_format, load_dataset

__all__ = ["CLAUDE_LINES", "CLAUDE_BYTES", "evaluate_sessions", "format_sessions"]

#: Claude Code loads MEMORY.md up to the first 200 lines or 25 KB, whichever comes first
CLAUDE_LINES = 200
CLAUDE_BYTES = 25_000
BRACKETS = (Bracket.FRESH, Bracket.MODERATE, Bracket.DEPLETED)

Progress = Callable[[str, int, int], None]


def evaluate_sessions(path: str | Path, *, embedder: str | None = None, config: Config | None = None,
                      brackets: Sequence[Bracket | str] = BRACKETS, keyword_baseline: bool = True,
                      baselines: bool = True, limit: int | None = None, include_types: Sequence[str] = (),
                      exclude_types: Sequence[str] = (), progress: Progress | None = None,
                      index_dir: str | Path | None = None) -> dict:
    """Run every prompt of a memory-folder benchmark (``prompts.jsonl`` with ``notes/`` or
    ``store/``) through the hooks in each bracket; plain, JSON-able data (see
    :func:`format_sessions`). ``index_dir``: keep each repository's index there (a later run
    with other injection settings reuses its vectors); default a temporary folder."""
    fmt, paths = detect_format(path)
    if fmt == "corpus":
        raise ValueError(f"{path}: the session eval needs memory folders and labelled prompts, not a corpus")
    dataset = load_dataset(path, include_types=include_types, exclude_types=exclude_types, limit=limit)
    folders = _scope_folders(fmt, paths, dataset)
    base = replace(config or Config())
    base.index = replace(base.index, hit_log=False)  # a prompt's own use must not move the next
    methods: dict[str, dict] = {}
    runs = [(f"memlane, {Bracket(b).value}", embedder, Bracket(b)) for b in brackets]
    if keyword_baseline:
        runs.append((f"memlane keyword-only, {Bracket.MODERATE.value}", "none", Bracket.MODERATE))
    with tempfile.TemporaryDirectory() as tmp:
        for done, (label, model, bracket) in enumerate(runs, start=1):
            methods[label] = _hook_run(dataset, folders, base, model, bracket, Path(index_dir or tmp))
            if progress:
                progress("sessions", done, len(runs))
    if baselines:
        methods["whole store in full"] = _whole_store(dataset, folders)
        methods["Claude Code's MEMORY.md (index only)"] = _claude_native(dataset, folders)
    frontier = sorted(({"method": name, "tokens": m["overall"]["tokens"], "recall": m["overall"]["recall"]}
                       for name, m in methods.items()), key=lambda row: (row["tokens"], -row["recall"]))
    return {"dataset": dataset.summary() | {"evaluated": len(dataset.queries)}, "embedder": embedder,
            "methods": methods, "frontier": frontier,
            "notes": ["a relevant note counts when the agent received it at any depth (a line naming it, or in "
                      "full); 'in full' counts only full text; tokens are SessionStart's plus the prompt's, per "
                      "prompt, each prompt in a fresh session",
                      "Claude Code's MEMORY.md: the index as Claude Code loads it (first 200 lines / 25 KB); its "
                      "side model's pick of up to five notes to read cannot run here, so a note counts when its "
                      "file is named in what is loaded"]}


def _scope_folders(fmt: str, paths: dict, dataset: Dataset) -> dict[str, Path]:
    if fmt == "notes":
        root = paths["root"] / "notes"
        out = {}
        for folder in root.iterdir():
            owner, sep, repo = folder.name.partition("__")
            out[f"{owner}/{repo}" if sep else folder.name] = folder
        return out
    return {scope: paths["store"] for scope in dataset.units}


def _memory_folders(folder: Path) -> list[Path]:
    """The memory folders of a repository's notes: each folder holding a MEMORY.md (not inside
    another such folder), else the folder itself."""
    found = sorted((p.parent for p in folder.rglob(INDEX_FILE)), key=lambda p: len(p.parts))
    roots: list[Path] = []
    for candidate in found:
        if not any(candidate.is_relative_to(r) for r in roots):
            roots.append(candidate)
    return roots or [folder]


def _units_by_path(dataset: Dataset, folders: dict[str, Path]) -> dict[str, dict[str, str]]:
    """scope -> absolute note path -> the unit's id (how the labels name it)."""
    out: dict[str, dict[str, str]] = {}
    for scope, units in dataset.units.items():
        out[scope] = {str(Path(u.path).resolve()): u.uid for u in units}
    return out


def _hook_run(dataset: Dataset, folders: dict[str, Path], base: Config, embedder: str | None,
              bracket: Bracket, index_dir: Path) -> dict:
    from ..inject.layers import session_start, user_prompt
    from ..memory import Memory

    config = replace(base)
    config.inject = replace(base.inject, default_bracket=bracket.value)
    uid_of = _units_by_path(dataset, folders)
    rows = []
    by_scope: dict[str, list] = defaultdict(list)
    for query in dataset.queries:
        by_scope[query.scope].append(query)
    with tempfile.TemporaryDirectory() as tmp:
        for n, (scope, queries) in enumerate(by_scope.items()):
            folder = folders.get(scope)
            if folder is None:
                continue
            index = index_dir / f"{n}-{embedder or 'default'}.sqlite"
            with Memory(_memory_folders(folder), config=config, embedder=embedder, index_path=index,
                        cwd=tmp) as memory:
                memory.refresh()
                for query in queries:
                    payload = {"session_id": f"eval-{bracket.value}-{query.id}", "cwd": tmp, "prompt": query.text,
                               "source": "startup", "transcript_path": None}
                    start = session_start(memory, payload, dry_run=True)
                    prompt = user_prompt(memory, payload, dry_run=True)
                    seen = {p for layer in start.report["layers"].values() for p in layer.get("paths", [])}
                    full = {s["path"] for s in prompt.report.get("shown", []) if s["depth"] == "full"}
                    listed = {s["path"] for s in prompt.report.get("shown", [])} | set(prompt.report.get("menu", []))
                    ids = uid_of.get(scope, {})
                    reached = {ids.get(str(Path(p).resolve())) for p in seen | listed} - {None}
                    in_full = {ids.get(str(Path(p).resolve())) for p in full} - {None}
                    rows.append(_row(query, reached, in_full,
                                     estimate_tokens(start.text) + estimate_tokens(prompt.text)))
    return _summarise(rows)


def _whole_store(dataset: Dataset, folders: dict[str, Path]) -> dict:
    tokens = {scope: sum(estimate_tokens(f"{u.heading()}\n{u.body}") for u in units)
              for scope, units in dataset.units.items()}
    every = {scope: {u.uid for u in units} for scope, units in dataset.units.items()}
    rows = [_row(q, every.get(q.scope, set()), every.get(q.scope, set()), tokens.get(q.scope, 0))
            for q in dataset.queries]
    return _summarise(rows)


def _claude_native(dataset: Dataset, folders: dict[str, Path]) -> dict:
    """MEMORY.md as Claude Code loads it: the first 200 lines or 25 KB; a note counts when its
    file is named in what is loaded."""
    from ..store.memory_index import parse_memory_index

    loaded: dict[str, tuple[set[str], int, bool]] = {}
    for scope, units in dataset.units.items():
        folder = folders.get(scope)
        indexes = [f / INDEX_FILE for f in _memory_folders(folder)] if folder else []
        text = "\n".join(i.read_text(encoding="utf-8", errors="replace") for i in indexes if i.is_file())
        cut = "\n".join(text.splitlines()[:CLAUDE_LINES])
        cut = cut.encode("utf-8")[:CLAUDE_BYTES].decode("utf-8", "ignore")
        truncated = cut.strip() != text.strip()
        named = {Path(line.file).name for line in parse_memory_index(cut)}
        ids = {u.uid for u in units if Path(u.path).name in named}
        loaded[scope] = (ids, estimate_tokens(cut), truncated)
    rows = [_row(q, loaded.get(q.scope, (set(), 0, False))[0], set(), loaded.get(q.scope, (set(), 0, False))[1])
            for q in dataset.queries]
    out = _summarise(rows)
    out["truncated_scopes"] = sorted(scope for scope, (_, _, cut) in loaded.items() if cut)
    return out


def _row(query, reached: set[str], in_full: set[str], tokens: int) -> dict:
    relevant = set(query.relevant)
    return {"id": query.id, "kind": query.kind or "-", "tokens": tokens,
            "recall": len(relevant & reached) / len(relevant) if relevant else 0.0,
            "full": len(relevant & in_full) / len(relevant) if relevant else 0.0,
            "must_not": bool(set(query.must_not) & reached)}


def _summarise(rows: list[dict]) -> dict:
    def agg(group: list[dict]) -> dict:
        n = len(group)
        return {"n": n, "recall": sum(r["recall"] for r in group) / n if n else 0.0,
                "full": sum(r["full"] for r in group) / n if n else 0.0,
                "tokens": round(sum(r["tokens"] for r in group) / n) if n else 0}

    kinds: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        kinds[row["kind"]].append(row)
    return {"overall": agg(rows), "kinds": {k: agg(v) for k, v in sorted(kinds.items())}, "per_query": rows}


def format_sessions(result: dict) -> str:
    from .report import format_table

    ds = result["dataset"]
    lines = [f"{ds['name']}: {ds['evaluated']} prompts, each in a fresh session through the hooks; embedder: "
             f"{result['embedder'] or 'the configured one'}"]
    lines += [f"note: {n}" for n in result["notes"]]
    kinds = sorted({k for m in result["methods"].values() for k in m["kinds"]})
    rows = []
    for name, m in result["methods"].items():
        o = m["overall"]
        rows.append([name, o["tokens"], o["recall"], o["full"], *(m["kinds"].get(k, {}).get("recall", float("nan"))
                                                                   for k in kinds)])
    table = format_table(["method", "tokens/prompt", "recall", "in full", *kinds], rows,
                         title="delivered to the agent, per prompt (recall at any depth; per kind: recall)")
    frontier = format_table(["method", "tokens/prompt", "recall"],
                            [[f["method"], f["tokens"], f["recall"]] for f in result["frontier"]],
                            title="the recall-tokens frontier, cheapest first")
    truncated = result["methods"].get("Claude Code's MEMORY.md (index only)", {}).get("truncated_scopes")
    extra = [f"Claude Code cuts MEMORY.md in: {', '.join(truncated)}"] if truncated else []
    return "\n\n".join(["\n".join(lines), table, frontier, *extra])
