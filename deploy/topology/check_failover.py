"""`make failover-check`: the leader's PostgreSQL killed under load, and what the gates saw.

    python deploy/topology/check_failover.py [--tickets 3000] [--seconds 90]

Starts deploy/topology/patroni-up.sh's cluster (etcd, two Patroni nodes, HAProxy) and
deploy/topology/up.sh's two app hosts on it (DATABASE_URL at HAProxy's write port,
DATABASE_REPLICA_URLS at its read port), seeds an event, then drives gates scanning by code and
a box office creating tickets through the balancer (deploy/topology/failover_load.py). After a
few seconds of load it kills the leader's postmaster with SIGKILL and measures:
- how long until the gates admit again (target: within MAX_FAILOVER_SECONDS);
- the answers that failed meanwhile, by status, and whether each was CONTRACT §2's 503 with
  Retry-After (never a 500, nor a balancer's page);
- after the load: every scan and creation the clients were told succeeded is in the database
  (none lost), and no ticket was admitted twice.
Prints the figures; exit 1 on any loss, double admission, malformed error or a slow failover.
Stops everything it started, whatever happens. Ports (all 127.0.0.1) from the environment as
the two scripts read them; REDIS_URL (default db 6 of 127.0.0.1:6379).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from deploy.topology.failover_load import Load, contract_503  # noqa: E402

MAX_FAILOVER_SECONDS = 30
DATABASE = "ticketing_failover"
PORTS = {  # apart from make topology-check's and the tests' stacks, so that both may run
    "TOPOLOGY_PORT": "8280",
    "APP_PORT": "8200",
    "PGBOUNCER_PORT": "6632",
    "ETCD_PORT": "12379",
    "PATRONI_PG_PORTS": "15501 15502",
    "PATRONI_API_PORTS": "18008 18009",
    "DB_WRITE_PORT": "15500",
    "DB_READ_PORT": "15510",
}
WAIT = 120  # seconds any condition may take
STARTED = time.monotonic()


def say(text: str) -> None:
    print(f"[{time.monotonic() - STARTED:5.0f} s] {text}", flush=True)


class Cluster:
    """The Patroni cluster and the app hosts on it, up and down."""

    def __init__(self):
        self.base = Path(tempfile.mkdtemp(prefix="ticketing-failover-"))
        self.base.chmod(0o755)  # PostgreSQL and etcd run as the postgres user
        self.env = {
            **{key: os.environ.get(key, value) for key, value in PORTS.items()},
            **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTHONPATH")},
            "PATRONI_DIR": str(self.base / "patroni"),
            "PATRONI_DATABASE": DATABASE,
            "TOPOLOGY_DIR": str(self.base / "stack"),
            "TOPOLOGY_DATABASE": DATABASE,
            "TOPOLOGY_POOLER": "none",
            "TOPOLOGY_REPLICA": "external",
            "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/6"),
            "CACHE_KEY_PREFIX": f"failover-{time.time_ns()}",
            "API_RATE_LIMIT": "1000000/m",
            "LOG_LEVEL": "WARNING",
            "PYTHON": sys.executable,
        }
        self.env["PRIMARY_PORT"] = self.env["DB_WRITE_PORT"]
        self.values: dict[str, str] = {}

    def up(self) -> None:
        started = time.monotonic()
        self._run("deploy/topology/patroni-up.sh")
        patroni = _env_file(self.base / "patroni" / "env")
        self.env["DATABASE_REPLICA_URLS"] = patroni["DATABASE_REPLICA_URLS"]
        self._run("deploy/topology/up.sh")
        self.values = {**patroni, **_env_file(self.base / "stack" / "env")}
        say(f"cluster and app hosts up in {time.monotonic() - started:.0f} s")

    def down(self) -> None:
        subprocess.run(["deploy/topology/down.sh"], cwd=ROOT, env=self.env, timeout=120)
        subprocess.run(["deploy/topology/patroni-down.sh"], cwd=ROOT, env=self.env, timeout=180)
        shutil.rmtree(self.base, ignore_errors=True)

    def _run(self, script: str) -> None:
        subprocess.run([script], cwd=ROOT, env=self.env, check=True, timeout=300)

    @property
    def balancer(self) -> tuple[str, int]:
        host, port = self.values["BALANCER"].rsplit(":", 1)
        return host, int(port)

    def members(self) -> list[dict]:
        """Patroni's view of the cluster, from whichever node's REST API answers."""
        for port in self.values["PATRONI_API_PORTS"].split():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/cluster", timeout=2) as r:
                    return json.load(r)["members"]
            except OSError:
                continue
        return []

    def leader(self) -> dict | None:
        return next((m for m in self.members() if m["role"] == "leader"), None)

    def kill_leader(self) -> tuple[str, float]:
        """SIGKILL to the leader's postmaster; the leader's name and when."""
        leader = self.leader()
        assert leader is not None, "no leader to kill"
        pidfile = Path(self.values["PATRONI_DIR"]) / leader["name"] / "data" / "postmaster.pid"
        pid = int(pidfile.read_text().split()[0])
        os.kill(pid, signal.SIGKILL)
        return leader["name"], time.monotonic()


def _env_file(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def wait_for(condition, timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def seed(cluster: Cluster, tickets: int, creations: int):
    """The event, its gate tokens and a staff member's token (for creations), and the codes."""
    os.environ.update(
        DJANGO_SETTINGS_MODULE="ticketing.settings.production",
        DATABASE_URL=cluster.values["DATABASE_URL"],
        REDIS_URL=cluster.values["REDIS_URL"],
        SECRET_KEY=cluster.values["SECRET_KEY"],
        SECURE_SSL_REDIRECT="false",
        ALLOWED_HOSTS="127.0.0.1",
        LOG_LEVEL="WARNING",
        WEBHOOK_ALLOW_PRIVATE_URLS="true",  # this process's registration of the endpoint below
    )
    import django

    django.setup()
    from django.db import connections

    from bench._data import reference_codes
    from bench._data import seed as seed_data
    from events.models import TicketType
    from webhooks.services import webhook_endpoint_create

    data = seed_data(tickets=tickets, gates=5, label="failover")
    # An endpoint subscribed to both changes, so that each records its webhook event in its
    # own transaction (nothing listens: deliveries fail, and the events stay).
    webhook_endpoint_create(
        organizer_id=data.organizer_id,
        url="http://127.0.0.1:9/failover-hook",
        event_types=["ticket.checked_in", "ticket.created"],
    )
    ticket_type = TicketType.objects.get(event_id=data.event_id)
    TicketType.objects.filter(pk=ticket_type.pk).update(quantity=tickets + creations)
    codes = reference_codes(data, data.ticket_ids)
    connections.close_all()
    return data, ticket_type.pk, codes


