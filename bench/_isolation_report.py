"""What `bench/isolation.py` prints, in the benches' one report format, beside issue 28's
targets."""

from __future__ import annotations

from bench._report import Report, median, percentile

UPLOAD_TARGET_S = 1.5
DELAY_TARGET_S = 5.0


def report(args, results: dict) -> int:
    report = Report(f"one organizer cannot slow another: {args.workers} gunicorn workers")
    if "uploads" in results:
        report.section("1. 500-scan batch uploads")
        for kind, seconds in results["uploads"].items():
            report.figure(kind, seconds, "s", digits=3, at_most=UPLOAD_TARGET_S)
    if "answered" in results:
        _background(report, results["answered"], results["hung"])
    if "tokens" in results:
        _tokens(report, results["tokens"])
    return report.done()


def _background(report: Report, answered: dict, hung: dict) -> None:
    report.section("2. organizer B: 20 endpoints that never answer, 200 pings queued; A's tickets")
    for name, result in (("SMTP answering", answered), ("SMTP never answering", hung)):
        hook = result["webhook"]
        report.figure(f"{name}: ticket.created first attempt p95", percentile(hook, 95), "s",
                      digits=2, at_most=DELAY_TARGET_S,
                      note=f"p50 {percentile(hook, 50):.2f} s, max {max(hook):.2f} s")  # fmt: skip
    report.figure("SMTP answering: email, slowest after the creation", max(answered["email"]),
                  "s", digits=2, at_most=DELAY_TARGET_S)  # fmt: skip
    delivered = sum(m != float("inf") for m in hung["email"])
    report.figure("SMTP never answering: emails delivered (they wait)", delivered, digits=0)


def _tokens(report: Report, runs) -> None:
    report.section("3. client-credentials token issuance vs an authenticated GET /organizers")
    report.table(
        ["run", "req/s", "p50 ms", "CPU ms/answer", "wrk core", "non-200"],
        [[run.name, run.rate, run.p50_ms, f"{_cpu_ms(run):.2f}", f"{run.wrk_core_share:.0%}",
          run.unexpected({200}) or "-"] for run in runs],
    )  # fmt: skip
    pairs = list(zip(runs[0::2], runs[1::2], strict=True))
    ratios = [issue.rate / org.rate for org, issue in pairs if org.rate]
    # The app servers' CPU per answer moves less than a rate with other load on the machine.
    by_cpu = [_cpu_ms(org) / _cpu_ms(issue) for org, issue in pairs if _cpu_ms(issue)]
    report.ratio("issuance / GET /organizers", median(ratios), at_least=0.5,
                 note="rounds " + ", ".join(f"{r:.0%}" for r in ratios))  # fmt: skip
    report.ratio("the same by the servers' CPU per answer", median(by_cpu),
                 note="rounds " + ", ".join(f"{r:.0%}" for r in by_cpu))  # fmt: skip


def _cpu_ms(run) -> float:
    return run.server_cpu_seconds / run.requests * 1000 if run.requests else 0.0
