"""`GET /healthz`: what a load balancer sees when the database or the cache is or is not there."""

from unittest import mock

import pytest
from django.db import OperationalError

from ticketing.settings.caches import redis_caches

pytestmark = pytest.mark.django_db

EMPTY_QUEUE = {"pending": 0, "oldest_pending_seconds": None, "failed": 0}

LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# What production builds, pointed at a port where nothing listens.
UNREACHABLE_REDIS = redis_caches(
    "redis://127.0.0.1:1/0", key_prefix="healthz-test", timeout_ms=150, breaker_seconds=5
)


@pytest.fixture
def file_cache(settings, tmp_path):
    """A cache outside the process that round-trips for real (Redis's stand-in on any machine)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path),
        }
    }


def test_healthz_ok_with_database_and_cache(client, file_cache):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "cache": "ok",
        "tasks": EMPTY_QUEUE,
    }
    assert "no-store" in response["Cache-Control"]
    assert "Retry-After" not in response


def test_healthz_in_process_cache_is_not_configured_and_healthy(client, settings):
    settings.CACHES = LOCMEM
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": "ok",
        "cache": "not configured",
        "tasks": EMPTY_QUEUE,
    }


def test_healthz_needs_no_token_and_answers_head(client, file_cache):
    assert client.head("/healthz").status_code == 200


def test_healthz_refuses_writes(client, file_cache):
    assert client.post("/healthz").status_code == 405


def test_healthz_unreachable_cache_is_200_degraded(client, settings):
    """The balancer keeps the server: the cache is shared, so every server lacks it alike."""
    settings.CACHES = UNREACHABLE_REDIS
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "degraded",
        "database": "ok",
        "cache": "unavailable",
        "tasks": EMPTY_QUEUE,
    }
    assert "Retry-After" not in response


def test_healthz_unreachable_database_and_cache_is_503(client, settings):
    settings.CACHES = UNREACHABLE_REDIS
    with mock.patch(
        "django.db.backends.utils.CursorWrapper.execute",
        side_effect=OperationalError("connection refused"),
    ):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "database": "unavailable",
        "cache": "unavailable",
        "tasks": None,
    }
    assert response["Retry-After"] == "5"


def test_healthz_unreachable_database_is_503_naming_it(client, file_cache):
    with mock.patch(
        "django.db.backends.utils.CursorWrapper.execute",
        side_effect=OperationalError("connection refused"),
    ):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "database": "unavailable",
        "cache": "ok",
        "tasks": None,
    }
    assert response["Retry-After"] == "5"


def test_healthz_is_exempt_from_the_https_redirect(client, settings, file_cache):
    """Balancers probe over plain HTTP; everything else is redirected to HTTPS in production."""
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    assert client.get("/healthz").status_code == 200
    redirected = client.get("/api/public/info")
    assert redirected.status_code == 301
    assert redirected["Location"] == "https://testserver/api/public/info"
