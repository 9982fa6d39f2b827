"""Sending a task's POSTs (CONTRACT §13): signed, over kept connections, a few at a time; no
database access here (it runs on the sending threads). `delivering` decides what is sent and
when, `outcomes` what follows each attempt.

What does not change from one POST to the next is made once per batch and endpoint
(`_Route`): the URL's check (DNS resolution and the address rules, `network.target_check`),
the secret's decryption and the signer. The connection goes to the address checked for the
batch, so every POST is still sent only to an address checked when delivering.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from .exceptions import WebhookUrlRefused
from .models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from .network import DeliveryError, Target, post, target_check
from .outcomes import Attempt
from .secrets import secret_decrypt

USER_AGENT = "ticketing-webhooks/1"
# The threads that post, shared by all the tasks a worker runs at once; each task has at most
# its lane's attempts in flight (`delivering`).
SENDERS = 64
_senders = ThreadPoolExecutor(max_workers=SENDERS, thread_name_prefix="webhook-send")
BACKED_OFF = "endpoint backed off: not sent"


@dataclass
class _Route:
    """Where and how a batch's POSTs to one endpoint go: checked, and its signer made, once (by
    the first POST that needs it; the others wait for it)."""

    endpoint: WebhookEndpoint
    target: Target | None = None
    refused: str = ""
    signer: Webhook | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _made: bool = False

    def made(self) -> _Route:
        with self._lock:
            if not self._made:
                try:
                    self.target = target_check(
                        self.endpoint.url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE_URLS
                    )
                    self.signer = Webhook(secret_decrypt(self.endpoint.secret_encrypted))
                except WebhookUrlRefused as exc:
                    self.refused = f"URL refused: {exc.reason}"
                self._made = True
        return self


class Routes:
    """A batch's routes, one per endpoint."""

    def __init__(self):
        self._lock = threading.Lock()
        self._routes: dict[int, _Route] = {}

    def to(self, endpoint: WebhookEndpoint) -> _Route:
        with self._lock:
            route = self._routes.setdefault(endpoint.pk, _Route(endpoint))
        return route.made()


@dataclass
class _EndpointInBatch:
    """What a batch knows of an endpoint's breaker while it sends."""

    unanswered: int  # attempts in a row without an answer: as read, then as this batch saw
    stalled: bool = False  # one of this batch's attempts got no answer
    in_flight: int = 0

    def tripped(self) -> bool:
        return self.stalled and self.unanswered >= settings.WEBHOOK_BREAKER_FAILURES

    def waiting(self) -> bool:
        """After an attempt without an answer, one POST at a time: the next goes out only
        once those in flight have answered (or not: then the breaker may trip first)."""
        return self.unanswered > 0 and self.in_flight > 0


def send_all(
    posts: list[tuple[WebhookEvent, str, WebhookDelivery]], *, in_flight: int
) -> list[Attempt]:
    """Send one organizer's POSTs, `in_flight` at a time; their attempts, in the posts' order.

    An endpoint that stopped answering gets one POST at a time, and none once the breaker trips.
    """
    routes = Routes()
    if len(posts) == 1:
        return [send(*posts[0], routes=routes)]
    attempts: list[Attempt | None] = [None] * len(posts)
    queued = list(range(len(posts)))
    endpoints = {
        delivery.endpoint_id: _EndpointInBatch(unanswered=delivery.endpoint.unanswered_count)
        for _, _, delivery in posts
    }
    running: dict[Future, int] = {}
    while queued or running:
        for n in list(queued):
            if len(running) >= in_flight:
                break
            event, body, delivery = posts[n]
            endpoint = endpoints[delivery.endpoint_id]
            if endpoint.waiting():
                continue
            queued.remove(n)
            now = timezone.now()
            if endpoint.tripped() or backed_off(event, delivery, at=now):
                attempts[n] = not_sent(delivery, at=now)
            else:
                running[_senders.submit(send, event, body, delivery, routes=routes)] = n
                endpoint.in_flight += 1
        if not running:
            continue  # all left were decided without a POST, or may start now
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in done:
            attempt = attempts[running.pop(future)] = future.result()
            endpoint = endpoints[attempt.endpoint.pk]
            endpoint.in_flight -= 1
            if attempt.stalled:
                endpoint.unanswered += 1
                endpoint.stalled = True
            elif not (attempt.give_up or attempt.backed_off):
                endpoint.unanswered = 0
    return attempts


def goes_out(event: WebhookEvent, delivery: WebhookDelivery, *, at: datetime) -> bool:
    """Whether an attempt would reach the network (not disabled, not backed off)."""
    if not delivery.endpoint.is_active and event.type != WebhookEvent.Type.PING:
        return False
    return not backed_off(event, delivery, at=at)


def backed_off(event: WebhookEvent, delivery: WebhookDelivery, *, at: datetime) -> bool:
    """Whether the endpoint's breaker was open when the delivery was read. A ping's first
    attempt goes out anyway: the organizer testing is checking a fix (its retries wait). A
    disabled endpoint's deliveries fail instead (`send`)."""
    until = delivery.endpoint.backoff_until
    if until is None or until <= at or not delivery.endpoint.is_active:
        return False
    return not (event.type == WebhookEvent.Type.PING and delivery.attempt_count == 0)


def not_sent(delivery: WebhookDelivery, *, at: datetime) -> Attempt:
    return Attempt(
        delivery_id=delivery.pk,
        endpoint=delivery.endpoint,
        attempted_at=at,
        status_code=None,
        duration_ms=0,
        error=BACKED_OFF,
        give_up=False,
        backed_off=True,
    )


def _signed_headers(event: WebhookEvent, signer: Webhook, body: str) -> dict[str, str]:
    now = datetime.now(tz=UTC)
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "webhook-id": event.pk,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signer.sign(msg_id=event.pk, timestamp=now, data=body),
    }


def send(event: WebhookEvent, body: str, delivery: WebhookDelivery, *, routes: Routes) -> Attempt:
    """POST the event to the delivery's endpoint once, by the batch's route to it."""
    endpoint = delivery.endpoint
    attempted_at, started = timezone.now(), time.monotonic()
    status_code, error = None, ""
    disabled = not endpoint.is_active and event.type != WebhookEvent.Type.PING
    if disabled:
        error = "endpoint disabled: not sent"
    elif backed_off(event, delivery, at=attempted_at):
        return not_sent(delivery, at=attempted_at)
    elif (route := routes.to(endpoint)).refused:
        error = route.refused
    else:
        try:
            status_code = post(
                route.target,
                body=body.encode(),
                headers=_signed_headers(event, route.signer, body),
                timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            )
        except WebhookUrlRefused as exc:
            error = f"URL refused: {exc.reason}"
        except DeliveryError as exc:
            error = str(exc)
    seconds = time.monotonic() - started
    answered_well = status_code is not None and (
        200 <= status_code < 300 or seconds < settings.WEBHOOK_TIMEOUT_SECONDS / 2
    )
    return Attempt(
        delivery_id=delivery.pk,
        endpoint=endpoint,
        attempted_at=attempted_at,
        status_code=status_code,
        duration_ms=round(seconds * 1000),
        error=error,
        give_up=disabled,
        stalled=not disabled and not answered_well,
    )
