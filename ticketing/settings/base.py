"""Settings for every environment, fed by environment variables.

`test` and `production` only override what differs.
"""

import zoneinfo
from pathlib import Path

import dj_database_url
from django.conf import global_settings
from django.core.exceptions import ImproperlyConfigured

from . import api, oauth
from .caches import DEFAULT_BREAKER_SECONDS, DEFAULT_TIMEOUT_MS, redis_caches
from .env import env_bool, env_int, env_list, env_networks, env_str
from .replicas import replica_databases

BASE_DIR = Path(__file__).resolve().parent.parent.parent

DEBUG = env_bool("DEBUG", default=True)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "insecure-local-development-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "oauth2_provider",
    "accounts",
    "organizers",
    "events",
    "tickets",
    "orders",
    "oauth_setup",
    "webhooks",
    "django_tasks",
    "django_tasks_db",
    "devtools",
    "checkin",
    "ticketing",
]

MIDDLEWARE = [
    # First: every response (redirects and errors of later middleware too) carries the id.
    "ticketing.middleware.RequestIdMiddleware",
    # Counts and times each response for /metrics; absent unless METRICS_TOKEN is set.
    "ticketing.metrics.RequestMetricsMiddleware",
    # Next: API answers (errors of later middleware too) are never stored by a cache.
    "ticketing.middleware.ApiNoStoreMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Django's session, CSRF, user and messages, passed straight through by bearer-token calls.
    "ticketing.middleware.SessionMiddleware",
    "ticketing.middleware.SiteLocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "ticketing.middleware.CsrfViewMiddleware",
    "ticketing.middleware.AuthenticationMiddleware",
    "ticketing.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "ticketing.urls"
WSGI_APPLICATION = "ticketing.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "ticketing" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------

DATABASE_URL = env_str("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}"
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not a database URL we understand: {exc}") from None

# `DATABASE_URL` is a pooler in transaction mode (PgBouncer: deploy/pgbouncer.sh). App servers
# may use one; task workers may not (`manage.py run_worker` refuses to start).
DB_TRANSACTION_POOLER = env_bool("DB_TRANSACTION_POOLER", default=False)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several gates write at once: WAL lets readers run beside a writer, IMMEDIATE makes a
    # transaction take the write lock up front (so it waits rather than failing to upgrade),
    # and the timeout is how long it waits before "database is locked".
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # No `SELECT 1` before each request's first query (5% of a check-in's time): a connection
    # the server dropped fails that request with a 503 and Retry-After, and Django closes it
    # at the end of the request (close_if_unusable_or_obsolete), so the next one reconnects.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
    DATABASES["default"].setdefault("OPTIONS", {})
    if DB_TRANSACTION_POOLER:
        # PgBouncer in transaction mode (deploy/pgbouncer.sh): each transaction may run on
        # another server connection, so nothing may outlive one: no prepared statements
        # (PgBouncer 1.18), no cursors kept open across transactions (.iterator()).
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
    elif env_bool("DB_PREPARED_STATEMENTS", default=True):
        # The gate repeats a few statements thousands of times on each persistent connection:
        # psycopg prepares a statement after a few runs, and PostgreSQL stops planning it anew
        # (half the database's work per check-in). A pooler in transaction mode needs
        # PgBouncer 1.21+ with max_prepared_statements, or DB_PREPARED_STATEMENTS=false.
        DATABASES["default"]["OPTIONS"]["server_side_binding"] = True
        DATABASES["default"]["OPTIONS"]["prepare_threshold"] = 2
    DATABASES["default"]["OPTIONS"].setdefault("connect_timeout", 5)
    # Read replicas (ticketing.db_routing): snapshot-tolerant reads go there when one is fresh.
    DATABASES.update(replica_databases(DATABASES["default"], env_list("DATABASE_REPLICA_URLS", [])))
    if len(DATABASES) > 1:
        DATABASE_ROUTERS = ["ticketing.db_routing.ReplicaRouter"]
        MIDDLEWARE.append("ticketing.replica_middleware.ReplicaReadMiddleware")
DATABASE_REPLICA_MAX_LAG_SECONDS = env_int("DATABASE_REPLICA_MAX_LAG_SECONDS", 5)
DATABASE_REPLICA_CHECK_SECONDS = env_int("DATABASE_REPLICA_CHECK_SECONDS", 1)
DATABASE_REPLICA_RETRY_SECONDS = env_int("DATABASE_REPLICA_RETRY_SECONDS", 5)
# How long a caller's last write is remembered: reads wait for a replica that has replayed it.
DATABASE_READ_YOUR_WRITES_SECONDS = env_int("DATABASE_READ_YOUR_WRITES_SECONDS", 300)
# What a route needs a replica to have replayed, besides the caller's writes (a transaction id).
DATABASE_REPLICA_REQUIREMENTS = {"ticket-sync": "checkin.replica_routing.sync_cursor_xid"}
DATABASE_ROUTE_HEADER = env_bool("DATABASE_ROUTE_HEADER", default=False)

DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

# --- Cache (rate-limit counters, token revocation markers) ----------------------------------

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    # Short timeouts and a pause after a failure: a Redis that hangs costs one request one
    # timeout every few seconds, not every request several (ticketing.cache).
    CACHES = redis_caches(
        REDIS_URL,
        key_prefix=env_str("CACHE_KEY_PREFIX", "ticketing"),
        timeout_ms=env_int("REDIS_TIMEOUT_MS", DEFAULT_TIMEOUT_MS),
        breaker_seconds=env_int("REDIS_BREAKER_SECONDS", DEFAULT_BREAKER_SECONDS),
    )
else:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "strict": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }

# --- Auth -----------------------------------------------------------------------------------

AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# People's passwords keep Django's slow default (the first); OAuth client secrets, random and
# high-entropy, are hashed fast with the last (OAUTH2_PROVIDER's CLIENT_SECRET_HASHER).
PASSWORD_HASHERS = [*global_settings.PASSWORD_HASHERS, "oauth_setup.hashers.ClientSecretHasher"]

# --- Time -----------------------------------------------------------------------------------

LANGUAGE_CODE = "en-us"
# The ticket page follows the browser (LocaleMiddleware); ticket emails, the organizer's setting.
LANGUAGES = [("en", "English"), ("th", "ไทย")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("TIME_ZONE", "Asia/Bangkok")
try:
    zoneinfo.ZoneInfo(TIME_ZONE)
except (zoneinfo.ZoneInfoNotFoundError, ValueError):
    raise ImproperlyConfigured(f"TIME_ZONE {TIME_ZONE!r} is not a known time zone.") from None
USE_I18N = True
USE_TZ = True

# --- Files ----------------------------------------------------------------------------------

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(BASE_DIR / "media")))
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# The largest CSV the admin's attendee import takes; larger files go through `manage.py
# import_tickets`. Files of more than a few thousand rows are previewed and imported by a task
# worker (tickets.services.import_jobs), not within the request: 16 MB is about 140,000 rows.
IMPORT_MAX_UPLOAD_BYTES = env_int("IMPORT_MAX_UPLOAD_BYTES", 16 * 1024 * 1024)

