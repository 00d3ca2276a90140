"""``memlane lint`` (W3): what is wrong with a memory store, note by note.

Nine checks, one registry (``CHECKS``): broken links (S5 future-write markers), orphans,
near-duplicates, contradiction candidates, descriptions that do not say when a note applies,
oversized notes, malformed notes, injection-risk text (G2), ``MEMORY.md`` lines that
disagree with their notes, and a ``MEMORY.md`` over Claude Code's load limit. Everything is
read from the index recall uses (links, graph, vectors), plus the ``MEMORY.md`` files
themselves. :func:`lint` returns plain data and never prints; :func:`run_cli` is the
command's face.
"""

from __future__ import annotations

import difflib
import re
from functools import cached_property
from pathlib import Path

from ..associate.graph import resolve_links
from .consolidate import disagreement
from ..guards import redact
from ..guards.exits import risk_kind, row_risk
from ..index.text import STOPWORDS, fts_text, has_cjk
from ..records import asdict, dataclass, field
from ..store import INDEX_FILE, parse_memory_index
from ..store.memory_index import LOADED_MAX_BYTES, LOADED_MAX_LINES, loaded_lines
from ..store.links import link_key
from ..store.scan import read_text

LEVELS = ("info", "warning", "error")  # worst last
#: a note is one fact: past ~1,000 tokens it is several, and recall injects it whole (J5)
MAX_BODY_CHARS = 4000
#: a MEMORY.md line past this is long for an index Claude Code loads into every session (its own guidance is
#: ~150 characters; the real folders this project has seen run to ~230, so only a line well past them is said)
MAX_INDEX_LINE_CHARS = 300
#: near-duplicate: cosine this far from the model's strong cosine towards 1 (embedders live on
#: different scales); on agent_notes_dev and the demo store with e5-minilm only the superseded
#: backups pair reaches it (0.934), topic neighbours stop at ~0.90
DUPLICATE_REACH = 0.65
DUPLICATE_JACCARD = 0.5  # keyword-only: share of content words two notes have in common (a superseded pair: 0.32)
SAME_TOPIC_JACCARD = 0.15
SUGGESTED_SHAPE = ('say when the note applies, then what to do: e.g. "When deciding how to key CI caches: '
                   'hash the lockfile, never the branch name"')


@dataclass
class Finding:
    """One problem lint found in a note or MEMORY.md."""

    check: str
    level: str
    path: str  # the note (or MEMORY.md) the finding is about
    message: str
    other: str | None = None  # the other note of a pair
    line: int | None = None
    data: dict = field(default_factory=dict)


@dataclass
class LintReport:
    """What lint found over a store."""

    findings: list[Finding]
    checked: int  # notes looked at
    measure: str  # how similarity was measured: "cosine (model)" or "word Jaccard"

    def counts(self) -> dict:
        by_check: dict[str, int] = {}
        for f in self.findings:
            by_check[f.check] = by_check.get(f.check, 0) + 1
        return {"by_level": {level: sum(f.level == level for f in self.findings) for level in LEVELS},
                "by_check": by_check}

    def to_dict(self) -> dict:
        return {"findings": [asdict(f) for f in self.findings], "counts": self.counts(), "checked": self.checked}


@dataclass
class _Note:
    """A note as lint reads it from the index."""

    id: int
    name: str
    path: str
    rel: str
    store: str
    description: str
    body: str
    title: str
    meta: dict
    type: str | None = None

    @property
    def text(self) -> str:
        return f"{self.description}\n{self.body}"


@dataclass
class _IndexFile:
    """One folder's MEMORY.md, as Claude Code sees it."""

    path: Path
    text: str
    size: int
    lines: list  # IndexLine

    @cached_property
    def listed(self) -> set[str]:
        return {line.file.removeprefix("./") for line in self.lines}


