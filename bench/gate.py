"""The gate's workloads on a production-like server, driven by wrk, as ratios, in one run.

    python bench/gate.py --rounds 3         # or: make bench-gate
    python bench/gate.py --seconds 10 --workers 2
    python bench/gate.py --only scan,signed,scan_id --rounds 5   # the three scans, alternately

On PostgreSQL (`DATABASE_URL`), Redis (`REDIS_URL`) and wrk: two events (`bench/_data.py`,
signed codes on), one in simple mode, one with check-in types "Entrance" and "VIP Lounge";
gunicorn with `deploy/gunicorn.conf.py` and the production settings plus a counting middleware
(`bench/gate_settings.py`: SQL statements and Redis round trips per request, on the drivers).
Each workload is one wrk run (`bench/_wrk.py`) of `--seconds` at `--connections`, after an
untimed second, on the deploy's gthread workers or `--worker-class sync` (a connection per
request). Workloads (`--only`'s keys): `info` (`GET /info`, the baseline), `organizers`, `list`
(a random page of 50), `scan` (scan-by-code, a ticket not admitted yet), `signed` (by its signed
code, CONTRACT §14), `scan_id` (with a distinct `scan_id`, CONTRACT §7), `by_id` (check-in by
id), `multi1`/`multi2` (1 and 2 check-in types), `used`/`unknown` (refusals, 422 and 404).

The machine's speed drifts by tens of percent within minutes, so every workload's run follows a
`GET /info` run of its own: its ratio to `/info` is to that neighbour, its ratio to the printed
scan the quotient of the two. `--rounds N` runs the workloads in turn N times (tickets and scan
ids made fresh between rounds), each ratio the rounds' median; a workload after one that wrote
starts from a vacuumed and checkpointed database. `CPU ms` is the workers' CPU per answer
(/proc), which other load moves less than a rate; `by CPU` the ratio to `/info` it gives.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import _wrk  # noqa: E402
from bench._data import BenchData, reference_codes, reopen, seed, settle, signed_codes  # noqa: E402
from bench._harness import Stack  # noqa: E402
from bench._report import Report, median  # noqa: E402

USED = 500  # tickets kept used, for the refusals
INFO, SCAN = "GET /info", "scan, printed code"
# (target, of what): issue 29's; issue 44's signed code within 15% of the printed one; issue
# 42's scan with scan_id within 10% of one without.
TARGETS = {
    "GET /organizers": (0.40, INFO),
    "list page of 50": (0.10, INFO),
    SCAN: (0.30, INFO),
    "scan, signed code": (0.85, SCAN),
    "scan, with scan_id": (0.90, SCAN),
    "check-in by id": (0.35, INFO),
    "scan, 1 check-in type": (0.80, SCAN),
    "scan, 2 check-in types": (0.80, SCAN),
    "refusal: already used": (0.90, SCAN),
    "refusal: unknown code": (0.90, SCAN),
}


@dataclass
class Workload:
    key: str
    name: str
    load: _wrk.Load
    expected: int
    pool: str = ""  # the pool of tickets not admitted yet each run takes its own slice of


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=6, help="Timed seconds per workload.")
    parser.add_argument("--connections", type=int, default=8, help="wrk connections (gates).")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads.")
    parser.add_argument("--rounds", type=int, default=1, help="Each ratio: median of rounds'.")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers.")
    parser.add_argument("--worker-class", choices=("gthread", "sync"), default="gthread",
                        help="gthread: the deploy's, 4 threads; sync: one thread.")  # fmt: skip
    parser.add_argument("--per-second", type=int, default=900, help="Tickets per timed second.")
    parser.add_argument("--shared-socket", dest="reuse_port", action="store_false",
                        help="The workers share one listening socket, as deployed.")  # fmt: skip
    parser.add_argument("--only", default="", help="Workload keys, comma-separated (+ info).")
    parser.add_argument("--keep-db", action="store_true", help="Do not drop the bench database.")
    return parser.parse_args()


def seed_multi_event(*, tickets: int, label: str) -> tuple[BenchData, list[int]]:
    """An event in multi mode (check-in types "Entrance" and "VIP Lounge"), and the types' ids."""
    from events.models import CheckInType

    multi = seed(tickets=tickets, gates=8, label=label)
    types = [
        CheckInType.objects.create(event_id=multi.event_id, name=name, position=n).pk
        for n, name in enumerate(("Entrance", "VIP Lounge"))
    ]
    return multi, types


def multi_scan_body(type_ids: list[int]) -> str:
    """A scan-by-code body (the code left as `%s`) asking for the check-in types `type_ids`."""
    return '{"reference_code": "%s", "check_in_type_ids": ' + json.dumps(type_ids) + "}"


