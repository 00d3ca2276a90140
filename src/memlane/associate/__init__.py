"""A: the link graph over notes (A1). Spreading activation, constellations, hubs and
divergent mode build on it (issue 3)."""

from .graph import Edge, LinkGraph, resolve_links
from .spread import SpreadSettings, spread_activation

__all__ = ["Edge", "LinkGraph", "SpreadSettings", "resolve_links", "spread_activation"]
