"""`GET /metrics`: Prometheus metrics for operators, behind `Authorization: Bearer
<METRICS_TOKEN>` (404 without the setting, 401 without the token).

The request counts come from every worker (ticketing.metrics); the rest is read from the
database at each scrape, in five aggregate statements whatever the data's size, so every worker
answers the same: check-ins per running event, each task queue's depth and the age of its
oldest waiting task, and webhook deliveries by outcome. Events are those active now or ended
within METRICS_EVENT_GRACE_HOURS, so the event series stay few and go away after the event.
In the gate's app, which reads the check-in log and may import the apps below it (tickets,
webhooks).
"""

from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, Min, Q
from django.http import Http404, HttpResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from django_tasks_db.models import DBTaskResult, get_date_max
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from events.models import Event
from ticketing.metrics import bearer_token_valid, scrape_registry
from tickets.models import Ticket
from webhooks.models import WebhookDelivery

from .models import CheckInLog


def metric_events():
    cutoff = timezone.now() - timedelta(hours=settings.METRICS_EVENT_GRACE_HOURS)
    return Event.objects.filter(status=Event.Status.ACTIVE, end_at__gt=cutoff)


def check_in_metrics():
    events = metric_events().values("id")
    actions = CounterMetricFamily(
        "ticketing_event_check_ins",
        "Successful check-in actions recorded for the event (renews not subtracted).",
        labels=["event_id"],
    )
    inside = GaugeMetricFamily(
        "ticketing_event_checked_in_tickets",
        "The event's tickets whose status is used now.",
        labels=["event_id"],
    )
    sold = GaugeMetricFamily(
        "ticketing_event_tickets", "The event's tickets that are not revoked.", labels=["event_id"]
    )
    logs = (
        CheckInLog.objects.filter(
            event__in=events, action=CheckInLog.Action.CHECK_IN, error__isnull=True
        )
        .values("event_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    counts = {row["event_id"]: row["n"] for row in logs}
    tickets = (
        Ticket.objects.filter(event__in=events)
        .exclude(status=Ticket.Status.REVOKED)
        .values("event_id")
        .annotate(n=Count("id"), used=Count("id", filter=Q(status=Ticket.Status.USED)))
        .order_by()
    )
    by_event = {row["event_id"]: row for row in tickets}
    for event_id in sorted(set(counts) | set(by_event)):
        label = [str(event_id)]
        actions.add_metric(label, counts.get(event_id, 0))
        inside.add_metric(label, by_event.get(event_id, {}).get("used", 0))
        sold.add_metric(label, by_event.get(event_id, {}).get("n", 0))
    return [actions, inside, sold]


def task_queue_metrics():
    """Read through django-tasks-db's manager (`ready()`, `running()`), never written."""
    now, never = timezone.now(), get_date_max()
    depth = GaugeMetricFamily(
        "ticketing_task_queue_depth", "Tasks due and waiting for a worker.", labels=["queue"]
    )
    age = GaugeMetricFamily(
        "ticketing_task_queue_oldest_age_seconds",
        "How long the queue's oldest due task has waited (0 when none waits).",
        labels=["queue"],
    )
    running = GaugeMetricFamily(
        "ticketing_task_queue_running", "Tasks a worker is running.", labels=["queue"]
    )
    ready = {
        row["queue_name"]: row
        for row in DBTaskResult.objects.ready()
        .values("queue_name")
        .annotate(
            n=Count("id"),
            enqueued=Min("enqueued_at", filter=Q(run_after=never)),
            due=Min("run_after", filter=~Q(run_after=never)),
        )
        .order_by()
    }
    busy = dict(
        DBTaskResult.objects.running()
        .values("queue_name")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("queue_name", "n")
    )
    queues = settings.TASKS["default"]["QUEUES"]
    for queue in sorted(set(queues) | set(ready) | set(busy)):
        row = ready.get(queue, {})
        since = [t for t in (row.get("enqueued"), row.get("due")) if t]
        depth.add_metric([queue], row.get("n", 0))
        age.add_metric([queue], max((now - min(since)).total_seconds(), 0.0) if since else 0.0)
        running.add_metric([queue], busy.get(queue, 0))
    return [depth, age, running]


def webhook_metrics():
    deliveries = GaugeMetricFamily(
        "ticketing_webhook_deliveries",
        "Webhook deliveries kept (until pruned) by outcome: pending (retrying), delivered "
        "(a 2xx came back), failed (retries given up).",
        labels=["status"],
    )
    counts = dict(
        WebhookDelivery.objects.values("status")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("status", "n")
    )
    for status in WebhookDelivery.Status.values:
        deliveries.add_metric([status], counts.get(status, 0))
    return [deliveries]


class DatabaseCollector:
    """What the database knows, read when scraped; `ticketing_database_up` 0 if it cannot."""

    def collect(self):
        up = GaugeMetricFamily("ticketing_database_up", "1 if the database answered the scrape.")
        try:
            families = [*check_in_metrics(), *task_queue_metrics(), *webhook_metrics()]
        except DatabaseError:
            families = []
        up.add_metric([], 1 if families else 0)
        yield up
        yield from families


@never_cache
@require_safe
def metrics_view(request):
    if not settings.METRICS_TOKEN:
        raise Http404
    if not bearer_token_valid(request):
        return HttpResponse(
            "Authorization: Bearer <METRICS_TOKEN> required.\n",
            status=401,
            content_type="text/plain; charset=utf-8",
            headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
        )
    registry = scrape_registry()
    registry.register(DatabaseCollector())
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


# Mounted at /metrics by the root URLconf.
urlpatterns = [path("", metrics_view, name="metrics")]
