"""Which of the project's files one scan-by-code check-in runs, from its URL to its SQL and back.

Run on PostgreSQL (`DATABASE_URL`) and Redis (`REDIS_URL`), from the repository root:

    python bench/request_files.py
    python bench/request_files.py --refusal          # the ticket is already used: a 422
    python bench/request_files.py --token-miss       # a token this process has not kept yet
    python bench/request_files.py --token app --functions

The bench makes a fresh database of its own, with the production settings, and sends the
requests through Django's test client (no network). One warm-up request of the same kind loads
what is imported lazily and, with a member's token, keeps the token (`oauth_setup.token_cache`);
the next request is traced with a profile hook (`sys.setprofile`): every Python function it
enters, by the file that defines it. Listed are the repository's own files, leaving out the
virtualenv, the tests and the bench. Code a module runs only when it is imported is not
counted, since the warm-up imported it; a file whose functions the request does not call is
not counted either, whatever imports it.
"""

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
from bench._harness import own_database, release_database  # noqa: E402

LEFT_OUT = ("tests", "bench", ".venv")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--refusal",
        action="store_true",
        help="Scan a ticket already used: the gate refuses it (422 ticket_already_used).",
    )
    parser.add_argument(
        "--token-miss",
        action="store_true",
        help="Trace a request whose token this process has not kept (the database is asked).",
    )
    parser.add_argument(
        "--token",
        choices=["member", "app"],
        default="member",
        help="A staff member's token (default) or the organizer's application's own.",
    )
    parser.add_argument(
        "--functions", action="store_true", help="Name the functions run in each file."
    )
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
    os.environ["API_RATE_LIMIT"] = "100000000/m"  # this process serves the requests itself
    bench_url, _ = own_database("files")
    from django.test import Client

    from tickets.models import Ticket

    try:
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
        scan = f"{data.event_path}/tickets/checkin"

        def send(code: str, token: str):
            return client.post(
                scan,
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
        token = cold_token if args.token_miss else warm_token
        with Tracer() as tracer:
            response = send(codes[1], token)
        assert response.status_code == expected, response.content[:300]
    finally:
        release_database(bench_url, keep=args.keep_db)

    found = tracer.functions_by_file()
    packages = defaultdict(list)
    for path in sorted(found):
        packages[path.split("/", 1)[0] if "/" in path else "(root)"].append(path)
    request = "refused (422)" if args.refusal else "admitted (200)"
    kept = "not kept" if args.token_miss else "kept"
    print(
        f"\nPOST {{event}}/tickets/checkin by reference_code, {request}, {args.token} token "
        f"{kept}: {len(found)} project files ran\n"
    )
    for package, paths in sorted(packages.items()):
        print(f"{package} ({len(paths)})")
        for path in paths:
            print(f"  {path}")
            if args.functions:
                for name in sorted(found[path]):
                    print(f"      {name}")
    print(f"\ntotal: {len(found)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
