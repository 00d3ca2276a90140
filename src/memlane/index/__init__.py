"""I: the derived index — the storage seam (``storage.py``) and its embedded SQLite backend
(``sqlite.py`` and its parts), full text with CJK bigrams, vectors, and the refresh that keeps
it in line with the files."""

from .chunking import chunk_texts
from .sqlite import Index, SQLiteIndex
from .storage import GraphData, Storage, SyncReport, UnitFacts
from .text import fts_text, has_cjk, query_terms
from .unit import Unit, unit_from_note
from .vectors import EmbeddingCache, cosine_by_unit, embed_pending

__all__ = [
    "EmbeddingCache", "GraphData", "Index", "SQLiteIndex", "Storage", "SyncReport", "Unit", "UnitFacts",
    "chunk_texts", "cosine_by_unit", "embed_pending", "fts_text", "has_cjk", "query_terms", "unit_from_note",
]
