"""Benchmark formats (E1): what to index per scope, which queries to ask, and their labels.

Three layouts are read, all into one :class:`Dataset`:

- **corpus** (``bench/`` style): ``corpus.jsonl`` (``id``, ``text``, optional ``title``, and a
  scoping field), ``queries.jsonl`` (``id``, ``text``/``question``, a type field) and
  ``qrels.tsv`` (query id, doc id, relevance; no header, or a header line that is skipped).
  Each query is ranked only against the documents of its scope: the field named by
  ``scope_field`` or the first of :data:`SCOPE_FIELDS` the corpus has. A query without that
  field is scoped by its own id (LongMemEval: ``haystack`` = question id).
- **notes** (``agent_notes_dev``): ``notes/<owner>__<repo>/<path>`` memory folders and a
  ``prompts.jsonl`` with ``repo``, ``prompt``, ``relevant``, ``also_ok``, ``must_not``, ``kind``;
  note ids are ``<owner>/<repo>:<path>``; each prompt is scoped to its repo; ``MEMORY.md`` is
  read as the folder's index but is never a unit (it is never a label target).
- **prompts** (the demo store): one memory folder and a prompts file whose label ids are paths
  relative to that folder (``.md`` optional, or the note's name).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from collections.abc import Iterable, Sequence

from ..errors import EvalError
from ..index.unit import Unit, unit_from_note
from ..records import dataclass, field, replace
from ..store.memory_index import INDEX_FILE
from ..store.scan import scan_folder

__all__ = [
    "Dataset", "DatasetError", "Query", "SCOPE_FIELDS", "detect_format", "load_agent_notes",
    "load_corpus", "load_dataset", "load_prompts_store", "read_jsonl", "read_qrels", "spread",
]

#: scoping fields tried, in order, when none is named
SCOPE_FIELDS = ("haystack", "conversation_id", "repo", "scope")
_TEXT_FIELDS = ("text", "question", "prompt", "query")
_KIND_FIELDS = ("question_type", "kind", "type", "category")
#: query fields kept as tags, for slices such as the demo's CJK prompts
_TAG_FIELDS = ("category", "lang", "cross_lingual", "repo")
ALL_SCOPE = "all"


class DatasetError(EvalError):
    """The folder is not a benchmark this module can read; the message says why."""


@dataclass
class Query:
    """A labelled query: its text, scope, kind and relevant units."""

    id: str
    text: str
    scope: str
    kind: str | None = None
    relevant: dict[str, float] = field(default_factory=dict)  # unit uid -> gain (> 0)
    also_ok: frozenset[str] = frozenset()  # neither rewarded nor penalised
    must_not: frozenset[str] = frozenset()
    tags: dict[str, str] = field(default_factory=dict)


@dataclass
class Dataset:
    """A benchmark set: the units per scope and the labelled queries."""

    name: str
    format: str  # "corpus" | "notes" | "prompts"
    units: dict[str, list[Unit]]  # scope -> the units its queries are ranked against
    queries: list[Query]
    scope_field: str | None = None
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> number of queries left out
    problems: list[str] = field(default_factory=list)  # labels that point nowhere, unreadable files

    def summary(self) -> dict:
        return {
            "name": self.name, "format": self.format, "scope_field": self.scope_field,
            "queries": len(self.queries), "scopes": len(self.units),
            "units": sum(len(u) for u in self.units.values()),
            "skipped": dict(self.skipped), "problems": list(self.problems),
        }


# -- small readers ------------------------------------------------------------------------------
def read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"{path}:{number}: not JSON ({exc.msg})") from None
    return rows


def read_qrels(path: Path) -> dict[str, dict[str, float]]:
    """``query id -> {doc id: relevance}`` from a TSV of (query, doc, relevance) rows.

    A TREC-style 4-column row (query, iteration, doc, relevance) is read too; a header row
    (a non-numeric relevance) is skipped; relevance <= 0 rows are dropped.
    """
    qrels: dict[str, dict[str, float]] = {}
    with open(path, encoding="utf-8", newline="") as handle:
        for row in csv.reader(handle, delimiter="\t"):
            row = [c.strip() for c in row]
            if not row or not row[0] or row[0].startswith("#"):
                continue
            if len(row) == 2:
                row = [*row, "1"]
            qid, doc, rel = (row[0], row[2], row[3]) if len(row) >= 4 else (row[0], row[1], row[2])
            try:
                gain = float(rel)
            except ValueError:
                continue  # header line
            if gain > 0:
                qrels.setdefault(qid, {})[doc] = gain
    return qrels


def spread(items: Sequence, limit: int | None) -> list:
    """``limit`` items spread evenly over ``items`` (every n/limit-th), so a quick run keeps
    the mix of query types of files sorted by type; all items when ``limit`` is None."""
    items = list(items)
    if not limit or limit >= len(items):
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def _first(record: dict, names: Iterable[str]):
    for name in names:
        value = record.get(name)
        if value not in (None, ""):
            return value
    return None


def _type_filter(query: Query, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether the query passes: its kind or its category, as strings, against both lists."""
    values = {str(query.kind)} | ({str(query.tags["category"])} if "category" in query.tags else set())
    if include and not values & {str(v) for v in include}:
        return False
    return not (exclude and values & {str(v) for v in exclude})


