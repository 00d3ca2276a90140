"""G: what memory must not do to the agent.

- ``secrets``: API keys, tokens and private keys redacted from everything memlane hands out;
- ``injection``: notes that read as an attempt to steer the agent are quarantined;
- ``privacy``: the one gate for ``private: true`` notes and ``privacy.exclude`` globs;
- ``staleness``: files, symbols, flags and versions a note names, checked against the tree.
"""

from .injection import injection_risk
from .secrets import REDACTED, redact

__all__ = ["REDACTED", "injection_risk", "redact"]
