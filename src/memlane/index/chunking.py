"""What text of a unit gets embedded (I3): one vector per unit, or several with max-sim.

Strategies (chosen by measurement, see docs/how-recall-works.md, "Long notes"):
- ``whole``: heading + body, cut to the embedder's useful length;
- ``description``: heading (name, description, recall keywords) plus the body's opening;
- ``chunks``: the heading as one vector and the body in ~``chunk_chars`` windows as others;
  a unit scores the best cosine of its chunks (max-sim).
"""

from __future__ import annotations

import re

from ..config import ChunkStrategy
from .unit import Unit
from ..digest import sha256

__all__ = ["ChunkStrategy", "body_windows", "chunk_texts", "text_hash"]

_PARA = re.compile(r"\n\s*\n")


def _heading_text(unit: Unit) -> str:
    """``name: description (keywords)``: the note's own words for when it applies. Measured
    better than the MEMORY.md title or hook in the embedded text (docs/how-recall-works.md,
    "Long notes")."""
    name = unit.name.replace("_", " ").replace("-", " ").strip()
    text = f"{name}: {unit.description.strip()}" if unit.description.strip() else name
    return f"{text} ({unit.keywords.strip()})" if unit.keywords.strip() else text


def body_windows(body: str, size: int = 800) -> list[str]:
    """Split at paragraph boundaries into pieces of at most about ``size`` characters."""
    pieces: list[str] = []
    current = ""
    for para in _PARA.split(body.strip()):
        para = para.strip()
        while len(para) > size:
            cut = para.rfind(" ", 0, size)
            cut = cut if cut > size // 2 else size
            if current:
                pieces.append(current)
                current = ""
            pieces.append(para[:cut])
            para = para[cut:].strip()
        if current and len(current) + len(para) + 2 > size:
            pieces.append(current)
            current = para
        else:
            current = f"{current}\n\n{para}" if current else para
    if current:
        pieces.append(current)
    return pieces


def chunk_texts(unit: Unit, strategy: ChunkStrategy | str, *, max_chars: int = 2000,
                chunk_chars: int = 800, max_chunks: int = 16) -> list[str]:
    strategy = ChunkStrategy(strategy)
    heading = _heading_text(unit)
    if strategy is ChunkStrategy.WHOLE:
        return [f"{heading}\n\n{unit.body}".strip()[:max_chars]]
    if strategy is ChunkStrategy.DESCRIPTION:
        room = max(0, min(max_chars, 600) - len(heading))
        return [f"{heading}\n{unit.body[:room]}".strip()]
    texts = [heading[:max_chars]] if heading else []
    texts += [w[:max_chars] for w in body_windows(unit.body, chunk_chars)][: max_chunks - 1]
    return texts or [unit.name]


def text_hash(text: str) -> str:
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
