"""One organizer's hung receivers vs another organizer's first attempts (issue 28).

Run on PostgreSQL (`DATABASE_URL`), from the repository root, under the bench lock:

    python bench/webhook_fairness.py
    python bench/webhook_fairness.py --hung-endpoints 20 --pings 200 --events 40

In a database of its own: organizer B registers endpoints that accept connections and never
answer, and queues pings to them (as `/test` would, without its per-endpoint limit); one
`manage.py run_worker --queue-name webhooks` (the production settings: 10 s timeout) starts;
once B's attempts hang, organizer A records `ticket.created` events, one every `--interval`
seconds. Printed: A's first-attempt latency from its commit to its receiver (p50, p95, max;
target p95 ≤ 5 s, CONTRACT §13) and B's attempts in flight at most (its slots,
WEBHOOK_IN_FLIGHT_PER_ORGANIZER).
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._harness import OUT_DIR, PYTHON, own_database, percentile, release_database  # noqa: E402

TARGET_P95_SECONDS = 5.0


class Receiver:
    """Records when each `webhook-id` first arrived; `hang` holds every answer until closed."""

    def __init__(self, *, hang: bool):
        self.arrived: dict[str, float] = {}  # webhook-id: when first received
        self.open = self.most_open = self.count = 0
        self.release = threading.Event()
        lock, receiver = threading.Lock(), self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    receiver.arrived.setdefault(self.headers["webhook-id"], time.monotonic())
                    receiver.count += 1
                    receiver.open += 1
                    receiver.most_open = max(receiver.most_open, receiver.open)
                if hang:
                    self.hang_until_released_or_gone()
                with lock:
                    receiver.open -= 1
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def hang_until_released_or_gone(self):
                """Hold the answer until released, or until the sender closes (its timeout):
                then the attempt is no longer in flight."""
                deadline = time.monotonic() + 120
                while not receiver.release.wait(timeout=0.05) and time.monotonic() < deadline:
                    readable, _, _ = select.select([self.connection], [], [], 0)
                    if readable and not self.connection.recv(1, socket.MSG_PEEK):
                        return

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def wait(condition, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hung-endpoints", type=int, default=20, help="B's endpoints.")
    parser.add_argument("--pings", type=int, default=200, help="Pings queued to them.")
    parser.add_argument("--events", type=int, default=40, help="A's events, timed.")
    parser.add_argument("--interval", type=float, default=0.25, help="Seconds between them.")
    parser.add_argument("--keep-db", action="store_true", help="Do not drop the bench database.")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    hung, answering = Receiver(hang=True), Receiver(hang=False)
    os.environ["WEBHOOK_ALLOW_PRIVATE_URLS"] = "true"  # this process registers the endpoints
    bench_url, env = own_database("webhook_fairness", WEBHOOK_ALLOW_PRIVATE_URLS="true")
    from django.conf import settings
    from django.db import transaction

    from organizers.models import Organizer
    from webhooks.services import (
        webhook_endpoint_create,
        webhook_endpoint_ping,
        webhook_event_record,
    )

    a = Organizer.objects.create(name="A", slug="bench-a")
    b = Organizer.objects.create(name="B", slug="bench-b")
    b_endpoints = [
        webhook_endpoint_create(organizer_id=b.pk, url=hung.url, event_types=["*"])[0]
        for _ in range(args.hung_endpoints)
    ]
    for n in range(args.pings):
        webhook_endpoint_ping(endpoint=b_endpoints[n % len(b_endpoints)])
    webhook_endpoint_create(organizer_id=a.pk, url=answering.url, event_types=["*"])
    cap = settings.WEBHOOK_IN_FLIGHT_PER_ORGANIZER
    log = (OUT_DIR / "webhook-fairness-worker.log").open("wb")
    command = ["manage.py", "run_worker", "--no-reload", "--no-startup-delay"]
    worker = subprocess.Popen(
        [PYTHON, *command, "--queue-name", "webhooks", "--interval", "0.05"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    committed: dict[str, float] = {}
    try:
        wait(lambda: hung.open >= cap, timeout=60, what="B's attempts to hang")
        for n in range(args.events):
            with transaction.atomic():
                event = webhook_event_record(
                    organizer_id=a.pk, event_id=None, type="ticket.created", data={"n": n}
                )
            committed[event.pk] = time.monotonic()
            time.sleep(args.interval)  # pacing the load, not waiting for a result
        wait(lambda: set(committed) <= set(answering.arrived), timeout=60, what="A's events")
    finally:
        worker.terminate()
        hung.release.set()
        worker.wait(timeout=30)
    latencies = sorted(answering.arrived[pk] - at for pk, at in committed.items())
    p95 = percentile(latencies, 95)
    print(
        f"organizer B: {args.hung_endpoints} endpoints never answering, {args.pings} pings "
        f"queued; attempts in flight at most {hung.most_open} (slots: {cap}), "
        f"{hung.count} received while A's {args.events} events went out",
        flush=True,
    )
    print(
        f"organizer A's first attempt after its commit: p50 {percentile(latencies, 50):.2f} s, "
        f"p95 {p95:.2f} s, max {latencies[-1]:.2f} s (target p95 ≤ {TARGET_P95_SECONDS:.0f} s)",
        flush=True,
    )
    release_database(bench_url, keep=args.keep_db)
    ok = p95 <= TARGET_P95_SECONDS and hung.most_open <= cap
    print("RESULT:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
