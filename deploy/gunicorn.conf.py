"""Gunicorn settings for every production-like run: `make serve`, the Procfile, docker-compose.

Everything comes from the environment, so one file serves a laptop and a fleet:
- `PORT` (8000) and `HOST` (127.0.0.1; containers and hosts behind a balancer set 0.0.0.0),
- `WEB_CONCURRENCY`: worker processes, default one per core and at least 2 (measured, below),
- `GUNICORN_WORKER_CLASS` / `GUNICORN_THREADS` (`gthread` / 4; `sync` has 1 thread) and
  `GUNICORN_MAX_REQUESTS` (100,000), to measure alternatives with `bench/gate.py`,
- `GUNICORN_TIMEOUT`: seconds before a stuck worker is killed and replaced (30),
- `GUNICORN_SWITCH_INTERVAL_MS`: how long a thread may hold the interpreter while another
  waits for it (1 ms; Python's default is 5; see `post_worker_init`),
- `GUNICORN_REUSE_PORT=1`: a listening socket per worker (see `reuse_port`),
- `GUNICORN_CONTROL_SOCKET`: a path for gunicorn's control socket (`gunicornc`); none by default.

Signals (deploy/README.md, "Restarts and deploys"): TERM stops gracefully (each worker finishes
the requests it holds, answers a request arriving on a kept-alive connection with
`Connection: close`, then exits); HUP replaces the workers with new ones of the same code, at
once (see `on_starting`); new code needs a restart, host by host behind the balancer
(deploy/topology/rolling-restart.sh).

App servers hold no state: any number of them, on any number of machines, can share one
PostgreSQL and one Redis behind a load balancer.
"""

import gc
import multiprocessing
import os
import sys
import tempfile
from pathlib import Path

from gunicorn.glogging import Logger
from gunicorn.workers.gthread import ThreadWorker

wsgi_app = "ticketing.wsgi:application"
bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
# Measured with `bench/gate.py` (c=8, a new connection per request) on a 2-core machine that
# also runs PostgreSQL and Redis: 2 sync workers against 5 (gunicorn's 2 × cores + 1) answered
# the authenticated workloads 1.4-2× faster (/organizers 370 vs 183 req/s, scan-by-code check-in
# 354 vs 207, find by code 311 vs 151); issue 14 measured 8-34% in favour of 2 as well. A request
# spends its time on this machine's CPU (Python, PostgreSQL, Redis), not waiting on a remote
# database, so more processes than cores only add switching. gthread (2 × 4 threads) was no
# better on the gate's reads and worse on `GET /info`. Rule: one worker per core, at least 2.
# Each runs 4 threads (issue 28): a request that holds its thread for a second (a 500-scan batch
# upload) no longer holds a whole process, so online scans keep being answered beside it.
# `bench/isolation.py` then, 4 scanners uploading back to back: sync, 3 scans/s at p99 2.3 s;
# gthread with the per-server upload cap (BATCH_UPLOADS_PER_SERVER), 150-200 scans/s at p99
# 0.13 s.
# Up to `workers × threads` database connections per server (8 at 2 × 4).
workers = int(os.environ.get("WEB_CONCURRENCY", max(2, multiprocessing.cpu_count())))
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
# Gunicorn runs gthread whatever the class asked for once threads > 1: sync means one thread.
threads = int(os.environ.get("GUNICORN_THREADS", "4" if worker_class == "gthread" else "1"))


class ThreadWorkerThatStopsListening(ThreadWorker):
    """Gunicorn's gthread worker, closing its copy of the listening socket as soon as it stops
    accepting (TERM, or a HUP's old worker), not once it has finished its requests: until then
    the kernel went on accepting connections for it that nobody would read, reset when the worker
    exited (requests lost behind a balancer, which retries a refused connection elsewhere). The
    master and a HUP's new workers hold the socket too, so a reload still accepts."""

    def set_accept_enabled(self, enabled):
        super().set_accept_enabled(enabled)
        if not enabled and not self.alive:
            for listener in self.sockets:
                listener.close()


if worker_class == "gthread" or threads > 1:
    worker_class = ThreadWorkerThatStopsListening

# Off, the workers share one listening socket and whichever wakes first accepts: a client that
# opens a few connections at once and keeps them (a load generator, a proxy's pool) may find
# them all on one worker while the other idles (`bench/gate.py` saw `GET /info` at 980 and at
# 2,550 req/s in neighbouring runs, the workers at 1.1 and 1.8 cores). On, each worker has its
# own socket and the kernel hashes each connection to one: measured with
# `GUNICORN_REUSE_PORT=1`, no better spread nor faster (deploy/README.md, "Kept connections over
# the workers"), and connections waiting in a stopping worker's queue are reset: off by default.
reuse_port = os.environ.get("GUNICORN_REUSE_PORT") == "1"

timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
# How long a stopping worker may take to finish the requests it holds (the longest, a 500-scan
# batch upload, takes a second or two) before it is killed.
graceful_timeout = 30
# Threaded workers keep a client's connection open this long between requests (sync workers
# close it after each response whatever this says).
keepalive = 5
# Recycle workers rarely, so a slow leak cannot grow without bound: a worker's restart was a
# Django boot (about a second of a core; a fork of the loaded master now, see `on_starting`),
# and at 2,000 requests it came every few seconds under load, which was where the p99 spikes
# were. The jitter spreads the restarts apart.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "100000"))
max_requests_jitter = max_requests // 5

# Requests that are not HTTP at all are refused before Django sees them.
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190

# X-Forwarded-* are trusted only from the proxy in front (set to its address, or * inside a
# private network where only the proxy can reach the app).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")

# Gunicorn's control socket defaults to one path per user ($HOME/.gunicorn/gunicorn.ctl): every
# gunicorn of that user on the machine (two app hosts of deploy/topology, a test's) takes it from
# the one before, and a stopping one removes the next one's. Off unless given a path of its own.
control_socket = os.environ.get("GUNICORN_CONTROL_SOCKET", "")
control_socket_disable = not control_socket

# Django writes one JSON line per request (ticketing.middleware) to stdout; gunicorn's own
# access log would duplicate it without the request id, and cost its formatting per request.
# Turned on (`--access-logfile`), its lines are scrubbed by the same function as Django's
# (ticketing.logging, on `gunicorn.access`).
accesslog = None
errorlog = "-"


class AccessLineWhenAsked(Logger):
    """Gunicorn's logger, building its access line only when `accesslog` asks for one.

    Gunicorn builds the line for every request as soon as a logging config is given, as
    `logconfig_dict` below is, although nothing prints it then: 3.5% of a worker's samples
    on `/organizers` under load.
    """

    def access(self, resp, req, environ, request_time):
        if self.cfg.accesslog:
            super().access(resp, req, environ, request_time)


logger_class = AccessLineWhenAsked


switch_interval = float(os.environ.get("GUNICORN_SWITCH_INTERVAL_MS", "1")) / 1000


def post_worker_init(worker):
    """Load what Django loads at a worker's first request (the URLconf, and the views, serializers
    and schema it imports), then put everything loaded so far out of the garbage collector's way
    (`gc.freeze`). A full collection otherwise walks all of it: under the gate bench's scans,
    48-54 ms against 4 ms once frozen, during which the worker answers nothing.

    A thread that waited for the database waits again for the interpreter each time it comes
    back, up to the switch interval while another thread computes. Beside a batch upload's
    thread, an online scan comes back several times: the gates `bench/isolation.py` then ran, p99
    with 4 scanners uploading over p99 without, in 6 alternated runs: 1.8-3.4x (median 2.1x) at
    1 ms, 2.2-6.1x (median 3.3x) at Python's 5 ms."""
    from django.urls import get_resolver

    sys.setswitchinterval(switch_interval)
    get_resolver().url_patterns  # noqa: B018  (the attribute's loading is the point)
    gc.collect()
    gc.freeze()


def on_starting(server):
    """/metrics adds up the request counts of every worker (prometheus-client's multiprocess
    mode): each writes them to files in this directory, which must be set before a worker
    imports the client (workers inherit the master's environment), be this server's alone, and
    start empty. A fresh one per start unless the operator names one, emptied here. An exited
    worker's files stay, so its counts stay in the totals.

    Then the master loads the application itself, once: a worker forked from it starts
    answering at once instead of after a Django boot. That boot is what a HUP cost: gunicorn
    stops the old workers as soon as it has forked the new ones, and the host answered nothing
    until a new one had imported the app and its URLconf (1.1-1.6 s on a core under the gates'
    load, 2.3 s at a quarter of a core; with the app loaded here, 0.5 s and 0.7 s, the fork of
    the master and the load itself). A HUP keeps the loaded code (new code needs a restart)."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="ticketing-metrics-")
    else:
        for path in Path(directory).glob("*.db"):
            path.unlink()
    _refuse_a_refused_configuration()
    _load_the_application()


def _load_the_application():
    """Import the WSGI application and the URLconf (with the views, serializers and schema it
    imports) in the master, close whatever connection that opened (a forked worker must not
    share the master's sockets), and put it all out of the garbage collector's way (see
    `post_worker_init`): the workers share these pages with the master until they write them."""
    from django.core.cache import caches
    from django.db import connections
    from django.urls import get_resolver

    import ticketing.wsgi  # noqa: F401  (the import is the point)

    get_resolver().url_patterns  # noqa: B018
    connections.close_all()
    caches.close_all()
    gc.collect()
    gc.freeze()


def _refuse_a_refused_configuration():
    """Django's system checks, as `manage.py` commands run them, before any worker starts: a
    serious one (ticket links to a plain-HTTP SITE_URL, ticket emails to the console) stops
    the server instead of letting it answer."""
    import django
    from django.core import checks

    django.setup()
    errors = [m for m in checks.run_checks() if m.is_serious() and not m.is_silenced()]
    for error in errors:
        print(f"gunicorn: {error}", file=sys.stderr)
    if errors:
        sys.exit(1)


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")

# Gunicorn's own lines (worker boots, timeouts, signals) in the same JSON shape as the app's.
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "ticketing.logging.JsonFormatter"}},
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
