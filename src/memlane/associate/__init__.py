"""A: the link graph over notes (A1), its shape (hubs, constellations, clusters), convergent
spreading activation (A2) and divergent recall (A5)."""

from .divergent import personalized_pagerank, remote_associates
from .graph import Edge, LinkGraph, resolve_links
from .spread import SpreadSettings, spread_activation

__all__ = ["Edge", "LinkGraph", "SpreadSettings", "personalized_pagerank", "remote_associates", "resolve_links",
           "spread_activation"]
