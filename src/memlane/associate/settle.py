"""``python -m memlane.associate.settle INDEX``: a link graph that a large store's link edit left
unsettled (``build.py``) settled in a process of its own, at low priority. The daemon starts it
from its background refresher: the ~10 s of pure Python it takes at 100k notes would otherwise
share the daemon's interpreter with the prompts it answers. It reads one state of the index,
computes PageRank, clusters and constellations, and stores them only if nothing wrote to the index
meanwhile (the daemon starts it again on a later round if something did). Exits 0 when the
graph is settled (or was), 1 when it could not be."""

from __future__ import annotations

import os
import sys

from .. import logs

log = logs.get("memlane.settle")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m memlane.associate.settle INDEX\n")
        return 2
    try:
        os.nice(10)  # behind the prompts the daemon answers
    except (OSError, AttributeError):
        pass
    from ..index.sqlite import SQLiteIndex
    from .build import UNSETTLED, settle_graph, settlement

    index = SQLiteIndex(args[0])
    try:
        plan = settlement(index)
        return 0 if plan is None or settle_graph(index, plan) or index.get_meta("graph") != UNSETTLED else 1
    except Exception as exc:  # noqa: BLE001 - the graph stays as it is; the daemon tries again later
        log.warning("the link graph was not settled: %s: %s", type(exc).__name__, exc)
        return 1
    finally:
        index.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
