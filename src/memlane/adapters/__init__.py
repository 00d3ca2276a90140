"""The faces over the library, each thin: the CLI (``cli/``), the agents' hooks (``hook.py`` and
the stdlib-only ``hookclient.py`` they run, with each agent as data in ``agents/``), the resident
daemon and the MCP server (sharing one warm ``workspace.py``), ``install``, and the graph picture.

Every one of them is a process that starts, imports memlane and answers, often within a hook's
budget. So they keep memlane's compiled bytecode even where ``PYTHONDONTWRITEBYTECODE`` is set (as
many containers set it): an editable install has no ``.pyc`` files until a first import writes
them, and without them each start compiles ~70 modules again, ~150 ms of every cold prompt."""

import sys

sys.dont_write_bytecode = False
