"""The faces over the library, each thin: the CLI (``cli/``), the agents' hooks (``hook.py`` and
the stdlib-only ``hookclient.py`` they run, with each agent as data in ``agents/``), the resident
daemon and the MCP server (sharing one warm ``workspace.py``), ``install``, and the graph picture."""