class _Store:
    """What the checks read: the indexed notes, the link graph, vectors, the MEMORY.md files."""

    def __init__(self, memory, skipped: list[dict]):
        index = memory.index
        self.notes = sorted(map(_note_from_row, index.units_by_id(index.all_ids()).values()), key=lambda n: n.path)
        self.by_id = {n.id: n for n in self.notes}
        self.index = index
        self.embedder = memory.embedder
        self.skipped = skipped
        self.index_files = {str(spec.path): _read_index_file(Path(spec.path)) for spec in memory.specs}
        self._texts: dict[str, str] = {}
        self._vectors: tuple | None = None

    def vectors(self) -> tuple[list[int], object] | None:
        """(unit ids, one L2-normalised row per note: the mean of its chunks) from the index's
        stored vectors, or None when keyword-only."""
        if self.embedder is None:
            return None
        if self._vectors is None:
            vm = self.index.vector_matrix(self.embedder.name)
            if vm is None or not len(vm.units):
                return None
            import numpy as np

            matrix = vm.matrix if vm.starts is None else np.add.reduceat(vm.matrix, vm.starts, axis=0)
            matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
            keep = [i for i, uid in enumerate(vm.units.tolist()) if uid in self.by_id]
            self._vectors = ([int(vm.units[i]) for i in keep], matrix[keep])
        return self._vectors

    def raw(self, path: str) -> str:
        """The file's text as written (frontmatter included), for line numbers."""
        if path not in self._texts:
            self._texts[path] = read_text(Path(path), 10_000_000)[0] or ""
        return self._texts[path]

    def listed(self, note: _Note) -> bool:
        found = self.index_files.get(note.store)
        return found is not None and note.rel in found.listed


def _note_from_row(row: dict) -> _Note:
    meta = row["meta"]
    return _Note(row["id"], row["name"], row["path"], meta.get("rel", Path(row["path"]).name),
                 meta.get("store", str(Path(row["path"]).parent)), row["description"], row["body"], row["title"] or "",
                 meta, row.get("type"))


def _read_index_file(root: Path) -> _IndexFile | None:
    path = root / INDEX_FILE
    if not path.is_file():
        return None
    text, _ = read_text(path, 10_000_000)
    if text is None:  # binary or unreadable: the malformed check reports it, nothing can be listed in it
        return None
    return _IndexFile(path, text, path.stat().st_size, parse_memory_index(text))


def _line_of(text: str, needle: str) -> int | None:
    for number, line in enumerate(text.split("\n"), start=1):
        if needle in line:
            return number
    return None


# -- words ------------------------------------------------------------------------------
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _words(text: str) -> set[str]:
    """Content words (CJK as bigrams, as the index reads it), stopwords and short words out."""
    return {w for w in _WORD.findall(fts_text(text).lower()) if w not in STOPWORDS and (len(w) > 2 or not w.isascii())}


def _stems(text: str) -> set[str]:
    """Content words cut to five letters: "artifacts" meets "artifact", "committing" meets "commit"."""
    return {w[:5] for w in _words(text.replace("_", " ").replace("-", " "))}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


# -- 1. broken links ----------------------------------------------------------------------
def check_broken_links(store: _Store) -> list[Finding]:
    """``[[links]]`` and markdown links to notes that do not exist: future-write markers (S5)."""
    by_key = {link_key(n.name): n.name for n in store.notes}
    missing = [(uid, target, "wiki") for uid, target, _ in store.index.missing_links()]
    missing += [(uid, target, "markdown") for uid, target in _missing_markdown_targets(store)]
    findings = []
    for uid, target, kind in missing:
        note = store.by_id.get(uid)
        if note is None:
            continue
        written = f"[[{target}]]" if kind == "wiki" else f"({target})"
        guess = difflib.get_close_matches(link_key(target), list(by_key), n=1, cutoff=0.6)
        hint = f" Did you mean [[{by_key[guess[0]]}]]?" if guess else ""
        findings.append(Finding(
            "broken-links", "warning", note.path,
            f"{written} names no note: a future-write marker, never followed by recall; write that note "
            f"or fix the link.{hint}", line=_line_of(store.raw(note.path), "[[" + target if kind == "wiki" else target),
            data={"target": target, "kind": kind}))
    return findings


