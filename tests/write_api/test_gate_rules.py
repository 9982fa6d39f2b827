"""Every rule declared in `tickets.rules` holds on both of the gate's paths: the one-statement
admission does not admit a ticket that breaks it, and the locked path refuses that ticket with
the rule's own error and message. A rule added to the declaration without a case here fails
`test_every_declared_rule_has_a_case`."""

from datetime import timedelta

import pytest
from django.utils import timezone

from events.models import Event
from tests.factories import CheckInTypeFactory, TicketFactory
from tickets.exceptions import (
    CheckInTypeRequired,
    EventNotActiveForTicket,
    OrderNotPaid,
    TicketAlreadyUsed,
    TicketRevoked,
)
from tickets.models import Order, Ticket
from tickets.rules import ADMISSIBLE, SIMPLE_CHECK_IN, SIMPLE_MODE, TYPE_RULES
from tickets.services import admission, gate
from tickets.services.common import Actor, ticket_lock
from tickets.services.scans import TicketKey

from .helpers import db_state

pytestmark = pytest.mark.django_db

RULES = (*ADMISSIBLE, *SIMPLE_CHECK_IN)


def _revoke(ticket):
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.REVOKED)


def _unpay_order(ticket):
    Order.objects.filter(pk=ticket.order_id).update(status=Order.Status.PENDING, paid_at=None)


def _draft_event(ticket):
    Event.objects.filter(pk=ticket.event_id).update(status=Event.Status.DRAFT)


def _use(ticket):
    used_at = timezone.now() - timedelta(minutes=10)
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.USED, used_at=used_at)


# For each rule, how to make a ticket that breaks it and no other.
BREAK = {
    TicketRevoked: _revoke,
    OrderNotPaid: _unpay_order,
    EventNotActiveForTicket: _draft_event,
    TicketAlreadyUsed: _use,
}


def _broken_ticket(rule, event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    BREAK[rule.error](ticket)
    event.refresh_from_db()
    return ticket


def _admit(ticket):
    return gate._admit(
        organizer_id=ticket.event.organizer_id,
        event_id=ticket.event_id,
        key=TicketKey.id(ticket.pk),
        actor=Actor(),
        at=timezone.now(),
        note="",
    )


def test_every_declared_rule_has_a_case():
    assert [rule.error for rule in RULES] == list(BREAK)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.error.code)
def test_the_case_breaks_that_rule_only(rule, event, ticket_type):
    ticket = ticket_lock(event=event, pk=_broken_ticket(rule, event, ticket_type).pk)
    assert [r for r in RULES if not r.holds(ticket, event)] == [rule]
    assert SIMPLE_MODE.holds(ticket, event)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.error.code)
def test_locked_path_refuses_with_the_rule_error(rule, event, ticket_type):
    ticket = _broken_ticket(rule, event, ticket_type)
    before = db_state(event)
    with pytest.raises(rule.error) as raised:
        gate.ticket_check_in(event=event, ticket_id=ticket.pk, actor=Actor())
    locked = ticket_lock(event=event, pk=ticket.pk)
    assert raised.value.message == rule.message(locked, event)
    assert raised.value.ticket.pk == ticket.pk
    assert db_state(event) == before


@pytest.mark.parametrize("typed", [False, True], ids=["simple", "typed"])
def test_every_rule_is_in_the_admission_statement(typed):
    statement = admission.admit_sql(typed=typed)
    for condition in (*RULES, SIMPLE_MODE, *(TYPE_RULES if typed else ())):
        assert f"({condition.sql})" in statement


@pytest.mark.postgres
@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.error.code)
def test_statement_does_not_admit_a_ticket_breaking_the_rule(rule, event, ticket_type):
    ticket = _broken_ticket(rule, event, ticket_type)
    before = db_state(event)
    assert _admit(ticket) is None
    assert db_state(event) == before


@pytest.mark.postgres
def test_statement_admits_a_ticket_that_meets_every_rule(event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    admitted = _admit(ticket)
    assert admitted is not None and admitted.pk == ticket.pk
    assert admitted.status == Ticket.Status.USED


@pytest.mark.postgres
def test_multiple_mode_leaves_the_statement_and_takes_the_locked_path(event, ticket_type):
    CheckInTypeFactory(event=event)
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    assert not SIMPLE_MODE.holds(ticket_lock(event=event, pk=ticket.pk), event)
    before = db_state(event)
    assert _admit(ticket) is None
    assert db_state(event) == before
    with pytest.raises(CheckInTypeRequired):
        gate.ticket_check_in(event=event, ticket_id=ticket.pk, actor=Actor())
