"""L: what happened to each unit over time: the hit-log now; scoring and decay build on it."""

from .hitlog import HitLog

__all__ = ["HitLog"]