# --- Email ----------------------------------------------------------------------------------

# The console backend is for development only: with DEBUG off the `ticketing.E001` check refuses
# it, as ticket emails carry reference codes that admit their holder.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "tickets@localhost")
# Seconds an SMTP connect or reply may take: emails are sent by the task workers, and a mail
# server that accepts and never answers must not hold a worker for ever.
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
# How often an email worker looks for ticket emails asked for (`tickets.email_outbox`).
EMAIL_OUTBOX_POLL_MS = env_int("EMAIL_OUTBOX_POLL_MS", 200)
# The file backend's directory (EMAIL_BACKEND=django.core.mail.backends.filebased.EmailBackend).
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH")
# The ticket email comes from `"<organizer> via <SITE_NAME>" <DEFAULT_FROM_EMAIL>`.
SITE_NAME = env_str("SITE_NAME", "Ticketing")

# Apple Wallet passes of tickets (tickets/wallet.py). Without a pass certificate the ticket page
# shows no Wallet link and `/t/<token>/ticket.pkpass` is a 404. PEM files: the Pass Type ID
# certificate, its private key, and Apple's WWDR intermediate certificate that signed it.
WALLET_PASS_TYPE_ID = env_str("WALLET_PASS_TYPE_ID", "")
WALLET_TEAM_ID = env_str("WALLET_TEAM_ID", "")
WALLET_CERTIFICATE = env_str("WALLET_CERTIFICATE", "")
WALLET_KEY = env_str("WALLET_KEY", "")
WALLET_KEY_PASSWORD = env_str("WALLET_KEY_PASSWORD", "")
WALLET_WWDR_CERTIFICATE = env_str("WALLET_WWDR_CERTIFICATE", "")

# --- Background tasks and webhooks ---------------------------------------------------------

