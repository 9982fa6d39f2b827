"""One organizer cannot slow another (issue 28's Must show), on a production-like stack, one run.

Run on PostgreSQL (`DATABASE_URL`) and Redis (`REDIS_URL`), with wrk installed, from the
repository root:

    python bench/isolation.py
    python bench/isolation.py --seconds 10 --creations 40

It creates a database of its own (the server's name plus `_isolation_bench`), seeds a simple
event and one with two check-in types (`bench/_data.py`, through the ORM), starts gunicorn with
`deploy/gunicorn.conf.py` and the production settings (2 workers of its class) and one task
worker per queue as `make serve` and the Procfile do (`manage.py run_worker --queue-name email`,
`webhooks`, `default`). Everything after the seed goes through the public HTTP API, so the
bench does not depend on how webhooks or tasks are kept. It prints, with the issue's targets:

1. 500-scan batch uploads (CONTRACT §11) of each kind: fresh, all already used, all unknown
   codes, fresh in the event with 2 check-in types (both requested) (≤ 1.5 s each);
2. online scan-by-code at the gates (wrk, `--gates` connections, one check-in type) with no
   uploads, then while 4 scanners upload 500-scan batches back to back to the same event
   (p99 ≤ 3× the quiet p99; no scan waits more than 1 s); a scanner refused by the
   per-organizer or per-server upload cap (429) waits its `Retry-After` (at most a second) and
   tries again;
3. organizer B registers 20 endpoints that accept connections and never answer and asks for
   200 pings (`WEBHOOK_TEST_RATE_LIMIT` raised for the bench, so that all 200 are queued);
   then organizer A creates `--creations` tickets, a few a second: the delay from each
   creation's request to the first `ticket.created` attempt at A's receiver on 127.0.0.1
   (p95 ≤ 5 s), and to the holder's email at an SMTP server that answers (≤ 5 s); then the
   same with an SMTP server that accepts and never answers (the email worker restarted on
   it): A's webhooks stay on time, only email waits;
4. client-credentials token issuance (`POST /oauth/token`, HTTP Basic) vs an authenticated
   `GET /organizers`, both with wrk, alternately, `--token-rounds` times (the median of the
   rounds' ratios ≥ 50%), with the task workers stopped; and the same ratio by the app
   servers' CPU per answer, which other load on the machine moves less.
"""

from __future__ import annotations

import argparse
import base64
import json
import secrets
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import _wrk  # noqa: E402
from bench._data import _mint, seed, settle  # noqa: E402
from bench._harness import (  # noqa: E402
    OUT_DIR,
    Gunicorn,
    call,
    free_port,
    own_database,
    release_database,
)
from bench._isolation_hostile import api, creations, hostile_b, pings  # noqa: E402
from bench._isolation_report import report  # noqa: E402
from bench._stack import MailWatch, Receiver, Workers  # noqa: E402
from tests.smtp_server import SmtpServer  # noqa: E402

SCANS = 500
HUGE = "100000000/m"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8, help="Per gate and token run.")
    parser.add_argument("--gates", type=int, default=4, help="wrk connections at the gates.")
    parser.add_argument("--creations", type=int, default=20, help="A's tickets per phase.")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers.")
    parser.add_argument(
        "--worker-class", default="", help="gunicorn worker class (default: deploy's)."
    )
    parser.add_argument("--threads", type=int, default=0, help="gunicorn threads per worker.")
    parser.add_argument(
        "--only-uploads", action="store_true", help="Parts 1 and 2 alone (uploads and gates)."
    )
    parser.add_argument("--only-tokens", action="store_true", help="Part 4 alone (token issuance).")
    parser.add_argument(
        "--token-rounds", type=int, default=5, help="Alternated pairs of token runs (part 4)."
    )
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


