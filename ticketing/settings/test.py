"""Test settings: fast hashing, mail kept in memory, deterministic storage."""

import os
import tempfile

from .base import *  # noqa: F403
from .caches import DEFAULT_BREAKER_SECONDS, redis_caches
from .env import env_bool, env_str

DEBUG = False
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    "oauth_setup.hashers.ClientSecretHasher",  # CLIENT_SECRET_HASHER
]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# Mail kept in memory with DEBUG off is what the suite wants and production must refuse.
SILENCED_SYSTEM_CHECKS = ["ticketing.E001"]
MEDIA_ROOT = tempfile.mkdtemp(prefix="ticketing-test-media-")
STATIC_ROOT = tempfile.mkdtemp(prefix="ticketing-test-static-")  # whitenoise wants it to exist
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# As in production: tests that deliver to a receiver on 127.0.0.1 turn it on.
WEBHOOK_ALLOW_PRIVATE_URLS = env_bool("WEBHOOK_ALLOW_PRIVATE_URLS", default=False)
# One process: even the in-memory cache sees every revocation, so tests run with the token cache.
API_TOKEN_CACHE_SECONDS = 60

if REDIS_URL:  # noqa: F405
    # A machine busy with other test runs can stall Redis past production's timeout, and a
    # tripped breaker would turn the next tests' limits and token cache off. The hung-Redis
    # test (tests/production/test_cache_outage.py) runs production's values on its own Redis.
    CACHES = redis_caches(
        REDIS_URL,  # noqa: F405
        key_prefix=env_str("CACHE_KEY_PREFIX", "ticketing"),
        timeout_ms=2000,
        breaker_seconds=DEFAULT_BREAKER_SECONDS,
    )

for _cache in CACHES.values():
    if "KEY_PREFIX" in _cache:
        # Parallel test processes share one Redis; each keeps its own keys.
        _cache["KEY_PREFIX"] += "-test-" + os.environ.get("PYTEST_XDIST_WORKER", "main")
