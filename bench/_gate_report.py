"""The table `bench/gate.py` prints: each workload's figures, its ratios with issue 29's targets,
and wrk's own CPU share."""

from __future__ import annotations

import os
import statistics
from typing import TYPE_CHECKING

from bench._harness import percentile

if TYPE_CHECKING:
    from bench.gate import Workload

INFO = "GET /info"
SCAN = "scan-by-code, simple"

# (workload, target, of what): issue 29's Must show.
TARGETS = {
    "GET /organizers": (0.40, INFO),
    "list page of 50": (0.10, INFO),
    SCAN: (0.30, INFO),
    "check-in by id": (0.35, INFO),
    "scan, 1 check-in type": (0.80, SCAN),
    "scan, 2 check-in types": (0.80, SCAN),
    "refusal: already used": (0.90, SCAN),
    "refusal: unknown code": (0.90, SCAN),
}


def _connections(worker_class: str) -> str:
    if worker_class == "sync":
        return "a new connection per request (sync workers close each)"
    return "connections kept open (gthread, 4 threads a worker)"


def report(args, plan: list[Workload], rounds: dict, beside: dict, workers: int) -> int:
    """Each ratio is to the `/info` run beside the workload's (`beside`), or of two such."""

    def to_neighbour(name: str) -> list[float]:
        pairs = zip(rounds[name], beside[name], strict=True)
        return [run.rate / info.rate if info.rate else 0.0 for run, info in pairs]

    def ratios(name: str, of: str) -> list[float]:
        if of == INFO:
            return to_neighbour(name)
        pairs = zip(to_neighbour(name), to_neighbour(of), strict=True)
        return [mine / theirs for mine, theirs in pairs if theirs]

    print(
        f"\n{len(rounds[INFO])} round(s); each workload {args.seconds:.0f} s, wrk -t{args.threads} "
        f"-c{args.connections}, {_connections(args.worker_class)}; {workers} gunicorn "
        f"{args.worker_class} workers; "
        "median rate of the rounds, p50/p99 of the median round, ratios (to the /info run "
        "beside each): median of the rounds' (range in brackets)"
    )
    header = (
        f"{'workload':<24} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'SQL/req':>7} {'Redis':>5} "
        f"{'vs /info':>8} {'vs scan':>8} {'target':>12} {'wrk core':>8} {'server':>6} {'CPU ms':>6}"
        f" {'by CPU':>6}  non-expected"
    )
    print(header)
    print("-" * len(header))
    failed = False
    cores = os.cpu_count() or 1

    def cpu_ms(name: str) -> float:
        return statistics.median(
            r.server_cpu_seconds * 1000 / max(1, r.requests) for r in rounds[name]
        )

    for workload in plan:
        runs = rounds[workload.name]
        middle = sorted(runs, key=lambda run: run.rate)[len(runs) // 2]
        vs_info = ratios(workload.name, INFO)
        scan_target = workload.name == SCAN or TARGETS.get(workload.name, (0, ""))[1] == SCAN
        vs_scan = ratios(workload.name, SCAN) if scan_target else []
        target_text, met = "", True
        if workload.name in TARGETS:
            target, of = TARGETS[workload.name]
            value = statistics.median(vs_info if of == INFO else vs_scan)
            met = value >= target
            verdict = "ok" if met else "MISS"
            target_text = f"≥{target:.0%} {'/info' if of == INFO else 'scan'} {verdict}"
        bad = {}
        for run in runs:
            for status, count in run.unexpected(workload.expected).items():
                bad[status] = bad.get(status, 0) + count
            if run.socket_errors:
                bad["socket errors"] = bad.get("socket errors", 0) + run.socket_errors
            if run.exhausted:
                bad["ran out of tickets"] = bad.get("ran out of tickets", 0) + run.exhausted
        failed = failed or bool(bad)

        def cell(values: list[float]) -> str:
            if not values:
                return f"{'':>8}"
            spread = f"[{min(values):.0%}–{max(values):.0%}]" if len(values) > 1 else ""
            return f"{statistics.median(values):8.1%}" + (f" {spread}" if spread else "")

        print(
            f"{workload.name:<24} {statistics.median(r.rate for r in runs):7.1f} "
            f"{middle.p50_ms:7.1f} {middle.p99_ms:7.1f} {middle.sql_per_request:7.2f} "
            f"{middle.redis_per_request:5.2f} {cell(vs_info)} {cell(vs_scan)} {target_text:>12} "
            f"{statistics.median(r.wrk_core_share for r in runs):8.0%} "
            f"{statistics.median(r.server_core_share for r in runs):6.0%} "
            f"{cpu_ms(workload.name):6.2f} {cpu_ms(INFO) / (cpu_ms(workload.name) or 1):6.1%}"
            f"  {bad or '-'}"
        )
    all_runs = [run for runs in rounds.values() for run in runs]
    wrk_cpu = sum(run.wrk_cpu_seconds for run in all_runs)
    server_cpu = sum(run.server_cpu_seconds for run in all_runs)
    wall = sum(run.wall_seconds for run in all_runs)
    print(
        f"wrk's own CPU over the timed runs: {wrk_cpu:.1f} s in {wall:.0f} s = "
        f"{wrk_cpu / wall:.0%} of one core, {wrk_cpu / wall / cores:.0%} of the machine's {cores} "
        f"cores; the gunicorn workers' {server_cpu / wall:.0%} of one core "
        f"(wrk = {wrk_cpu / (wrk_cpu + server_cpu):.0%} of the two's CPU)"
    )
    p99 = percentile([run.p99_ms for run in rounds[SCAN]], 50)
    print(f"{SCAN}: p99 {p99:.1f} ms (median of the rounds' p99)")
    return 1 if failed else 0
