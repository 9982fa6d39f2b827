"""`TicketSerializer` renders directly (`ticketing.api.rendering`); it must equal what DRF makes of
its declared fields."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework import serializers

from events.models import TicketType
from tests.factories import FormFieldFactory, TicketFactory, TicketTypeFactory
from tickets.models import Ticket, TicketFormAnswer
from tickets.selectors import tickets_for_output
from tickets.serializers import TicketSerializer

pytestmark = pytest.mark.django_db


def _field_driven(ticket: Ticket) -> dict:
    """What DRF renders from the declared fields, walking them itself."""
    return dict(serializers.ModelSerializer.to_representation(TicketSerializer(), ticket))


@pytest.fixture
def varied_tickets(event):
    pack = TicketTypeFactory(event=event, kind=TicketType.Kind.PACK, pack_size=4, price=400000)
    free = TicketTypeFactory(event=event, price=0)
    question, other_question = FormFieldFactory(event=event), FormFieldFactory(event=event)
    answered = TicketFactory(event=event, external_id="partner-7", registered_at=timezone.now())
    TicketFormAnswer.objects.create(ticket=answered, field=question, value="L")
    TicketFormAnswer.objects.create(ticket=answered, field=other_question, value="<b>vegan</b>")
    return [
        answered,
        TicketFactory(event=event, ticket_type=pack, firstname="", lastname="", phone=""),
        TicketFactory(event=event, ticket_type=free, status=Ticket.Status.USED),
        TicketFactory(event=event, kind=Ticket.Kind.COMPLIMENTARY, email=""),
        TicketFactory(
            event=event,
            status=Ticket.Status.REVOKED,
            revoke_note="Refunded",
            used_at=None,
        ),
        TicketFactory(
            event=event, status=Ticket.Status.USED, used_at=timezone.now() - timedelta(days=400)
        ),
    ]


def test_hand_built_ticket_equals_the_declared_fields(varied_tickets):
    tickets = list(tickets_for_output().filter(pk__in=[t.pk for t in varied_tickets]))
    assert len(tickets) == len(varied_tickets)
    for ticket in tickets:
        assert TicketSerializer(ticket).data == _field_driven(ticket)


def test_many_uses_the_hand_built_ticket(varied_tickets):
    tickets = list(tickets_for_output().filter(pk__in=[t.pk for t in varied_tickets]))
    assert TicketSerializer(tickets, many=True).data == [_field_driven(t) for t in tickets]


def test_every_declared_field_is_built(ticket_type, event):
    ticket = tickets_for_output().get(pk=TicketFactory(event=event, ticket_type=ticket_type).pk)
    assert list(TicketSerializer(ticket).data) == list(TicketSerializer.Meta.fields)
