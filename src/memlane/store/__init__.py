"""S: the markdown store, read in place (Claude Code's auto-memory layout plus memlane's fields).

The names load on first use (PEP 562): a command that needs one module of the store does not
pay for the others."""

from importlib import import_module as _import_module

_EXPORTS = {
    "claude_memory_dir": "discovery", "discover_claude_memory": "discovery", "encode_project_path": "discovery",
    "sharing_repositories": "discovery",
    "git_root": "discovery",
    "Link": "links", "extract_links": "links", "link_key": "links",
    "INDEX_FILE": "memory_index", "IndexLine": "memory_index", "parse_memory_index": "memory_index",
    "NOTE_KINDS": "vocabulary", "NOTE_TYPES": "vocabulary", "Note": "note", "parse_note": "note",
    "FolderScan": "scan", "Skip": "scan", "scan_folder": "scan",
    "Snapshot": "scopes", "StoreSpec": "scopes", "load_snapshot": "scopes", "scope_rank": "scopes",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(_import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
