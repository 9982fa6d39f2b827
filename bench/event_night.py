"""Event night (issue 43): the whole night's work on one machine, and what keeps up with it.

    python bench/event_night.py    # or: make bench-night (about 3 minutes)

On PostgreSQL (`DATABASE_URL`), Redis (`REDIS_URL`) and wrk, the deploy's defaults
(`bench/_harness.py`: 2 gthread workers, the shared accept socket, the Procfile's task workers),
an event with check-in types "Entrance" and "VIP Lounge". At once: the online gates (wrk, each
scan a fresh code with a scan id and both types; the rate rising with wrk's kept connections,
`--steps`, each an untimed `--warm-up` and `--seconds` timed; wrk is a closed loop, so the
attendees' queue is not measured, only a scan's wait before Django: client latency minus the
log's `duration_ms`); 4 offline scanners uploading `--batch` scans every `--every` s; the stats
polled every second; a partner's receiver on 127.0.0.1 (every event type, kept connections)
answering 500 to the first attempt of one event in `--fail-one-in`. Printed, with the issue's
targets: the fastest step with p99 ≤ 100 ms and every scan admitted; connections per worker
(`ss`: wrk's, and an upload or poll in flight) and wrk's share of the busy CPU; commit (the
event's `created_at`) to first attempt at the receiver; retry lateness (a retry's start minus
its previous attempt's `next_retry_at`); from the load's stop until the webhook queue is empty
(no event undispatched, no delivery unattempted or over 5 s past due), and until all is
delivered (a retry comes 15 s after its 500). `--reuse-port`: the night with
`GUNICORN_REUSE_PORT=1` (a listening socket per worker).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import _wrk  # noqa: E402
from bench._data import mint, settle  # noqa: E402
from bench._harness import Stack  # noqa: E402
from bench._http import Receiver, call  # noqa: E402
from bench._report import Report, median, percentile  # noqa: E402
from bench.gate import seed_multi_event  # noqa: E402
from bench.isolation import batch  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--steps", default="2,4,6,8,12,16", help="wrk connections per step.")
    add("--seconds", type=int, default=6, help="Timed seconds per step.")
    add("--warm-up", type=int, default=2, help="Untimed seconds before each.")
    add("--per-second", type=int, default=400, help="Gate tickets a second.")
    add("--batch", type=int, default=50, help="Scans per offline upload.")
    add("--every", type=float, default=5.0, help="Seconds between uploads.")
    add("--fail-one-in", type=int, default=10, help="First attempts answered 500.")
    add("--reuse-port", action="store_true", help="The night with GUNICORN_REUSE_PORT=1.")
    add("--keep-db", action="store_true", help="Do not drop the bench database.")
    return parser.parse_args()


def seed_night(args, steps: list[int]):
    """The event, its gate and upload pools of fresh codes, an admin token of its organizer."""
    from oauth_setup.models import Application
    from organizers.models import Membership
    from tickets.models import Ticket

    gate_seconds = len(steps) * (args.warm_up + args.seconds) + 10
    uploads = 4 * args.batch * int(gate_seconds / args.every + 2)
    event, types = seed_multi_event(tickets=args.per_second * gate_seconds + uploads, label="n")
    member = Membership.objects.filter(organizer_id=event.organizer_id).first()
    Membership.objects.filter(pk=member.pk).update(role="admin")
    application = Application.objects.filter(organizer_id=event.organizer_id).get()
    admin = mint(application=application, user=member.user, scope="public organizer")
    codes = list(Ticket.objects.filter(event_id=event.event_id).order_by("id")
                 .values_list("reference_code", flat=True))  # fmt: skip
    settle()
    return event, types, admin, codes[uploads:], codes[:uploads]


def main() -> int:
    args = parse_args()
    steps = [int(step) for step in args.steps.split(",")]
    settings = {"WEBHOOK_ALLOW_PRIVATE_URLS": "true", "CACHE_KEY_PREFIX": "night-bench"}
    with Stack("night_bench", keep_db=args.keep_db, **settings) as stack:
        event, types, admin, gate_codes, upload_codes = seed_night(args, steps)
        body = '{"reference_code": "%s", "scan_id": "g-%s", "check_in_type_ids": %s}'
        scan = _wrk.Load(f"{event.event_path}/tickets/checkin", method="POST",
                         body=body.replace("%s}", json.dumps(types) + "}"),
                         tokens=event.gate_tokens[:4])  # fmt: skip
        for queue in ("email", "webhooks", "default"):
            stack.worker(queue)
        server = stack.server(name="night", GUNICORN_REUSE_PORT="1" if args.reuse_port else "0")

        def fail(event_id: str, attempt: int) -> bool:  # one event in `--fail-one-in`, once
            return attempt == 1 and zlib.crc32(event_id.encode()) % args.fail_one_in == 0

        receiver = Receiver(fail=fail, clock=time.time)
        hooks = f"/api/public/organizers/{event.organizer_id}/webhooks"
        reply = call("POST", server.port, hooks, token=admin,
                     json_body={"url": receiver.url, "event_types": ["*"]})  # fmt: skip
        if reply.status not in (200, 201):
            raise RuntimeError(f"webhook subscription: {reply.status} {reply.raw}")
        for token in event.gate_tokens:  # each worker's tokens and routes warm
            call("GET", server.port, "/api/public/organizers", token=token)
        night = play(args, server, event, types, admin, scan, gate_codes, upload_codes, steps)
        night |= drain(night["stopped"]) | webhook_times(event.organizer_id, receiver)
        night["server"] = server_times(server.log_path, night["windows"])
    return report(args, night)


class Connections(threading.Thread):
    """wrk's kept connections per worker, counted (`ss`) once `delay` s into a run."""

    def __init__(self, port: int, delay: float):
        super().__init__()
        self.port, self.delay, self.counts = port, delay, Counter()
        self.start()

    def run(self) -> None:
        time.sleep(self.delay)  # the connections opened at the start stay open: sampled once
        command = ["ss", "-Htnp", "state", "established", f"( sport = :{self.port} )"]
        out = subprocess.run(command, capture_output=True, text=True).stdout
        self.counts.update(part.split(",")[0] for part in out.split("pid=")[1:])

    def spread(self) -> str:
        self.join()
        return "/".join(str(n) for n in sorted(self.counts.values(), reverse=True)) or "?"