def drive(cluster: Cluster, data, ticket_type_id: int, codes: list[str], args) -> tuple:
    """Load, the leader killed once it runs, load until the gates have admitted for a while
    after; the load, the killed leader's name and when it was killed."""
    deadline = time.monotonic() + args.seconds
    # Gate tokens are 0, 2, 4 (application tokens); 1 and 3 are staff members' user tokens.
    load = Load(
        balancer=cluster.balancer,
        event_path=data.event_path,
        gate_tokens=[data.gate_tokens[i] for i in (0, 2, 4, 1)],
        creator_token=data.gate_tokens[3],
        ticket_type_id=ticket_type_id,
        deadline=deadline,
        run=secrets.token_hex(4),
    )
    threads = load.start(codes, args.creations)
    try:
        if not wait_for(lambda: len(load.admissions()) >= 100, timeout=args.seconds / 3):
            raise SystemExit("the gates did not admit 100 tickets before the kill")
        killed, killed_at = cluster.kill_leader()
        say(f"killed the postmaster of {killed} (the leader) under load")
        wait_for(
            lambda: any(a.sent > killed_at for a in load.admissions()),
            timeout=max(0.0, deadline - time.monotonic()),
        )
        # A little more load on the new leader: the app's connections to the old one are
        # each found dead on their next use.
        wait_for(lambda: False, timeout=min(args.after, max(0.0, deadline - time.monotonic())))
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(timeout=30)
    return load, killed, killed_at


def report_switch(load: Load, killed_at: float) -> list[str]:
    """The failover's figures from the clients' side; what failed the check."""
    failures = []
    after = [a for a in load.answers if a.received >= killed_at]
    errors = [a for a in after if a.status not in (200, 404, 409, 422)]
    back = [a for a in load.admissions() if a.sent > killed_at]
    first = min((a.received for a in back), default=None)
    print(f"answers after the kill: {len(after)}; failed: {len(errors)}", flush=True)
    # The balancer answers by itself when it has marked every app host down (their /healthz is
    # 503 while the database they share is away).
    by_status = Counter((a.kind, a.status, "app" if a.from_app else "balancer") for a in errors)
    for (kind, status, origin), count in sorted(by_status.items()):
        print(f"  {kind:6} {status or 'no answer'} from the {origin}: {count}")
    if first is None:
        failures.append("the gates never admitted again")
    else:
        seconds = first - killed_at
        print(f"gates admitting again {seconds:.1f} s after the kill", flush=True)
        if seconds > MAX_FAILOVER_SECONDS:
            failures.append(f"failover took {seconds:.1f} s (> {MAX_FAILOVER_SECONDS})")
    if errors:
        last = max(a.received for a in errors) - killed_at
        print(f"last failed answer {last:.1f} s after the kill", flush=True)
    malformed = [a for a in errors if not contract_503(a)]
    print(f"errors not a 503 service_unavailable with Retry-After: {len(malformed)}")
    for answer in malformed[:5]:
        print(f"  {answer.kind} {answer.status} retry-after={answer.retry_after} {answer.body}")
    if malformed:
        failures.append(f"{len(malformed)} error answers outside CONTRACT §2's 503")
    return failures


