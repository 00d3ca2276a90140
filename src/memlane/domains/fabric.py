"""The aggregator (D2): ``recall_all`` asks every active domain in turn and returns one bucket
per domain — never one mixed ranking.

Each domain ranks on its own scale (BM25 over sections, over turns, over symbol names; the
notes' relevance × importance × recency), so their scores are not comparable and are never
merged. Every domain gets an equal quota of the ceiling (``ceil(ceiling / active domains)``),
so a keyword-dense domain cannot crowd another out; the buckets are ordered by their best
hit's own activation, which only says which domain is most sure of itself.

Read-only: recall_all writes nothing but the notes' hit-log (a use is a use). One privacy gate
for all: each domain never reads an excluded file, and every hit's path is checked again here
before it leaves, so a domain that slipped cannot leak; secrets in any hit's text are redacted. A domain that fails is reported in its
bucket; the others still answer.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from ..guards.privacy import PrivacyGate
from .base import Domain, Recalled
from ..records import dataclass, field
from .. import logs

log = logs.get("memlane.fabric")

DOMAINS = ("notes", "knowledge", "transcripts", "code")


@dataclass
class Fabric:
    """The domains in play, the privacy gate they share, and how many units they may bring."""

    domains: dict[str, Domain]
    gate: PrivacyGate = field(default_factory=PrivacyGate)
    ceiling: int = 12

    def refresh(self) -> dict[str, dict]:
        out = {}
        for name, domain in self.domains.items():
            try:
                out[name] = domain.refresh()
            except Exception as exc:  # noqa: BLE001 - one domain's trouble is reported, not fatal
                log.warning("refreshing %s failed: %s: %s", name, type(exc).__name__, exc)
                out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        return out

    def recall_all(self, query: str, *, domains: list[str] | None = None, ceiling: int | None = None,
                   filters: dict[str, dict] | None = None, exclude: dict[str, set[str]] | None = None) -> dict:
        """One bucket per requested domain: ``{"query", "quota", "buckets": [{"domain",
        "activation", "hits", "ms", "error"?}]}`` (``hits``: ``Recalled`` units), buckets ordered
        by activation. ``exclude``: per domain, addresses not to return (e.g. notes already shown).
        ``as_data`` turns the answer into plain data."""
        wanted = [d for d in (domains or list(self.domains)) if d in self.domains]
        quota = math.ceil((ceiling or self.ceiling) / max(1, len(wanted)))
        buckets = []
        for name in wanted:
            started = time.perf_counter()
            bucket: dict = {"domain": name, "activation": 0.0, "hits": []}
            try:
                skip = (exclude or {}).get(name, set())
                hits = self.domains[name].recall(query, quota + len(skip), filters=(filters or {}).get(name))
                hits = [h for h in self._gated(hits) if h.address not in skip][:quota]
                bucket["hits"] = hits
                bucket["activation"] = max((h.score for h in hits), default=0.0)
            except Exception as exc:  # noqa: BLE001 - the other domains still answer
                log.warning("recall in %s failed: %s: %s", name, type(exc).__name__, exc)
                bucket["error"] = f"{type(exc).__name__}: {exc}"
            bucket["ms"] = round((time.perf_counter() - started) * 1000, 1)
            buckets.append(bucket)
        buckets.sort(key=lambda b: -b["activation"])
        return {"query": query, "quota": quota, "buckets": buckets}

    def fetch(self, domain: str, address: str) -> Recalled | None:
        """One unit by its domain and address, through the same gate and redaction as a recall."""
        if domain not in self.domains:
            return None
        hit = self.domains[domain].fetch(address)
        kept = self._gated([hit]) if hit is not None else []
        return kept[0] if kept else None

    def _gated(self, hits: list[Recalled]) -> list[Recalled]:
        """The hits the gate lets out, with secrets redacted (G3: a pasted token in a transcript
        or a key in a document is no more for the agent than one in a note; the slice is exact
        otherwise, and says when it was not)."""
        from ..guards.secrets import redact, redact_data

        kept = []
        for hit in hits:
            pattern = self.gate.blocks(hit.path)
            if pattern:
                log.warning("%s returned %s, which privacy.exclude (%s) keeps out: dropped", hit.domain, hit.path,
                            pattern)
                continue
            clean, meta = redact(hit.body), redact_data(hit.meta)
            if clean != hit.body:
                meta = {**meta, "redacted": True}
            kept.append(hit.with_(body=clean, meta=meta, title=redact(hit.title), address=redact(hit.address),
                                  name=redact(hit.name), reached=redact(hit.reached)))
        return kept

    @staticmethod
    def as_data(answer: dict) -> dict:
        """A ``recall_all`` answer as plain data: each bucket's hits as ``results`` dicts."""
        return {**answer, "buckets": [{**{k: v for k, v in b.items() if k != "hits"},
                                       "results": [h.as_dict() for h in b["hits"]]} for b in answer["buckets"]]}

    def close(self) -> None:
        for domain in self.domains.values():
            try:
                domain.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass


def build_fabric(memory, *, docs: list[str] | None = None, transcripts: list[str] | None = None,
                 code: list[str] | None = None, domains: list[str] | None = None, embed_docs: bool = True) -> Fabric:
    """The fabric over ``memory`` (the notes domain) and the other domains' roots: the ones
    given, else the configuration's (``[domains]``). ``domains`` limits which are opened; a
    domain asked for with no roots is left out (``auto`` roots are resolved here)."""
    from .notes import NotesDomain

    config = memory.config
    gate = PrivacyGate(tuple(config.privacy.exclude))
    wanted = set(domains or DOMAINS)
    unknown = wanted - set(DOMAINS)
    if unknown:
        raise ValueError(f"unknown domain(s) {', '.join(sorted(unknown))}; the domains are {', '.join(DOMAINS)}")
    roots = {"knowledge": _roots(docs or config.domains.docs, "knowledge", memory),
             "transcripts": _roots(transcripts or config.domains.transcripts, "transcripts", memory),
             "code": _roots(code or config.domains.code, "code", memory)}
    opened: dict[str, Domain] = {}
    if "notes" in wanted and memory.specs:
        opened["notes"] = NotesDomain(memory)
    embedder = memory.indexing_embedder if embed_docs else None  # meaning for the docs while notes embed apart too
    if "knowledge" in wanted and roots["knowledge"]:
        from .knowledge import KnowledgeDomain

        opened["knowledge"] = KnowledgeDomain(roots["knowledge"], gate=gate, embedder=embedder)
    if "transcripts" in wanted and roots["transcripts"]:
        from .transcripts import TranscriptDomain

        opened["transcripts"] = TranscriptDomain(roots["transcripts"], gate=gate)
    if "code" in wanted and roots["code"]:
        from .code import CodeDomain

        opened["code"] = CodeDomain(roots["code"], gate=gate)
    return Fabric(opened, gate, config.domains.ceiling)


def other_domains(memory, *, docs: list[str] | None = None, transcripts: list[str] | None = None,
                  code: list[str] | None = None, refresh: bool = True, embed_docs: bool = True) -> Fabric | None:
    """The domains beside the notes — the mounted ones, else the configured ones (``[domains]``)
    — for the hook layers, ``memlane index`` and ``recall --prompt-json``; None when there are
    none (and then nothing of the fabric is even opened)."""
    d = memory.config.domains
    if not (docs or transcripts or code or d.docs or d.transcripts or d.code):
        return None
    fabric = build_fabric(memory, docs=docs, transcripts=transcripts, code=code,
                          domains=["knowledge", "transcripts", "code"], embed_docs=embed_docs)
    if not fabric.domains:
        return None
    if refresh:
        fabric.refresh()
    return fabric


def _roots(given: list[str], domain: str, memory) -> list[Path]:
    """Folders for ``domain``: as given (``~`` expanded), ``auto`` resolved for this repository."""
    from ..store.discovery import claude_config_dir, encode_project_path

    out = []
    for entry in given:
        if entry == "auto":
            repo = memory.repo or memory.cwd
            candidate = (claude_config_dir() / "projects" / encode_project_path(repo)) if domain == "transcripts" \
                else Path(repo)
            if domain != "knowledge" and candidate.is_dir():
                out.append(candidate)
            continue
        out.append(Path(entry).expanduser().resolve())
    return list(dict.fromkeys(out))
