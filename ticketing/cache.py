"""The Redis cache, with short timeouts and a breaker, so that a hung Redis cannot stall requests.

Every request touches the cache several times (the token cache, the rate-limit counter). With a
Redis that accepts connections but never answers (stopped, swapping, a network black hole), each
of those waits for the socket timeout. So the timeouts are short, and after one failure the
process skips Redis altogether for a few seconds: every operation of every cache on that server
fails at once, without touching the network, until the pause is over and the next operation
tries again.

What a skipped operation means is each cache's own setting, as for any other Redis failure:
`default` ignores it (a read misses, a rate-limit counter fails open), `strict` raises it (a
revocation that cannot be recorded is refused, see `oauth_setup.token_cache`).
"""

from __future__ import annotations

import logging
import time

from django_redis.cache import RedisCache
from django_redis.exceptions import ConnectionInterrupted
from redis.exceptions import ConnectionError as RedisConnectionError
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
                raise ConnectionInterrupted(connection=None) from RedisConnectionError(
                    "skipped: the cache failed moments ago"
                )
            try:
                return attribute(*args, **kwargs)
            except ConnectionInterrupted as error:
                if isinstance(error.__cause__, _OUTAGES):
                    breaker.trip(error.__cause__)
                raise

        return guarded
