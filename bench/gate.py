"""The gate's workloads on a production-like server, driven by wrk, as ratios, in one run.

Run on PostgreSQL (`DATABASE_URL`) and Redis (`REDIS_URL`), with wrk installed, from the
repository root:

    python bench/gate.py --rounds 3         # or: make bench-gate
    python bench/gate.py --seconds 10 --workers 2 --extra

It creates a database of its own (the server's name plus `_gate_bench`), seeds two events
(`bench/_data.py`): one in simple mode, one with two check-in types ("Entrance", "VIP Lounge").
It starts gunicorn with `deploy/gunicorn.conf.py` and the production settings plus a counting
middleware (`bench/gate_settings.py`, `bench/_counting.py`: SQL statements and Redis round trips
counted in the server, on the drivers, per request). Each workload is one wrk run
(`bench/_wrk.py`) of `--seconds` at `--connections`, after an untimed second of its own. The
workers are the deploy's (`--worker-class gthread`: 4 threads each, connections kept open) or
`--worker-class sync` (one thread; each request opens a connection, as a gate through a proxy
that does not keep them):

- `GET /info`: no token, no database; the baseline of the first ratios;
- `GET /organizers`: the trivial authenticated GET;
- a list page of 50, pages drawn at random over the simple event;
- scan-by-code check-in in simple mode, each scan a ticket not admitted yet;
- check-in by id (`POST .../tickets/{t}/checkin`), each a ticket not admitted yet;
- scan-by-code in multi mode with `check_in_type_ids` of 1 type and of 2 types;
- refusals: scan-by-code of an already used ticket (422) and of an unknown code (404).

With `--extra`, find by code (event-scoped and global) and `q=` too. This machine's speed drifts
by tens of percent within minutes, so every workload's run follows a `GET /info` run of its own,
of the same length: its ratio to `/info` is to that neighbour, and its ratio to the simple scan
(the multi-mode scans and the refusals) is of the two ratios to their neighbours. Issue 29's
targets stand beside them. With `--rounds N` every workload runs N times, in turn (the events'
tickets made active again between rounds), and each ratio is the median of its rounds' ratios.
A workload after one that wrote starts from a vacuumed and checkpointed database
(`bench._data.settle`).

wrk's own CPU and the gunicorn workers' are read from /proc over each run and printed as
shares of one core: what the generator took from the server on a machine they share. `CPU ms`
is the workers' CPU per answer, which other load on the machine moves less than a rate, and
`by CPU` the ratio to `GET /info` it gives (`/info`'s CPU per answer over the workload's).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import _wrk  # noqa: E402
from bench._data import BenchData, reference_codes, reopen, seed, settle  # noqa: E402
from bench._gate_report import INFO, SCAN, report  # noqa: E402
from bench._harness import Gunicorn, free_port, own_database, release_database  # noqa: E402

USED = 500  # tickets kept used, for the refusals


@dataclass
class Workload:
    name: str
    load: _wrk.Load
    expected: set[int]
    writes: bool = False
    pool: list | None = None  # items each run takes its own slice of (not yet admitted)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=6, help="Timed seconds per workload.")
    parser.add_argument("--connections", type=int, default=8, help="wrk connections (gates).")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads.")
    parser.add_argument("--rounds", type=int, default=1, help="Each ratio: median of rounds'.")
    parser.add_argument("--port", type=int, default=0, help="Loopback port (0: a free one).")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers.")
    parser.add_argument(
        "--worker-class",
        choices=("gthread", "sync"),
        default="gthread",
        help="gunicorn's worker class (gthread: the deploy's, 4 threads; sync: one thread).",
    )
    parser.add_argument("--per-second", type=int, default=900, help="Tickets per timed second.")
    parser.add_argument(
        "--shared-socket",
        dest="reuse_port",
        action="store_false",
        help="The workers share one listening socket, as deployed (default: one each).",
    )
    parser.add_argument("--extra", action="store_true", help="Also find by code and q=.")
    parser.add_argument("--json", type=Path, help="Also write the rounds' figures here.")
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


def seed_events(per_run: int):
    """The simple event (scans, check-ins by id, used tickets) and the multi-mode one."""
    warm = max(200, per_run // 5)
    simple = seed(tickets=2 * (warm + per_run) + USED, gates=8, label="gate")
    multi, types = seed_multi_event(tickets=2 * (warm + per_run), label="gate-multi")
    n = warm + per_run
    return (
        simple,
        multi,
        types,
        {
            "scan": reference_codes(simple, simple.ticket_ids[:n]),
            "by id": simple.ticket_ids[n : 2 * n],
            "used": reference_codes(simple, simple.ticket_ids[2 * n :]),
            "multi 1": reference_codes(multi, multi.ticket_ids[:n]),
            "multi 2": reference_codes(multi, multi.ticket_ids[n:]),
        },
        warm,
    )


def mark_used(event_id: int, codes: list[str]) -> None:
    from django.utils import timezone

    from tickets.models import Ticket

    Ticket.objects.filter(event_id=event_id, reference_code__in=codes).update(
        status=Ticket.Status.USED, used_at=timezone.now()
    )


def workloads(simple, multi, types, pools, *, pages: int, extra: bool) -> list[Workload]:
    scan = "/tickets/checkin"
    code = '{"reference_code": "%s"}'

    def load(path, data, **kwargs):
        return _wrk.Load(path, tokens=data.gate_tokens, **kwargs)

    post = dict(method="POST")
    found = [
        Workload(INFO, _wrk.Load("/api/public/info"), {200}),
        Workload("GET /organizers", load("/api/public/organizers", simple), {200}),
        Workload(
            "list page of 50",
            load(
                f"{simple.event_path}/tickets?per_page=50&page=%s",
                simple,
                items=list(range(1, pages + 1)),
                random=True,
            ),
            {200},
        ),
        Workload(
            SCAN,
            load(simple.event_path + scan, simple, body=code, **post),
            {200},
            True,
            pools["scan"],
        ),
        Workload(
            "check-in by id",
            load(f"{simple.event_path}/tickets/%s/checkin", simple, body="{}", **post),
            {200},
            True,
            pools["by id"],
        ),
        Workload(
            "scan, 1 check-in type",
            load(multi.event_path + scan, multi, body=multi_scan_body(types[:1]), **post),
            {200},
            True,
            pools["multi 1"],
        ),
        Workload(
            "scan, 2 check-in types",
            load(multi.event_path + scan, multi, body=multi_scan_body(types), **post),
            {200},
            True,
            pools["multi 2"],
        ),
        Workload(
            "refusal: already used",
            load(
                simple.event_path + scan,
                simple,
                body=code,
                items=pools["used"],
                random=True,
                **post,
            ),
            {422},
            True,
        ),
        Workload(
            "refusal: unknown code",
            load(
                simple.event_path + scan,
                simple,
                body=code,
                random=True,
                items=[f"NOSUCH{n:06d}" for n in range(5000)],
                **post,
            ),
            {404},
            True,
        ),
    ]
    if extra:
        codes = pools["scan"] + pools["used"]
        found += [
            Workload(
                "find by code, event",
                load(
                    f"{simple.event_path}/tickets/search?reference_code=%s",
                    simple,
                    items=codes,
                    random=True,
                ),
                {200},
            ),
            Workload(
                "find by code, global",
                load(
                    f"/api/public/tickets/search?event_id={simple.event_id}&reference_code=%s",
                    simple,
                    items=codes,
                    random=True,
                ),
                {200},
            ),
            Workload(
                "q= on event tickets",
                load(
                    f"{simple.event_path}/tickets?q=%s",
                    simple,
                    random=True,
                    items=list(range(len(simple.ticket_ids))),
                ),
                {200},
            ),
        ]
    return found


def main() -> int:
    args = parse_args()
    port = args.port or free_port()
    bench_url, env = own_database(
        "gate_bench",
        DJANGO_SETTINGS_MODULE="bench.gate_settings",
        # Far above what the bench reaches: the limiter's round trip still happens each call.
        API_RATE_LIMIT="100000000/m",
        CACHE_KEY_PREFIX="gate-bench",
        GUNICORN_WORKER_CLASS=args.worker_class,
        GUNICORN_REUSE_PORT="1" if args.reuse_port else "0",
    )
    per_run = int(args.per_second * args.seconds)
    simple, multi, types, pools, warm = seed_events(per_run)
    pages = max(1, len(simple.ticket_ids) // 50)
    plan = workloads(simple, multi, types, pools, pages=pages, extra=args.extra)
    server = Gunicorn(port=port, env=env, workers=args.workers, name="gate-bench")
    server.start()
    rounds: dict[str, list[_wrk.WrkRun]] = {w.name: [] for w in plan}
    beside: dict[str, list[_wrk.WrkRun]] = {w.name: [] for w in plan}  # each run's `/info`
    try:
        server.wait_ready()
        workers = len(server.worker_pids())
        print(f"gunicorn on 127.0.0.1:{port}, {workers} workers, wrk -t{args.threads} "
              f"-c{args.connections}", flush=True)  # fmt: skip
        for number in range(1, args.rounds + 1):
            for data in (simple, multi):
                reopen(data.event_id)
            mark_used(simple.event_id, pools["used"])
            settle()
            wrote = False
            for workload in plan:
                if wrote:
                    settle()  # from the same settled database (`bench._data.settle`)
                common = dict(connections=args.connections, threads=args.threads,
                              server_pids=server.worker_pids)  # fmt: skip
                warm_load, timed_load = workload.load, workload.load
                if workload.pool is not None:
                    warm_load = _copy(workload.load, workload.pool[:warm])
                    timed_load = _copy(workload.load, workload.pool[warm:])
                if workload.name != INFO:  # its neighbour, the baseline of its ratios
                    info = _wrk.run(INFO, port, plan[0].load, seconds=args.seconds, **common)
                    beside[workload.name].append(info)
                _wrk.run("warm-up", port, warm_load, seconds=1, **common)
                result = _wrk.run(workload.name, port, timed_load, seconds=args.seconds, **common)
                rounds[workload.name].append(result)
                wrote = workload.writes
                print(f"  {number}: {workload.name:<24} {result.rate:8.1f} req/s  "
                      f"wrk {result.wrk_core_share:4.0%} of a core", flush=True)  # fmt: skip
    finally:
        server.stop()
        release_database(bench_url, keep=args.keep_db)
    if args.json:
        args.json.write_text(json.dumps({k: [r.__dict__ for r in v] for k, v in rounds.items()}))
    beside[INFO] = rounds[INFO]
    return report(args, plan, rounds, beside, workers)


def _copy(load: _wrk.Load, items: list) -> _wrk.Load:
    return _wrk.Load(**{**load.__dict__, "items": items})


if __name__ == "__main__":
    raise SystemExit(main())
