"""What the browser's middleware costs a bearer-token API call: Django's session, CSRF, user and
messages middleware against `ticketing.middleware`'s, alternately, in one process.

Run on PostgreSQL (`DATABASE_URL`) and Redis (`REDIS_URL`), from the repository root:

    python bench/middleware_ab.py
    python bench/middleware_ab.py --requests 2000 --block 100

A rate on a machine shared with other work moves by tens of percent between runs; the CPU this
process spends per request does not, so this measures CPU time (`time.process_time`) per
request, through Django's test client (no network, the production settings, a real database and
Redis), in blocks that alternate between the two middleware lists. Workloads: `GET /organizers`
and a scan-by-code check-in (each a ticket not admitted yet), with a member's cached token.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import seed  # noqa: E402
from bench._harness import own_database, release_database  # noqa: E402

DJANGO_ONES = {
    "SessionMiddleware": "django.contrib.sessions.middleware.SessionMiddleware",
    "CsrfViewMiddleware": "django.middleware.csrf.CsrfViewMiddleware",
    "AuthenticationMiddleware": "django.contrib.auth.middleware.AuthenticationMiddleware",
    "MessageMiddleware": "django.contrib.messages.middleware.MessageMiddleware",
}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1200, help="Per workload and variant.")
    parser.add_argument("--block", type=int, default=100, help="Requests per alternation.")
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    os.environ["API_RATE_LIMIT"] = "100000000/m"  # this process serves the requests itself
    bench_url, _ = own_database("middleware_ab")
    from django.conf import settings
    from django.test import Client, override_settings

    from tickets.models import Ticket

    data = seed(tickets=2 * args.requests + 2 * args.block, gates=2, label="ab")
    codes = iter(
        Ticket.objects.filter(event_id=data.event_id).values_list("reference_code", flat=True)
    )
    ours = list(settings.MIDDLEWARE)
    variants = {
        "browser middleware skipped": ours,
        "Django's, every request": [
            DJANGO_ONES.get(path.rsplit(".", 1)[1], path) if path.startswith("ticketing.") else path
            for path in ours
        ],
    }
    headers = {"HTTP_AUTHORIZATION": f"Bearer {data.gate_tokens[1]}", "HTTP_HOST": "127.0.0.1"}
    scan = f"{data.event_path}/tickets/checkin"
    workloads = {
        "GET /organizers": lambda client: client.get("/api/public/organizers", **headers),
        "scan-by-code": lambda client: client.post(
            scan, {"reference_code": next(codes)}, content_type="application/json", **headers
        ),
    }
    cpu = {(w, v): [] for w in workloads for v in variants}
    clients = {}
    for name, middleware in variants.items():
        with override_settings(MIDDLEWARE=middleware):
            clients[name] = Client()
            for send in workloads.values():  # the chain is built and the token kept
                assert send(clients[name]).status_code == 200
    try:
        for _ in range(max(1, args.requests // args.block)):
            for workload, send in workloads.items():
                for name in variants:  # each client keeps the chain it was built with
                    started = time.process_time()
                    for _ in range(args.block):
                        response = send(clients[name])
                        assert response.status_code == 200, response.content[:200]
                    cpu[workload, name].append((time.process_time() - started) / args.block)
    finally:
        release_database(bench_url, keep=args.keep_db)
    print(
        f"\nCPU ms per request in this process (median of {len(cpu[next(iter(cpu))])} blocks "
        f"of {args.block}), Django test client, production settings"
    )
    for workload in workloads:
        base = statistics.median(cpu[workload, "Django's, every request"])
        for name in variants:
            value = statistics.median(cpu[workload, name])
            print(f"  {workload:<16} {name:<28} {value * 1000:6.3f} ms  {value / base:6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