def seed_all(args):
    """Events, tokens with the roles each part needs, and a client with a known secret."""
    from events.models import CheckInType, TicketType
    from oauth_setup.models import Application
    from organizers.models import Membership
    from tickets.models import Ticket

    gate_tickets = int(args.seconds * 400) * 2
    simple = seed(tickets=2 * SCANS, gates=2, label="iso")
    multi = seed(tickets=SCANS + gate_tickets + 8 * SCANS, gates=4, label="iso-multi")
    types = [
        CheckInType.objects.create(event_id=multi.event_id, name=name, position=n).pk
        for n, name in enumerate(("Entrance", "VIP Lounge"))
    ]
    b = seed(tickets=0, gates=2, label="iso-b")
    admins = {}
    for label, data in (("a", simple), ("b", b)):
        application = Application.objects.filter(organizer_id=data.organizer_id).get()
        user = Membership.objects.filter(organizer_id=data.organizer_id).first().user
        Membership.objects.filter(organizer_id=data.organizer_id).update(role="admin")
        admins[label] = _mint(application=application, user=user, scope="public organizer")
    type_a = TicketType.objects.create(
        event_id=simple.event_id, name="Door", price=100000, quantity=10**6
    ).pk
    secret = secrets.token_urlsafe(32)
    client = Application.objects.create(
        name="Isolation partner",
        organizer_id=simple.organizer_id,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_CLIENT_CREDENTIALS,
        client_secret=secret,
    )

    def codes(data):
        return list(
            Ticket.objects.filter(event_id=data.event_id)
            .order_by("id")
            .values_list("reference_code", flat=True)
        )

    multi_codes = codes(multi)
    settle()
    return dict(
        simple=simple,
        multi=multi,
        b=b,
        types=types,
        admins=admins,
        type_a=type_a,
        basic=base64.b64encode(f"{client.client_id}:{secret}".encode()).decode(),
        simple_codes=codes(simple),
        multi_fresh=multi_codes[:SCANS],
        gate_codes=multi_codes[SCANS : SCANS + gate_tickets],
        upload_codes=multi_codes[SCANS + gate_tickets :],
    )


def batch(prefix: str, codes: list[str], **fields) -> dict:
    at = (datetime.now(UTC) - timedelta(minutes=10)).isoformat()
    return {
        "scans": [
            {"id": f"{prefix}-{i:04d}", "reference_code": code, "used_at": at, **fields}
            for i, code in enumerate(codes)
        ]
    }


def uploads(port: int, s: dict) -> dict[str, float]:
    """Part 1: one 500-scan upload of each kind, timed."""
    simple, multi = s["simple"], s["multi"]
    fresh = s["simple_codes"][:SCANS]
    kinds = {
        "fresh": (simple, batch("fresh", fresh)),
        "all already used": (simple, batch("used", fresh)),
        "all unknown": (simple, batch("unknown", [f"NOSUCH{i:06d}" for i in range(SCANS)])),
        "multi, 2 types": (multi, batch("multi", s["multi_fresh"], check_in_type_ids=s["types"])),
    }
    times = {}
    for kind, (data, body) in kinds.items():
        reply = call(
            "POST",
            port,
            f"{data.event_path}/checkins",
            token=data.gate_tokens[0],
            json_body=body,
            timeout=120,
        )
        if reply.status != 200 or len(reply.body["results"]) != SCANS:
            raise RuntimeError(f"upload {kind}: {reply.status} {reply.raw}")
        times[kind] = reply.elapsed
    return times


