"""The table `bench/isolation.py` prints: its figures beside issue 28's targets."""

from __future__ import annotations

import statistics

from bench._harness import percentile

UPLOAD_TARGET_S = 1.5
DELAY_TARGET_S = 5.0


def report(args, upload_times, quiet, busy, stats, answered, hung, token_runs) -> int:
    misses = []

    def verdict(ok: bool, what: str) -> str:
        if not ok:
            misses.append(what)
        return "ok" if ok else "MISS"

    server = f"{args.workers} {args.worker_class or 'deploy default'} workers"
    if args.threads:
        server += f" × {args.threads} threads"
    if upload_times is None:  # --only-tokens
        print(f"\n{server}")
        _tokens(token_runs, verdict)
        print(f"\nmissed: {', '.join(misses) or 'nothing'}")
        return 1 if misses else 0
    print(f"\n1. 500-scan batch uploads, PostgreSQL, {server}")
    for kind, seconds in upload_times.items():
        print(
            f"   {kind:<22} {seconds:7.3f} s   ≤ {UPLOAD_TARGET_S} s "
            f"{verdict(seconds <= UPLOAD_TARGET_S, kind)}"
        )
    print(
        f"\n2. online scan-by-code (multi mode, 1 type), wrk -c{args.gates}, {args.seconds:.0f} s"
    )
    for run in (quiet, busy):
        print(
            f"   {run.name:<30} {run.rate:7.1f} scans/s  p50 {run.p50_ms:6.1f} ms  "
            f"p99 {run.p99_ms:7.1f} ms  max {run.max_ms:7.1f} ms  wrk {run.wrk_core_share:.0%} "
            f"of a core  non-200 {run.unexpected({200}) or '-'}"
        )
    ratio = busy.p99_ms / quiet.p99_ms if quiet.p99_ms else float("nan")
    print(
        f"   p99 with uploads / without: {ratio:.2f}× (≤ 3×) {verdict(ratio <= 3, 'p99 ratio')}; "
        f"slowest online scan {busy.max_ms / 1000:.2f} s (≤ 1 s) "
        f"{verdict(busy.max_ms <= 1000, 'max wait')}"
    )
    print(
        f"   meanwhile: {stats['uploads']} uploads applied ({stats['scans']} scans, slowest "
        f"{stats['slowest']:.2f} s), {stats['refused']} refused by an upload cap (429)"
    )
    if answered is not None:
        _background_and_tokens(answered, hung, token_runs, verdict)
    print(f"\nmissed: {', '.join(misses) or 'nothing'}")
    return 1 if misses else 0


def _background_and_tokens(answered, hung, token_runs, verdict) -> None:
    print("\n3. organizer B: 20 endpoints that never answer, 200 pings queued; A's tickets")
    for name, result in (("SMTP answering", answered), ("SMTP never answering", hung)):
        hook = result["webhook"]
        p95 = percentile(hook, 95)
        line = (
            f"   {name:<22} ticket.created first attempt p50 {percentile(hook, 50):5.2f} s, "
            f"p95 {p95:6.2f} s, max "
            f"{max(hook):6.2f} s (≤ {DELAY_TARGET_S:.0f} s) "
            f"{verdict(p95 <= DELAY_TARGET_S, name + ' webhook')}"
        )
        mails = result["email"]
        if name == "SMTP answering":
            worst = max(mails)
            line += (
                f"; email max {worst:6.2f} s after the creation (≤ {DELAY_TARGET_S:.0f} s) "
                f"{verdict(worst <= DELAY_TARGET_S, 'email')}"
            )
        else:
            line += f"; emails delivered: {sum(m != float('inf') for m in mails)} (they wait)"
        print(line)
    _tokens(token_runs, verdict)


def _tokens(token_runs, verdict) -> None:
    print("\n4. client-credentials token issuance vs authenticated GET /organizers (wrk -c8)")
    for run in token_runs:
        print(
            f"   {run.name:<18} {run.rate:8.1f} req/s  p50 {run.p50_ms:6.1f} ms  "
            f"server CPU {_cpu_ms(run):5.2f} ms/answer  wrk {run.wrk_core_share:.0%} of a core  "
            f"non-200 {run.unexpected({200}) or '-'}"
        )
    pairs = list(zip(token_runs[0::2], token_runs[1::2], strict=True))
    ratios = [issue.rate / org.rate for org, issue in pairs if org.rate]
    ratio = statistics.median(ratios) if ratios else float("nan")
    rounds = ", ".join(f"{r:.1%}" for r in ratios)
    print(
        f"   issuance / GET /organizers: {ratio:.1%} (rounds {rounds}) "
        f"(≥ 50%) {verdict(ratio >= 0.5, 'token ratio')}"
    )
    # The app servers' CPU per answer moves less than a rate with other load on the machine.
    by_cpu = [_cpu_ms(org) / _cpu_ms(issue) for org, issue in pairs if _cpu_ms(issue)]
    if by_cpu:
        print(
            f"   the same by the app servers' CPU per answer: {statistics.median(by_cpu):.1%} "
            f"(rounds {', '.join(f'{r:.1%}' for r in by_cpu)})"
        )


def _cpu_ms(run) -> float:
    return run.server_cpu_seconds / run.requests * 1000 if run.requests else 0.0