# django-tasks' database backend: enqueueing inserts a row in the caller's transaction, and
# `manage.py run_worker` processes (any number of them, on any machines; README "Production").
# Three queues, each with workers of its own, so that a mail server or a webhook receiver that
# hangs holds only its own kind of work: `email` (ticket emails, endpoint-disabled notices),
# `webhooks` (events and their deliveries), `default` (anything else).
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["default", "email", "webhooks"],
    }
}
# Finished task rows are deleted by `manage.py prune` after this many days (failed ones later,
# kept for a look at their traceback).
TASK_RESULT_RETENTION_DAYS = env_int("TASK_RESULT_RETENTION_DAYS", 7)
TASK_FAILED_RETENTION_DAYS = env_int("TASK_FAILED_RETENTION_DAYS", 30)
# A task still RUNNING after this long lost its worker (killed, machine gone) and runs again.
# Longer than any task takes: a webhook attempt or an email gives up after 10 s.
TASK_LEASE_SECONDS = env_int("TASK_LEASE_SECONDS", 300)
# A stopping worker lets its running tasks finish this long, then gives them back to the queue
# (`manage.py run_worker`): below the supervisor's wait before SIGKILL (Docker's is 10 s).
TASK_STOP_SECONDS = env_int("TASK_STOP_SECONDS", 8)
# Tasks that may run longer, by task path, with their own lease: an admin import of a large
# file (50,000 rows take one to two minutes) must not be started a second time beside itself.
TASK_LEASE_SECONDS_BY_TASK = {
    "tickets.services.import_jobs.import_job_run": env_int("IMPORT_TASK_LEASE_SECONDS", 3600),
}

# Webhooks (CONTRACT §13). Private, loopback and link-local receivers, and plain http, only when
# this is on: in development (DEBUG) by default, never by default in production.
WEBHOOK_ALLOW_PRIVATE_URLS = env_bool("WEBHOOK_ALLOW_PRIVATE_URLS", default=DEBUG)
# Keys that encrypt secrets at rest (webhook endpoint secrets, event signing keys: see
# `ticketing.encryption`), comma-separated: the first encrypts, every one decrypts (rotation).
# Default: derived from SECRET_KEY.
WEBHOOK_SECRET_KEYS = env_list("WEBHOOK_SECRET_KEY", []) or [SECRET_KEY]
# How long a process trusts what it read of an event's signing keys (CONTRACT §14): a key retired
# elsewhere stops verifying within this time (at once in the process that retired it), and a
# rotation elsewhere signs new codes with the new key after it.
SIGNING_KEY_CACHE_SECONDS = env_int("SIGNING_KEY_CACHE_SECONDS", 10)
WEBHOOK_TIMEOUT_SECONDS = env_int("WEBHOOK_TIMEOUT_SECONDS", 10)
# Retry n waits base * 2^(n-1) seconds (at most the cap) until the delivery is this old.
WEBHOOK_RETRY_BASE_SECONDS = env_int("WEBHOOK_RETRY_BASE_SECONDS", 15)
WEBHOOK_RETRY_MAX_DELAY_SECONDS = env_int("WEBHOOK_RETRY_MAX_DELAY_SECONDS", 4 * 60 * 60)
WEBHOOK_RETRY_FOR_SECONDS = env_int("WEBHOOK_RETRY_FOR_SECONDS", 24 * 60 * 60)
# An endpoint whose attempts have all failed for this long is disabled; its owners are told.
WEBHOOK_DISABLE_AFTER_SECONDS = env_int("WEBHOOK_DISABLE_AFTER_SECONDS", 3 * 24 * 60 * 60)
# What one organizer may cost the workers that every organizer shares (issue 28): endpoints
# each, pings through /test per endpoint, and an endpoint's circuit breaker: after this many
# attempts in a row without an answer in good time it is backed off (its due attempts are
# not sent) for a cool-down that starts here and doubles each time, up to the retry cap.
WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZER = env_int("WEBHOOK_MAX_ENDPOINTS_PER_ORGANIZER", 20)
WEBHOOK_TEST_RATE_LIMIT = env_str("WEBHOOK_TEST_RATE_LIMIT", "5/m")
WEBHOOK_BREAKER_FAILURES = env_int("WEBHOOK_BREAKER_FAILURES", 3)
WEBHOOK_BREAKER_COOLDOWN_SECONDS = env_int("WEBHOOK_BREAKER_COOLDOWN_SECONDS", 60)
# Attempts in flight at once per organizer, across all workers, in lanes of 4 (one task each:
# 16 is 4 of a worker's 16 threads); the tasks a worker of the webhooks queue runs at once
# (threads); how often its outbox relay looks for new events (ms).
WEBHOOK_IN_FLIGHT_PER_ORGANIZER = env_int("WEBHOOK_IN_FLIGHT_PER_ORGANIZER", 16)
WEBHOOK_WORKER_THREADS = env_int("WEBHOOK_WORKER_THREADS", 16)
WEBHOOK_OUTBOX_POLL_MS = env_int("WEBHOOK_OUTBOX_POLL_MS", 200)
# An event whose deliveries are all finished, and untouched, for this many days is deleted with
# them and their attempts by `manage.py prune`.
WEBHOOK_EVENT_RETENTION_DAYS = env_int("WEBHOOK_EVENT_RETENTION_DAYS", 30)

# --- Metrics --------------------------------------------------------------------------------

