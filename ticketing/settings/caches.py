"""CACHES for one Redis server, built here so that tests can point them at another server."""

# A Redis connect or reply may take this long; after a failure a process skips Redis this long.
DEFAULT_TIMEOUT_MS = 150
DEFAULT_BREAKER_SECONDS = 5


def redis_caches(url: str, *, key_prefix: str, timeout_ms: int, breaker_seconds: float) -> dict:
    """CACHES for one Redis server: `default` fails open, `strict` raises (both share a breaker)."""
    redis = {
        "BACKEND": "ticketing.cache.BreakerRedisCache",
        "LOCATION": url,
        "KEY_PREFIX": key_prefix,
        "OPTIONS": {
            "SOCKET_CONNECT_TIMEOUT": timeout_ms / 1000,
            "SOCKET_TIMEOUT": timeout_ms / 1000,
            "BREAKER_SECONDS": breaker_seconds,
        },
    }
    return {
        # A cache outage must not take the API down; the limits fail open meanwhile.
        "default": {**redis, "OPTIONS": {**redis["OPTIONS"], "IGNORE_EXCEPTIONS": True}},
        # The same cache for what must not fail silently: telling the token cache a token is
        # revoked (oauth_setup.token_cache.forget). Failing there undoes the revocation.
        "strict": redis,
    }
