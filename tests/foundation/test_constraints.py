"""The database itself refuses what the contract forbids, whatever code path writes."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from checkin.models import TicketCheckIn
from events.models import TicketType
from tests.factories import EventFactory, TicketFactory, TicketTypeFactory
from tickets.models import Ticket

pytestmark = pytest.mark.django_db


def _rejected(create) -> bool:
    try:
        with transaction.atomic():
            create()
    except IntegrityError:
        return True
    return False


@pytest.mark.parametrize("field", ["reference_code", "external_id", "nfc_uid"])
def test_ticket_identifier_unique_within_event(field):
    first = TicketFactory(**{field: "ABC12345"})
    assert _rejected(
        lambda: TicketFactory(
            event=first.event,
            ticket_type=first.ticket_type,
            order=first.order,
            **{field: "ABC12345"},
        )
    )
    assert Ticket.objects.filter(**{field: "ABC12345"}).count() == 1


@pytest.mark.parametrize("field", ["reference_code", "external_id", "nfc_uid"])
def test_ticket_identifier_may_repeat_across_events(field):
    TicketFactory(**{field: "ABC12345"})
    TicketFactory(**{field: "ABC12345"})
    assert Ticket.objects.filter(**{field: "ABC12345"}).count() == 2


def test_ticket_unset_external_ids_do_not_collide():
    first = TicketFactory(external_id=None, nfc_uid=None)
    TicketFactory(event=first.event, external_id=None, nfc_uid=None)
    assert Ticket.objects.filter(event=first.event, external_id__isnull=True).count() == 2


def test_ticket_reference_code_must_be_upper_case():
    assert _rejected(lambda: TicketFactory(reference_code="abc12345"))


def test_ticket_used_status_and_used_at_go_together():
    assert _rejected(lambda: TicketFactory(status=Ticket.Status.USED, used_at=None))
    assert _rejected(lambda: TicketFactory(status=Ticket.Status.ACTIVE, used_at=timezone.now()))


def test_ticket_type_negative_price_rejected():
    assert _rejected(lambda: TicketTypeFactory(price=-1))
    assert TicketTypeFactory(price=0).price == 0


def test_ticket_type_counters_cannot_pass_quantity_or_api_quota():
    ticket_type = TicketTypeFactory(quantity=1, api_quota=0)
    assert _rejected(
        lambda: TicketType.objects.filter(pk=ticket_type.pk).update(sold_count=F("quantity") + 1)
    )
    assert _rejected(lambda: TicketType.objects.filter(pk=ticket_type.pk).update(api_sold_count=1))
    assert _rejected(lambda: TicketType.objects.filter(pk=ticket_type.pk).update(quantity=-1))


def test_ticket_type_pack_size_only_for_packs():
    assert _rejected(lambda: TicketTypeFactory(kind="pack", pack_size=None))
    assert _rejected(lambda: TicketTypeFactory(kind="normal", pack_size=4))
    assert TicketTypeFactory(kind="pack", pack_size=4).pack_size == 4


def test_event_cannot_end_before_it_starts():
    start = timezone.now()
    assert _rejected(lambda: EventFactory(start_at=start, end_at=start - timedelta(minutes=1)))


def test_check_in_type_admits_a_ticket_once():
    ticket = TicketFactory()
    check_in_type = ticket.event.check_in_types.create(name="Day 1")
    TicketCheckIn.objects.create(ticket=ticket, check_in_type=check_in_type, used_at=timezone.now())
    assert _rejected(
        lambda: TicketCheckIn.objects.create(
            ticket=ticket, check_in_type=check_in_type, used_at=timezone.now()
        )
    )
