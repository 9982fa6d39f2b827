"""Every rule declared in `checkin.rules` holds on both of the gate's paths: the one-statement
admission does not admit a ticket (or a check-in type) that breaks it, and the locked path
refuses it with the rule's own error and message (that the statement refuses it alike is
pinned with its ORM twin, tests/statements/checkin_cases.py). A rule added to the declaration
without a case here fails `test_every_declared_rule_has_a_case` (or its type counterpart)."""

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection, transaction
from django.utils import timezone

from checkin.exceptions import CheckInTypeRequired, EventNotActiveForTicket, OrderNotPaid
from checkin.models import CheckInLog, TicketCheckIn
from checkin.rules import ADMISSIBLE, SIMPLE_CHECK_IN, SIMPLE_MODE, TYPE_RULES, type_rule_broken
from checkin.selectors import check_in_types_for_ticket
from checkin.services import gate
from checkin.services import statements as admission
from events.models import Event
from tests.factories import CheckInTypeFactory, EventFactory, TicketFactory, TicketTypeFactory
from ticketing.api.exceptions import ApplicationError
from tickets.exceptions import TicketAlreadyUsed, TicketRevoked
from tickets.keys import TicketKey
from tickets.models import Order, Ticket
from tickets.services.common import Actor, ticket_lock

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
    return admission.admitted_ticket(
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
def test_every_rule_is_in_the_admission_statement_to_decide(typed):
    statement = admission.admit_sql(typed=typed)
    deciding = statement[: statement.index("SELECT FALSE")]
    for condition in (*RULES, SIMPLE_MODE, *(TYPE_RULES if typed else ())):
        assert f"({condition.sql})" in deciding
    # The refusal's branch reads what the rules' Python form asks (`checkin.rules.refusal`).
    explaining = statement[statement.index("SELECT FALSE") :]
    for read in ("e.title", "e.status", "o.status", f"({SIMPLE_MODE.sql})", "t.status"):
        assert read in explaining


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


# --- The rules of a check-in type -------------------------------------------------------------


def _unknown_type(event, ticket):
    return CheckInTypeFactory(event=EventFactory(organizer=event.organizer)).id  # another event's


def _type_used(event, ticket):
    check_in_type = CheckInTypeFactory(event=event)
    used_at = timezone.now() - timedelta(minutes=10)
    TicketCheckIn.objects.create(ticket=ticket, check_in_type=check_in_type, used_at=used_at)
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.USED, used_at=used_at)
    return check_in_type.id


def _type_limited_elsewhere(event, ticket):
    other = TicketTypeFactory(event=event)
    return CheckInTypeFactory(event=event, ticket_types=[other]).id


# For each rule of a check-in type, how to request a type that breaks it and no other.
BREAK_TYPE = {
    "Unknown check-in type": _unknown_type,
    "Already checked in at": _type_used,
    "Not valid for this ticket type": _type_limited_elsewhere,
}


