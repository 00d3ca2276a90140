"""I: the derived SQLite index: units, full text (FTS5 + CJK bigrams), vectors."""

from .chunking import ChunkStrategy, chunk_texts
from .db import Index, SyncReport
from .text import fts_text, has_cjk, query_terms
from .unit import Unit, unit_from_note
from .vectors import EmbeddingCache, cosine_by_unit, embed_pending

__all__ = [
    "ChunkStrategy", "EmbeddingCache", "Index", "SyncReport", "Unit", "chunk_texts", "cosine_by_unit",
    "embed_pending", "fts_text", "has_cjk", "query_terms", "unit_from_note",
]
