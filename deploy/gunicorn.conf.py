"""Gunicorn settings for every production-like run: `make serve`, the Procfile, docker-compose.

Everything comes from the environment, so one file serves a laptop and a fleet:
- `PORT` (8000) and `HOST` (127.0.0.1; containers and hosts behind a balancer set 0.0.0.0),
- `WEB_CONCURRENCY`: worker processes, default 2 × cores + 1 (gunicorn's own advice for
  sync workers whose time goes to waiting on PostgreSQL),
- `GUNICORN_TIMEOUT`: seconds before a stuck worker is killed and replaced (30).

App servers hold no state: any number of them, on any number of machines, can share one
PostgreSQL and one Redis behind a load balancer.
"""

import multiprocessing
import os

wsgi_app = "ticketing.wsgi:application"
bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2 + 1))
worker_class = "sync"

timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 30
# Behind a proxy the connection is reused; the proxy's idle timeout must be longer than this.
keepalive = 5
# Recycle workers now and then so a slow leak cannot grow without bound; jitter keeps them
# from all restarting at once.
max_requests = 2000
max_requests_jitter = 200

# Requests that are not HTTP at all are refused before Django sees them.
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190

# X-Forwarded-* are trusted only from the proxy in front (set to its address, or * inside a
# private network where only the proxy can reach the app).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")

# Django writes one JSON line per request (ticketing.middleware) to stdout; gunicorn's own
# access log would duplicate it without the request id. Turned on (`--access-logfile`), its lines
# are scrubbed by the same function as Django's (ticketing.logging, on `gunicorn.access`).
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")

# Gunicorn's own lines (worker boots, timeouts, signals) in the same JSON shape as the app's.
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "ticketing.log_format.JsonFormatter"}},
    "handlers": {
        "stdout": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": "json",
        }
    },
    # Gunicorn merges this over its defaults one key deep, so `root` must name our handler.
    "root": {"handlers": ["stdout"], "level": "WARNING"},
    "loggers": {
        "gunicorn.error": {"handlers": ["stdout"], "level": loglevel.upper(), "propagate": False},
    },
}

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ticketing.settings.production")