def seed_events(n: int):
    """The simple event (its pools of fresh tickets, the used ones) and the multi-mode one."""
    simple = seed(tickets=4 * n + USED, gates=8, label="gate")
    multi, types = seed_multi_event(tickets=2 * n, label="gate-multi")
    ids = simple.ticket_ids
    pools = {
        "scan": reference_codes(simple, ids[:n]),
        "signed": signed_codes(simple, ids[n : 2 * n]),
        "scan_id": reference_codes(simple, ids[2 * n : 3 * n]),
        "by_id": ids[3 * n : 4 * n],
        "used": reference_codes(simple, ids[4 * n :]),
        "multi1": reference_codes(multi, multi.ticket_ids[:n]),
        "multi2": reference_codes(multi, multi.ticket_ids[n:]),
    }
    return simple, multi, types, pools


def workloads(simple, multi, types, pools) -> list[Workload]:
    event, scan = simple.event_path, simple.event_path + "/tickets/checkin"
    code = '{"reference_code": "%s"}'
    with_id = '{"reference_code": "%s", "scan_id": "s-%s"}'  # the code makes the id distinct
    unknown = [f"NOSUCH{n:06d}" for n in range(5000)]
    pages = list(range(1, max(1, len(simple.ticket_ids) // 50) + 1))
    found = [  # key, name, path, body, random items, expected status, data
        ("info", INFO, "/api/public/info", "", None, 200, None),
        ("organizers", "GET /organizers", "/api/public/organizers", "", None, 200, simple),
        ("list", "list page of 50", f"{event}/tickets?per_page=50&page=%s", "", pages, 200, simple),
        ("scan", SCAN, scan, code, None, 200, simple),
        ("signed", "scan, signed code", scan, code, None, 200, simple),
        ("scan_id", "scan, with scan_id", scan, with_id, None, 200, simple),
        ("by_id", "check-in by id", f"{event}/tickets/%s/checkin", "{}", None, 200, simple),
        ("multi1", "scan, 1 check-in type", multi.event_path + "/tickets/checkin",
         multi_scan_body(types[:1]), None, 200, multi),
        ("multi2", "scan, 2 check-in types", multi.event_path + "/tickets/checkin",
         multi_scan_body(types), None, 200, multi),
        ("used", "refusal: already used", scan, code, pools["used"], 422, simple),
        ("unknown", "refusal: unknown code", scan, code, unknown, 404, simple),
    ]  # fmt: skip
    plan = []
    for key, name, path, body, items, expected, data in found:
        load = _wrk.Load(path, method="POST" if body else "GET", body=body, items=items or [],
                         random=bool(items), tokens=data.gate_tokens if data else [])  # fmt: skip
        plan.append(Workload(key, name, load, expected, key if key in pools and not items else ""))
    return plan


def run_rounds(args, server, plan, pools, events, warm) -> tuple[dict, dict]:
    """Every workload of `plan` in turn, `--rounds` times, each after a `/info` run of its own."""
    rounds = {w.name: [] for w in plan}
    beside = {w.name: [] for w in plan}  # each run's `/info` neighbour
    common = dict(connections=args.connections, threads=args.threads,
                  server_pids=server.worker_pids)  # fmt: skip
    for number in range(1, args.rounds + 1):
        for data in events:
            reopen(data.event_id)
        mark_used(events[0].event_id, pools["used"])
        settle()
        wrote = False
        for workload in plan:
            if wrote:
                settle()  # from the same settled database (`bench._data.settle`)
            warm_load, timed_load = workload.load, workload.load
            if workload.pool:
                warm_load = replace(workload.load, items=pools[workload.pool][:warm])
                timed_load = replace(workload.load, items=pools[workload.pool][warm:])
            if workload.name != INFO:
                beside[workload.name].append(
                    _wrk.run(INFO, server.port, plan[0].load, seconds=args.seconds, **common)
                )
            _wrk.run("warm-up", server.port, warm_load, seconds=1, **common)
            result = _wrk.run(workload.name, server.port, timed_load, seconds=args.seconds,
                              **common)  # fmt: skip
            rounds[workload.name].append(result)
            wrote = workload.load.method == "POST"
            print(f"  {number}: {workload.name:<24} {result.rate:8.1f} req/s  "
                  f"wrk {result.wrk_core_share:4.0%} of a core", flush=True)  # fmt: skip
    beside[INFO] = rounds[INFO]
    return rounds, beside


def mark_used(event_id: int, codes: list[str]) -> None:
    from django.utils import timezone

    from tickets.models import Ticket

    Ticket.objects.filter(event_id=event_id, reference_code__in=codes).update(
        status=Ticket.Status.USED, used_at=timezone.now()
    )


def main() -> int:
    args = parse_args()
    with Stack(
        "gate_bench",
        keep_db=args.keep_db,
        DJANGO_SETTINGS_MODULE="bench.gate_settings",
        CACHE_KEY_PREFIX="gate-bench",
        GUNICORN_WORKER_CLASS=args.worker_class,
        GUNICORN_REUSE_PORT="1" if args.reuse_port else "0",
    ) as stack:
        per_run = int(args.per_second * args.seconds)
        warm = max(200, per_run // 5)
        simple, multi, types, pools = seed_events(warm + per_run)
        plan = workloads(simple, multi, types, pools)
        if args.only:
            keys = {"info", *args.only.split(",")}
            plan = [workload for workload in plan if workload.key in keys]
        server = stack.server(workers=args.workers)
        workers = len(server.worker_pids())
        print(f"gunicorn on 127.0.0.1:{server.port}, {workers} workers, wrk -t{args.threads} "
              f"-c{args.connections}", flush=True)  # fmt: skip
        rounds, beside = run_rounds(args, server, plan, pools, (simple, multi), warm)
    return report(args, plan, rounds, beside, workers)


def report(args, plan: list[Workload], rounds: dict, beside: dict, workers: int) -> int:
    """Each ratio is to the `/info` run beside the workload's (`beside`), or of two such."""

    def to_info(name: str) -> list[float]:
        pairs = zip(rounds[name], beside[name], strict=True)
        return [run.rate / info.rate if info.rate else 0.0 for run, info in pairs]

    def ratios(name: str, of: str) -> list[float]:
        if of == INFO:
            return to_info(name)
        return [a / b for a, b in zip(to_info(name), to_info(of), strict=True) if b]

    def cpu_ms(name: str) -> float:
        return median(r.server_cpu_seconds * 1000 / max(1, r.requests) for r in rounds[name])

    connections = "connections kept open (gthread)"
    if args.worker_class == "sync":
        connections = "a new connection per request (sync workers close each)"
    report = Report(
        f"the gate: {len(rounds[INFO])} round(s), each workload {args.seconds:.0f} s, wrk "
        f"-t{args.threads} -c{args.connections}, {connections}; {workers} gunicorn "
        f"{args.worker_class} workers; rates the rounds' median, p50/p99 of the median round"
    )
    rows = []
    for workload in plan:
        runs = rounds[workload.name]
        middle = sorted(runs, key=lambda run: run.rate)[len(runs) // 2]
        bad = {}
        for run in runs:
            for status, count in run.unexpected({workload.expected}).items():
                bad[status] = bad.get(status, 0) + count
            for what, count in (("socket errors", run.socket_errors),
                                ("ran out of tickets", run.exhausted)):  # fmt: skip
                if count:
                    bad[what] = bad.get(what, 0) + count
        if bad:
            report.check(False, f"{workload.name}: {bad}")
        vs_scan = ratios(workload.name, SCAN) if SCAN in rounds else []
        rows.append([
            workload.name, median(r.rate for r in runs), middle.p50_ms, middle.p99_ms,
            f"{middle.sql_per_request:.2f}", f"{middle.redis_per_request:.2f}",
            f"{median(ratios(workload.name, INFO)):.1%}",
            f"{median(vs_scan):.1%}" if vs_scan else "", f"{cpu_ms(workload.name):.2f}",
            f"{cpu_ms(INFO) / (cpu_ms(workload.name) or 1):.1%}",
            f"{median(r.wrk_core_share for r in runs):.0%}",
        ])  # fmt: skip
    report.table(["workload", "req/s", "p50 ms", "p99 ms", "SQL/req", "Redis", "vs /info",
                  "vs scan", "CPU ms", "by CPU", "wrk core"], rows)  # fmt: skip
    report.section("ratios: the median of the rounds' (range and ratio by CPU per answer noted)")
    for workload in plan:
        target, of = TARGETS.get(workload.name, (None, ""))
        if target is None or of not in rounds:
            continue
        values = ratios(workload.name, of)
        report.ratio(f"{workload.name} / {of}", median(values), at_least=target,
                     note=f"[{min(values):.0%}–{max(values):.0%}], by CPU "
                          f"{cpu_ms(of) / (cpu_ms(workload.name) or 1):.0%}")  # fmt: skip
    every = [run for runs in rounds.values() for run in runs]
    wall = sum(run.wall_seconds for run in every)
    wrk_cpu, server_cpu = (sum(getattr(r, k) for r in every)
                           for k in ("wrk_cpu_seconds", "server_cpu_seconds"))  # fmt: skip
    report.ratio("wrk's own CPU, of one core", wrk_cpu / wall,
                 note=f"the workers' {server_cpu / wall:.0%}; wrk "
                      f"{wrk_cpu / (wrk_cpu + server_cpu):.0%} of the two's CPU")  # fmt: skip
    if SCAN in rounds:
        report.figure(f"{SCAN}: p99", median(r.p99_ms for r in rounds[SCAN]), "ms")
    return report.done()


if __name__ == "__main__":
    raise SystemExit(main())