def report_durability(load: Load, event_id: int) -> list[str]:
    """Every acknowledged scan and creation in the database; no ticket admitted twice."""
    from django.db import connections

    from checkin.models import CheckInLog, ScanRecord
    from tickets.models import Ticket

    connections.close_all()  # this process's connections went to the old leader
    admitted = [a for a in load.admissions() if a.ticket_id is not None]
    created = [a for a in load.answers if a.kind == "create" and a.status == 200]
    scan_ids = {a.key for a in admitted}
    recorded = set(
        ScanRecord.objects.filter(event_id=event_id, scan_id__in=scan_ids).values_list(
            "scan_id", flat=True
        )
    )
    used = set(
        Ticket.objects.filter(
            id__in={a.ticket_id for a in admitted}, status=Ticket.Status.USED
        ).values_list("id", flat=True)
    )
    lost_scans = scan_ids - recorded
    lost_admissions = {a.ticket_id for a in admitted} - used
    external_ids = {a.key for a in created}
    stored = set(
        Ticket.objects.filter(event_id=event_id, external_id__in=external_ids).values_list(
            "external_id", flat=True
        )
    )
    lost_creations = external_ids - stored
    # Twice admitted: by the gates' answers (two scans of one ticket each told "admitted" the
    # first time), and by the database's audit rows.
    first_answers = Counter(a.ticket_id for a in admitted if not a.replayed)
    told_twice = sum(1 for count in first_answers.values() if count > 1)
    logged = Counter(
        CheckInLog.objects.filter(
            ticket__event_id=event_id, action=CheckInLog.Action.CHECK_IN
        ).values_list("ticket_id", flat=True)
    )
    logged_twice = sum(1 for count in logged.values() if count > 1)
    print(
        f"acknowledged scans: {len(scan_ids)} (tickets admitted: {len(first_answers)}); lost: "
        f"{len(lost_scans)} scan records, {len(lost_admissions)} admissions"
    )
    print(f"acknowledged creations: {len(external_ids)}; lost: {len(lost_creations)}")
    print(f"double admissions: {told_twice} told twice, {logged_twice} in the audit log")
    failures = webhook_events_lost(event_id)
    if lost_scans or lost_admissions:
        failures.append(f"lost acknowledged scans: {sorted(lost_scans)[:5]}")
    if lost_creations:
        failures.append(f"lost acknowledged creations: {sorted(lost_creations)[:5]}")
    if told_twice or logged_twice:
        failures.append("a ticket admitted twice")
    return failures


def webhook_events_lost(event_id: int) -> list[str]:
    """A webhook event for every check-in and creation the database kept (each is recorded in
    the transaction of its change, so what survived the failover has its event)."""
    from events.models import Event
    from tickets.models import Ticket
    from webhooks.models import WebhookEvent

    organizer_id = Event.objects.get(pk=event_id).organizer_id
    tickets = Ticket.objects.filter(event_id=event_id)
    kept = {
        "ticket.checked_in": tickets.filter(status=Ticket.Status.USED).count(),
        "ticket.created": tickets.filter(external_id__isnull=False).count(),
    }
    events = WebhookEvent.objects.filter(organizer_id=organizer_id)
    failures = []
    for kind, changes in kept.items():
        recorded = events.filter(type=kind).count()
        print(f"webhook events {kind}: {recorded} for {changes} changes in the database")
        if recorded < changes:
            failures.append(f"{changes - recorded} {kind} webhook events lost")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description="the leader's PostgreSQL killed under load")
    parser.add_argument("--tickets", type=int, default=3000, help="tickets, each scanned twice")
    parser.add_argument("--creations", type=int, default=2000, help="at most, one at a time")
    parser.add_argument("--seconds", type=float, default=90, help="the load's bound")
    parser.add_argument("--after", type=float, default=5, help="load after gates admit again")
    args = parser.parse_args()
    # make's and CI's SIGTERM stops the run through the finally below, like Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cluster = Cluster()
    try:
        cluster.up()
        data, ticket_type_id, codes = seed(cluster, args.tickets, args.creations)
        say(f"seeded an event of {args.tickets} tickets")
        load, killed, killed_at = drive(cluster, data, ticket_type_id, codes, args)
        say("load stopped")
        failures = report_switch(load, killed_at)
        if not wait_for(lambda: (cluster.leader() or {}).get("name") not in (None, killed)):
            failures.append("no new leader")
        print(f"leader now: {(cluster.leader() or {}).get('name')}", flush=True)
        failures += report_durability(load, data.event_id)
    finally:
        if "django" in sys.modules:
            from django.db import connections

            connections.close_all()
        cluster.down()
        say("stopped")
    for failure in failures:
        print(f"FAIL {failure}")
    print("failover check:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
