"""Parts of a production-like stack the benches run beside the app server, all on 127.0.0.1: a
webhook receiver, a watch on an SMTP server's mail, and the task workers of the Procfile."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from bench._harness import OUT_DIR, PYTHON, ROOT

if TYPE_CHECKING:
    from tests.smtp_server import SmtpServer


class Receiver:
    """A webhook receiver on 127.0.0.1: answers 204 and keeps when each ticket's first
    `ticket.created` arrived."""

    def __init__(self):
        self.first_seen: dict[int, float] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    event = json.loads(body)
                    if event.get("type") == "ticket.created":
                        ticket_id = event["data"]["ticket"]["id"]
                        receiver.first_seen.setdefault(ticket_id, time.monotonic())
                except (ValueError, KeyError, TypeError):
                    pass
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class MailWatch:
    """When each holder's email reached the answering SMTP server (by its recipient)."""

    def __init__(self, smtp: SmtpServer):
        self.smtp, self.seen, self._stop = smtp, {}, threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        done = 0
        while not self._stop.wait(0.02):
            for message in self.smtp.messages[done:]:
                for word in message.split():
                    if word.strip("<>,").endswith("@isolation.example"):
                        self.seen.setdefault(word.strip("<>,").lower(), time.monotonic())
                done += 1


class Workers:
    """One `manage.py run_worker` per queue, as the Procfile starts them."""

    def __init__(self, env: dict[str, str]):
        self.env, self.processes = env, {}

    def start(self, queue: str, **extra: str) -> None:
        log = (OUT_DIR / f"isolation-worker-{queue}.log").open("ab")
        self.processes[queue] = subprocess.Popen(
            [PYTHON, "manage.py", "run_worker", "--no-reload", "--queue-name", queue],
            cwd=ROOT,
            env={**self.env, **extra},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop(self, queue: str) -> None:
        process = self.processes.pop(queue)
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def stop_all(self) -> None:
        for queue in list(self.processes):
            self.stop(queue)
