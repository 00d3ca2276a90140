"""memlane: local-first memory recall for AI coding agents.

The public names load on first use (PEP 562), so that ``memlane-hook`` — which imports
``memlane.adapters.hookclient`` on every prompt — pays for the standard library only."""

__version__ = "0.1.0"

_EXPORTS = {
    "Config": "config", "Depth": "modes", "Fusion": "modes", "load_config": "config",
    "ConfigError": "errors", "EmbedderUnavailable": "errors", "IndexRefused": "errors", "MemlaneError": "errors",
    "WriteError": "errors",
    "Embedder": "embed", "available_embedders": "embed", "load_embedder": "embed",
    "Memory": "memory", "demo_store_path": "memory",
    "Explanation": "retrieve.recalled", "Recalled": "retrieve.recalled",
    "RefreshReport": "index.refresh", "Storage": "index.storage",
    "Draft": "store.write", "lint": "write.lint",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        from importlib import import_module  # here, not at the top: the hook client never needs it (~2 ms)

        value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'memlane' has no attribute {name!r}")
