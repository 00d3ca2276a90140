"""The notes domain: memlane's memory recall (the whole pipeline of recall.py) as one domain
of the fabric. The aggregator only ever talks to agents, so private notes are never
candidates here."""

from __future__ import annotations

from .base import Recalled

TYPE_CHECKING = False  # ``typing``'s constant, without importing ``typing`` (~4 ms of a fresh process)
if TYPE_CHECKING:  # the facade hands itself in; this room never imports it at run time
    from ..memory import Memory


class NotesDomain:
    name = "notes"

    def __init__(self, memory: Memory, *, layer: str = "fabric"):
        self.memory = memory
        self.layer = layer

    def refresh(self) -> dict:
        report = self.memory.refresh()
        return {"notes": report.get("notes"), "skipped": report.get("skipped", [])}

    def recall(self, query: str, k: int, *, filters: dict | None = None, session: str | None = None,
               include_archived: bool = False) -> list[Recalled]:
        results = self.memory.recall(query, k=k, depth="full", explain=True, refresh=False, include_private=False,
                                     include_archived=include_archived, layer=self.layer, session=session)
        scope = (filters or {}).get("scope")
        hits = []
        for r in results:
            if scope and r.scope != scope:
                continue
            e = r.explain
            text = "\n\n".join(part for part in (r.description, r.body) if part)
            why = (f"relevance {e.relevance:.2f} x importance {e.importance:.2f} x recency {e.recency:.2f}"
                   + ("" if r.reached == "seed" else f"; {r.reached}"))
            hits.append(Recalled.of_domain("notes", r.path, r.name, text, round(min(1.0, e.relevance), 4),
                                           title=r.title or r.name, why=why,
                                           meta={"type": r.type, "scope": r.scope, "score": r.score, "state": e.state,
                                                 "reached": r.reached}))
        return hits[:k]

    def fetch(self, address: str) -> Recalled | None:
        """The note called ``address`` (never a private one), or None."""
        found = [n for n in self.memory.show(address, session=self.layer) if not n["meta"].get("private")]
        if not found:
            return None
        note = found[0]
        text = "\n\n".join(part for part in (note["description"], note["body"]) if part)
        return Recalled.of_domain("notes", note["path"], note["name"], text, 1.0, title=note["title"] or note["name"],
                                  why="fetched by name", meta={"type": note["type"], "scope": note["scope"]})

    def close(self) -> None:
        self.memory.close()
