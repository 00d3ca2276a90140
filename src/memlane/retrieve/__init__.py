"""R: relevance. Keyword leg (FTS5 BM25), vector leg (exact cosine), fusion, thresholds."""

from .fusion import Legs, calibrate_cosine, fuse_hybrid, fuse_rrf, min_max
from .search import Hit, matched_fields, order_hits, rank

__all__ = ["Hit", "Legs", "calibrate_cosine", "fuse_hybrid", "fuse_rrf", "matched_fields", "min_max", "order_hits", "rank"]
