"""X: thin faces over the library (CLI now; hooks, daemon, MCP server later)."""
