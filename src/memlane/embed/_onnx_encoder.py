"""A BERT-style ONNX encoder run one text at a time, on both cores: what MiniLM and e5 share.

One text per run: the int8 models quantize their activations per run, so a text embedded
alone always gets the same vector, whatever else is being embedded (content-addressed
caching relies on it), and on 2 cores padded batches measured slower anyway. Both cores
work through ``WORKERS`` Python threads sharing one single-threaded onnxruntime session
(``run`` is thread-safe and releases the GIL): two whole texts at once instead of one text's
small matrices split in two, which with onnxruntime's own intra-op threads gave no speed-up
(measured when this encoder was written; that report is not kept in the repository). A worker
tokenizes its texts too, so the pure-Python tokenizers run while the other thread is in
onnxruntime.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from collections.abc import Callable, Sequence

from .base import EmbedderUnavailable

#: worker threads, each running whole texts on the shared single-threaded session
WORKERS = max(1, min(2, os.cpu_count() or 1))
_PREFIX = "memlane-embed"

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
#: one more worker, for a prompt's second half only: a resident process embeds a bulk of passages
#: (the team's new notes) beside the prompts, and a prompt queued in ``_pool`` behind the batch's
#: shares would wait for them
_query_pool: ThreadPoolExecutor | None = None


def _forget_pool() -> None:
    """In a forked child the pool's threads are gone: start a new pool when one is needed."""
    global _pool, _query_pool, _lock
    _pool, _query_pool, _lock = None, None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def find_model_dir(env: str, packaged: Path, required: Sequence[str], how_to_make: str) -> Path:
    """``$env`` if set, else the packaged directory: the first holding every ``required`` file."""
    tried = []
    value = os.environ.get(env)
    for candidate in ([Path(value).expanduser()] if value else []) + [packaged]:
        tried.append(str(candidate))
        if all((candidate / name).is_file() for name in required):
            return candidate
    raise EmbedderUnavailable(f"model files ({', '.join(required)}) not found in: {', '.join(tried)}. "
                              f"{how_to_make}; then point ${env} at the directory if it is not the packaged one.")


#: onnxruntime (1.29 and later) sends usage telemetry to Microsoft from Linux and macOS too, and
#: writes a device id into ~/.cache/Microsoft/ as soon as it is imported; memlane promises no network
#: and nothing in your home folder that is not its own, so it is turned off unless you set it yourself
TELEMETRY_ENV = "ORT_DISABLE_TELEMETRY"


def session(path: Path):
    """A single-threaded onnxruntime session that never busy-waits between runs."""
    os.environ.setdefault(TELEMETRY_ENV, "1")  # read when onnxruntime is imported: before it
    import onnxruntime as ort  # ImportError propagates: the registry turns it into an install hint

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def executor() -> ThreadPoolExecutor | None:
    """The process-wide worker pool (None on one core)."""
    global _pool
    if WORKERS < 2:
        return None
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix=_PREFIX)
        return _pool


def query_executor() -> ThreadPoolExecutor | None:
    """The process-wide worker for a prompt's second half, never queued behind passages (None
    on one core)."""
    global _query_pool
    if WORKERS < 2:
        return None
    with _lock:
        if _query_pool is None:
            _query_pool = ThreadPoolExecutor(1, thread_name_prefix=f"{_PREFIX}-query")
        return _query_pool


def run_all(texts: Sequence[str], embed_one: Callable[[str], "object"]) -> list:
    """``embed_one`` over ``texts`` on the workers, results in order. Longest texts first, dealt
    out in turn, so both threads get about as much work."""
    pool = executor()
    on_worker = threading.current_thread().name.startswith(_PREFIX)  # waiting on the pool from it could deadlock
    if pool is None or len(texts) < 2 or on_worker:
        return [embed_one(t) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    shares = [order[w::WORKERS] for w in range(WORKERS)]
    parts = pool.map(lambda share: [embed_one(texts[i]) for i in share], shares)
    out: list = [None] * len(texts)
    for share, vectors in zip(shares, parts):
        for i, vector in zip(share, vectors):
            out[i] = vector
    return out


def normalized_rows(vectors: list, dim: int):
    """float32 [len(vectors), dim], every row L2-normalised."""
    import numpy as np

    out = np.zeros((len(vectors), dim), dtype=np.float32)
    for row, vector in enumerate(vectors):
        out[row] = vector / max(float(np.linalg.norm(vector)), 1e-12)
    return out
