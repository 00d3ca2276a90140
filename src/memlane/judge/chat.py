"""A judge behind an OpenAI-compatible chat completions endpoint (``judge.url`` + ``judge.model``):
Ollama, llama.cpp's ``llama-server``, vLLM, LM Studio, or a hosted API.

One ``POST {url}/chat/completions`` (``url`` as the server documents its base, e.g.
``http://localhost:11434/v1``; a url already ending in ``/chat/completions`` is used as it is):
the task as the system message, the rest of the request document as the user message,
``temperature`` 0, no streaming, and — unless ``judge.structured`` is off — a
``response_format`` of type ``json_schema`` whose names are the candidates', which servers that
constrain their output (llama.cpp, vLLM, Ollama, LM Studio) turn into a grammar.

The deadline is the whole exchange's — connecting, sending, the server thinking, reading —
however the server spaces its bytes: the exchange runs on a worker thread, and at the deadline
its socket is shut and the ranking stands. Only ``http`` and ``https`` URLs; no proxy (a local
server is the point). The API key, when the endpoint needs one, comes from the environment
variable ``judge.api_key_env`` names, never from a file a repository could write.
"""

from __future__ import annotations

import json
import os
import threading
import time
from urllib.parse import urlsplit

from ..retrieve.recalled import shorten
from .command import JudgeFailed

MAX_RESPONSE = 1_000_000  # bytes of a response that are read at most: a longer one is no answer
MAX_TOKENS = 512


def endpoint_of(url: str) -> str:
    base = url.rstrip("/")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


def chat_body(model: str, system: str, user: str, schema: dict | None) -> dict:
    body = {"model": model, "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0, "max_tokens": MAX_TOKENS, "stream": False}
    if schema is not None:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "memlane_verdict", "strict": True, "schema": schema}}
    return body


def ask_chat(url: str, body: dict, deadline: float, *, api_key: str = "") -> str:
    """The assistant message's content, or ``TimeoutError`` at ``deadline`` (a
    ``time.monotonic()`` value), or ``JudgeFailed``. A server that refuses the ``json_schema``
    response format (llama-cpp-python's own server takes ``json_object`` with a ``schema``) is
    asked once more in that form, within the same deadline."""
    try:
        return _ask(url, body, deadline, api_key)
    except JudgeFailed as exc:
        fmt = body.get("response_format") or {}
        if fmt.get("type") != "json_schema" or _status_of(exc) not in (400, 422, 500):
            raise  # a refused request body reads as one of these; anything else is no format question
        retry = {**body, "response_format": {"type": "json_object", "schema": fmt["json_schema"]["schema"]}}
        return _ask(url, retry, deadline, api_key)


def _status_of(exc: JudgeFailed) -> int:
    return getattr(exc, "status", 0)


def _ask(url: str, body: dict, deadline: float, api_key: str) -> str:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("no time left")
    exchange = _Exchange(endpoint_of(url), json.dumps(body).encode("utf-8"), api_key, remaining)
    worker = threading.Thread(target=exchange.run, name="memlane-judge", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if worker.is_alive():
        exchange.abort()
        raise TimeoutError("the endpoint did not answer in time")
    if exchange.error is not None:
        raise exchange.error
    return _content(exchange.status, exchange.data)


class _Exchange:
    """One request and its response, run on a worker thread; ``abort`` ends it from outside."""

    def __init__(self, endpoint: str, payload: bytes, api_key: str, timeout: float):
        self.endpoint, self.payload, self.api_key, self.timeout = endpoint, payload, api_key, timeout
        self.status, self.data, self.error = 0, b"", None
        self.conn = None

    def run(self) -> None:
        import http.client

        try:
            parts = urlsplit(self.endpoint)
            cls = {"http": http.client.HTTPConnection, "https": http.client.HTTPSConnection}.get(parts.scheme)
            if cls is None or not parts.hostname:
                raise JudgeFailed(f"not an http(s) URL: {self.endpoint}")
            self.conn = cls(parts.hostname, parts.port, timeout=self.timeout)
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            if self.api_key:
                headers["Authorization"] = f"Bearer {self.api_key}"
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            self.conn.request("POST", path, body=self.payload, headers=headers)
            response = self.conn.getresponse()
            self.status, self.data = response.status, response.read(MAX_RESPONSE + 1)
            if len(self.data) > MAX_RESPONSE:
                raise JudgeFailed(f"the endpoint answered more than {MAX_RESPONSE:,} bytes")
        except (JudgeFailed, TimeoutError) as exc:  # a socket timeout is the deadline too
            self.error = exc
        except (OSError, ValueError) as exc:  # refused, reset, timed out, a broken response (http.client's errors)
            self.error = JudgeFailed(f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - http.client.HTTPException and kin: no answer
            self.error = JudgeFailed(f"{type(exc).__name__}: {exc}")
        finally:
            if self.conn is not None:
                self.conn.close()

    def abort(self) -> None:
        sock = getattr(self.conn, "sock", None)
        if sock is not None:
            try:
                import socket

                sock.shutdown(socket.SHUT_RDWR)  # wakes the worker's blocked read
            except OSError:
                pass


def _content(status: int, data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    if status != 200:
        failed = JudgeFailed(f"the endpoint answered HTTP {status}: {shorten(text, 200)}")
        failed.status = status
        raise failed
    try:
        message = json.loads(text)["choices"][0]["message"]
        content = message.get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):  # deep nesting too
        raise JudgeFailed(f"not a chat completion: {shorten(text, 200)}") from None
    if not isinstance(content, str):
        raise JudgeFailed("the chat completion has no text content")
    return content


def api_key_from(env_name: str) -> str:
    return os.environ.get(env_name, "") if env_name else ""