def play(args, server, event, types, admin, scan, gate_codes, upload_codes, steps) -> dict:
    """The gates' steps with the scanners uploading and the stats polled; when the load stopped."""
    stop, lock = threading.Event(), threading.Lock()
    side = {"uploads": [], "refused": Counter(), "stats": [], "stats_errors": Counter()}

    def scanner(n: int) -> None:
        """Every `--every` s (the 4 staggered); refused (429: the upload caps), again after
        Retry-After (at most 1 s), as a scanner does."""
        mine, k, refusals, wait = upload_codes[n::4], 0, 0, args.every * (n + 1) / 4
        while not stop.wait(wait) and (k + 1) * args.batch <= len(mine) and refusals < 50:
            body = batch(f"off{n}-{k}", mine[k * args.batch : (k + 1) * args.batch],
                         check_in_type_ids=types)  # fmt: skip
            reply = call("POST", server.port, f"{event.event_path}/checkins",
                         token=event.gate_tokens[4 + n], json_body=body, timeout=60)  # fmt: skip
            with lock:
                if reply.status == 200:
                    side["uploads"].append(reply.elapsed)
                    k, wait = k + 1, args.every
                else:
                    side["refused"][reply.status] += 1
                    refusals += 1
                    wait = min(float(reply.headers.get("Retry-After") or 1), 1.0)

    def poller() -> None:
        while not stop.wait(1.0):
            reply = call("GET", server.port, f"{event.event_path}/check_in_stats", token=admin)
            side["stats"].append(reply.elapsed)
            side["stats_errors"][reply.status] += reply.status != 200

    threads = [threading.Thread(target=scanner, args=(n,)) for n in range(4)]
    threads.append(threading.Thread(target=poller))
    for thread in threads:
        thread.start()
    runs, windows, spreads, used = [], [], [], 0
    try:
        for connections in steps:
            for name, seconds in (("warm-up", args.warm_up), (f"c={connections}", args.seconds)):
                load = _wrk.Load(**{**scan.__dict__, "items": gate_codes[used:]})
                began, counted = time.time(), Connections(server.port, delay=seconds / 2)
                run = _wrk.run(name, server.port, load, seconds=seconds,
                               connections=connections, server_pids=server.worker_pids)  # fmt: skip
                used += run.requests + connections  # at most one scan a connection cut off
            runs.append(run)
            windows.append((began, time.time()))
            spreads.append(counted.spread())
            print(f"  c={connections}: {run.rate:.1f} scans/s, p99 {run.p99_ms:.1f} ms", flush=True)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
    return {"runs": runs, "windows": windows, "spreads": spreads, "stopped": time.time(), **side}


