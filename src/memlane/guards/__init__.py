"""G: what memory must not do to the agent.

- ``secrets``: API keys, tokens and private keys redacted from everything memlane hands out;
- ``injection``: notes that read as an attempt to steer the agent are quarantined;
- ``privacy``: the one gate for ``private: true`` notes and ``privacy.exclude`` globs;
- ``staleness``: files, symbols, flags and versions a note names, checked against the tree.
"""

from importlib import import_module as _import_module

_EXPORTS = {"injection_risk": "injection", "REDACTED": "secrets", "redact": "secrets"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):  # PEP 562: each guard loads when it is first used
    if name in _EXPORTS:
        value = getattr(_import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
