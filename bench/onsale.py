"""An on-sale rush: ticket creation on a production-like server, driven by wrk, as ratios.

Run on PostgreSQL (`DATABASE_URL`) and Redis (`REDIS_URL`), from the repository root, with wrk
installed:

    python bench/onsale.py                          # 8 workers, 10 s per workload
    python bench/onsale.py --workers 2 --seconds 5

It creates a database of its own (the server's name plus `_onsale_bench`), one event with a
"hot" ticket type, 16 more and a small one (`--small` places), a staff member's token, and
starts gunicorn with `deploy/gunicorn.conf.py` and the production settings. Each workload is one
wrk run of `--seconds` at `--connections` (bounded in time by wrk's `-d` and in count by the
script, which stops a thread after `--max-requests` answers), every creation with an
`external_id` of its own (the run, wrk's thread and a counter):

- `GET /info`: no token, no database; the baseline the creations are a ratio to;
- creation on one ticket type: every sale waits for that type's row lock (the capacity claim);
- the same load spread over 16 types: the same work, hardly any waiting for one another;
- a small type (`--small` places) and `--buyers` connections each buying at once: it must end
  at exactly `--small` tickets.

Every creation answered 200 with `"idempotent": false` is counted by wrk's `response`
callback, and the database is checked afterwards: each type's `sold_count` equals its
non-revoked tickets, and no type is over its quantity. wrk's own CPU (user + system, from
`/proc/<pid>/stat`) is reported as a share of one core and of the machine over its run.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import seed, settle  # noqa: E402
from bench._harness import Gunicorn, free_port, own_database, release_database  # noqa: E402

WRK = os.environ.get("WRK", "wrk")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# One script for every workload: without `BODY`, GET /info; with it, a creation with a distinct
# `external_id` per request and a ticket type from `TYPES` in turn, each thread `MAX_PER_THREAD`
# of them at most. `response` counts what came back and stops the thread at its share.
LUA = r"""
local threads = {}
local next_id = 0

function setup(thread)
  next_id = next_id + 1
  thread:set("tid", next_id)
  table.insert(threads, thread)
end

function init(args)
  counter = 0
  answers = 0
  created = 0
  replays = 0
  statuses = {}
  limit = tonumber(MAX_PER_THREAD)
end