def drain(stopped: float, limit: float = 120) -> dict:
    """Seconds from the load's stop until the webhook queue is empty (no event undispatched, no
    delivery unattempted or a retry over 5 s past due: a retry due in a moment is on time, not
    a backlog), then until every delivery is delivered."""
    from datetime import timedelta

    from django.db.models import Q
    from django.utils import timezone

    from webhooks.models import WebhookDelivery, WebhookEvent

    empty_at = done_at = None
    while time.time() - stopped < limit:
        pending = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING)
        late = timezone.now() - timedelta(seconds=5)
        backlog = pending.filter(Q(attempt_count=0) | Q(next_attempt_at__lte=late)).exists()
        undispatched = WebhookEvent.objects.filter(dispatched_at__isnull=True).exists()
        if empty_at is None and not backlog and not undispatched:
            empty_at = time.time() - stopped
        if empty_at is not None and not pending.exists():
            done_at = time.time() - stopped
            break
        time.sleep(0.2)
    return {"queue_empty_s": empty_at, "all_delivered_s": done_at}


def webhook_times(organizer_id: int, receiver: Receiver) -> dict:
    """First attempts at the receiver after each event's commit; retries after their due time."""
    from webhooks.models import WebhookAttempt, WebhookEvent

    events = dict(WebhookEvent.objects.filter(organizer_id=organizer_id, type="ticket.checked_in")
                  .values_list("id", "created_at"))  # fmt: skip
    first = [receiver.first[i] - at.timestamp() for i, at in events.items() if i in receiver.first]
    attempts = WebhookAttempt.objects.filter(delivery__event__organizer_id=organizer_id)
    previous, late = {}, []
    for delivery, at, due in attempts.order_by("delivery_id", "attempted_at", "id").values_list(
        "delivery_id", "attempted_at", "next_retry_at"
    ):
        if previous.get(delivery):
            late.append((at - previous[delivery]).total_seconds())
        previous[delivery] = due
    return {"events": len(events), "first": first, "late": late,
            "retried": sum(1 for n in receiver.attempts.values() if n > 1)}  # fmt: skip


def server_times(log_path: Path, windows: list) -> list[tuple[float, float]]:
    """Per timed step: the server's p50 and p99 `duration_ms` of the gates' scans (its log)."""
    per_step = [[] for _ in windows]
    for line in log_path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line) if "/tickets/checkin" in line else {}
            at = datetime.fromisoformat(record["time"]).timestamp()
        except (ValueError, KeyError):
            continue
        for n, (began, ended) in enumerate(windows):
            if began <= at <= ended and record.get("http_path", "").endswith("/tickets/checkin"):
                per_step[n].append(record["duration_ms"])
    return [(median(d), percentile(d, 99)) for d in per_step]


