"""S: the markdown store, read in place (Claude Code's auto-memory layout plus memlane's fields)."""

from .discovery import claude_memory_dir, discover_claude_memory, encode_project_path, git_root
from .links import Link, extract_links, link_key
from .memory_index import INDEX_FILE, IndexLine, parse_memory_index
from .note import NOTE_KINDS, NOTE_TYPES, Note, parse_note
from .scan import FolderScan, Skip, scan_folder
from .scopes import Snapshot, StoreSpec, load_snapshot, scope_rank

__all__ = [
    "INDEX_FILE", "NOTE_KINDS", "NOTE_TYPES", "FolderScan", "IndexLine", "Link", "Note", "Skip",
    "Snapshot", "StoreSpec", "claude_memory_dir", "discover_claude_memory", "encode_project_path",
    "extract_links", "git_root", "link_key", "load_snapshot", "parse_memory_index", "parse_note",
    "scan_folder", "scope_rank",
]