def gates_with_uploads(port: int, s: dict, seconds: float, connections: int, pids):
    """Part 2: wrk's gates alone, then while 4 scanners upload back to back."""
    multi = s["multi"]
    body = '{"reference_code": "%s", "check_in_type_ids": ' + json.dumps(s["types"][:1]) + "}"
    codes = s["gate_codes"]
    half = len(codes) // 2

    def gates(name, items):
        load = _wrk.Load(
            f"{multi.event_path}/tickets/checkin",
            method="POST",
            body=body,
            items=items,
            tokens=multi.gate_tokens[:2],
        )
        return _wrk.run(
            name, port, load, seconds=seconds, connections=connections, server_pids=pids
        )

    quiet = gates("gates, no uploads", codes[:half])
    stop = threading.Event()
    stats = {"uploads": 0, "refused": 0, "scans": 0, "slowest": 0.0}
    lock = threading.Lock()
    pool = s["upload_codes"]

    def scanner(n: int):
        token = multi.gate_tokens[2 + n % 2]
        k = 0
        while not stop.is_set():
            start = (n * 4 + k) * SCANS % len(pool)
            codes = (pool + pool)[start : start + SCANS]
            body = batch(f"up{n}-{k}-{secrets.token_hex(2)}", codes, check_in_type_ids=s["types"])
            reply = call(
                "POST",
                port,
                f"{multi.event_path}/checkins",
                token=token,
                json_body=body,
                timeout=120,
            )
            with lock:
                if reply.status == 429:
                    stats["refused"] += 1
                elif reply.status == 200:
                    stats["uploads"] += 1
                    stats["scans"] += SCANS
                    stats["slowest"] = max(stats["slowest"], reply.elapsed)
            if reply.status == 429:
                retry = float(reply.headers.get("Retry-After", "1") or 1)
                stop.wait(min(retry, 1.0))
            k += 1

    threads = [threading.Thread(target=scanner, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(1)  # the scanners' first uploads under way before the gates are timed
    busy = gates("gates, 4 scanners uploading", codes[half:])
    stop.set()
    for thread in threads:
        thread.join(timeout=150)
    return quiet, busy, stats


def tokens_vs_organizers(port: int, s: dict, seconds: float, pids, rounds: int) -> list:
    """Part 4: client-credentials issuance and GET /organizers, alternately, `rounds` times
    each."""
    body = "grant_type=client_credentials&scope=public"
    issue = _wrk.Load(
        "/oauth/token",
        method="POST",
        body=body,
        content_type="application/x-www-form-urlencoded",
        tokens=[s["basic"]],
        scheme="Basic",
    )
    organizers = _wrk.Load("/api/public/organizers", tokens=s["simple"].gate_tokens[:1])
    runs = []
    for _ in range(rounds):
        for name, load in (("GET /organizers", organizers), ("token issuance", issue)):
            runs.append(
                _wrk.run(name, port, load, seconds=seconds, connections=8, server_pids=pids)
            )
    return runs


def main() -> int:
    args = parse_args()
    port = free_port()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    servers = [SmtpServer(answering=a).__enter__() for a in (True, False, False)]
    answering, hung_smtp, hung_http = servers
    shared = dict(
        CACHE_KEY_PREFIX=f"isolation-{secrets.token_hex(3)}",
        API_RATE_LIMIT=HUGE,
        TOKEN_RATE_LIMIT=HUGE,
        WEBHOOK_TEST_RATE_LIMIT=HUGE,
        WEBHOOK_ALLOW_PRIVATE_URLS="true",
        WEBHOOK_SUBSCRIPTION_CACHE_SECONDS="1",
        GUNICORN_TIMEOUT="120",
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(answering.port),
        EMAIL_USE_TLS="false",
    )
    if args.worker_class:
        shared["GUNICORN_WORKER_CLASS"] = args.worker_class
    if args.threads:
        shared["GUNICORN_THREADS"] = str(args.threads)
    bench_url, env = own_database("isolation_bench", **shared)
    s = seed_all(args)
    server = Gunicorn(port=port, env=env, workers=args.workers, name="isolation-bench").start()
    workers = Workers(env)
    receiver, mail = Receiver(), MailWatch(answering)
    try:
        server.wait_ready()
        for queue in ("email", "webhooks", "default"):
            workers.start(queue)
        pids = server.worker_pids
        for data in (s["simple"], s["multi"]):  # each worker's token and route warm
            for token in data.gate_tokens:
                call("GET", port, "/api/public/organizers", token=token)
        if args.only_tokens:
            workers.stop_all()
            token_runs = tokens_vs_organizers(port, s, args.seconds, pids, args.token_rounds)
            return report(args, None, None, None, None, None, None, token_runs)
        upload_times = uploads(port, s)
        quiet, busy, stats = gates_with_uploads(port, s, args.seconds, args.gates, pids)
        if args.only_uploads:
            return report(args, upload_times, quiet, busy, stats, None, None, None)
        api(
            "POST",
            port,
            f"/organizers/{s['simple'].organizer_id}/webhooks",
            s["admins"]["a"],
            {"url": receiver.url, "event_types": ["ticket.created"]},
        )
        time.sleep(1.5)  # WEBHOOK_SUBSCRIPTION_CACHE_SECONDS: every server knows A's endpoint
        endpoint_ids = hostile_b(port, s, hung_http)
        pings(port, s, endpoint_ids)
        answered = creations(port, s, args.creations, "ok", receiver, mail, wait_mail=True)
        workers.stop("email")
        workers.start("email", EMAIL_PORT=str(hung_smtp.port))
        pings(port, s, endpoint_ids)
        hung = creations(port, s, args.creations, "hung", receiver, mail, wait_mail=False)
        # Part 4 is the cost of an issuance, not part 3 again: the workers still retrying B's
        # hung endpoints would take the cores (and the commits) it measures.
        workers.stop_all()
        token_runs = tokens_vs_organizers(port, s, args.seconds, pids, args.token_rounds)
    finally:
        workers.stop_all()
        server.stop()
        release_database(bench_url, keep=args.keep_db)
        for smtp in (answering, hung_smtp, hung_http):
            smtp.stop()
    return report(args, upload_times, quiet, busy, stats, answered, hung, token_runs)


if __name__ == "__main__":
    raise SystemExit(main())
