"""The Redis cache, with short timeouts and a breaker, so that a hung Redis cannot stall requests.

Every API request touches the cache once (`count_and_check`: its rate-limit counters and its
token's revocation marker in one script). With a Redis that accepts connections but never
answers (stopped, swapping, a network black hole), that waits for the socket timeout. So the
timeouts are short, and after one failure the process skips Redis altogether for a few seconds:
every operation of every cache on that server fails at once, without touching the network,
until the pause is over and the next operation tries again.

What a skipped operation means is each cache's own setting, as for any other Redis failure:
`default` ignores it (a read misses), `strict` raises it (a revocation that cannot be recorded
is refused, see `oauth_setup.token_cache`); `count_and_check` raises, and its callers decide
(the rate limits fail open, a token is looked up in the database).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from django.core.cache.backends.base import BaseCache
from django_redis.cache import RedisCache
from django_redis.exceptions import ConnectionInterrupted
from redis.commands.core import Script
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

# Failures that say the server is unreachable; a refused command (ResponseError) says nothing
# about the next one.
_OUTAGES = (RedisConnectionError, RedisTimeoutError, OSError)


class Breaker:
    """Open for `pause` seconds after a failure; shared by every cache on one Redis server."""

    def __init__(self, pause: float):
        self.pause = pause
        self.open_until = 0.0

    def is_open(self) -> bool:
        return time.monotonic() < self.open_until

    def trip(self, error: BaseException) -> None:
        if not self.is_open():
            logger.warning(
                "cache unreachable (%s); skipping it for %s s", type(error).__name__, self.pause
            )
        self.open_until = time.monotonic() + self.pause


_breakers: dict[str, Breaker] = {}


def breaker_for(server: str, pause: float) -> Breaker:
    breaker = _breakers.setdefault(server, Breaker(pause))
    breaker.pause = pause
    return breaker


# KEYS: the counters, then the keys to read; ARGV: how many counters, then each one's lifetime.
# A counter expires a fixed time after its first hit (a fixed window). A key read is its value,
# false (None) when it does not exist.
_COUNT_AND_READ = Script(
    None,
    b"""
local counters = tonumber(ARGV[1])
local answers = {}
for i = 1, #KEYS do
  if i <= counters then
    answers[i] = redis.call('INCR', KEYS[i])
    if answers[i] == 1 then redis.call('EXPIRE', KEYS[i], ARGV[i + 1]) end
  else
    answers[i] = redis.call('GET', KEYS[i])
  end
end
return answers
""",
)


def count_and_check(
    cache: BaseCache, counters: Sequence[tuple[str, int]], keys: Sequence[str] = ()
) -> tuple[list[int], list[bool]]:
    """Increment each counter (`(key, seconds it lives from its first hit)`) and say which of
    `keys` exist: on Redis in one round trip, whatever the number of keys.

    Raises whatever the cache raises when it is unreachable, whatever its IGNORE_EXCEPTIONS:
    each caller decides what a missing answer means.
    """
    counts, values = count_and_read(cache, counters, keys)
    return counts, [value is not None for value in values]


def count_and_read(
    cache: BaseCache, counters: Sequence[tuple[str, int]], keys: Sequence[str] = ()
) -> tuple[list[int], list[object]]:
    """Increment each counter as `count_and_check` does, and read what `keys` hold (a count as
    an int; None where there is nothing): on Redis in one round trip. Raises as
    `count_and_check`."""
    if isinstance(cache, BreakerRedisCache):
        return cache.count_and_read(counters, keys)
    counts = []
    for key, seconds in counters:
        if cache.add(key, 1, seconds):
            counts.append(1)
            continue
        try:
            counts.append(cache.incr(key))
        except ValueError:  # expired in between
            cache.set(key, 1, seconds)
            counts.append(1)
    found = cache.get_many(keys) if keys else {}
    return counts, [found.get(key) for key in keys]


# KEYS: the counters; ARGV: the amount, each counter's limit, then each one's lifetime. All or
# nothing: the amount is added to every counter, or (one would pass its limit) to none, and the
# answer is then that counter's position (1-based); 0 when all were charged.
_CHARGE = Script(
    None,
    b"""
local amount = tonumber(ARGV[1])
local n = #KEYS
for i = 1, n do
  if tonumber(redis.call('GET', KEYS[i]) or '0') + amount > tonumber(ARGV[1 + i]) then
    return i
  end
end
for i = 1, n do
  if redis.call('INCRBY', KEYS[i], amount) == amount then
    redis.call('EXPIRE', KEYS[i], ARGV[1 + n + i])
  end