def _broken_type(n, event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    CheckInTypeFactory(event=event)  # multiple mode whatever the case
    return ticket, BREAK_TYPE[list(BREAK_TYPE)[n]](event, ticket)


def _statement(ticket, type_ids):
    """The statement's outcome; its refusal (returned) raised, as the gate's service does."""
    outcome = admission.admit(
        organizer_id=ticket.event.organizer_id,
        event_id=ticket.event_id,
        key=TicketKey.id(ticket.pk),
        actor=Actor(),
        check_in_type_ids=type_ids,
    )
    if isinstance(outcome, ApplicationError):
        raise outcome
    return outcome


def test_every_declared_type_rule_has_a_case():
    assert len(TYPE_RULES) == len(BREAK_TYPE)
    for rule, start in zip(TYPE_RULES, BREAK_TYPE, strict=True):
        assert rule.message(SimpleNamespace(admitted_at=timezone.now())).startswith(start)


@pytest.mark.parametrize("n", range(len(TYPE_RULES)), ids=lambda n: TYPE_RULES[n].code)
def test_the_type_case_breaks_that_rule_only(n, event, ticket_type):
    ticket, type_id = _broken_type(n, event, ticket_type)
    check_in_type = check_in_types_for_ticket(ticket).get(type_id)
    assert type_rule_broken(check_in_type) is TYPE_RULES[n]
    if check_in_type is not None:  # the rules after the first read the type
        assert [r for r in TYPE_RULES if not r.holds(check_in_type)] == [TYPE_RULES[n]]


@pytest.mark.parametrize("n", range(len(TYPE_RULES)), ids=lambda n: TYPE_RULES[n].code)
def test_locked_path_fails_the_type_with_the_rule_message(n, event, ticket_type):
    ticket, type_id = _broken_type(n, event, ticket_type)
    before = db_state(event)
    result = gate.ticket_check_in(
        event=event, ticket_id=ticket.pk, actor=Actor(), check_in_type_ids=[type_id]
    )
    [failed] = result.check_in_results
    rule = TYPE_RULES[n]
    assert (failed.success, failed.code) == (False, rule.code)
    assert failed.error == rule.message(check_in_types_for_ticket(ticket).get(type_id))
    assert db_state(event) == before


@pytest.mark.postgres
@pytest.mark.parametrize("n", range(len(TYPE_RULES)), ids=lambda n: TYPE_RULES[n].code)
def test_statement_fails_the_type_as_the_locked_path_does(n, event, ticket_type):
    ticket, type_id = _broken_type(n, event, ticket_type)
    before = db_state(event)
    by_statement = _statement(ticket, [type_id])
    assert db_state(event) == before
    by_lock = gate.ticket_check_in(
        event=event, ticket_id=ticket.pk, actor=Actor(), check_in_type_ids=[type_id]
    )
    assert by_statement.check_in_results == by_lock.check_in_results
    assert by_statement.ticket.status == by_lock.ticket.status


@pytest.mark.postgres
def test_statement_admits_each_type_meeting_every_rule_once(event, ticket_type):
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    first, second = (CheckInTypeFactory(event=event).id for _ in range(2))
    result = _statement(ticket, [first, second, first])
    assert [(r.check_in_type_id, r.success) for r in result.check_in_results] == [
        (first, True),
        (second, True),
        (first, False),
    ]
    assert result.check_in_results[2].error.startswith("Already checked in at")
    assert result.ticket.status == Ticket.Status.USED
    assert TicketCheckIn.objects.filter(ticket=ticket).count() == 2
    logs = CheckInLog.objects.filter(ticket=ticket).order_by("pk")
    assert [log.check_in_type_id for log in logs] == [first, second]


def _ticket_row_updates() -> int:
    """Updates of ticket rows PostgreSQL counts for this session's transaction (read twice:
    counts not yet reported from earlier transactions may show too)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relid = %s::regclass",
            [Ticket._meta.db_table],
        )
        return cursor.fetchone()[0]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_statement_writes_the_ticket_once_and_every_type_moves_it_in_the_feed(ticket_type):
    """The sync feed's trigger on check-in types leaves a ticket the same transaction already
    changed: it has its place in the feed from that change."""
    event = ticket_type.event
    ticket = TicketFactory(event=event, ticket_type=ticket_type)
    first, second, third = (CheckInTypeFactory(event=event).id for _ in range(3))
    seq = Ticket.objects.get(pk=ticket.pk).change_seq
    with transaction.atomic():
        before = _ticket_row_updates()
        _statement(ticket, [first, second])
        assert _ticket_row_updates() - before == 1  # the move to used; not once per type
    moved = Ticket.objects.get(pk=ticket.pk).change_seq
    assert moved > seq
    with transaction.atomic():
        before = _ticket_row_updates()
        result = _statement(ticket, [third])  # the ticket is used already: only its type row
        assert _ticket_row_updates() - before == 1  # by the trigger, which moves it in the feed
    assert [r.success for r in result.check_in_results] == [True]
    assert Ticket.objects.get(pk=ticket.pk).change_seq > moved
