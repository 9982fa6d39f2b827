"""Webhooks and the ticket email do not slow the API, and one worker delivers fast (issue 15).

Run on PostgreSQL (`DATABASE_URL`; `REDIS_URL` recommended: it is where the servers keep which
event types an organizer's endpoints want), from the repository root:

    python bench/webhooks.py
    python bench/webhooks.py --requests 1500 --rounds 3

In a database of its own, against gunicorn with the production settings (as
`bench/checkin_throughput.py`), it measures three things and prints the figures:

1. Check-in throughput with no webhook endpoint and with 3 endpoints of the organizer
   registered, alternately in one run, each first in every other round (target: within
   10%). No worker runs meanwhile: this is the request's own cost (the event's row in the
   outbox, with the admitted ticket's row, is written by the check-in's one statement).
2. One `manage.py run_worker` delivering every event those check-ins recorded to the 3
   endpoints, a receiver on 127.0.0.1 (target: ≥ 200 requests/s).
3. Ticket creation p99 with an SMTP server that accepts connections and never answers versus
   the file email backend (target: within 10%): the email is a task, never sent in the request.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import seed  # noqa: E402
from bench._harness import (  # noqa: E402
    OUT_DIR,
    PYTHON,
    Gunicorn,
    call,
    free_port,
    own_database,
    percentile,
    release_database,
)
from bench.checkin_throughput import Phase, run_phase  # noqa: E402
from tests.smtp_server import SmtpServer  # noqa: E402

TARGET_OVERHEAD = 0.10
# How long a server keeps an organizer's subscriptions (production: 5 s); each phase waits it
# out after changing the endpoints, so that every server knows them.
SUBSCRIPTION_CACHE_SECONDS = 1
TARGET_DELIVERY_RATE = 200.0
HOLDER = {"firstname": "Bench", "lastname": "Holder", "phone": "0812345678"}


class Receiver:
    """Answers 204 to every POST and counts them."""

    def __init__(self):
        self.count = 0
        lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    receiver.count += 1
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def print_phase(phase: Phase) -> None:
    print(
        f"  {phase.name:<30} {phase.rate:8.1f} req/s   p50 {phase.p50_ms:7.1f} ms"
        f"   p99 {phase.p99_ms:7.1f} ms   non-200: {phase.failures or 0}",
        flush=True,
    )


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="Requests per timed phase.")
    parser.add_argument("--concurrency", type=int, default=8, help="Client threads.")
    parser.add_argument("--rounds", type=int, default=2, help="Alternations of each comparison.")
    parser.add_argument("--warmup", type=int, default=100, help="Untimed requests first.")
    parser.add_argument("--workers", type=int, default=None, help="Gunicorn workers.")
    parser.add_argument("--keep-db", action="store_true", help="Do not drop the bench database.")
    parser.add_argument(
        "--skip-creation", action="store_true", help="Measure check-ins and deliveries only."
    )
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    hung_smtp = SmtpServer(answering=False).__enter__()
    shared = {
        "CACHE_KEY_PREFIX": "webhooks-bench",
        "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
        "WEBHOOK_SUBSCRIPTION_CACHE_SECONDS": str(SUBSCRIPTION_CACHE_SECONDS),
    }
    # This process registers the endpoints: it must file the change under the servers' keys.
    os.environ.update(shared)
    bench_url, env = own_database("webhooks_bench", API_RATE_LIMIT="100000000/m", **shared)
    from django.db import transaction

    from events.models import TicketType
    from webhooks.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
    from webhooks.services import webhook_endpoint_create, webhook_endpoint_delete

    receiver = Receiver()
    checkins = args.warmup + 2 * args.rounds * args.requests
    data = seed(tickets=checkins, gates=args.concurrency, label="webhooks")
    ticket_ids = iter(data.ticket_ids)
    ids_lock = threading.Lock()
    user_tokens = data.gate_tokens[1::2]  # staff user tokens: creation needs a user (§3)

    def check_in(i: int, client: int):
        with ids_lock:
            ticket_id = next(ticket_ids)
        token = data.gate_tokens[client % len(data.gate_tokens)]
        return call("POST", port, data.checkin_path(ticket_id), token=token, form={})

    def endpoints(count: int) -> None:
        for endpoint in WebhookEndpoint.objects.filter(organizer_id=data.organizer_id):
            webhook_endpoint_delete(endpoint_id=endpoint.pk)
        for _ in range(count):
            with transaction.atomic():
                webhook_endpoint_create(
                    organizer_id=data.organizer_id, url=receiver.url, event_types=["*"]
                )

    # --- 1. Check-in throughput, no endpoint vs 3 ------------------------------------------
    port = free_port()
    server = Gunicorn(port=port, env=env, workers=args.workers, name="webhooks-bench")
    server.start()
    phases: dict[int, list[Phase]] = {0: [], 3: []}
    try:
        server.wait_ready()
        print(f"gunicorn on 127.0.0.1:{port}, {len(server.worker_pids())} workers", flush=True)
        run_phase("warm-up", requests=args.warmup, concurrency=args.concurrency, send=check_in)
        for round_number in range(1, args.rounds + 1):
            # Alternate which goes first (0, 3, 3, 0, ...): the tables grow as the check-ins
            # go on, and a fixed order would give each later phase a bigger database.
            for count in (0, 3) if round_number % 2 else (3, 0):
                endpoints(count)
                time.sleep(SUBSCRIPTION_CACHE_SECONDS + 0.5)
                phase = run_phase(
                    f"checkin, {count} endpoints #{round_number}",
                    requests=args.requests,
                    concurrency=args.concurrency,
                    send=check_in,
                )
                phases[count].append(phase)
                print_phase(phase)
    finally:
        server.stop()
    endpoints(3)  # the worker's fan-out goes to the endpoints registered when it runs
    # Recorded in the outbox by the check-ins' statements; the worker's relay dispatches them.
    recorded = WebhookEvent.objects.filter(type="ticket.checked_in", dispatched_at=None).count()
    rate = {count: statistics.median(p.rate for p in group) for count, group in phases.items()}
    overhead = 1 - rate[3] / rate[0]
    checkin_ok = overhead <= TARGET_OVERHEAD and recorded == args.rounds * args.requests
    print(
        f"check-in: {rate[0]:.1f} req/s without endpoints, {rate[3]:.1f} req/s with 3 "
        f"({overhead:+.1%} slower; target ≤ {TARGET_OVERHEAD:.0%}); "
        f"events queued {recorded}/{args.rounds * args.requests}",
        flush=True,
    )

    # --- 2. One worker's delivery rate -----------------------------------------------------
    expected = 3 * recorded  # each event to the 3 endpoints, fanned out by the worker
    if not expected:
        raise RuntimeError("no event was recorded: nothing to deliver")
    log = (OUT_DIR / "webhooks-bench-worker.log").open("wb")
    worker = subprocess.Popen(
        [
            PYTHON,
            "manage.py",
            "run_worker",
            "--no-reload",
            "--no-startup-delay",
            "--interval",
            "0.05",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        while receiver.count == 0:  # timed from the first delivery: not the worker's start-up
            if worker.poll() is not None:
                raise RuntimeError("the worker exited; see bench/out/webhooks-bench-worker.log")
            time.sleep(0.01)
        started, first = time.monotonic(), receiver.count
        deadline = started + 600
        while receiver.count < expected:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{receiver.count} of {expected} delivered after 10 minutes")
            time.sleep(0.01)
        seconds = time.monotonic() - started
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    delivered = WebhookDelivery.objects.filter(status="delivered").count()
    events = WebhookEvent.objects.filter(type="ticket.checked_in").count()
    delivery_rate = (receiver.count - first) / seconds
    delivery_ok = (
        delivery_rate >= TARGET_DELIVERY_RATE and delivered == expected and events == recorded
    )
    print(
        f"one worker: {events} events to 3 endpoints, {delivered} deliveries delivered, "
        f"{receiver.count} requests received, "
        f"{delivery_rate:.1f} requests/s (target ≥ {TARGET_DELIVERY_RATE:.0f})",
        flush=True,
    )

    if args.skip_creation:
        hung_smtp.stop()
        release_database(bench_url, keep=args.keep_db)
        ok = checkin_ok and delivery_ok
        print("RESULT (creation skipped):", "met" if ok else "NOT met")
        return 0 if ok else 1

    # --- 3. Creation p99: a mail server that never answers vs the file backend --------------
    ticket_type = TicketType.objects.create(
        event_id=data.event_id,
        name="Creation bench",
        price=100000,
        quantity=10**6,
        api_quota=10**6,
    )
    email_numbers = iter(range(10**7))

    def create(i: int, client: int):
        with ids_lock:
            n = next(email_numbers)
        return call(
            "POST",
            port,
            f"{data.event_path}/tickets",
            token=user_tokens[client % len(user_tokens)],
            form={"ticket_type_id": ticket_type.pk, "email": f"c{n}@bench.example", **HOLDER},
        )

    backends = {
        "file backend": {},
        "SMTP never answering": {
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": "127.0.0.1",
            "EMAIL_PORT": str(hung_smtp.port),
        },
    }
    created: dict[str, list[Phase]] = {name: [] for name in backends}
    for round_number in range(1, args.rounds + 1):
        # Alternate which goes first: a server started later meets a bigger database.
        order = list(backends.items())[:: 1 if round_number % 2 else -1]
        for name, extra in order:
            port = free_port()
            server = Gunicorn(port=port, env={**env, **extra}, workers=args.workers, name="mail")
            server.start()
            try:
                server.wait_ready()
                run_phase(
                    "warm-up", requests=args.warmup, concurrency=args.concurrency, send=create
                )
                phase = run_phase(
                    f"create, {name} #{round_number}",
                    requests=args.requests,
                    concurrency=args.concurrency,
                    send=create,
                )
            finally:
                server.stop()
            created[name].append(phase)
            print_phase(phase)
    p99 = {
        name: percentile([v for p in group for v in p.latencies], 99) * 1000
        for name, group in created.items()
    }
    ratio = p99["SMTP never answering"] / p99["file backend"] - 1
    failures = any(p.failures for group in created.values() for p in group)
    create_ok = ratio <= TARGET_OVERHEAD and not failures
    print(
        f"creation p99: {p99['file backend']:.1f} ms with the file backend, "
        f"{p99['SMTP never answering']:.1f} ms with an SMTP server that never answers "
        f"({ratio:+.1%}; target ≤ {TARGET_OVERHEAD:.0%}); SMTP connections during the "
        f"requests: {hung_smtp.connections}",
        flush=True,
    )

    hung_smtp.stop()
    release_database(bench_url, keep=args.keep_db)
    ok = checkin_ok and delivery_ok and create_ok
    print("RESULT:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