end
return 0
""",
)


def charge(cache: BaseCache, counters: Sequence[tuple[str, int, int]], amount: int) -> int | None:
    """Add `amount` to each counter (`(key, limit, seconds it lives from its first hit)`) unless
    one would pass its limit: then add nothing and return that counter's index; None when all
    were charged. On Redis atomically, in one round trip.

    Raises whatever the cache raises when it is unreachable, as `count_and_check`.
    """
    if isinstance(cache, BreakerRedisCache):
        return cache.charge(counters, amount)
    for index, (key, limit, _) in enumerate(counters):
        if (cache.get(key) or 0) + amount > limit:
            return index
    for key, _, seconds in counters:
        if not cache.add(key, amount, seconds):
            try:
                cache.incr(key, amount)
            except ValueError:  # expired in between
                cache.set(key, amount, seconds)
    return None


class BreakerRedisCache(RedisCache):
    """django-redis's cache whose client goes through the server's breaker.

    OPTIONS["BREAKER_SECONDS"]: how long to skip Redis after a failure (0 turns the breaker off).
    """

    def __init__(self, server, params):
        super().__init__(server, params)
        pause = float(params.get("OPTIONS", {}).get("BREAKER_SECONDS", 5))
        self.breaker = breaker_for(str(server), pause) if pause > 0 else None

    @property
    def client(self):
        client = super().client
        return client if self.breaker is None else _GuardedClient(client, self.breaker)

    def count_and_read(
        self, counters: Sequence[tuple[str, int]], keys: Sequence[str]
    ) -> tuple[list[int], list[object]]:
        """`count_and_read` as one Lua script (EVALSHA), through the breaker."""
        if self.breaker is not None and self.breaker.is_open():
            raise _skipped()
        redis_keys = [self.make_key(key) for key, _ in counters] + [self.make_key(k) for k in keys]
        args = [len(counters), *(int(seconds) for _, seconds in counters)]
        try:
            answers = _COUNT_AND_READ(redis_keys, args, client=super().client.get_client())
        except (RedisError, OSError) as error:
            if self.breaker is not None and isinstance(error, _OUTAGES):
                self.breaker.trip(error)
            raise ConnectionInterrupted(connection=None) from error
        return answers[: len(counters)], [_stored(value) for value in answers[len(counters) :]]

    def charge(self, counters: Sequence[tuple[str, int, int]], amount: int) -> int | None:
        """`charge` as one Lua script, through the breaker."""
        if self.breaker is not None and self.breaker.is_open():
            raise _skipped()
        keys = [self.make_key(key) for key, _, _ in counters]
        args = [amount, *(limit for _, limit, _ in counters), *(int(s) for _, _, s in counters)]
        try:
            refused = _CHARGE(keys, args, client=super().client.get_client())
        except (RedisError, OSError) as error:
            if self.breaker is not None and isinstance(error, _OUTAGES):
                self.breaker.trip(error)
            raise ConnectionInterrupted(connection=None) from error
        return refused - 1 if refused else None


def _stored(value: bytes | None) -> object:
    """A value Lua read, as the cache would give it for a count (django-redis keeps integers
    as their digits, so INCR works); anything else as stored, which says only that it exists."""
    if value is not None and value.lstrip(b"-").isdigit():
        return int(value)
    return value


class _GuardedClient:
    """Forwards every call to django-redis's client, unless the breaker is open.

    It raises what django-redis raises for an unreachable server (ConnectionInterrupted), so that
    the backend's IGNORE_EXCEPTIONS decides, as for any other outage.
    """

    def __init__(self, client, breaker: Breaker):
        self._client = client
        self._breaker = breaker

    def __getattr__(self, name):
        attribute = getattr(self._client, name)
        if not callable(attribute) or name == "close":  # closing sends nothing
            return attribute
        breaker = self._breaker

        def guarded(*args, **kwargs):
            if breaker.is_open():
                raise _skipped()
            try:
                return attribute(*args, **kwargs)
            except ConnectionInterrupted as error:
                if isinstance(error.__cause__, _OUTAGES):
                    breaker.trip(error.__cause__)
                raise

        return guarded


class CacheSkipped(ConnectionInterrupted):
    """The breaker is open: nothing was sent (the failure that opened it is logged already)."""


def _skipped() -> CacheSkipped:
    error = CacheSkipped(connection=None)
    error.__cause__ = RedisConnectionError("skipped: the cache failed moments ago")
    return error
