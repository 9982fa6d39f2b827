"""The benches' HTTP client: one request on a fresh connection to 127.0.0.1, its answer and
timing, never an exception (a refused or cut connection is status 0); and a webhook receiver."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int  # 0 when no HTTP answer came back (connection refused, reset, timeout)
    body: dict | list | None
    headers: Mapping[str, str]  # read case-insensitively (a proxy may lowercase the names)
    started: float
    elapsed: float
    port: int
    raw: bytes = b""
    error: str | None = None

    @property
    def is_json(self) -> bool:
        return self.body is not None

    @property
    def code(self) -> str | None:
        return self.body.get("error") if isinstance(self.body, dict) else None


def call(method: str, port: int, path: str, *, token: str | None = None, form: dict | None = None,
         json_body=None, headers: dict[str, str] | None = None, timeout: float = 30,
         host: str = "127.0.0.1") -> Reply:  # fmt: skip
    """One request on a fresh connection (sync gunicorn workers close after each answer)."""
    send_headers = {"Accept": "application/json", **(headers or {})}
    if token:
        send_headers["Authorization"] = f"Bearer {token}"
    body = None
    if form is not None:
        body = urllib.parse.urlencode(form, doseq=True).encode()
        send_headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif json_body is not None:
        body = json.dumps(json_body).encode()
        send_headers["Content-Type"] = "application/json"
    started = time.monotonic()
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=send_headers)
        response = connection.getresponse()
        raw = response.read()
        status, reply_headers = response.status, response.headers  # names in any case
    except (OSError, http.client.HTTPException) as exc:
        return Reply(0, None, {}, started, time.monotonic() - started, port, error=repr(exc))
    finally:
        connection.close()
    elapsed = time.monotonic() - started
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = None
    return Reply(status, parsed, reply_headers, started, elapsed, port, raw=raw[:300])


def free_port() -> int:
    """A loopback port no one listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Receiver:
    """A webhook receiver on 127.0.0.1 that keeps connections: when (`clock`) each event's first
    attempt came, by `key(event)` (its `webhook-id` unless given; None: not kept), and how many
    attempts each had; answers 500 where `fail(key, attempt)` says, 204 otherwise."""

    def __init__(self, key=None, fail=lambda key, attempt: False, clock=time.monotonic):
        self.first, self.attempts, lock, receiver = {}, Counter(), threading.Lock(), self
        self.expected = 0  # the attempts its user's changes should bring, counted by that user

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                at, name = clock(), self.headers.get("webhook-id")
                try:
                    name = key(json.loads(body)) if key else name
                except (ValueError, KeyError, TypeError):
                    name = None
                with lock:
                    receiver.first.setdefault(name, at)
                    receiver.attempts[name] += 1
                    failed = name is not None and fail(name, receiver.attempts[name])
                self.send_response(500 if failed else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def received(self) -> int:
        return sum(self.attempts.values())
