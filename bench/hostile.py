"""Hostile input against the live server: schemathesis over the OpenAPI document, with tokens.

    DATABASE_URL=postgres://... python bench/hostile.py [--max-examples 25]

One gunicorn (`bench/_harness.py`, production settings, rate limits raised) on a fresh database
with an organizer, a member's token (`public organizer`, which every endpoint accepts), an
active event and tickets; schemathesis over `/api/public/schema/` twice, `--max-examples` per
operation: pinned (path ids fixed to the real organizer, event and ticket, so input reaches the
code behind the access checks), then free (ids generated too). Every check is on and any
failure fails the run: no 5xx; codes, types, headers and bodies as the schema says;
schema-invalid input refused, schema-valid input accepted. Let through, only where it can
happen: a 422 for the state of the ticket, order, event or quota (`STATE_DEPENDENT`), and the
cases of `bench/hostile_checks.py`. The server's own log is read back too: any 5xx fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._data import seed
from bench._harness import HUGE, OUT_DIR, Stack
from bench._http import call
from bench._report import Report

HOOKS = Path(__file__).resolve().with_name("hostile_checks.py")
POSITIVE_STATUSES = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]  # its defaults
EVENT = "/api/public/organizers/{organizer_id}/events/{event_id}"
# Operations whose schema-valid requests may meet a 422 for the state of what they act on (a
# used ticket, a full quota, a draft event): no request schema can know it. Each answer is
# still checked against the documented 422 (its codes and the ticket in the body).
STATE_DEPENDENT = (
    ("POST", f"{EVENT}/tickets"),
    ("POST", f"{EVENT}/tickets/invalidate"),
    ("POST", f"{EVENT}/tickets/{{ticket_id}}/checkin"),
    ("POST", f"{EVENT}/tickets/{{ticket_id}}/renew"),
    ("POST", f"{EVENT}/tickets/checkin"),
    ("POST", f"{EVENT}/tickets/renew"),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    parser.add_argument("--max-examples", type=int, default=25)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()
    with Stack("hostile", keep_db=args.keep_db, ME_RATE_LIMIT=HUGE) as stack:
        data = seed(tickets=200, gates=2, label="hostile")
        member_token = data.gate_tokens[1]  # a member's user token, scope `public organizer`
        server = stack.server(workers=args.workers, port=args.port)
        args.port = server.port
        schema = call("GET", server.port, "/api/public/schema/?format=json")
        if schema.status != 200 or not isinstance(schema.body, dict):
            print(f"FAILED: no OpenAPI document at /api/public/schema/ ({schema.status})")
            return 1
        operations = sum(len(ops) for ops in schema.body["paths"].values())
        print(f"schema: {operations} operations; {args.max_examples} examples per operation/phase")
        pinned = {
            "path.organizer_id": data.organizer_id,
            "path.event_id": data.event_id,
            "path.ticket_id": data.ticket_ids[0],
        }
        results = {
            name: run_schemathesis(name, args, member_token, parameters)
            for name, parameters in (("pinned", pinned), ("free", {}))
        }
    statuses = access_log_statuses(server.log_path)
    report = Report("hostile input: schemathesis, every check, against the live server")
    report.table(["server answers by status", "answers"], sorted(statuses.items()))
    for name, codes in results.items():
        report.check(not codes, f"schemathesis, {name} ids: {dict(codes) or 'no failure'}")
    server_errors = sum(n for status, n in statuses.items() if status >= 500)
    report.check(not server_errors, f"no 5xx in the server's access log ({server_errors})")
    return report.done()


def schemathesis_config(parameters: dict) -> str:
    lines = ["[parameters]"]
    lines += [f'"{key}" = {value}' for key, value in parameters.items()]
    for method, path in STATE_DEPENDENT:
        lines += [
            "",
            "[[operations]]",
            f'include-method = "{method}"',
            f'include-path = "{path}"',
            f"checks.positive_data_acceptance.expected-statuses = {[*POSITIVE_STATUSES, '422']}",
        ]
    return "\n".join(lines) + "\n"


def run_schemathesis(name: str, args, token: str, parameters: dict) -> Counter:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    config = OUT_DIR / f"schemathesis-{name}.toml"
    config.write_text(schemathesis_config(parameters))
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(config),
        "run",
        f"http://127.0.0.1:{args.port}/api/public/schema/?format=json",
        "--url",
        f"http://127.0.0.1:{args.port}",
        "--header",
        f"Authorization: Bearer {token}",
        "--checks",
        "all",
        "--max-examples",
        str(args.max_examples),
        "--phases",
        "examples,coverage,fuzzing",
        "--seed",
        str(args.seed),
        # One thread: hypothesis parses sources with `ast.parse`, which CPython 3.11 can fail
        # with "AST constructor recursion depth mismatch" when two threads parse at once
        # (python/cpython#106905); it crashed one operation's run here.
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--no-color",
        "--suppress-health-check",
        "all",
        "--generation-database",
        "none",
    ]
    print(f"\n== schemathesis, {name} ids")
    started = time.monotonic()
    env = dict(os.environ, NO_COLOR="1", SCHEMATHESIS_HOOKS=str(HOOKS))
    result = subprocess.run(command, cwd=OUT_DIR, capture_output=True, text=True, env=env)
    output = result.stdout + result.stderr
    log = OUT_DIR / f"schemathesis-{name}.log"
    log.write_text(output)
    summary = _summary(output)
    print(summary or output[-3000:])
    print(f"({time.monotonic() - started:.0f} s, exit {result.returncode}, full log {log})")
    codes = _failure_codes(output)
    if result.returncode != 0 and not codes:
        codes["run error"] = 1  # schemathesis itself failed (schema not loadable, crash)
    return codes


def _failure_codes(output: str) -> Counter:
    """`{"ST201": 2, ...}` from the summary's "Failures:" lines (`❌ ST201 <title>: 2`)."""
    codes: Counter = Counter()
    for code, count in re.findall(r"(ST\d+) [^\n]*?: (\d+)\s*$", output, flags=re.M):
        codes[code] += int(count)
    return codes


def _summary(output: str) -> str:
    """Schemathesis's closing sections, without the per-operation progress lines."""
    for marker in ("=== FAILURES", "=== SUMMARY", "SUMMARY"):
        index = output.find(marker)
        if index >= 0:
            return output[index:].strip()[-6000:]
    return ""


def access_log_statuses(path: Path) -> Counter:
    statuses: Counter = Counter()
    for line in path.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("logger") == "ticketing.request":
            statuses[entry["http_status"]] += 1
    return statuses


if __name__ == "__main__":
    sys.exit(main())
