"""One organizer cannot slow another (issue 28's Must show), on a production-like stack, one run.

    python bench/isolation.py
    python bench/isolation.py --seconds 10 --creations 40

On PostgreSQL (`DATABASE_URL`), Redis (`REDIS_URL`) and wrk (`bench/_harness.py`): a simple
event and one with two check-in types, gunicorn (`deploy/gunicorn.conf.py`, 2 workers) and one
task worker per queue (`email`, `webhooks`, `default`), as the Procfile runs them; after the
seed, only the public HTTP API. Printed, with the issue's targets:
1. 500-scan batch uploads (CONTRACT §11): fresh, all already used, all unknown, fresh with 2
   check-in types (≤ 1.5 s each); online scans under uploads: `bench/event_night.py`;
2. organizer B's 20 endpoints that never answer, 200 pings queued; then A creates
   `--creations` tickets, a few a second: creation to the first `ticket.created` attempt at A's
   receiver (p95 ≤ 5 s) and to the holder's email (≤ 5 s); again with an SMTP server that never
   answers: A's webhooks stay on time, only email waits;
3. client-credentials token issuance vs `GET /organizers`, wrk, alternately, `--token-rounds`
   times, task workers stopped (median ratio ≥ 50%; also by the servers' CPU per answer).
"""

from __future__ import annotations

import argparse
import base64
import secrets
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import _wrk  # noqa: E402
from bench._data import mint, seed, settle  # noqa: E402
from bench._harness import HUGE, OUT_DIR, Stack  # noqa: E402
from bench._http import Receiver, call  # noqa: E402
from bench._isolation_hostile import MailWatch, api, creations, hostile_b, pings  # noqa: E402
from bench._isolation_report import report  # noqa: E402
from tests.smtp_server import SmtpServer  # noqa: E402

SCANS = 500


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8, help="Per token run.")
    parser.add_argument("--creations", type=int, default=20, help="A's tickets per phase.")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers.")
    parser.add_argument("--only-tokens", action="store_true", help="Part 3 alone (token issuance).")
    parser.add_argument(
        "--token-rounds", type=int, default=5, help="Alternated pairs of token runs (part 3)."
    )
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


def seed_all():
    """Events, tokens with the roles each part needs, and a client with a known secret."""
    from events.models import CheckInType, TicketType
    from oauth_setup.models import Application
    from organizers.models import Membership
    from tickets.models import Ticket

    simple = seed(tickets=2 * SCANS, gates=2, label="iso")
    multi = seed(tickets=SCANS, gates=2, label="iso-multi")
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
        admins[label] = mint(application=application, user=user, scope="public organizer")
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
        multi_fresh=codes(multi),
    )


def created_ticket(event: dict) -> int | None:
    """A `ticket.created` event's ticket id: what the receiver keeps the first attempts by."""
    return event["data"]["ticket"]["id"] if event.get("type") == "ticket.created" else None


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


def tokens_vs_organizers(port: int, s: dict, seconds: float, pids, rounds: int) -> list:
    """Part 3: client-credentials issuance and GET /organizers, alternately, `rounds` times
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
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    answering, hung_smtp, hung_http = (SmtpServer(answering=a).__enter__()
                                       for a in (True, False, False))  # fmt: skip
    settings = dict(
        TOKEN_RATE_LIMIT=HUGE,
        WEBHOOK_TEST_RATE_LIMIT=HUGE,
        WEBHOOK_ALLOW_PRIVATE_URLS="true",
        GUNICORN_TIMEOUT="120",
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(answering.port),
        EMAIL_USE_TLS="false",
    )
    results = {}
    try:
        with Stack("isolation_bench", keep_db=args.keep_db, **settings) as stack:
            s = seed_all()
            server = stack.server(workers=args.workers)
            for queue in ("email", "webhooks", "default"):
                stack.worker(queue)
            for data in (s["simple"], s["multi"]):  # each worker's token and route warm
                for token in data.gate_tokens:
                    call("GET", server.port, "/api/public/organizers", token=token)
            run_parts(args, stack, server, s, (answering, hung_smtp, hung_http), results)
    finally:
        for smtp in (answering, hung_smtp, hung_http):
            smtp.stop()
    return report(args, results)


def run_parts(args, stack, server, s, smtp, results) -> None:
    """The parts `args` ask for, each figure in `results` as soon as it is measured."""
    answering, hung_smtp, hung_http = smtp
    port, pids = server.port, server.worker_pids
    if not args.only_tokens:
        results["uploads"] = uploads(port, s)
        receiver, mail = Receiver(key=created_ticket), MailWatch(answering)
        api("POST", port, f"/organizers/{s['simple'].organizer_id}/webhooks", s["admins"]["a"],
            {"url": receiver.url, "event_types": ["ticket.created"]})  # fmt: skip
        endpoint_ids = hostile_b(port, s, hung_http)
        pings(port, s, endpoint_ids)
        results["answered"] = creations(port, s, args.creations, "ok", receiver, mail, True)
        stack.stop_worker("email")
        stack.worker("email", EMAIL_PORT=str(hung_smtp.port))
        pings(port, s, endpoint_ids)
        results["hung"] = creations(port, s, args.creations, "hung", receiver, mail, False)
    # Part 3 is the cost of an issuance, not part 2 again: the workers still retrying B's hung
    # endpoints would take the cores (and the commits) it measures.
    for queue in list(stack.workers):
        stack.stop_worker(queue)
    results["tokens"] = tokens_vs_organizers(port, s, args.seconds, pids, args.token_rounds)


if __name__ == "__main__":
    raise SystemExit(main())
