"""The gate's statement stores the admitted row for its `ticket.checked_in` task; a task queued
before a deploy that added a field still renders (the field takes its default)."""

import pytest
from django.forms.models import model_to_dict

from tests.factories import TicketFactory
from tickets.models import Ticket
from tickets.services.publishing import _instance_from

pytestmark = pytest.mark.django_db


@pytest.fixture
def ticket(event):
    return Ticket.objects.get(pk=TicketFactory(event=event, revoke_note="kept").pk)


def _row(ticket: Ticket) -> dict:
    """The row as `to_jsonb` writes it: columns, timestamps as text."""
    return {
        f.column: (v.isoformat() if hasattr(v, "isoformat") else v)
        for f in Ticket._meta.concrete_fields
        for v in [getattr(ticket, f.attname)]
    }


def test_the_snapshot_gives_back_the_ticket(ticket):
    rebuilt = _instance_from(Ticket, _row(ticket))
    assert model_to_dict(rebuilt) == model_to_dict(ticket)
    assert rebuilt.created_at == ticket.created_at


def test_a_field_the_snapshot_lacks_takes_its_default(ticket):
    row = _row(ticket)
    del row["revoke_note"], row["used_at"]
    rebuilt = _instance_from(Ticket, row)
    assert rebuilt.revoke_note == Ticket._meta.get_field("revoke_note").get_default()
    assert rebuilt.used_at is None
    assert rebuilt.reference_code == ticket.reference_code
