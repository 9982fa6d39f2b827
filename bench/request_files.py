"""Which of the project's files one scan-by-code check-in runs, from its URL to its SQL and back.

    python bench/request_files.py
    python bench/request_files.py --refusal          # the ticket is already used: a 422
    python bench/request_files.py --token-miss       # a token this process has not kept yet
    python bench/request_files.py --token app --functions

A fresh database (`bench/_harness.py`, production settings), no server: Django's test client.
A warm-up request of the same kind imports what loads lazily (and keeps a member's token); the
next is traced (`sys.setprofile`): every function it enters, by the repository file defining it
(not the virtualenv, tests or bench; not import-time code). An admitted scan's own files
(`EVERY_REQUEST` and `TICKET_BODY` apart) are held to at most 8, in at most 2 apps."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._data import seed  # noqa: E402
from bench._harness import HUGE, Stack  # noqa: E402
from bench._report import Report  # noqa: E402

LEFT_OUT = ("tests", "bench", ".venv")
# Not the gate's own: the files every authenticated API request and every Ticket body cross.
EVERY_REQUEST = {f"{p}.py" for p in (
    "ticketing/middleware", "ticketing/logging", "ticketing/cache", "ticketing/db",
    "ticketing/api/throttling", "ticketing/api/caller", "ticketing/api/fields",
    "ticketing/api/rendering", "oauth_setup/authentication", "oauth_setup/token_cache",
    "oauth_setup/validators", "organizers/permissions")}  # fmt: skip
TICKET_BODY = {"tickets/serializers.py", "tickets/links.py", "tickets/selectors.py"}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refusal", action="store_true",
                        help="Scan a ticket already used: a 422 ticket_already_used.")  # fmt: skip
    parser.add_argument("--token-miss", action="store_true",
                        help="Trace a request whose token this process has not kept.")  # fmt: skip
    parser.add_argument("--token", choices=["member", "app"], default="member",
                        help="A staff member's token, or the application's.")  # fmt: skip
    parser.add_argument("--functions", action="store_true", help="Name each file's functions run.")
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


def project_file(filename: str) -> str | None:
    """The path under the repository root of a file of the project's own, else None."""
    try:
        relative = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    if relative.parts[0] in LEFT_OUT or relative.suffix != ".py":
        return None
    return relative.as_posix()


class Tracer:
    """Records each Python function entered in this process, by its code object."""

    def __init__(self):
        self.codes = set()

    def __call__(self, frame, event, arg):
        if event == "call":
            self.codes.add(frame.f_code)

    def __enter__(self):
        threading.setprofile(self)
        sys.setprofile(self)
        return self

    def __exit__(self, *exc):
        sys.setprofile(None)
        threading.setprofile(None)

    def functions_by_file(self) -> dict[str, set[str]]:
        found = defaultdict(set)
        for code in self.codes:
            path = project_file(code.co_filename)
            if path is not None:
                found[path].add(code.co_qualname)
        return found


def main() -> int:
    args = parse_args()
    os.environ["API_RATE_LIMIT"] = HUGE  # this process serves the requests itself
    with Stack("files", keep_db=args.keep_db):
        tracer = trace(args)
    found = tracer.functions_by_file()
    packages = defaultdict(list)
    for path in sorted(found):
        packages[path.split("/", 1)[0] if "/" in path else "(root)"].append(path)
    request = "refused (422)" if args.refusal else "admitted (200)"
    kept = "not kept" if args.token_miss else "kept"
    report = Report(f"POST {{event}}/tickets/checkin by reference_code, {request}, {args.token} "
                    f"token {kept}: the project files it ran")  # fmt: skip
    for package, paths in sorted(packages.items()):
        print(f"  {package} ({len(paths)})")
        for path in paths:
            print(f"    {path}")
            if args.functions:
                print("".join(f"        {name}\n" for name in sorted(found[path])), end="")
    report.figure("project files one scan runs", len(found), "files", digits=0)
    own = set(found) - EVERY_REQUEST - TICKET_BODY
    shared = f"{len(found) - len(own)} shared: every request's, the body"
    report.figure("the gate's own, apart from the Ticket body", len(own), "files", digits=0,
                  at_most=None if args.refusal else 8, note=shared)  # fmt: skip
    report.figure("apps of the gate's own", len({path.split("/")[0] for path in own}), digits=0,
                  at_most=None if args.refusal else 2)  # fmt: skip
    return report.done()


def trace(args) -> Tracer:
    """A warm-up scan, then the traced one, through Django's test client."""
    from django.test import Client

    from tickets.models import Ticket

    data = seed(tickets=8, gates=4, label="files")
    codes = list(
        Ticket.objects.filter(event_id=data.event_id)
        .order_by("id")
        .values_list("reference_code", flat=True)
    )
    tokens = {"app": (data.gate_tokens[0], data.gate_tokens[2])}
    tokens["member"] = (data.gate_tokens[1], data.gate_tokens[3])
    warm_token, cold_token = tokens[args.token]
    client = Client()

    def send(code: str, token: str):
        return client.post(
            f"{data.event_path}/tickets/checkin",
            {"reference_code": code.lower()},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
            HTTP_HOST="127.0.0.1",
        )

    expected = 422 if args.refusal else 200
    if args.refusal:  # both tickets admitted first; then each is scanned again
        for code in codes[:2]:
            assert send(code, warm_token).status_code == 200
    warm = send(codes[0], warm_token)
    assert warm.status_code == expected, warm.content[:300]
    with Tracer() as tracer:
        response = send(codes[1], cold_token if args.token_miss else warm_token)
    assert response.status_code == expected, response.content[:300]
    return tracer


if __name__ == "__main__":
    raise SystemExit(main())
