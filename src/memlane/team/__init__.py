"""P1: team memory on PostgreSQL with pgvector — the ``team`` scope, between user and project.

A team's notes live in PostgreSQL as their truth (every S1/S2 field, the file text, its version
history, never deleted), behind the same storage seam as the SQLite index (``postgres.py``), so
the same recall pipeline, guards and tests run on both. ``schema.py`` holds the migrations and
the row-level security that keeps one team from another's notes; ``connect.py`` the pool and the
errors in plain words; ``notes.py`` the compare-and-set writer; ``transfer.py`` import and export
of S1 folders; ``scope.py`` the team scope as ``Memory`` joins it (never blocking a hook).

Everything here needs the ``team`` extra (``pip install 'memlane[team]'``: psycopg 3 and its pool)
and is imported only when a team is configured.
"""

from .connect import INSTALL_HINT, display_dsn

__all__ = ["INSTALL_HINT", "display_dsn"]