def _missing_markdown_targets(store: _Store) -> list[tuple[int, str]]:
    """Markdown links to a bare file name beside the note that is not there and that no note
    answers to. Resolution is the graph's own: the targets are asked of ``resolve_links`` as
    wiki links from one probe unit (links with a folder in them point into the repository)."""
    probes = []
    for note in store.notes:
        folder = Path(note.path).parent
        for target, kind in note.meta.get("links", []):
            bare = target.removeprefix("./")
            if kind == "markdown" and "/" not in bare and not (folder / bare).exists():
                probes.append((note.id, target))
    if not probes:
        return []
    units = [{"id": n.id, "name": n.name, "path": n.path, "meta": {}} for n in store.notes]
    probe = {"id": -1, "name": "", "path": "", "meta": {"links": [[t, "wiki"] for _, t in probes]}}
    unresolved = {target for _, target, _ in resolve_links(units + [probe]).missing}
    return [(uid, target) for uid, target in probes if target in unresolved]


# -- 2. orphans ---------------------------------------------------------------------------
def check_orphans(store: _Store) -> list[Finding]:
    """Notes with no link in or out (index membership aside) that no MEMORY.md lists (a private
    note is never recalled for the agent: how it is reached does not matter)."""
    linked = {u for u, edges in store.index.adjacency().items() if any(kind != "index" for _, kind in edges)}
    return [Finding("orphans", "info", n.path,
                    "an orphan: no note links to it, it links to no note, and no MEMORY.md lists it, so recall "
                    f"reaches it only by its own words; link it from a related note ([[{_link_name(n)}]]) or list it "
                    "in MEMORY.md")
            for n in store.notes if n.id not in linked and not store.listed(n) and not n.meta.get("private")]


def _link_name(note: _Note) -> str:
    """How to link to ``note``: its name when that is a plain identifier, else its file stem."""
    return note.name if re.fullmatch(r"[\w.-]+", note.name) else Path(note.path).stem


# -- 3 and 4. similar notes ------------------------------------------------------------------
def _similar_pairs(store: _Store) -> tuple[list[tuple[_Note, _Note, float]], float, str]:
    """Pairs of notes on the same topic with their similarity, the near-duplicate threshold and
    the measure's name: cosine over the index's vectors, on the embedder's own scale (at least its
    ``strong_cosine``), or, keyword-only, the Jaccard overlap of content words."""
    vectors = store.vectors()
    if vectors is not None:
        ids, matrix = vectors
        embedder = store.embedder
        duplicate = embedder.strong_cosine + DUPLICATE_REACH * (1 - embedder.strong_cosine)
        pairs = []
        for start in range(0, len(ids), 512):  # blocks: a 10k-note store never holds a 10k x 10k matrix
            sims = matrix[start:start + 512] @ matrix.T
            for i, j in zip(*(sims >= embedder.strong_cosine).nonzero()):
                if start + i < j:
                    pairs.append((store.by_id[ids[start + i]], store.by_id[ids[j]], float(sims[i, j])))
        return pairs, duplicate, f"{embedder.name} cosine"
    words = {n.id: _words(n.text) for n in store.notes}
    pairs = [(store.by_id[a], store.by_id[b], _jaccard(words[a], words[b])) for a, b in _sharing_words(words)]
    return [p for p in pairs if p[2] >= SAME_TOPIC_JACCARD], DUPLICATE_JACCARD, "word Jaccard"


