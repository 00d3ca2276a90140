"""memlane: local-first memory recall for AI coding agents."""

from .config import Config, ConfigError, Fusion, load_config
from .embed import Embedder, EmbedderUnavailable, available_embedders, load_embedder
from .memory import Depth, Memory, demo_store_path

__all__ = [
    "Config", "ConfigError", "Depth", "Embedder", "EmbedderUnavailable", "Fusion", "Memory",
    "available_embedders", "demo_store_path", "load_config", "load_embedder",
]
__version__ = "0.1.0"
