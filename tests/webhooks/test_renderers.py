"""The renderer of an event a statement recorded is chosen by its type, in code
(`webhooks.renderers`), no longer named by a dotted path in its row; what that means for rows
written by the previous release, and for its workers while a release rolls out
(webhooks/migrations/0006)."""

import pytest
from django.db import connection
from django.utils import timezone
from django.utils.module_loading import import_string

from tests.factories import TicketFactory, WebhookEndpointFactory
from ticketing.api.fields import datetime_representation
from ticketing.twins import fetch_dicts
from tickets.services.publishing import ticket_row_render
from tickets.statements.issue import ticket_event_sql
from webhooks import renderers
from webhooks.models import WebhookEvent
from webhooks.outbox import webhook_events_complete
from webhooks.renderers import renderer_for, renderer_register

# The one path a row of the previous release ever named (both of its names were this function).
PREVIOUS_RELEASES_PATH = "tickets.services.publishing.ticket_row_render"


def test_every_type_a_statement_records_has_its_renderer():
    for type in ("ticket.created", "ticket.checked_in"):
        assert renderer_for(type) is ticket_row_render


def test_a_type_without_a_renderer_is_refused_not_sent_without_data():
    with pytest.raises(LookupError, match=r"order\.cancelled"):
        renderer_for("order.cancelled")


def test_a_second_renderer_for_a_type_is_a_mistake(monkeypatch):
    monkeypatch.setattr(renderers, "_RENDERERS", dict(renderers._RENDERERS))
    renderer_register(types=["ticket.created"], render=ticket_row_render)  # the same: fine
    with pytest.raises(AssertionError):
        renderer_register(types=["ticket.created"], render=lambda events: {})


def _record_by_statement(ticket, type: str) -> WebhookEvent:
    now = timezone.now()
    params = {"organizer_id": ticket.event.organizer_id, "event_id": ticket.event_id, "now": now}
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH changed AS (SELECT * FROM {ticket._meta.db_table} WHERE id = %(ticket)s), "
            f"{ticket_event_sql(ticket='changed', type=type)} SELECT 1",
            {**params, "now_text": datetime_representation(now), "ticket": ticket.pk},
        )
    return WebhookEvent.objects.get(type=type)


@pytest.mark.postgres
@pytest.mark.django_db
def test_rows_still_name_the_renderer_for_workers_of_the_previous_release():
    """An old worker renders only a row that names its renderer: the column, gone from the
    model, is filled by its database default until the next release drops it."""
    ticket = TicketFactory()
    WebhookEndpointFactory(organizer=ticket.event.organizer)
    recorded = _record_by_statement(ticket, "ticket.created")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT renderer FROM {WebhookEvent._meta.db_table} WHERE id = %s", [recorded.pk]
        )
        assert fetch_dicts(cursor) == [{"renderer": PREVIOUS_RELEASES_PATH}]
    assert import_string(PREVIOUS_RELEASES_PATH) is ticket_row_render


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_row_queued_by_the_previous_release_renders_by_its_type():
    ticket = TicketFactory()
    WebhookEndpointFactory(organizer=ticket.event.organizer)
    recorded = _record_by_statement(ticket, "ticket.checked_in")
    with connection.cursor() as cursor:  # as the previous release wrote it
        cursor.execute(
            f"UPDATE {WebhookEvent._meta.db_table} SET renderer = %s WHERE id = %s",
            ["tickets.services.publishing.ticket_checked_in_render", recorded.pk],
        )

    [sent] = webhook_events_complete([recorded.pk])

    assert sent.payload["data"]["ticket"]["id"] == ticket.pk
    assert sent.source is None