def _sharing_words(words: dict[int, set[str]]) -> set[tuple[int, int]]:
    """Pairs of notes sharing a word that at most a tenth of the notes use (at least 20): a
    pair that shares only common words is not on the same topic, and the rest are never compared."""
    holders: dict[str, list[int]] = {}
    for uid, found in words.items():
        for word in found:
            holders.setdefault(word, []).append(uid)
    limit = max(20, len(words) // 10)
    return {(a, b) if a < b else (b, a) for ids in holders.values() if len(ids) <= limit
            for i, a in enumerate(ids) for b in ids[i + 1:]}


def _supersedes_each_other(a: _Note, b: _Note) -> bool:
    keys = lambda n: {link_key(t) for t in n.meta.get("supersedes", []) + n.meta.get("superseded_by", [])}
    return bool(keys(a) & {link_key(b.name), link_key(Path(b.path).stem)}
                or keys(b) & {link_key(a.name), link_key(Path(a.path).stem)})


def check_similar(store: _Store, which: set[str]) -> list[Finding]:
    pairs, duplicate, measure = _similar_pairs(store)
    findings = []
    for a, b, sim in sorted(pairs, key=lambda p: -p[2]):
        if _supersedes_each_other(a, b):
            continue  # one replaces the other: similar on purpose, and their disagreement is resolved
        if "near-duplicates" in which and sim >= duplicate:
            findings.append(Finding(
                "near-duplicates", "warning", a.path,
                f"says nearly the same as [[{b.name}]] ({measure} {sim:.2f}; near-duplicates from {duplicate:.2f}): "
                f"merge them, or mark the older one `superseded_by:` the newer", other=b.path,
                data={"similarity": round(sim, 4), "measure": measure, "threshold": round(duplicate, 4)}))
        if "contradictions" in which:
            conflict = disagreement(a.text, b.text)
            if conflict:
                findings.append(Finding(
                    "contradictions", "warning", a.path,
                    f"a contradiction candidate (a heuristic, not a verdict): [[{b.name}]] is on the same topic "
                    f"({measure} {sim:.2f}) and {conflict}; if one replaces the other, say so with `supersedes:`",
                    other=b.path, data={"similarity": round(sim, 4), "measure": measure}))
    return findings


# -- 4. contradiction candidates: consolidate.disagreement, shared with the write path --------


# -- 5. descriptions ------------------------------------------------------------------------
_SITUATION = re.compile(r"(?i)\b(?:when|whenever|before|after|while|during|if|unless|once|until|whether|each time|"
                        r"every time|any time|for any|for every|in case)\b")
_CLAUSE = re.compile(r"(?i)\b(?:is|are|was|were|be|has|have|had|must|should|can|cannot|will|would|may|need|needs|do|"
                     r"does|never|always|avoid|use|uses|run|runs|keep|prefer|wants|no|not|only)\b|n't\b|[—:;=]")
_SITUATION_CJK = re.compile(r"时|時|之前|之后|如果|当|為|때|전에|후에|경우|려면|하면")
#: a noun phrase longer than this is usually a sentence whose verb the cue list missed ("User values
#: minimalism ..."); on agent_notes_dev 12 flags "File layout and module responsibilities for the
#: simulation project" and "Remaining organizational issues and potential improvements in the codebase" only
TOPIC_ONLY_MAX_WORDS = 12
TOPIC_ONLY_MAX_CJK_CHARS = 8  # a CJK run is one "word" to the regex: count characters instead


def _topic_only(text: str) -> bool:
    """A short noun phrase: no clause, no situation ("CI caches", "Postgres upgrade")."""
    if has_cjk(text):
        return len(text) <= TOPIC_ONLY_MAX_CJK_CHARS and not _SITUATION_CJK.search(text)
    return len(_WORD.findall(text)) <= TOPIC_ONLY_MAX_WORDS and not _SITUATION.search(text) and not _CLAUSE.search(text)


def check_descriptions(store: _Store) -> list[Finding]:
    """Recall keys on a note's description: it should say when the note applies, not only its topic."""
    findings = []
    for n in store.notes:
        text = n.description.strip()
        if not text:
            problem = "has no description: recall and Claude Code match a note by its description"
        elif link_key(text) in {link_key(n.name), link_key(Path(n.path).stem)}:
            problem = f"description {text!r} only repeats the note's name"
        elif _topic_only(text):
            problem = f"description {text!r} names a topic, not the situation the note applies to"
        else:
            continue
        findings.append(Finding("descriptions", "warning", n.path, f"{problem}; {SUGGESTED_SHAPE}",
                                line=_line_of(store.raw(n.path), "description:")))
    return findings


# -- 6. size and form -------------------------------------------------------------------------
def check_oversized(store: _Store) -> list[Finding]:
    """Bodies too long to inject whole, and bodies with nothing in them (a note is its body: a
    description alone is what MEMORY.md's line already says)."""
    return [Finding("oversized", "warning", n.path,
                    f"body is {len(n.body):,} characters (~{len(n.body) // 4:,} tokens; limit {MAX_BODY_CHARS:,}): "
                    "a note should hold one fact, and recall injects it whole; split it into linked notes",
                    data={"chars": len(n.body)})
            for n in store.notes if len(n.body) > MAX_BODY_CHARS] + [
        Finding("oversized", "warning", n.path, "the body is empty: write what the note says below its frontmatter "
                "(recall injects the body; the description only says when it applies)", data={"chars": 0})
        for n in store.notes if not n.body.strip()]


def check_malformed(store: _Store) -> list[Finding]:
    """Frontmatter read only leniently (or absent), undecodable bytes, files that are no notes."""
    findings = [Finding("malformed", "warning", s["path"], f"could not be read: {s['reason']}") for s in store.skipped]
    for n in store.notes:
        for problem in n.meta.get("problems", []):
            if not problem.startswith("duplicate name"):
                findings.append(Finding("malformed", "warning", n.path, problem))
        if not store.raw(n.path).lstrip("\ufeff").startswith("---"):
            findings.append(Finding("malformed", "warning", n.path,
                                    "no YAML frontmatter: name, description and type come from the file name only"))
    return findings


# -- 7. injection risk ------------------------------------------------------------------------
def check_injection(store: _Store, *, quote: bool = True) -> list[Finding]:
    """Notes that read as an attempt to steer the agent, with the words that do (``quote``) or the
    kind of risk alone (an agent's shell may run ``memlane lint``: the line says where to look)."""
    findings = []
    for n in store.notes:
        # what every face screens before it prints a note (its metadata whole): what the hooks withhold
        risk = row_risk({"name": n.name, "path": n.path, "title": n.title, "description": n.description,
                         "body": n.body, "type": n.type, "meta": n.meta})
        if risk:
            quoted = risk.split('"', 1)[-1].rstrip('"')
            findings.append(Finding("injection", "error", n.path,
                                    f"reads as an attempt to steer the agent ({risk if quote else risk_kind(risk)}); "
                                    "it is never injected "
                                    "automatically: rephrase it as background, or remove it",
                                    line=_line_of(store.raw(n.path), quoted[:30])))
    return findings


# -- 8. secrets ---------------------------------------------------------------------------------
def check_secrets(store: _Store) -> list[Finding]:
    """What looks like a secret in a note's file: its family and line, never the value."""
    from ..guards.secrets import a_secret, find_secrets

    findings = []
    for n in store.notes:
        for found in find_secrets(store.raw(n.path)):
            findings.append(Finding("secrets", "warning", n.path,
                                    f"holds what looks like {a_secret(found.family)}: it is redacted from "
                                    "everything memlane shows, but stays in the file — move it to your environment "
                                    "or a secret manager and write where to find it instead", line=found.line))
    return findings


# -- 9 and 10. MEMORY.md ----------------------------------------------------------------------
def check_index_lines(store: _Store) -> list[Finding]:
    """MEMORY.md lines against the notes: missing files, unlisted notes, lines about something else."""
    findings = []
    for root, index_file in store.index_files.items():
        if index_file is None:
            continue
        by_rel = {n.rel: n for n in store.notes if n.store == root}
        where = str(index_file.path)
        for line in index_file.lines:
            rel = line.file.removeprefix("./")
            if "://" in rel or not rel.lower().endswith(".md"):
                continue
            note = by_rel.get(rel)
            if note is not None and note.meta.get("private"):
                findings.append(Finding("index-lines", "warning", where,
                                        f"line {line.line_no} lists {rel}, a private note: Claude Code loads this "
                                        "file into every session, so the agent sees the line and may open the note; "
                                        "remove the line", other=note.path, line=line.line_no))
                continue
            if note is None:
                if not (Path(root) / rel).exists():
                    findings.append(Finding("index-lines", "warning", where,
                                            f"line {line.line_no} points to {rel}, which does not exist: remove the "
                                            "line or restore the note", line=line.line_no))
                continue
            findings += _line_against_note(line, note, where)
        listed = index_file.listed
        findings += [Finding("index-lines", "warning", n.path,
                             f"not listed in {where}: Claude Code finds notes through that index; add "
                             f"\"- [Title]({n.rel}) — hook\"") for n in by_rel.values()
                     if n.rel not in listed and not n.meta.get("private")]
    return findings


def _line_against_note(line, note: _Note, where: str) -> list[Finding]:
    length = len(f"- [{line.title}]({line.file})" + (f" — {line.hook}" if line.hook else ""))
    if length > MAX_INDEX_LINE_CHARS:  # every line is in every session's context: a short one is read, a long one costs
        return [Finding("index-lines", "warning", where,
                        f"line {line.line_no} ([{line.title}]({line.file})) is {length:,} characters: Claude Code "
                        "loads MEMORY.md into every session, and a line should stay short (its own guidance: ~150); "
                        "shorten the hook to when the note applies, and keep the detail in the note",
                        other=note.path, line=line.line_no, data={"chars": length})]
    if not line.hook:
        return [Finding("index-lines", "warning", where,
                        f"line {line.line_no} ([{line.title}]({line.file})) has no hook: Claude Code decides from "
                        "the line alone whether to open the note; add \"— <when it applies>\"", other=note.path,
                        line=line.line_no)]
    said = _stems(f"{line.title} {line.hook}")  # none when the line is all small words ("me — who I am"): no topic
    if said and not said & _stems(f"{note.name} {Path(note.path).stem} {note.text}"):
        return [Finding("index-lines", "warning", where,
                        f"line {line.line_no} ([{line.title}]({line.file}) — {line.hook}) shares no word with the "
                        f"note it points to ([[{note.name}]]: {note.description or 'no description'}): is it about "
                        "another topic?", other=note.path, line=line.line_no)]
    return []


def check_index_size(store: _Store) -> list[Finding]:
    findings = []
    for index_file in filter(None, store.index_files.values()):
        lines = index_file.text.rstrip("\n").split("\n") if index_file.text.strip() else []
        cut_line = loaded_lines(index_file.text)
        if len(lines) <= cut_line:
            continue
        hidden = [l for l in index_file.lines if l.line_no > cut_line]
        findings.append(Finding(
            "index-size", "error", str(index_file.path),
            f"{len(lines)} lines, {index_file.size:,} bytes: Claude Code loads only the first {LOADED_MAX_LINES} lines "
            f"or {LOADED_MAX_BYTES // 1000} KB, so the last {len(lines) - cut_line} lines (from line {cut_line + 1}, "
            f"{len(hidden)} note pointers) are never seen; shorten the hooks or move detail into the notes",
            line=cut_line + 1, data={"lines": len(lines), "bytes": index_file.size, "beyond_cut": len(lines) - cut_line}))
    return findings


# -- the registry and the entry points -------------------------------------------------------
#: check name -> (what it looks for, default level); one list for help, --check and the report
CHECKS = {
    "broken-links": "[[links]] and markdown links to notes that do not exist (future-write markers)",
    "orphans": "notes nothing links to, that link to nothing, and that no MEMORY.md lists",
    "near-duplicates": "pairs of notes that say nearly the same thing",
    "contradictions": "similar notes that disagree (use X / never X, different values): candidates",
    "descriptions": "missing descriptions, or ones that name a topic but not when the note applies",
    "oversized": f"note bodies over {MAX_BODY_CHARS:,} characters, or empty",
    "malformed": "frontmatter that is not valid YAML, or missing; files that cannot be read as notes",
    "injection": "text that reads as an instruction override, exfiltration or covert action",
    "secrets": "API keys, tokens, passwords or private keys written into a note",
    "index-lines": "MEMORY.md lines that point nowhere, notes it does not list, lines about another topic or too long",
    "index-size": f"a MEMORY.md over Claude Code's limit ({LOADED_MAX_LINES} lines / {LOADED_MAX_BYTES // 1000} KB)",
}
_SINGLE = {"broken-links": check_broken_links, "orphans": check_orphans, "descriptions": check_descriptions,
           "oversized": check_oversized, "malformed": check_malformed, "injection": check_injection,
           "secrets": check_secrets, "index-lines": check_index_lines, "index-size": check_index_size}


def lint(memory, *, checks: list[str] | None = None, refresh: bool = True, quote: bool = True) -> LintReport:
    """Run ``checks`` (default: all of ``CHECKS``) over ``memory``'s stores. Raises ValueError
    for an unknown check name. ``quote=False``: a note that reads as an instruction to the agent is
    reported by the kind of risk and its line, without its words (for a caller that may be an agent)."""
    unknown = sorted(set(checks or ()) - CHECKS.keys())
    if unknown:
        raise ValueError(f"unknown check {', '.join(unknown)}; known: {', '.join(CHECKS)}")
    wanted = [c for c in CHECKS if not checks or c in checks]
    skipped = memory.refresh(force=True)["skipped"] if refresh else []
    store = _Store(memory, skipped)
    findings: list[Finding] = []
    for name in wanted:
        if name == "injection":
            findings += check_injection(store, quote=quote)
        elif name in _SINGLE:
            findings += _SINGLE[name](store)
    pair_checks = {"near-duplicates", "contradictions"} & set(wanted)
    if pair_checks:
        findings += check_similar(store, pair_checks)
    order = {name: i for i, name in enumerate(CHECKS)}
    for f in findings:  # messages quote descriptions and hooks: secrets never reach the terminal (G3)
        f.message = redact(f.message)
    findings.sort(key=lambda f: (f.path, -LEVELS.index(f.level), order[f.check], f.line or 0))
    measure = f"{store.embedder.name} cosine" if store.vectors() is not None else "word Jaccard"
    return LintReport(findings, len(store.notes), measure)


def exit_code(report: LintReport, fail_on: str) -> int:
    """1 when a finding is at ``fail_on`` or worse (``never``: always 0)."""
    if fail_on == "never":
        return 0
    floor = LEVELS.index(fail_on)
    return int(any(LEVELS.index(f.level) >= floor for f in report.findings))


def format_text(report: LintReport, cwd: Path | None = None) -> str:
    """Findings grouped by file, then a one-line summary."""
    cwd = cwd or Path.cwd()
    lines: list[str] = []
    current = None
    for f in report.findings:
        if f.path != current:
            current = f.path
            lines.append(("" if not lines else "\n") + _shown(f.path, cwd))
        where = f" (line {f.line})" if f.line else ""
        lines.append(f"  {f.level:<7} {f.check}{where}: {f.message}")
    levels = report.counts()["by_level"]
    summary = ", ".join(f"{levels[level]} {level}{'s' if levels[level] != 1 and level != 'info' else ''}"
                        for level in reversed(LEVELS))
    lines.append(f"\n{report.checked} notes checked (similarity: {report.measure}): "
                 + (summary if report.findings else "no findings"))
    return "\n".join(lines).lstrip("\n")


def _shown(path: str, cwd: Path) -> str:
    try:
        return str(Path(path).relative_to(cwd))
    except ValueError:
        return path
