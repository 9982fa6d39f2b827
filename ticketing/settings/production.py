"""Production: DEBUG off, secure cookies, JSON logs, static files from whitenoise.

App servers keep no state of their own: data lives in PostgreSQL (`DATABASE_URL`) and the rate
limit counters in Redis (`REDIS_URL`), so any number of them can run behind a load balancer.
"""

import os

os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("LOG_FORMAT", "json")

from .base import *  # noqa: F403
from .base import DATABASES
from .env import env_bool, env_int

# TLS ends at the proxy or load balancer in front, which says so in X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=True)
# Load balancers probe over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 60 * 60 * 24 * 30)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=True)
SECURE_CONTENT_TYPE_NOSNIFF = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A runaway query must not hold a worker (and its locks) for ever: PostgreSQL cancels it and
    # the client gets a 503 with Retry-After. 0 turns the limit off.
    # Through PgBouncer, the pooler sets it on its server connections (deploy/pgbouncer.sh):
    # it refuses a client's startup options.
    _statement_timeout_ms = env_int("DB_STATEMENT_TIMEOUT_MS", 15000)
    _pooled = env_bool("DB_TRANSACTION_POOLER", default=False)
    for _alias, _database in DATABASES.items():
        if _alias == "default" and _pooled:
            continue
        _options = _database.setdefault("OPTIONS", {})
        _options["options"] = (
            f"{_options.get('options', '')} -c statement_timeout={_statement_timeout_ms}"
        )
        _options["options"] = _options["options"].strip()

SILENCED_SYSTEM_CHECKS = [
    # The spec lets every call carry its token as the `access_token` query parameter; the
    # access log scrubs it (ticketing.logging).
    "oauth2_provider.W004",
    # Native and demo clients register loopback `http://127.0.0.1` callbacks (RFC 8252 §7.3).
    "oauth2_provider.W008",
    # A refresh in the grace period mints a new pair (oauth_setup.validators) rather than
    # returning the stored plaintext one that hashed storage does not keep.
    "oauth2_provider.E001",
    # CSRF is Django's middleware subclassed (ticketing.middleware), which this check
    # does not recognise by its path; ticketing.E003 checks for it instead.
    "security.W003",
]
