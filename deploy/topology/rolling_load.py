"""Gates scanning through the balancer, for deploy/topology/check_rolling.py: each gate POSTs
check-ins by ticket id with a `scan_id` of its own (CONTRACT §7) over one kept-alive connection,
as a scanner does, and asks again with the same id when an answer is lost.

A Python client rather than wrk: what is measured is per scan (which scans lost their answer,
and what the retry heard), which wrk's Lua hooks cannot see for a connection that failed.
"""

from __future__ import annotations

import http.client
import itertools
import json
import secrets
import threading
import time
from dataclasses import dataclass, field

RETRIES = 20  # a lost answer is asked again this many times at most, RETRY_PAUSE apart
RETRY_PAUSE = 0.1


@dataclass
class Scan:
    ticket_id: int
    scan_id: str
    started: float
    ended: float = 0.0
    status: int = 0  # of the first attempt; 0: no answer (connection failed or closed)
    retry_status: int | None = None  # of the retry that answered, when the first did not
    retry_replayed: bool | None = None


@dataclass
class Gates:
    """`gates` threads scanning `ticket_ids` (each once) at most every `interval` seconds each."""

    balancer: tuple[str, int]
    path: str  # .../events/{e}/tickets/{t}/checkin, with {t} to fill in
    tokens: list[str]
    ticket_ids: list[int]
    interval: float = 0.02
    scans: list[Scan] = field(default_factory=list)

    def __post_init__(self):
        self._tickets = iter(self.ticket_ids)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self._run = secrets.token_hex(4)

    def start(self) -> None:
        self._stop.clear()
        self.threads = [
            threading.Thread(target=self._gate, args=(token,), daemon=True) for token in self.tokens
        ]
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def in_flight(self, since: float, until: float) -> int:
        """Scans sent by `until` and not answered by `since`."""
        with self._lock:
            return sum(
                1 for s in self.scans if s.started <= until and (not s.ended or s.ended > since)
            )

    def _next(self) -> int | None:
        with self._lock:
            return next(self._tickets, None)

    def _gate(self, token: str) -> None:
        conn = None
        while not self._stop.is_set():
            ticket_id = self._next()
            if ticket_id is None:
                return
            scan = Scan(ticket_id, f"{self._run}-{ticket_id}", time.monotonic())
            with self._lock:
                self.scans.append(scan)
            conn = conn or http.client.HTTPConnection(*self.balancer, timeout=30)
            scan.status, _ = _post(conn, self.path.format(ticket_id), token, scan.scan_id)
            if scan.status != 200:
                conn.close()
                conn = None
                self._retry(scan, token)
            scan.ended = time.monotonic()
            self._stop.wait(max(0.0, self.interval - (scan.ended - scan.started)))
        if conn is not None:
            conn.close()

    def _retry(self, scan: Scan, token: str) -> None:
        """The same scan again, on a new connection, until an answer other than the balancer's
        own (no answer, 502, 503, 504) comes back."""
        for _ in range(RETRIES):
            conn = http.client.HTTPConnection(*self.balancer, timeout=30)
            try:
                status, body = _post(conn, self.path.format(scan.ticket_id), token, scan.scan_id)
            finally:
                conn.close()
            if status not in (0, 502, 503, 504):
                scan.retry_status = status
                scan.retry_replayed = bool(body and body.get("replayed"))
                return
            time.sleep(RETRY_PAUSE)


def _post(conn: http.client.HTTPConnection, path: str, token: str, scan_id: str):
    """(status, JSON body) of one check-in; (0, None) when no answer came."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "Content-Type": "application/json",
    }
    try:
        conn.request("POST", path, body=json.dumps({"scan_id": scan_id}), headers=headers)
        response = conn.getresponse()
        raw = response.read()
    except (OSError, http.client.HTTPException):
        return 0, None
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, None


@dataclass
class Figures:
    requests: int
    failed: int  # first attempts without a 200
    longest_wait: float  # the longest a gate waited for a first attempt's answer
    longest_gap: float  # the longest time in which no gate heard any answer
    failed_after: int  # failed first attempts sent after `since`
    retry_wrong: int  # retries answered with anything but 200 (e.g. 422 ticket_already_used)
    retry_replayed: int  # retries that heard the first (committed) answer, replayed
    acknowledged: set[int]  # tickets whose scan was answered 200, first time or on the retry

    @classmethod
    def of(cls, scans: list[Scan], since: float) -> Figures:
        done = [s for s in scans if s.ended]
        ends = sorted(s.ended for s in done if s.status == 200)
        gaps = [b - a for a, b in itertools.pairwise(ends)]
        failed = [s for s in done if s.status != 200]
        return cls(
            requests=len(done),
            failed=len(failed),
            longest_wait=max((s.ended - s.started for s in done if s.status == 200), default=0),
            longest_gap=max(gaps, default=0.0),
            failed_after=sum(1 for s in failed if s.started > since),
            retry_wrong=sum(1 for s in failed if s.retry_status != 200),
            retry_replayed=sum(1 for s in failed if s.retry_replayed),
            acknowledged={s.ticket_id for s in done if s.status == 200 or s.retry_status == 200},
        )
