"""The plain statements on our own tables load the same instances as the ORM, on SQLite and
PostgreSQL alike: `ticketing.db.from_row`, and each statement of `tickets.selectors` beside the
ORM query it replaces."""

import itertools

import pytest
from django.db import connection
from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Lower
from django.utils import timezone

from events.models import Event
from organizers.models import Membership
from tests.factories import (
    EventFactory,
    FormFieldFactory,
    MembershipFactory,
    OrderFactory,
    TicketFactory,
    UserFactory,
)
from ticketing.db import from_row, select_list
from tickets.models import Order, Ticket, TicketFormAnswer
from tickets.selectors import _caller_ticket, event_ticket_page

pytestmark = pytest.mark.django_db


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_from_row_builds_what_the_orm_builds(organizer):
    event = EventFactory(organizer=organizer, description="Night\nmarket")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {select_list(Event, 'e')} FROM {Event._meta.db_table} AS e WHERE e.id = %s",
            [event.pk],
        )
        loaded = from_row(Event, cursor.fetchone())
    expected = Event.objects.get(pk=event.pk)
    assert _fields(loaded) == _fields(expected)
    assert loaded.start_at == expected.start_at and loaded.start_at.tzinfo is not None
    assert loaded._state.adding is False and loaded._state.db == "default"


def test_from_row_converts_every_ticket_field_as_the_orm_does(event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type, nfc_uid="04A1B2")
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.USED, used_at=timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {select_list(Ticket, 't')} FROM {Ticket._meta.db_table} AS t WHERE t.id = %s",
            [ticket.pk],
        )
        loaded = from_row(Ticket, cursor.fetchone())
    expected = Ticket.objects.get(pk=ticket.pk)
    assert _fields(loaded) == _fields(expected)
    for name, value in _fields(expected).items():
        assert type(getattr(loaded, name)) is type(value), name


def _caller_ticket_orm(*, event_id, reference_code, organizer_id, user_id, email, member):
    """The ORM's form of `_caller_ticket`: what the plain statement must find."""
    queryset = Ticket.objects.filter(event_id=event_id, reference_code=reference_code)
    if organizer_id is not None:
        queryset = queryset.filter(event__organizer_id=organizer_id)
    if user_id is not None:
        queryset = queryset.alias(email_lower=Lower("email"))
        orders = Order.objects.alias(buyer_email_lower=Lower("buyer_email"))
        buyer = Q(buyer_id=user_id) | (Q(buyer_email_lower=email) if email else Q(pk__in=[]))
        visible = Q(holder_id=user_id) | Q(order__in=orders.filter(buyer).values("id"))
        if email:
            visible |= Q(email_lower=email)
        if member:
            members = Membership.objects.filter(
                user_id=user_id, organizer_id=OuterRef("event__organizer_id")
            )
            visible |= Q(Exists(members))
        queryset = queryset.filter(visible)
    answers = TicketFormAnswer.objects.filter(ticket_id=OuterRef("pk"))
    return list(queryset.select_related("ticket_type").annotate(has_answers=Exists(answers))[:1])


def test_caller_ticket_finds_what_the_orm_query_finds(organizer, other_organizer):
    """Every combination of limits, for tickets the user holds, bought, has by email, sees as
    a member, and does not see at all."""
    user = UserFactory(email="fan@example.com")
    event = EventFactory(organizer=organizer)
    other_event = EventFactory(organizer=other_organizer)
    MembershipFactory(user=user, organizer=other_organizer)
    tickets = [
        TicketFactory(event=event, holder=user),
        TicketFactory(event=event, order=OrderFactory(event=event, buyer=user)),
        TicketFactory(event=event, order=OrderFactory(event=event, buyer_email="FAN@example.com")),
        TicketFactory(event=event, email="Fan@Example.com"),
        TicketFactory(event=event),
        TicketFactory(event=other_event),
    ]
    question = FormFieldFactory(event=event, label="Size", position=1)
    TicketFormAnswer.objects.create(ticket=tickets[0], field=question, value="M")
    limits = itertools.product(
        (None, organizer.pk, other_organizer.pk),
        (None, user.pk),
        (None, "fan@example.com"),
        (False, True),
    )
    found_some = 0
    for ticket, (organizer_id, user_id, email, member) in itertools.product(tickets, limits):
        values = {
            "event_id": ticket.event_id,
            "reference_code": ticket.reference_code,
            "organizer_id": organizer_id,
            "user_id": user_id,
            "email": email,
            "member": member,
        }
        found, expected = _caller_ticket(**values), _caller_ticket_orm(**values)
        assert [_fields(t) for t in found] == [_fields(t) for t in expected], values
        if expected:
            found_some += 1
            assert _fields(found[0].ticket_type) == _fields(expected[0].ticket_type)
            assert found[0].has_answers is expected[0].has_answers
    assert 0 < found_some < len(tickets) * 24  # some combinations find the ticket, some do not


def test_event_ticket_page_is_the_orms_page(event, ticket_type):
    tickets = [TicketFactory(event=event, ticket_type=ticket_type) for _ in range(5)]
    TicketFactory()  # another event's
    question = FormFieldFactory(event=event, label="Size", position=1)
    TicketFormAnswer.objects.create(ticket=tickets[2], field=question, value="M")
    orm = Ticket.objects.filter(event=event).select_related("ticket_type").order_by("id")
    orm = orm.annotate(has_answers=Exists(TicketFormAnswer.objects.filter(ticket=OuterRef("pk"))))
    for offset in (0, 1, 3, 5):
        page = event_ticket_page(event_id=event.pk, offset=offset, per_page=2)
        found = page.tickets
        expected = list(orm[offset : offset + 2])
        assert page.total == (orm.count() if expected else None)
        assert [_fields(t) for t in found] == [_fields(t) for t in expected]
        assert [t.has_answers for t in found] == [t.has_answers for t in expected]
        assert [_fields(t.ticket_type) for t in found] == [_fields(t.ticket_type) for t in expected]