def _tags(record: dict) -> dict[str, str]:
    return {name: str(record[name]) for name in _TAG_FIELDS if record.get(name) not in (None, "")}


def _skip(skipped: dict[str, int], reason: str) -> None:
    skipped[reason] = skipped.get(reason, 0) + 1


# -- corpus / queries / qrels -------------------------------------------------------------------
def corpus_unit(doc: dict, scope_field: str | None) -> Unit:
    """A corpus document as a unit. The document id is *not* indexed text: LongMemEval's ids
    contain ``answer`` exactly for the evidence sessions, which would leak the labels."""
    meta = {k: v for k, v in doc.items() if k not in ("id", "text", "title") and k != scope_field}
    return Unit(uid=str(doc["id"]), name="", title=str(doc.get("title") or ""),
                body=str(doc.get("text") or ""), path=str(doc["id"]), meta=meta)


def load_corpus(path: Path | str, *, scope_field: str | None = None, corpus_file: str = "corpus.jsonl",
                queries_file: str = "queries.jsonl", qrels_file: str = "qrels.tsv",
                include_types: Sequence[str] = (), exclude_types: Sequence[str] = (),
                limit: int | None = None) -> Dataset:
    root = Path(path)
    for name in (corpus_file, queries_file, qrels_file):
        if not (root / name).is_file():
            raise DatasetError(f"{root}: no {name}")
    docs = read_jsonl(root / corpus_file)
    if not docs:
        raise DatasetError(f"{root / corpus_file}: empty")
    if scope_field is None:
        scope_field = next((f for f in SCOPE_FIELDS if f in docs[0]), None)
    elif scope_field not in docs[0]:
        raise DatasetError(f"{root / corpus_file}: documents have no field {scope_field!r}")
    qrels = read_qrels(root / qrels_file)
    skipped: dict[str, int] = {}
    queries = []
    for record in read_jsonl(root / queries_file):
        qid = str(record["id"])
        text = _first(record, _TEXT_FIELDS)
        kind = _first(record, _KIND_FIELDS)
        scope = str(record.get(scope_field) or qid) if scope_field else ALL_SCOPE
        query = Query(qid, str(text or ""), scope, None if kind is None else str(kind),
                      relevant=dict(qrels.get(qid, {})), tags=_tags(record))
        if not _type_filter(query, include_types, exclude_types):
            _skip(skipped, "type filtered out")
        elif not query.relevant:
            _skip(skipped, "no qrels")
        elif not query.text.strip():
            _skip(skipped, "empty query text")
        else:
            queries.append(query)
    queries = spread(queries, limit)
    wanted = {q.scope for q in queries}
    units: dict[str, list[Unit]] = {scope: [] for scope in wanted}
    for doc in docs:
        scope = str(doc.get(scope_field)) if scope_field else ALL_SCOPE
        if scope in wanted:
            units[scope].append(corpus_unit(doc, scope_field))
    problems = _label_problems(queries, units)
    name = root.name if corpus_file == "corpus.jsonl" else f"{root.name}/{Path(corpus_file).stem}"
    return Dataset(name, "corpus", units, queries, scope_field, skipped, problems)


