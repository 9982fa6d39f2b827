"""The issuing statement (`tickets.services.issue_statement`) held to the ORM path it replaces:
the same rows, column for column; the same capacity rule (`events.services`); the same answers
for an unknown type, a replay and a taken code; one round trip."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from events.models import Event, TicketType
from tests.factories import EventFactory, TicketTypeFactory, WebhookEndpointFactory
from tests.task_support import run_due_tasks
from ticketing.api.exceptions import NotFound
from tickets.email_status import TicketEmail
from tickets.exceptions import (
    DuplicateExternalId,
    DuplicateReferenceCode,
    EventNotActive,
    QuotaExceeded,
)
from tickets.models import Order, Ticket
from tickets.selectors import ticket_for_output
from tickets.serializers import TicketSerializer
from tickets.services import issuing
from tickets.services.common import Actor
from webhooks.models import WebhookEvent
from webhooks.outbox import webhook_events_complete
from webhooks.selectors import webhook_wants

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

HOLDER = {
    "firstname": "Anan",
    "lastname": "Wong",
    "email": "anan@example.com",
    "phone": "0812345678",
}
AT = datetime(2026, 11, 27, 3, 0, tzinfo=UTC)
# What two issues of one holder never share, or share only by the path that wrote them.
OWN = {"id", "order_id", "reference_code", "external_id", "page_token", "change_xid", "change_seq"}
# The same in the API's Ticket.
OWN_OUT = {"id", "order_id", "reference_code", "external_id", "ticket_url"}


def _create(event, ticket_type, *, statement: bool, monkeypatch, **fields):
    monkeypatch.setattr(issuing, "issuing_statement_available", lambda: statement)
    return issuing.ticket_create(
        event=event, ticket_type_id=ticket_type.pk, actor=Actor(), **HOLDER, **fields
    )


def _row(model, pk, *, without=()) -> dict:
    stored = model.objects.get(pk=pk)
    fields = model._meta.concrete_fields
    return {f.attname: getattr(stored, f.attname) for f in fields if f.attname not in without}


def _shared(ticket_data: dict) -> dict:
    return {key: value for key, value in ticket_data.items() if key not in OWN_OUT}


@pytest.fixture
def frozen(monkeypatch):
    """Every `timezone.now()` (defaults, `auto_now`, the services') is `AT`."""
    monkeypatch.setattr("django.utils.timezone.now", lambda: AT)


@pytest.mark.parametrize("via_api", [True, False])
def test_statement_writes_what_the_orm_path_writes(monkeypatch, frozen, event, via_api):
    WebhookEndpointFactory(organizer=event.organizer)
    ticket_type = TicketTypeFactory(event=event, quantity=10, api_quota=5)
    results = {}
    for statement in (False, True):
        results[statement] = _create(
            event,
            ticket_type,
            statement=statement,
            monkeypatch=monkeypatch,
            via_api=via_api,
            external_id=f"PIN-{statement}",
        ).ticket
    orm, ours = results[False], results[True]
    assert _row(Ticket, ours.pk, without=OWN) == _row(Ticket, orm.pk, without=OWN)
    assert _row(Order, ours.order_id, without={"id"}) == _row(Order, orm.order_id, without={"id"})
    without = {"ticket_id"}
    assert _row(TicketEmail, ours.pk, without=without) == _row(TicketEmail, orm.pk, without=without)
    ticket_type.refresh_from_db()
    assert (ticket_type.sold_count, ticket_type.api_sold_count) == (2, 2 if via_api else 0)
    # The answer as the ORM path renders it, and the `ticket.created` events' data.
    stored = ticket_for_output(event_id=event.pk, external_id="PIN-True")
    assert TicketSerializer(ours).data == TicketSerializer(stored).data
    assert _shared(TicketSerializer(ours).data) == _shared(TicketSerializer(orm).data)
    ids = list(WebhookEvent.objects.order_by("created_at", "id").values_list("pk", flat=True))
    data = [e.payload["data"]["ticket"] for e in webhook_events_complete(ids)]
    assert sorted(d["id"] for d in data) == sorted([orm.pk, ours.pk])
    assert _shared(data[0]) == _shared(data[1])


# (quantity, sold, api_quota, api_sold, via_api): the capacity rule's cases.
CAPACITY = [
    (2, 1, None, 0, True),  # room
    (2, 2, None, 0, True),  # full
    (2, 2, None, 0, False),  # full, not through the API
    (5, 1, 2, 2, True),  # the API's quota used up
    (5, 1, 2, 2, False),  # which a sale not through the API does not count
    (5, 1, 2, 1, True),  # the quota's last place
]


@pytest.mark.parametrize(("quantity", "sold", "api_quota", "api_sold", "via_api"), CAPACITY)
def test_capacity_rule_is_the_orm_paths(
    monkeypatch, event, quantity, sold, api_quota, api_sold, via_api
):
    outcomes = {}
    for statement in (False, True):
        ticket_type = TicketTypeFactory(
            event=event,
            quantity=quantity,
            sold_count=sold,
            api_quota=api_quota,
            api_sold_count=api_sold,
        )
        try:
            _create(
                event, ticket_type, statement=statement, monkeypatch=monkeypatch, via_api=via_api
            )
        except QuotaExceeded:
            issued = False
        else:
            issued = True
        ticket_type.refresh_from_db()
        counters = (ticket_type.sold_count, ticket_type.api_sold_count)
        outcomes[statement] = (
            issued,
            counters,
            Ticket.objects.filter(ticket_type=ticket_type).count(),
        )
    assert outcomes[True] == outcomes[False]


def test_one_round_trip_and_nothing_else(monkeypatch, event, ticket_type):
    webhook_wants(organizer_id=event.organizer_id, type="ticket.created")  # kept in the cache
    with CaptureQueriesContext(connection) as queries:
        _create(event, ticket_type, statement=True, monkeypatch=monkeypatch)
    assert [q["sql"].split()[:2] for q in queries.captured_queries] == [["WITH", "claim"]]
    assert not DBTaskResult.objects.exists()  # the email is queued in the outbox
    assert TicketEmail.objects.get().status == TicketEmail.Status.QUEUED
    assert not WebhookEvent.objects.exists()  # no endpoint wants it


def test_unknown_or_other_events_type_is_not_found_and_writes_nothing(monkeypatch, event):
    other = TicketTypeFactory(event=EventFactory(organizer=event.organizer))
    missing = TicketType(pk=other.pk + 1000)
    for ticket_type in (other, missing):
        with pytest.raises(NotFound):
            _create(event, ticket_type, statement=True, monkeypatch=monkeypatch)
    assert not Order.objects.exists()
    other.refresh_from_db()
    assert other.sold_count == 0


@pytest.mark.parametrize(
    ("status", "ends_in_days"),
    [("active", 1), ("draft", 1), ("ended", 1), ("active", -1)],
    ids=["on-sale", "draft", "ended", "active-but-over"],
)
def test_the_statement_issues_only_in_the_organizers_event_on_sale(
    organizer, other_organizer, status, ends_in_days
):
    """The API's creation names the event by id and does not read it first: the claim itself
    checks that the event is the organizer's and on sale, as `Event.effective_status` reads
    it. Refused, the statement writes nothing, and the event's read tells why."""
    now = timezone.now()
    event = EventFactory(
        organizer=organizer,
        status=status,
        start_at=now - timedelta(days=2),
        end_at=now + timedelta(days=ends_in_days),
    )
    ticket_type = TicketTypeFactory(event=event)
    on_sale = event.effective_status == Event.Status.ACTIVE
    webhook_wants(organizer_id=organizer.pk, type="ticket.created")  # kept in the cache
    with pytest.raises(NotFound):  # another organizer's event, whatever its status
        issuing.ticket_create_in_event(
            organizer_id=other_organizer.pk,
            event_id=event.pk,
            ticket_type_id=ticket_type.pk,
            actor=Actor(),
            **HOLDER,
        )
    with CaptureQueriesContext(connection) as queries:
        try:
            issuing.ticket_create_in_event(
                organizer_id=organizer.pk,
                event_id=event.pk,
                ticket_type_id=ticket_type.pk,
                actor=Actor(),
                **HOLDER,
            )
        except EventNotActive:
            assert not on_sale
    statements = [q["sql"].split()[:2] for q in queries.captured_queries]
    assert statements[0] == ["WITH", "claim"]
    assert (len(statements) == 1) is on_sale  # refused: the event is read after
    assert Ticket.objects.filter(event=event).count() == int(on_sale)
    ticket_type.refresh_from_db()
    assert ticket_type.sold_count == int(on_sale)


def test_replay_and_conflicts_as_on_the_orm_path(monkeypatch, event, ticket_type):
    first = _create(event, ticket_type, statement=True, monkeypatch=monkeypatch, external_id="R-1")
    again = _create(event, ticket_type, statement=True, monkeypatch=monkeypatch, external_id="R-1")
    assert (again.idempotent, again.ticket.pk) == (True, first.ticket.pk)
    with pytest.raises(DuplicateExternalId):
        monkeypatch.setitem(HOLDER, "lastname", "Other")
        _create(event, ticket_type, statement=True, monkeypatch=monkeypatch, external_id="R-1")
    with pytest.raises(DuplicateReferenceCode):
        _create(
            event,
            ticket_type,
            statement=True,
            monkeypatch=monkeypatch,
            reference_code=first.ticket.reference_code,
        )
    ticket_type.refresh_from_db()
    assert ticket_type.sold_count == 1  # the failed statements claimed nothing
    assert Order.objects.count() == 1


def test_a_failed_statement_leaves_the_callers_transaction_usable(monkeypatch, event, ticket_type):
    with transaction.atomic():
        first = _create(
            event, ticket_type, statement=True, monkeypatch=monkeypatch, external_id="T"
        )
        again = _create(
            event, ticket_type, statement=True, monkeypatch=monkeypatch, external_id="T"
        )
        assert again.ticket.pk == first.ticket.pk
    assert Ticket.objects.count() == 1


def test_queued_email_is_sent_once(monkeypatch, mailoutbox, event, ticket_type):
    result = _create(event, ticket_type, statement=True, monkeypatch=monkeypatch)
    assert run_due_tasks() == 1
    assert [m.to for m in mailoutbox] == [[HOLDER["email"]]]
    record = TicketEmail.objects.get(ticket=result.ticket)
    assert (record.status, record.queued_at) == (TicketEmail.Status.SENT, None)
    assert run_due_tasks() == 0
