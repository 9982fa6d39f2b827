"""The load of deploy/topology/check_failover.py: gates scanning tickets by code, each ticket
scanned by two gates with scan ids of their own (so that two gates race for every admission),
and a box office creating tickets, all through the balancer, every answer recorded.

A gate whose scan failed (no answer, or a 503) sends the same scan again, as a gate app does:
CONTRACT §7's retry-safe scans answer it as the first time if it was applied. A creation is
retried with its `external_id`, which the API answers idempotently. Retries come after
RETRY_PAUSE rather than the full Retry-After, so that the outage is measured, not the pause.
"""

from __future__ import annotations

import http.client
import json
import queue
import threading
import time
from dataclasses import dataclass, field

RETRY_PAUSE = 0.25  # seconds before a failed scan or creation is sent again
ANSWERED = frozenset({200, 404, 409, 422})  # a decision: sending it again changes nothing


@dataclass
class Answer:
    kind: str  # "scan" or "create"
    key: str  # the scan id, or the creation's external_id
    status: int  # 0: no HTTP answer (connection refused or cut)
    sent: float
    received: float
    body: dict | None
    retry_after: str | None
    from_app: bool  # False: the balancer's own answer (the app's carry X-Request-ID)

    @property
    def ticket_id(self) -> int | None:
        ticket = (self.body or {}).get("ticket") or {}
        return ticket.get("id")

    @property
    def replayed(self) -> bool:
        return bool((self.body or {}).get("replayed"))


@dataclass
class Load:
    """Gates and a box office through `balancer` until `stop` is set or `deadline` passes."""

    balancer: tuple[str, int]
    event_path: str
    gate_tokens: list[str]
    creator_token: str
    ticket_type_id: int
    deadline: float
    run: str
    answers: list[Answer] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    jobs: queue.Queue = field(default_factory=queue.Queue)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, codes: list[str], max_creations: int) -> list[threading.Thread]:
        for code in codes:  # the two scans of a ticket one after the other: two gates race
            self.jobs.put((code, f"{self.run}-{code}-a"))
            self.jobs.put((code, f"{self.run}-{code}-b"))
        threads = [
            threading.Thread(target=self._gate, args=(token,), daemon=True)
            for token in self.gate_tokens
        ]
        threads.append(threading.Thread(target=self._box_office, args=(max_creations,)))
        threads[-1].daemon = True
        for thread in threads:
            thread.start()
        return threads

    def going(self) -> bool:
        return not self.stop.is_set() and time.monotonic() < self.deadline

    def admissions(self) -> list[Answer]:
        with self._lock:
            return [a for a in self.answers if a.kind == "scan" and a.status == 200]

    def _gate(self, token: str) -> None:
        while self.going():
            try:
                code, scan_id = self.jobs.get_nowait()
            except queue.Empty:
                return
            body = {"reference_code": code, "scan_id": scan_id}
            self._until_answered("scan", scan_id, f"{self.event_path}/tickets/checkin", token, body)

    def _box_office(self, max_creations: int) -> None:
        for number in range(max_creations):
            if not self.going():
                return
            external_id = f"{self.run}-{number}"
            body = {
                "ticket_type_id": self.ticket_type_id,
                "firstname": "Walk",
                "lastname": f"In {number}",
                "email": f"walkin{number}@failover.example",
                "phone": "+66812345678",
                "external_id": external_id,
                "suppress_notifications": True,
            }
            path = f"{self.event_path}/tickets"
            self._until_answered("create", external_id, path, self.creator_token, body)

    def _until_answered(self, kind: str, key: str, path: str, token: str, body: dict) -> None:
        while self.going():
            answer = self._post(kind, key, path, token, body)
            with self._lock:
                self.answers.append(answer)
            if answer.status in ANSWERED:
                return
            self.stop.wait(RETRY_PAUSE)

    def _post(self, kind: str, key: str, path: str, token: str, body: dict) -> Answer:
        """One POST on a connection of its own, as a gate that lost its last one would."""
        conn = http.client.HTTPConnection(*self.balancer, timeout=15)
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "Content-Type": "application/json",
        }
        sent = time.monotonic()
        status, raw, retry_after, request_id = 0, b"", None, None
        try:
            conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
            response = conn.getresponse()
            status, raw = response.status, response.read()
            retry_after = response.getheader("Retry-After")
            request_id = response.getheader("X-Request-ID")
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        received = time.monotonic()
        return Answer(kind, key, status, sent, received, parsed, retry_after, bool(request_id))


def contract_503(answer: Answer) -> bool:
    """CONTRACT §2's answer to an outage: 503 `service_unavailable`, with Retry-After."""
    body = answer.body if isinstance(answer.body, dict) else {}
    return (
        answer.status == 503
        and (answer.retry_after or "").isdigit()
        and int(answer.retry_after) > 0
        and body.get("success") is False
        and body.get("error") == "service_unavailable"
        and isinstance(body.get("message"), str)
    )
