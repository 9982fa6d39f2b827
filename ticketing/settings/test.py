"""Test settings: fast hashing, mail kept in memory, deterministic storage."""

import os
import tempfile

from .base import *  # noqa: F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
MEDIA_ROOT = tempfile.mkdtemp(prefix="ticketing-test-media-")
STATIC_ROOT = tempfile.mkdtemp(prefix="ticketing-test-static-")  # whitenoise wants it to exist
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# One process: even the in-memory cache sees every revocation, so tests run with the token cache.
API_TOKEN_CACHE_SECONDS = 60

for _cache in CACHES.values():  # noqa: F405
    if "KEY_PREFIX" in _cache:
        # Parallel test processes share one Redis; each keeps its own keys.
        _cache["KEY_PREFIX"] += "-test-" + os.environ.get("PYTEST_XDIST_WORKER", "main")