request = function()
  counter = counter + 1
  if BODY == "" or counter > limit then
    -- GET /info; or, once this thread has sent its share of purchases, a filler that buys
    -- nothing while the answers to its purchases come back
    return wrk.format("GET", INFO)
  end
  local type_id = TYPES[(counter % #TYPES) + 1]
  local body = string.format(BODY, type_id, counter, RUN .. "-" .. tid .. "-" .. counter)
  return wrk.format(METHOD, PATH, HEADERS, body)
end

response = function(status, headers, body)
  if BODY ~= "" and status == 200 and not string.find(body, '"idempotent"', 1, true) then
    return  -- a filler's answer
  end
  answers = answers + 1
  statuses[status] = (statuses[status] or 0) + 1
  if status == 200 and BODY ~= "" then
    if string.find(body, '"idempotent":false', 1, true) then
      created = created + 1
    else
      replays = replays + 1
    end
  end
  if answers >= limit then
    wrk.thread:stop()
  end
end

done = function(summary, latency, requests)
  local result = {created = 0, replays = 0, answers = 0, statuses = {}}
  for _, thread in ipairs(threads) do
    result.created = result.created + thread:get("created")
    result.replays = result.replays + thread:get("replays")
    result.answers = result.answers + thread:get("answers")
    for status, count in pairs(thread:get("statuses")) do
      local key = tostring(status)
      result.statuses[key] = (result.statuses[key] or 0) + count
    end
  end
  local parts = {}
  for status, count in pairs(result.statuses) do
    table.insert(parts, string.format('"%s": %d', status, count))
  end
  io.write(string.format(
    'RESULT {"created": %d, "replays": %d, "answers": %d, "requests": %d, "seconds": %f, '
    .. '"p50_ms": %f, "p99_ms": %f, "socket_errors": %d, "statuses": {%s}}\n',
    result.created, result.replays, result.answers, summary.requests,
    summary.duration / 1e6, latency:percentile(50) / 1e3, latency:percentile(99) / 1e3,
    summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.timeout,
    table.concat(parts, ", ")))
end
"""


@dataclass
class Run:
    name: str
    rate: float  # answers per second
    created: int
    replays: int
    answers: int
    statuses: dict[str, int]
    socket_errors: int
    p50_ms: float
    p99_ms: float
    wrk_cpu_seconds: float
    wrk_wall_seconds: float  # the process's life

    @property
    def wrk_core_share(self) -> float:
        return self.wrk_cpu_seconds / self.wrk_wall_seconds


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU of a live process, from /proc/<pid>/stat (fields 14 and 15)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def wrk(
    name: str,
    port: int,
    *,
    path: str,
    seconds: float,
    connections: int,
    threads: int,
    max_requests: int,
    token: str | None = None,
    type_ids: list[int] | None = None,
) -> Run:
    """One wrk run, bounded by `seconds` and (per thread) `max_requests / threads` answers."""
    run = secrets.token_hex(3)
    lua_globals = {
        "METHOD": "POST",
        "PATH": path,
        "INFO": "/api/public/info",
        "RUN": f"{name[:8].replace(' ', '_')}-{run}",
        "MAX_PER_THREAD": str(max(1, max_requests // threads)),
        "BODY": "",
    }
    prelude = "".join(f"{key} = {json.dumps(value)}\n" for key, value in lua_globals.items())
    if type_ids:
        body = (
            '{"ticket_type_id": %d, "firstname": "Anan", "lastname": "Wong", '
            '"email": "buyer%d@bench.example", "phone": "0812345678", "external_id": "%s"}'
        )
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        prelude += f"BODY = {json.dumps(body)}\n"
        prelude += "HEADERS = {" + ", ".join(f'["{k}"] = "{v}"' for k, v in headers.items())
        prelude += "}\n"
        prelude += "TYPES = {" + ", ".join(str(t) for t in type_ids) + "}\n"
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(prelude + LUA)
    command = [
        WRK, f"-t{threads}", f"-c{connections}", f"-d{seconds:.0f}s", "--timeout", "10s",
        "-s", script.name, f"http://127.0.0.1:{port}{path}",
    ]  # fmt: skip
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cpu = 0.0
    try:
        while process.poll() is None:
            cpu = _cpu_seconds(process.pid) or cpu  # the last reading before it exits
            if time.monotonic() - started > seconds + 30:
                process.kill()
                raise RuntimeError(f"wrk ({name}) did not stop")
            time.sleep(0.05)
        output = process.stdout.read()
    finally:
        os.unlink(script.name)
    wall = time.monotonic() - started
    lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"wrk ({name}) gave no result:\n{output}")
    result = json.loads(lines[-1].removeprefix("RESULT "))
    return Run(
        name=name,
        rate=result["answers"] / result["seconds"],
        created=result["created"],
        replays=result["replays"],
        answers=result["answers"],
        statuses=result["statuses"],
        socket_errors=result["socket_errors"],
        p50_ms=result["p50_ms"],
        p99_ms=result["p99_ms"],
        wrk_cpu_seconds=cpu,
        wrk_wall_seconds=wall,
    )


def check_sold(type_ids: list[int]) -> dict[int, tuple[int, int, int]]:
    """(quantity, sold_count, non-revoked tickets) of each type."""
    from django.db.models import Count

    from events.models import TicketType
    from tickets.models import Ticket

    live = dict(
        Ticket.objects.filter(ticket_type_id__in=type_ids)
        .exclude(status=Ticket.Status.REVOKED)
        .values("ticket_type_id")
        .annotate(n=Count("id"))
        .values_list("ticket_type_id", "n")
    )
    return {
        t.id: (t.quantity, t.sold_count, live.get(t.id, 0))
        for t in TicketType.objects.filter(id__in=type_ids)
    }


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10, help="Seconds per workload.")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections.")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads.")
    parser.add_argument("--max-requests", type=int, default=50_000, help="Answers per workload.")
    parser.add_argument("--workers", type=int, default=8, help="gunicorn workers.")
    parser.add_argument("--small", type=int, default=100, help="Places of the small type.")
    parser.add_argument("--buyers", type=int, default=2_000, help="Buyers of the small type.")
    parser.add_argument(
        "--rush-seconds", type=float, default=20, help="At most, for the small type's buyers."
    )
    parser.add_argument("--port", type=int, default=0, help="Loopback port (0: a free one).")
    parser.add_argument("--keep-db", action="store_true", help="Do not drop the bench database.")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    port = args.port or free_port()
    bench_url, env = own_database(
        "onsale_bench",
        API_RATE_LIMIT="100000000/m",  # far above what the bench reaches
        CACHE_KEY_PREFIX=f"onsale-bench-{secrets.token_hex(3)}",
    )
    data = seed(tickets=0, gates=2, label="onsale")
    token = data.gate_tokens[1]  # a staff member's user token, scope `public organizer`
    from events.models import TicketType

    def new_type(name: str, quantity: int) -> int:
        return TicketType.objects.create(
            event_id=data.event_id, name=name, price=150000, quantity=quantity
        ).id

    hot = new_type("Hot", 10**7)
    spread = [new_type(f"Zone {n}", 10**7) for n in range(16)]
    small = new_type("Small", args.small)
    path = f"{data.event_path}/tickets"

    server = Gunicorn(port=port, env=env, workers=args.workers, name="onsale-bench")
    server.start()
    runs: list[Run] = []
    try:
        server.wait_ready()
        workers = len(server.worker_pids())
        print(f"gunicorn on 127.0.0.1:{port}, {workers} workers", flush=True)
        common = dict(seconds=args.seconds, threads=args.threads, max_requests=args.max_requests)
        # Untimed: every worker's connections, caches and token lookups warm.
        wrk("warm-up", port, path=path, connections=args.connections, seconds=2,
            threads=args.threads, max_requests=2_000, token=token, type_ids=spread)  # fmt: skip
        for name, kwargs in [
            ("GET /info", dict(path="/api/public/info")),
            ("create, one type", dict(path=path, token=token, type_ids=[hot])),
            ("create, 16 types", dict(path=path, token=token, type_ids=spread)),
        ]:
            settle()
            runs.append(wrk(name, port, connections=args.connections, **common, **kwargs))
            print(f"  {name:<18} {runs[-1].rate:8.1f} answers/s", flush=True)
        settle()
        rush = wrk(
            f"{args.small} places, {args.buyers} buyers",
            port,
            path=path,
            seconds=args.rush_seconds,
            connections=args.buyers,
            threads=args.threads,
            max_requests=args.buyers,
            token=token,
            type_ids=[small],
        )
        runs.append(rush)
    finally:
        server.stop()
    sold = check_sold([hot, *spread, small])
    release_database(bench_url, keep=args.keep_db)

    info, one, many = runs[0], runs[1], runs[2]
    info_rate = info.rate or float("nan")
    print(
        f"\n{workers} gunicorn workers; wrk -t{args.threads} -c{args.connections}, "
        f"{args.seconds:.0f} s per workload; ratios to GET /info in this run"
    )
    header = (
        f"{'workload':<26} {'answers/s':>9} {'created':>8} {'p50 ms':>7} {'p99 ms':>8} "
        f"{'vs /info':>8} {'wrk core':>8}  statuses"
    )
    print(header)
    print("-" * len(header))
    for run in runs:
        print(
            f"{run.name:<26} {run.rate:9.1f} {run.created:8d} {run.p50_ms:7.1f} {run.p99_ms:8.1f} "
            f"{run.rate / info_rate:8.1%} {run.wrk_core_share:8.0%}  {run.statuses}"
            + (f" socket errors {run.socket_errors}" if run.socket_errors else "")
        )
    if many.rate:
        print(f"creation on one type / spread over 16 types: {one.rate / many.rate:.2f}x")
    cores = os.cpu_count() or 1
    print(
        "wrk's CPU (user + system, /proc/<pid>/stat): "
        + ", ".join(
            f"{run.name} {run.wrk_cpu_seconds:.1f} s = {run.wrk_core_share / cores:.0%} of "
            f"{cores} cores"
            for run in runs
        )
    )

    failures = []
    for type_id, (quantity, sold_count, live) in sold.items():
        if sold_count != live or live > quantity:
            failures.append(f"type {type_id}: quantity {quantity}, sold {sold_count}, live {live}")
    created_by_db = {"create, one type": sold[hot][2], "create, 16 types": 0}
    created_by_db["create, 16 types"] = sum(sold[t][2] for t in spread)
    warm = sum(sold[t][2] for t in spread) - many.created
    print(
        f"oversold: {len(failures)} types; sold_count = non-revoked tickets for all "
        f"{len(sold)} types" + ("" if not failures else f" EXCEPT {failures}")
    )
    print(
        f"one type: {one.created} answered 200 idempotent:false, {sold[hot][2]} in the database "
        f"(the rest answered after wrk stopped reading); 16 types: {many.created} answered, "
        f"{warm} more in the database (the warm-up's and unread answers)"
    )
    print(
        f"small type: {sold[small][2]} tickets of {args.small} places, sold_count "
        f"{sold[small][1]}, {rush.created} answered 200 idempotent:false, "
        f"{rush.statuses.get('422', 0)} answered 422"
    )
    if rush.answers < args.buyers:
        print(f"small type: only {rush.answers} of {args.buyers} buyers answered in time")
    exact = sold[small][1] == sold[small][2] == rush.created == args.small
    if not exact:
        failures.append("the small type did not end at exactly its places")
    if any(run.socket_errors for run in runs[:3]):
        failures.append("socket errors")
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
