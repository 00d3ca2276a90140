"""SHA-256 for the small digests memlane keys things by (a note's text, a prompt, a verdict):
CPython's own implementation, built into the interpreter, instead of ``hashlib``'s, which loads
OpenSSL's library into every process that imports it (~4 ms of each hook answered in a fresh
process). The same digests; slower on large inputs (~250 MB/s against ~1.7 GB/s), so whole-store
digests (the stat walk's) keep ``hashlib``."""

try:
    from _sha2 import sha256  # Python 3.12 and later
except ImportError:
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:  # an interpreter built without them
        from hashlib import sha256

__all__ = ["sha256"]