# `GET /metrics` (Prometheus) answers only `Authorization: Bearer <METRICS_TOKEN>`; without a
# token the endpoint is off (404) and requests are not counted.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
# An event's check-in series are kept this long after its end, then dropped.
METRICS_EVENT_GRACE_HOURS = env_int("METRICS_EVENT_GRACE_HOURS", 24)

# --- Public API -----------------------------------------------------------------------------

REST_FRAMEWORK = api.REST_FRAMEWORK
SPECTACULAR_SETTINGS = api.SPECTACULAR_SETTINGS

# Requests per minute per token on every API endpoint but /me (CONTRACT §9).
API_RATE_LIMIT = env_str("API_RATE_LIMIT", "1200/m")
# Batch uploads of scans (CONTRACT §11) one organizer may have running at once; each scan counts
# as one request against API_RATE_LIMIT.
BATCH_UPLOADS_PER_ORGANIZER = env_int("BATCH_UPLOADS_PER_ORGANIZER", 2)
# ...and one app server (machine or container, by host name) across organizers: uploads never
# take more than this share of its workers, so online scans always find one free (issue 28).
BATCH_UPLOADS_PER_SERVER = env_int("BATCH_UPLOADS_PER_SERVER", 1)
ME_RATE_LIMIT = env_str("ME_RATE_LIMIT", "10/m")
TOKEN_RATE_LIMIT = env_str("TOKEN_RATE_LIMIT", "30/m")
# Failed credential checks before 429 until the window ends (oauth_setup.throttling): client
# secrets on /oauth/* per client address, passwords per username and address; failed sign-ins
# per address whatever the username; and per username from anywhere, a pause of seconds only,
# so that no stranger can lock a person out.
CREDENTIAL_FAILURE_RATE_LIMIT = env_str("CREDENTIAL_FAILURE_RATE_LIMIT", "10/15m")
SIGN_IN_ADDRESS_FAILURE_RATE_LIMIT = env_str("SIGN_IN_ADDRESS_FAILURE_RATE_LIMIT", "100/15m")
USERNAME_FAILURE_RATE_LIMIT = env_str("USERNAME_FAILURE_RATE_LIMIT", "30/10s")
# Downloads of one ticket link's files (PDF, calendar, Wallet pass) per window: a holder saves
# them a few times; a loop on a leaked link must not take a server's cores.
TICKET_FILE_RATE_LIMIT = env_str("TICKET_FILE_RATE_LIMIT", "20/m")
# Tokens the staff check-in page may take per user (checkin).
CHECK_IN_TOKEN_RATE_LIMIT = env_str("CHECK_IN_TOKEN_RATE_LIMIT", "30/m")
# The proxies and balancers in front (addresses or CIDR blocks): from them alone is
# X-Forwarded-For believed, so that per-address limits count clients, not the balancer, and no
# client can choose its own address (ticketing.proxies). Empty: the peer's address counts.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES")
for _retired in ("RATELIMIT_IP_META_KEY", "NUM_PROXIES"):
    if env_str(_retired):  # ignored, they would count every client as the proxy again
        raise ImproperlyConfigured(
            f"{_retired} is no longer read: set TRUSTED_PROXIES to the addresses of the proxies "
            "in front, whose X-Forwarded-For then gives the client's address."
        )
RATELIMIT_USE_CACHE = "default"
RATELIMIT_ENABLE = env_bool("RATELIMIT_ENABLE", default=True)
RATELIMIT_FAIL_OPEN = True

# How long a validated access token may be served from the cache (oauth_setup.token_cache).
# Revocation reaches every process only through a shared cache, hence off without Redis.
API_TOKEN_CACHE_SECONDS = env_int("API_TOKEN_CACHE_SECONDS", 60 if REDIS_URL else 0)

# Base URL the demo prints for clients; requests build absolute URLs from the Host header.
SITE_URL = (
    env_str("SITE_URL") or f"http://{env_str('HOST') or '127.0.0.1'}:{env_int('PORT', 8000)}"
).rstrip("/")

# --- OAuth 2.0 (django-oauth-toolkit) -------------------------------------------------------

OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth_setup.Application"
OAUTH2_PROVIDER = oauth.OAUTH2_PROVIDER

# --- Logging --------------------------------------------------------------------------------

LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
# `json` (production's default): one object per line on stdout, with the request id.
LOG_FORMAT = env_str("LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "scrub_tokens": {"()": "ticketing.logging.ScrubTokensFilter"},
        "request_id": {"()": "ticketing.logging.RequestIdFilter"},
    },
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "ticketing.logging.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": LOG_FORMAT,
            "filters": ["scrub_tokens", "request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # A line per webhook POST otherwise; every attempt is recorded (WebhookAttempt).
        "httpx": {"level": "WARNING"},
        # Seven progress lines per PDF ticket otherwise; its warnings (a missing font) stay.
        "weasyprint.progress": {"level": "WARNING"},
    },
}
