"""`GET /metrics` (issue 31): Prometheus text, read back with prometheus-client's own parser, only
for `Authorization: Bearer <METRICS_TOKEN>`; off (404) without the setting; the request counts
of several gunicorn workers add up whichever worker answers the scrape."""

import concurrent.futures
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from checkin.models import CheckInLog
from tests.factories import EventFactory, TicketFactory, TicketTypeFactory, WebhookEndpointFactory
from tests.oauth.support import PYTHON, free_port, get, running, server_env
from webhooks.models import WebhookDelivery, WebhookEvent

from .queue_tasks import task_echo

TOKEN = "metrics-token-0123456789abcdef"


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of a Prometheus text exposition."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(client: Client, token: str = TOKEN) -> dict:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return samples(response.content.decode())


def test_off_without_a_token(db, settings):
    settings.METRICS_TOKEN = ""
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 404


@pytest.mark.parametrize(
    "header",
    [None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer", f"bearer{TOKEN}"],
)
def test_refused_without_the_token(db, settings, header):
    settings.METRICS_TOKEN = TOKEN
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = Client().get("/metrics", **extra)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"ticketing_" not in response.content


def test_scrape_reports_requests_check_ins_queues_and_webhooks(
    db, settings, django_assert_num_queries
):
    settings.METRICS_TOKEN = TOKEN
    client = Client()
    event = EventFactory(title="Metrics Fest")
    ticket_type = TicketTypeFactory(event=event)
    used = [TicketFactory(event=event, ticket_type=ticket_type, status="used") for _ in range(3)]
    TicketFactory(event=event, ticket_type=ticket_type)
    TicketFactory(event=event, ticket_type=ticket_type, status="revoked")
    for ticket in used:
        CheckInLog.objects.create(
            ticket=ticket, event=event, action=CheckInLog.Action.CHECK_IN, at=timezone.now()
        )
    CheckInLog.objects.create(  # a refused scan is no check-in
        ticket=used[0], event=event, action=CheckInLog.Action.CHECK_IN, at=timezone.now(),
        error="already_used",
    )  # fmt: skip
    over = EventFactory(
        start_at=timezone.now() - timedelta(days=4), end_at=timezone.now() - timedelta(days=3)
    )
    CheckInLog.objects.create(
        ticket=TicketFactory(event=over, ticket_type=TicketTypeFactory(event=over), status="used"),
        event=over,
        action=CheckInLog.Action.CHECK_IN,
        at=timezone.now(),
    )
    for n in range(4):
        task_echo.using(queue_name="email").enqueue(n)
    endpoint = WebhookEndpointFactory(organizer=event.organizer)
    statuses = ["pending", "delivered", "delivered", "failed"]
    for status in statuses:
        webhook_event = WebhookEvent.objects.create(
            organizer=event.organizer, type="ping", payload={}
        )
        WebhookDelivery.objects.create(event=webhook_event, endpoint=endpoint, status=status)
    before = scrape(client)
    for _ in range(3):
        assert client.get(f"/t/no-such-token-{event.pk}").status_code == 404
    for n in range(2):  # paths no route matches share one series
        assert client.get(f"/no/such/path/{n}").status_code == 404

    # One statement each: check-ins, tickets, due tasks, running tasks, deliveries.
    with django_assert_num_queries(5):
        found = scrape(client)

    label = (("event_id", str(event.pk)),)
    assert found["ticketing_event_check_ins_total", label] == 3
    assert found["ticketing_event_checked_in_tickets", label] == 3
    assert found["ticketing_event_tickets", label] == 4
    assert not [key for key in found if ("event_id", str(over.pk)) in key[1]]  # long over
    assert found["ticketing_task_queue_depth", (("queue", "email"),)] == 4
    assert found["ticketing_task_queue_depth", (("queue", "webhooks"),)] == 0
    age = found["ticketing_task_queue_oldest_age_seconds", (("queue", "email"),)]
    assert 0 <= age < 60
    assert found["ticketing_task_queue_oldest_age_seconds", (("queue", "default"),)] == 0
    for status in ("pending", "delivered", "failed"):
        key = ("ticketing_webhook_deliveries", (("status", status),))
        assert found[key] == statuses.count(status)
    assert found["ticketing_database_up", ()] == 1
    # The ticket page's route by its name, not its path: three more, and one more scrape.
    page = (("method", "GET"), ("route", "ticket-page"), ("status", "404"))
    assert (
        found["ticketing_http_requests_total", page]
        - before.get(("ticketing_http_requests_total", page), 0)
        == 3
    )
    count = (
        "ticketing_http_request_duration_seconds_count",
        (("method", "GET"), ("route", "ticket-page")),
    )
    assert found[count] - before.get(count, 0) == 3
    scraped = (("method", "GET"), ("route", "metrics"), ("status", "200"))
    assert (
        found["ticketing_http_requests_total", scraped]
        - before.get(("ticketing_http_requests_total", scraped), 0)
        == 1
    )
    assert not [key for key in found if f"no-such-token-{event.pk}" in str(key)]
    unmatched = (("method", "GET"), ("route", "<unmatched>"), ("status", "404"))
    assert (
        found["ticketing_http_requests_total", unmatched]
        - before.get(("ticketing_http_requests_total", unmatched), 0)
        == 2
    )
    assert not [key for key in found if "no/such/path" in str(key)]


@pytest.mark.django_db(transaction=True)
def test_several_gunicorn_workers_add_up(shared_database, tmp_path):
    """Two workers in multiprocess mode: every scrape, whichever worker answers it, counts the
    requests of both."""
    port = free_port()
    env = server_env(
        DATABASE_URL=shared_database,
        METRICS_TOKEN=TOKEN,
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
        WEB_CONCURRENCY="2",
        PORT=str(port),
    )
    (tmp_path / "metrics").mkdir()
    command = [PYTHON, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py"]
    url = f"http://127.0.0.1:{port}"
    sent = 0
    with running(command, port=port, env=env, log=tmp_path / "gunicorn.log"):
        deadline = time.monotonic() + 30
        with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
            # Rounds of concurrent requests until both workers have answered some (each
            # keeps a file of its own), at most 30 s and 600 requests.
            while len(list((tmp_path / "metrics").glob("counter_*.db"))) < 2:
                assert time.monotonic() < deadline and sent < 600, "one worker answered all"
                statuses = list(pool.map(lambda _: get(f"{url}/healthz")[0], range(30)))
                assert statuses == [200] * 30
                sent += 30
        totals = []
        for _ in range(4):
            status, _, body = get(f"{url}/metrics", token=TOKEN)
            assert status == 200
            found = samples(body.decode())
            totals.append(
                found[
                    "ticketing_http_requests_total",
                    (("method", "GET"), ("route", "healthz"), ("status", "200")),
                ]
            )
        assert get(f"{url}/metrics", token="wrong")[0] == 401
    # /api/public/info answered the start-up check; /healthz only these.
    assert totals == [sent] * 4
