"""Request metrics for Prometheus (prometheus-client), and who may read them.

Each process counts its own requests. Under gunicorn's several workers a scrape reaches one of
them, so the counts are kept in prometheus-client's multiprocess mode: every worker writes its
values to memory-mapped files in `PROMETHEUS_MULTIPROC_DIR` (deploy/gunicorn.conf.py makes one
per server start and forgets a worker that exits), and a scrape adds up all the files. Figures
the database already holds (check-ins, the task queue, webhook deliveries) are read at scrape
time instead (checkin.metrics): exact, the same whichever worker answers, and unaffected by
restarts, where counters kept per process would be neither.

A route is the URL pattern's name (or its pattern), never the path: one series per view and
status, whatever the ids and codes in the URLs.
"""

import os
import secrets
import time

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, multiprocess

REQUESTS = Counter(
    "ticketing_http_requests",
    "HTTP requests answered, by route (URL pattern name), method and status code.",
    ["route", "method", "status"],
)
LATENCY = Histogram(
    "ticketing_http_request_duration_seconds",
    "Time from the request entering Django to its response, by route and method.",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
# Methods outside these are counted as OTHER, so a client cannot mint series with made-up verbs.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "<unmatched>"
# Decided once, as prometheus-client decides where its values live when first imported.
MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def route_of(request) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return UNMATCHED
    return match.view_name if match.url_name else match.route or UNMATCHED


class RequestMetricsMiddleware:
    """Counts and times every response; present only while the endpoint is on (METRICS_TOKEN)."""

    def __init__(self, get_response):
        if not settings.METRICS_TOKEN:
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        method = request.method if request.method in METHODS else "OTHER"
        route = route_of(request)
        LATENCY.labels(route, method).observe(time.perf_counter() - started)
        REQUESTS.labels(route, method, str(response.status_code)).inc()
        return response


def bearer_token_valid(request) -> bool:
    """`Authorization: Bearer <METRICS_TOKEN>`, compared in constant time."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    expected = settings.METRICS_TOKEN
    return (
        bool(expected)
        and scheme.lower() == "bearer"
        and secrets.compare_digest(given.strip().encode(), expected.encode())
    )


def scrape_registry() -> CollectorRegistry:
    """The request metrics of every worker of this server (or of this process alone)."""
    registry = CollectorRegistry(auto_describe=False)
    if MULTIPROCESS:
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(REGISTRY)
    return registry