def _label_problems(queries: list[Query], units: dict[str, list[Unit]]) -> list[str]:
    """Labels that name no unit of the query's scope (they count as misses, never as found)."""
    known = {scope: {u.uid for u in scope_units} for scope, scope_units in units.items()}
    missing = 0
    example = ""
    for query in queries:
        for uid in query.relevant:
            if uid not in known.get(query.scope, ()):
                missing += 1
                example = example or f"{query.id} -> {uid}"
    return [f"{missing} relevant label(s) name no unit in the query's scope (e.g. {example})"] if missing else []


# -- memory folders -----------------------------------------------------------------------------
def _markdown_dirs(root: Path) -> list[Path]:
    """Folders under ``root`` (dot-folders included) that hold markdown files."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        if any(f.lower().endswith(".md") for f in files):
            found.append(Path(folder))
    # a folder nested in another one found is scanned with it (scan_folder recurses)
    return [d for d in found if not any(p != d and d.is_relative_to(p) for p in found)]


def _folder_units(store: Path, scope: str, id_prefix: str, problems: list[str]) -> list[Unit]:
    """Units for every note under ``store``, with uid ``id_prefix + <path relative to store>``."""
    units = []
    for folder in _markdown_dirs(store):
        scan = scan_folder(folder, "project")
        problems += [f"skipped {s.path}: {s.reason}" for s in scan.skipped]
        rel_folder = folder.relative_to(store).as_posix()
        for note in scan.notes:
            if Path(note.rel).name == INDEX_FILE:
                continue  # a nested index file: never a unit
            rel = note.rel if rel_folder == "." else f"{rel_folder}/{note.rel}"
            unit = unit_from_note(note)
            units.append(replace(unit, uid=id_prefix + rel, scope="project",
                                             meta=unit.meta | {"dataset_scope": scope}))
    return units


def _prompt_query(record: dict, scope: str, resolve) -> tuple[Query, list[str]]:
    labels = {}
    unknown = []
    for key in ("relevant", "also_ok", "must_not"):
        ids = record.get(key) or []
        ids = [ids] if isinstance(ids, str) else ids
        resolved = []
        for raw in ids:
            uid = resolve(str(raw))
            if uid is None:
                unknown.append(f"{record.get('id')}: {key} {raw!r} names no note")
            else:
                resolved.append(uid)
        labels[key] = resolved
    kind = _first(record, _KIND_FIELDS)
    query = Query(str(record.get("id")), str(_first(record, _TEXT_FIELDS) or ""), scope,
                  None if kind is None else str(kind), relevant={uid: 1.0 for uid in labels["relevant"]},
                  also_ok=frozenset(labels["also_ok"]), must_not=frozenset(labels["must_not"]),
                  tags=_tags(record))
    return query, unknown


def _filter_prompts(pairs: list[tuple[Query, list[str]]], include_types, exclude_types,
                    skipped: dict[str, int], problems: list[str]) -> list[Query]:
    queries = []
    for query, unknown in pairs:
        problems += unknown
        if not _type_filter(query, include_types, exclude_types):
            _skip(skipped, "type filtered out")
        elif not query.relevant:
            _skip(skipped, "no relevant note")
        elif not query.text.strip():
            _skip(skipped, "empty query text")
        else:
            queries.append(query)
    return queries


def load_agent_notes(path: Path | str, *, prompts_file: str = "prompts.jsonl",
                     include_types: Sequence[str] = (), exclude_types: Sequence[str] = (),
                     limit: int | None = None) -> Dataset:
    """``notes/<owner>__<repo>/...`` folders plus prompts scoped by ``repo``."""
    root = Path(path)
    notes_root = root / "notes"
    if not notes_root.is_dir() or not (root / prompts_file).is_file():
        raise DatasetError(f"{root}: expected notes/ and {prompts_file}")
    problems: list[str] = []
    units: dict[str, list[Unit]] = {}
    for folder in sorted(p for p in notes_root.iterdir() if p.is_dir()):
        owner, sep, repo = folder.name.partition("__")
        scope = f"{owner}/{repo}" if sep else folder.name
        units[scope] = _folder_units(folder, scope, f"{scope}:", problems)
    known = {u.uid for scope_units in units.values() for u in scope_units}
    pairs = []
    for record in read_jsonl(root / prompts_file):
        scope = str(record.get("repo") or "")
        pairs.append(_prompt_query(record, scope, lambda raw: raw if raw in known else None))
    skipped: dict[str, int] = {}
    queries = spread(_filter_prompts(pairs, include_types, exclude_types, skipped, problems), limit)
    problems += _label_problems(queries, units)
    used = {q.scope for q in queries}
    return Dataset(root.name, "notes", {s: u for s, u in units.items() if s in used}, queries, "repo",
                   skipped, problems)


def load_prompts_store(store: Path | str, prompts: Path | str, *, name: str | None = None,
                       include_types: Sequence[str] = (), exclude_types: Sequence[str] = (),
                       limit: int | None = None) -> Dataset:
    """One memory folder and a prompts file whose ids are paths relative to it."""
    store, prompts = Path(store), Path(prompts)
    if not store.is_dir():
        raise DatasetError(f"{store}: not a folder")
    if not prompts.is_file():
        raise DatasetError(f"{prompts}: no such prompts file")
    problems: list[str] = []
    units = _folder_units(store, ALL_SCOPE, "", problems)
    aliases: dict[str, str] = {}
    for unit in units:  # exact relative path first, then without .md, the file name, the note's name
        for alias in (unit.uid, unit.uid.removesuffix(".md"), Path(unit.uid).name,
                      Path(unit.uid).stem, unit.name):
            aliases.setdefault(alias, unit.uid)

    def resolve(raw: str) -> str | None:
        raw = raw.removeprefix("./")
        return aliases.get(raw) or aliases.get(raw.removesuffix(".md"))

    pairs = [_prompt_query(record, ALL_SCOPE, resolve) for record in read_jsonl(prompts)]
    skipped: dict[str, int] = {}
    queries = spread(_filter_prompts(pairs, include_types, exclude_types, skipped, problems), limit)
    return Dataset(name or store.parent.name, "prompts", {ALL_SCOPE: units}, queries, None, skipped, problems)


# -- detection ----------------------------------------------------------------------------------
def detect_format(path: Path | str) -> tuple[str, dict]:
    """``(format, paths)`` for a benchmark folder or a prompts file.

    corpus.jsonl present -> "corpus"; prompts.jsonl and notes/ -> "notes"; a prompts file
    (or a folder holding one) next to a ``store/`` folder -> "prompts".
    """
    path = Path(path)
    if path.is_file() and path.suffix == ".jsonl":
        store = path.parent / "store"
        if store.is_dir():
            return "prompts", {"store": store, "prompts": path}
        raise DatasetError(f"{path}: no store/ folder next to the prompts file")
    if not path.is_dir():
        raise DatasetError(f"{path}: no such folder")
    if (path / "corpus.jsonl").is_file():
        return "corpus", {"root": path}
    if (path / "prompts.jsonl").is_file() and (path / "notes").is_dir():
        return "notes", {"root": path}
    if (path / "prompts.jsonl").is_file() and (path / "store").is_dir():
        return "prompts", {"store": path / "store", "prompts": path / "prompts.jsonl"}
    if (path.parent / "prompts.jsonl").is_file():  # the store folder itself was named
        return "prompts", {"store": path, "prompts": path.parent / "prompts.jsonl"}
    raise DatasetError(f"{path}: not a benchmark (expected corpus.jsonl + queries.jsonl + qrels.tsv, "
                       "prompts.jsonl + notes/, or prompts.jsonl + store/)")


def load_dataset(path: Path | str, *, scope_field: str | None = None, include_types: Sequence[str] = (),
                 exclude_types: Sequence[str] = (), limit: int | None = None, **files) -> Dataset:
    """Detect the layout of ``path`` and load it (``files``: corpus_file, queries_file, qrels_file)."""
    fmt, paths = detect_format(path)
    common = {"include_types": include_types, "exclude_types": exclude_types, "limit": limit}
    if fmt == "corpus":
        return load_corpus(paths["root"], scope_field=scope_field, **files, **common)
    if fmt == "notes":
        return load_agent_notes(paths["root"], **common)
    return load_prompts_store(paths["store"], paths["prompts"], **common)
