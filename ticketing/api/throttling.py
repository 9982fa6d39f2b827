"""The API's rate limits (CONTRACT §9): fixed windows counted in the Django cache.

With Redis the counters are shared by every process and machine. An API request costs one Redis
round trip in all: its counters are incremented by the script that also reads its token's
revocation marker (`ticketing.cache.count_and_check`), which the authentication runs through
`count_request` once it knows the token; the view's throttles then read the counts it left on
the request. A request is thus counted once its token is known, even if a later check refuses
it. Without a token (or a token the authentication did not count), the throttle counts itself,
in one round trip too.

A request that costs more than one (a batch upload: one per scan) is charged the rest by its
view (`charge_request`), all or nothing, before it does any work; and a view may also bound how
many of its requests run at once for one key (`concurrency_slot`).

The token endpoint and the sign-in pages count with the same counters (`oauth_setup.throttling`),
in one round trip too. django-ratelimit, which the staff page's tokens and webhook tests still
use, is not used here: its add then incr costs two round trips, and it cannot share one with the
token's marker. Its windows are kept (fixed, each key's offset by the key's CRC), so that the
same helpers find them. Per-address limits count `ticketing.proxies.client_address`.
A cache that does not answer lets the request through (the limits fail open).
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import socket
import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.utils.translation import ngettext
from rest_framework.throttling import BaseThrottle

from ticketing.cache import CacheSkipped, charge, count_and_check, count_and_read
from ticketing.proxies import client_address

from .exceptions import RateLimited

logger = logging.getLogger(__name__)

_RATE = re.compile(r"^(\d+)/(\d*)([smhd])$")
_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_SLACK = 5  # seconds a counter outlives its window, as django-ratelimit's


@dataclass(frozen=True)
class Counter:
    name: str  # the limit and whom it counts: the same for every window
    key: str  # in the cache: the name and the window
    limit: int
    window_end: int  # epoch seconds
    seconds: int  # how long the cache keeps it from its first hit


def _parse_rate(rate: str) -> tuple[int, int]:
    """`"1200/m"` → (1200, 60); `"10/15m"` → (10, 900)."""
    match = _RATE.match(rate)
    if match is None:
        raise ValueError(f"not a rate: {rate!r} (e.g. 1200/m, 10/15m)")
    count, multiple, unit = match.groups()
    return int(count), _PERIODS[unit] * int(multiple or 1)


def window_end(value: str, period: int) -> int:
    """When the current window of `value` ends: fixed windows, offset by the value's CRC so
    that they do not all end at once (django-ratelimit's `_get_window`)."""
    now = int(time.time())
    end = now - now % period + zlib.crc32(value.encode()) % period
    return end if end >= now else end + period


def rate_counter(group: str, rate: str, value: str) -> Counter:
    """The counter of `value` (whom it counts) in `group` at `rate`, in its current window.

    Its cache key is a digest: a group or value may hold what a client sent (a username), of
    any length, which must not become a key of that length."""
    limit, period = _parse_rate(rate)
    end = window_end(value, period)
    name = f"{group}:{limit}/{period}s:{value}"
    digest = hashlib.sha256(name.encode()).hexdigest()[:32]
    return Counter(
        name=name, key=f"rate:{digest}:{end}", limit=limit, window_end=end, seconds=period + _SLACK
    )


def count_and_read_counters(
    counting: Sequence[Counter], reading: Sequence[Counter]
) -> tuple[list[int | None], list[int]]:
    """Count a request against `counting` and read `reading`'s counts (0 where none yet), in one
    round trip; None for every count, and 0 read, when the cache does not answer (fail open)."""
    try:
        counts, values = count_and_read(
            caches[settings.RATELIMIT_USE_CACHE],
            [(counter.key, counter.seconds) for counter in counting],
            [counter.key for counter in reading],
        )
    except Exception as exc:  # whatever the cache backend raises when it is unreachable
        if not isinstance(exc, CacheSkipped):
            logger.warning("rate limits not counted: cache unavailable (%s)", type(exc).__name__)
        return [None] * len(counting), [0] * len(reading)
    return counts, [value if isinstance(value, int) else 0 for value in values]


class _CacheRateThrottle(BaseThrottle):
    group: str
    rate_setting: str

    def value(self, request, token) -> str:
        """Whom the request counts against, given the request's token (or None)."""
        raise NotImplementedError

    def counter(self, request, token) -> Counter | None:
        if not getattr(settings, "RATELIMIT_ENABLE", True):
            return None
        rate = getattr(settings, self.rate_setting)
        return rate_counter(self.group, rate, self.value(request, token))

    def allow_request(self, request, view) -> bool:
        counter = self.counter(request, request.auth)
        if counter is None:
            return True
        counted = getattr(request, "_rate_counts", {})
        if counter.name in counted:  # by the authentication, even if its window ended since
            counter, count = counted[counter.name]
        else:
            count = _count([counter], ())[0][0]
        if count is not None and count > counter.limit:
            raise RateLimited(retry_after=counter.window_end - int(time.time()))
        return True


def count_request(request, token, keys: Sequence[str] = ()) -> list[bool] | None:
    """Count `request` against each limit its view applies to `token`, and say which of `keys`
    exist in the cache, in one round trip; None if the cache did not answer.

    The view's throttles then read the counts left on the request.
    """
    view = (getattr(request, "parser_context", None) or {}).get("view")
    throttles = view.get_throttles() if view is not None else []
    counters = [
        counter
        for throttle in throttles
        if isinstance(throttle, _CacheRateThrottle)
        and (counter := throttle.counter(request, token)) is not None
    ]
    counts, found = _count(counters, keys)
    request._rate_counts = {
        counter.name: (counter, count) for counter, count in zip(counters, counts, strict=True)
    }
    return found


def charge_request(request, cost: int) -> None:
    """Count a request that costs `cost` against each limit its view applies: `cost - 1` more
    than the one it was counted already, to every counter or (one would pass its limit) to
    none, so a refused request costs one, as any other.

    Raises: RateLimited, with the seconds left in the refusing counter's window.
    A cache that does not answer lets the request through (the limits fail open).
    """
    if cost <= 1:
        return
    counted = getattr(request, "_rate_counts", {})
    counters = []
    for throttle in request.parser_context["view"].get_throttles():
        if not isinstance(throttle, _CacheRateThrottle):
            continue
        counter = throttle.counter(request, request.auth)
        if counter is not None:  # the window the request was counted in, if it was
            counters.append(counted.get(counter.name, (counter,))[0])
    if not counters:
        return
    try:
        refused = charge(
            caches[settings.RATELIMIT_USE_CACHE],
            [(counter.key, counter.limit, counter.seconds) for counter in counters],
            cost - 1,
        )
    except Exception as exc:  # whatever the cache backend raises when it is unreachable
        logger.warning("rate limits not charged: cache unavailable (%s)", type(exc).__name__)
        return
    if refused is not None:
        counter = counters[refused]
        retry_after = max(1, counter.window_end - int(time.time()))
        raise RateLimited(
            retry_after=retry_after,
            message=(
                f"This request counts as {cost} against a limit of {counter.limit}, more than "
                f"remains; try again in {retry_after} seconds."
            ),
        )


@contextmanager
def concurrency_slot(name: str, *, limit: int, seconds: int, retry_after: int) -> Iterator[None]:
    """Run the block in one of `limit` slots of `name`: at most `limit` blocks of that name run
    at once, across processes and machines with Redis.

    A slot is a cache key taken with `add` (atomic) and given back when the block ends; should
    its process die first, it frees itself after `seconds`, longer than any block runs.
    Raises: RateLimited (`retry_after`) when every slot is taken; the block does not run.
    A cache that does not answer lets the block run (the limits fail open).
    """
    if not getattr(settings, "RATELIMIT_ENABLE", True):
        yield
        return
    cache = caches[settings.RATELIMIT_USE_CACHE]
    holder = secrets.token_hex(8)
    slot = _slot_take(cache, name, limit=limit, holder=holder, seconds=seconds)
    if slot is False:
        running = ngettext(
            "%(count)d such request is running already",
            "%(count)d such requests are running already",
            limit,
        ) % {"count": limit}
        raise RateLimited(
            retry_after=retry_after, message=f"{running}; try again in {retry_after} seconds."
        )
    try:
        yield
    finally:
        if slot is not None:
            _slot_give_back(cache, slot, holder=holder)


@contextmanager
def upload_slots(organizer_id: int, *, seconds: int, retry_after: int) -> Iterator[None]:
    """Run a batch upload in a slot of its organizer (BATCH_UPLOADS_PER_ORGANIZER) and one of
    this app server (BATCH_UPLOADS_PER_SERVER, across organizers), or refuse it (RateLimited).

    The organizer's cap keeps one organizer from taking every upload slot; the server's keeps
    uploads, which hold a worker for a second or more, from taking every worker, so online
    scans never queue behind them. The server is its host name: one per machine or container.
    """
    with (
        concurrency_slot(
            f"batch-upload:{organizer_id}",
            limit=settings.BATCH_UPLOADS_PER_ORGANIZER,
            seconds=seconds,
            retry_after=retry_after,
        ),
        concurrency_slot(
            f"batch-upload-server:{socket.gethostname()}",
            limit=settings.BATCH_UPLOADS_PER_SERVER,
            seconds=seconds,
            retry_after=retry_after,
        ),
    ):
        yield


def _slot_take(cache, name: str, *, limit: int, holder: str, seconds: int) -> str | bool | None:
    """The key of the slot taken; False if all are taken; None if the cache did not answer."""
    try:
        for number in range(limit):
            key = f"slot:{name}:{number}"
            taken = cache.add(key, holder, seconds)
            if taken is None:  # a cache that ignores its failures answers None
                raise ConnectionError("no answer")
            if taken:
                return key
    except Exception as exc:  # whatever the cache backend raises when it is unreachable
        logger.warning("concurrency not limited: cache unavailable (%s)", type(exc).__name__)
        return None
    return False


def _slot_give_back(cache, key: str, *, holder: str) -> None:
    try:
        if cache.get(key) == holder:  # not another's, taken after ours expired
            cache.delete(key)
    except Exception as exc:  # it expires on its own
        logger.warning("slot not given back: cache unavailable (%s)", type(exc).__name__)


def _count(counters: Sequence[Counter], keys: Sequence[str]):
    """Counts (None each where the cache failed) and which keys exist (None if it failed)."""
    try:
        counts, found = count_and_check(
            caches[settings.RATELIMIT_USE_CACHE],
            [(counter.key, counter.seconds) for counter in counters],
            keys,
        )
    except CacheSkipped:
        return [None] * len(counters), None
    except Exception as exc:  # whatever the cache backend raises when it is unreachable
        logger.warning("rate limits not counted: cache unavailable (%s)", type(exc).__name__)
        return [None] * len(counters), None
    return counts, found


def token_rate_key(token) -> str:
    """Whom a token's requests count against: its application and its user, not the token.

    A client can mint tokens at will (client credentials, a refresh): counting each token on its
    own would give every new one a fresh budget. So an application token counts against its
    application, and a user's token against that user within the application.
    """
    if token.application_id is None:  # made by hand, with no client to mint more
        return f"token:{token.pk}"
    return f"app:{token.application_id}:user:{token.user_id or '-'}"


class TokenRateThrottle(_CacheRateThrottle):
    """Per application and user on every endpoint; per client address where no token was sent."""

    group = "api"
    rate_setting = "API_RATE_LIMIT"

    def value(self, request, token) -> str:
        if token is not None:
            return token_rate_key(token)
        return f"ip:{client_address(request)}"


class UserRateThrottle(_CacheRateThrottle):
    """Per user, whatever token they use: `GET /me` allows 10 a minute."""

    group = "me"
    rate_setting = "ME_RATE_LIMIT"

    def value(self, request, token) -> str:
        if token is not None and token.user_id is not None:
            return f"user:{token.user_id}"
        return f"ip:{client_address(request)}"
