"""W: writing notes well — ``add`` with its consolidation advice (ADD / UPDATE / SUPERSEDE /
NOOP), link suggestion, and ``lint``. The atomic file writer itself is ``store/write.py``."""