def unadmitted(run: _wrk.WrkRun) -> int:
    return sum(run.unexpected(set(range(200, 300))).values())


def report(args, night: dict) -> int:
    runs, first, late = night["runs"], night["first"], night["late"]
    socket = "a socket per worker" if args.reuse_port else "one shared socket"
    report = Report(f"event night: 2 gthread workers ({socket}), task workers, 4 scanners "
                    f"({args.batch} scans every {args.every:g} s), stats polled, webhooks (1 in "
                    f"{args.fail_one_in} first attempts 500); steps {args.warm_up} s + "
                    f"{args.seconds} s; {os.cpu_count()} cores")  # fmt: skip
    report.section("gates (wrk); server ms from the app's log; wrk's share of the busy CPU")
    report.table(
        ["step", "scans/s", "p50 ms", "p99 ms", "srv p50", "srv p99", "non-2xx", "errors",
         "conns/worker", "wrk/busy", "busy"],
        [[r.name, r.rate, r.p50_ms, r.p99_ms, *s, unadmitted(r), r.socket_errors, c,
          f"{r.wrk_cpu_seconds / (r.machine_cpu_seconds or 1):.1%}", f"{r.machine_share:.0%}"]
         for r, s, c in zip(runs, night["server"], night["spreads"], strict=True)],
    )  # fmt: skip
    held = [r for r in runs if r.p99_ms <= 100 and not unadmitted(r) and not r.socket_errors]
    best = max(held, key=lambda r: r.rate, default=None)
    report.figure("gates: scans/s sustained at p99 ≤ 100 ms", best.rate if best else 0.0,
                  "scans/s", at_least=120, note=best.name if best else "no step held")  # fmt: skip
    if best:
        server_p50 = night["server"][runs.index(best)][0]
        report.figure("a scan's wait before Django there (client p50 - server p50)",
                      best.p50_ms - server_p50, "ms")  # fmt: skip
    wrk_cpu = sum(r.wrk_cpu_seconds for r in runs) / sum(r.machine_cpu_seconds for r in runs)
    report.ratio("wrk's CPU / the machine's busy CPU (timed steps)", wrk_cpu)
    report.section("offline scanners and the stats poller")
    uploads, stats = night["uploads"], night["stats"]
    report.figure("uploads answered 200", len(uploads), digits=0,
                  note=f"slowest {max(uploads, default=0):.2f} s")  # fmt: skip
    refused = dict(night["refused"])
    report.check(set(refused) <= {429}, f"every upload answered (429s tried again: {refused})")
    report.figure("stats polls p99", percentile(stats, 99) * 1000, "ms",
                  note=f"{len(stats)}, errors {sum(night['stats_errors'].values())}")  # fmt: skip
    report.section(f"webhooks: {night['events']} ticket.checked_in events, "
                   f"{night['retried']} retried after a 500")  # fmt: skip
    report.check(len(first) == night["events"], f"every event reached the receiver "
                 f"({len(first)} of {night['events']})")  # fmt: skip
    for name, values, targets in (("commit to first attempt", first, (None, 5, 30)),
                                  ("retry lateness", late, (None, 5, None))):  # fmt: skip
        for label, value, target in zip(("p50", "p95", "max"), (percentile(values, 50),
                                        percentile(values, 95), max(values, default=999)),
                                        targets, strict=True):  # fmt: skip
            report.figure(f"{name} {label}", value, "s", digits=2, at_most=target)
    empty, done = night["queue_empty_s"], night["all_delivered_s"]
    report.figure("load stop to an empty webhook queue", 999 if empty is None else empty, "s",
                  at_most=15, note=f"{len(late)} retries")  # fmt: skip
    report.figure("load stop to every delivery delivered", 999 if done is None else done, "s",
                  note="a retry comes 15 s after its 500")  # fmt: skip
    return report.done()


if __name__ == "__main__":
    raise SystemExit(main())
