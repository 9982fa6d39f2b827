"""`GET /healthz` for load balancers: is this app server able to serve?

It needs no token and costs one `SELECT 1`, one count of the task queue and a cache round
trip. 503 only when the database does not answer: a balancer then takes the server out of
rotation until it recovers. Without the cache every server still serves (reads miss, rate
limits fail open, revocations are refused), and all of them share the one Redis, so taking them
out would stop the service for an outage they cannot fix: the answer is 200, `"status":
"degraded"`, naming the cache. The cache is "not configured" when Django's in-process cache is
in use (a single-process setup, where the rate limits need nothing else). `tasks` reports the
background queue for monitoring (pending tasks, how long the oldest has waited, failed tasks;
null without the database); a backlog never takes a server out, as app servers run no tasks.
With read replicas, `replicas` says of each whether it serves reads, and why not (unreachable,
lagging, or a role that cannot see its replication status): a replica's state never takes a
server out either, as the primary serves its reads meanwhile.
"""

import logging
import uuid

from django.core.cache import caches
from django.core.cache.backends.locmem import LocMemCache
from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from .db_routing import replicas_health
from .statements import database_answers
from .task_queue import task_queue_status

logger = logging.getLogger("ticketing.health")

OK = "ok"
UNAVAILABLE = "unavailable"
DEGRADED = "degraded"
NOT_CONFIGURED = "not configured"


def database_status() -> str:
    try:
        database_answers()
    except DatabaseError as exc:
        logger.warning("health check: database unavailable (%s)", exc.__class__.__name__)
        # A broken connection must not be reused by the next request of this worker.
        connection.close_if_unusable_or_obsolete()
        return UNAVAILABLE
    return OK


def cache_status() -> str:
    cache = caches["default"]
    if isinstance(cache, LocMemCache):
        return NOT_CONFIGURED
    # django-redis is set to swallow errors (the rate limits fail open), so an outage shows up
    # as a value that does not come back rather than as an exception.
    key, value = f"healthz:{uuid.uuid4().hex}", uuid.uuid4().hex
    try:
        cache.set(key, value, timeout=10)
        echoed = cache.get(key)
        cache.delete(key)
    except Exception as exc:  # any backend's failure means the same: not reachable
        logger.warning("health check: cache unavailable (%s)", exc.__class__.__name__)
        return UNAVAILABLE
    if echoed != value:
        logger.warning("health check: cache unavailable (value did not round-trip)")
        return UNAVAILABLE
    return OK


def tasks_status() -> dict | None:
    """The background queue, for monitoring (a backlog does not take this server out)."""
    try:
        status = task_queue_status()
    except DatabaseError as exc:
        logger.warning("health check: task queue unreadable (%s)", exc.__class__.__name__)
        connection.close_if_unusable_or_obsolete()
        return None
    return {
        "pending": status.pending,
        "oldest_pending_seconds": status.oldest_pending_seconds,
        "failed": status.failed,
    }


@never_cache
@require_safe
def healthz(request):
    database, cache_state = database_status(), cache_status()
    if database != OK:
        status = UNAVAILABLE
    elif cache_state == UNAVAILABLE:
        status = DEGRADED
    else:
        status = OK
    body = {"status": status, "database": database, "cache": cache_state, "tasks": None}
    if database == OK:
        body["tasks"] = tasks_status()
    replicas = replicas_health()
    if replicas:  # the primary serves every read meanwhile: no reason to take this server out
        body["replicas"] = replicas
    response = JsonResponse(body, status=503 if status == UNAVAILABLE else 200)
    if status == UNAVAILABLE:
        response["Retry-After"] = "5"
    return response
