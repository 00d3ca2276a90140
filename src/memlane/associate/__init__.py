"""A: the link graph over notes (A1). Spreading activation, constellations, hubs and
divergent mode build on it (issue 3)."""

from .graph import Edge, LinkGraph, resolve_links

__all__ = ["Edge", "LinkGraph", "resolve_links"]
