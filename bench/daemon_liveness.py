"""Is the daemon live when some clients misbehave? A normal hook client's answer time, alone and
with three half-open clients (a request started, never finished) and one slow client (a byte
every half second) connected at the same time.

    .venv/bin/python bench/daemon_liveness.py [--requests 100] [--notes 2000]

The normal client is ``hookclient.ask_daemon`` (what ``memlane-hook`` does), so the figures are
round trips through the socket, not process start-ups. Printed: p50 / p95 / max in ms, and how
many answers came from the daemon (a ``busy`` answer makes the real client answer itself).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))


def _pct(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered):.1f} ms, p95 {p95:.1f} ms, max {ordered[-1]:.1f} ms"


def _bad_clients(path: str, stop: threading.Event) -> list[threading.Thread]:
    def half_open() -> None:
        while not stop.is_set():
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(path)
                sock.sendall(b"user-prompt-submit claude\n{\"prompt\": \"half")  # never finished, never closed
                stop.wait(30)
                sock.close()
            except OSError:
                stop.wait(0.1)

    def slow() -> None:
        while not stop.is_set():
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(path)
                for byte in b"user-prompt-submit claude\n{\"prompt\": \"a slow client\"}":
                    if stop.is_set():
                        break
                    sock.sendall(bytes([byte]))
                    stop.wait(0.5)
                sock.close()
            except OSError:
                stop.wait(0.1)

    threads = [threading.Thread(target=half_open, daemon=True) for _ in range(3)]
    threads.append(threading.Thread(target=slow, daemon=True))
    for thread in threads:
        thread.start()
    return threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--notes", type=int, default=2000)
    args = parser.parse_args()
    import speed
    from memlane.adapters import hookclient

    work = Path(tempfile.mkdtemp(prefix="memlane-liveness-"))
    (work / "run").mkdir(mode=0o700)
    os.environ.update({"MEMLANE_CACHE_DIR": str(work / "cache"), "XDG_RUNTIME_DIR": str(work / "run")})
    store = speed.write_store(work / "notes", args.notes, 7)
    index = str(work / "index.sqlite")
    root = hookclient.project_root(str(work))
    key = hookclient.daemon_key(root, [str(store)], "none", index)
    daemon = subprocess.Popen([sys.executable, "-m", "memlane.adapters.daemon", "--key", key, "--root", root,
                               "--store", str(store), "--embedder", "none", "--index", index],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = hookclient.socket_path(key)
    while hookclient.ask_daemon(path, "ping") is None:
        time.sleep(0.1)
    prompts = speed.make_queries(args.requests, 11)

    def run(label: str) -> None:
        times, answered = [], 0
        for n, prompt in enumerate(prompts):
            stdin = json.dumps({"session_id": f"{label}{n}", "cwd": str(work), "prompt": prompt,
                                "transcript_path": "/none"})
            started = time.perf_counter()
            reply = hookclient.ask_daemon(path, "user-prompt-submit claude", stdin)
            times.append((time.perf_counter() - started) * 1000)
            answered += reply is not None
        print(f"{label:<40} {_pct(times)}; answered by the daemon {answered}/{len(prompts)}")

    try:
        run("alone")
        stop = threading.Event()
        _bad_clients(path, stop)
        time.sleep(1.0)
        run("with 3 half-open clients and 1 slow one")
        stop.set()
    finally:
        hookclient.ask_daemon(path, "stop")
        daemon.wait(timeout=30)


if __name__ == "__main__":
    main()
