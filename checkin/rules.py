"""The gate's admission rules, declared once (CONTRACT §7).

Each rule is read two ways. The locked path (`ticket_check_in`, `ticket_renew`) and a batch
upload ask its Python predicate of the ticket and reject with the rule's error and message. The
one-statement admission (`checkin.services.admission`) puts its SQL predicate, over the aliases
`t` (the ticket), `o` (its order) and `e` (its event), in the WHERE clauses that decide, and
reads each rule's verdict back to explain a refusal. The rules of a check-in type (`TYPE_RULES`)
fail one requested type, not the request. A rule added here therefore reaches every path;
tests/write_api/test_gate_rules.py holds every rule to both forms.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from events.models import CheckInType, Event
from ticketing.api.exceptions import ApplicationError, InvalidParameters
from tickets.exceptions import (
    EventNotActiveForTicket,
    OrderNotPaid,
    TicketAlreadyUsed,
    TicketRevoked,
)
from tickets.gate_types import iso
from tickets.models import Order, Ticket

from .models import TicketCheckIn


@dataclass(frozen=True)
class Condition:
    """A fact about a ticket at its event, in Python and in SQL; the two must agree."""

    holds: Callable[[Ticket, Event], bool]  # on a ticket locked by `ticket_lock`
    sql: str  # over the aliases t, o, e


@dataclass(frozen=True)
class Rule(Condition):
    """A condition a ticket must meet, and the rejection (which shows the ticket) if it does not."""

    error: type[ApplicationError]  # one that carries the ticket: raised with `ticket=`
    message: Callable[[Ticket, Event], str]


# Every gate operation (check-in and renew) on a ticket, in the order the locked path tells them.
ADMISSIBLE = (
    Rule(
        holds=lambda ticket, event: ticket.status != Ticket.Status.REVOKED,
        sql=f"t.status <> '{Ticket.Status.REVOKED}'",
        error=TicketRevoked,
        message=lambda ticket, event: f"Ticket {ticket.reference_code} has been revoked.",
    ),
    Rule(
        holds=lambda ticket, event: ticket.order.status == Order.Status.PAID,
        sql=f"o.status = '{Order.Status.PAID}'",
        error=OrderNotPaid,
        message=lambda ticket, event: (
            f"The order of ticket {ticket.reference_code} is {ticket.order.status}."
        ),
    ),
    Rule(
        holds=lambda ticket, event: event.status != Event.Status.DRAFT,
        sql=f"e.status <> '{Event.Status.DRAFT}'",
        error=EventNotActiveForTicket,
        message=lambda ticket, event: f"Event '{event.title}' is a draft.",
    ),
)

# Simple mode: the event has no check-in types, and the ticket itself is admitted once.
SIMPLE_MODE = Condition(
    holds=lambda ticket, event: not ticket.event_has_check_in_types,
    sql=f"NOT EXISTS (SELECT 1 FROM {CheckInType._meta.db_table} AS c"
    " WHERE c.event_id = t.event_id)",
)
SIMPLE_CHECK_IN = (
    Rule(
        holds=lambda ticket, event: ticket.status != Ticket.Status.USED,
        sql=f"t.status <> '{Ticket.Status.USED}'",
        error=TicketAlreadyUsed,
        message=lambda ticket, event: (
            f"Ticket {ticket.reference_code} was checked in at {iso(ticket.used_at)}."
        ),
    ),
)


@dataclass(frozen=True)
class TypeRule:
    """A condition a requested check-in type must meet for the ticket. A broken one fails that
    type alone: its result says why (CONTRACT §7) and a batch upload records `code`."""

    # On the type as `check_in_types_for_ticket` annotates it (`restricted`, `valid_for_ticket`,
    # `admitted_at`), None when the event has no such type.
    holds: Callable[[CheckInType | None], bool]
    # Over the aliases r (the request: `r.type_id`), c (the event's type, NULL when unknown),
    # a (the ticket's admission at that type, NULL when none) and t (the ticket).
    sql: str
    code: str
    message: Callable[[CheckInType | None], str]


_LIMITED_TO = CheckInType.ticket_types.through._meta.db_table

# Each requested type of a multiple-mode check-in, in the order the results tell them.
TYPE_RULES = (
    TypeRule(
        holds=lambda check_in_type: check_in_type is not None,
        sql="c.id IS NOT NULL",
        code=InvalidParameters.code,  # the request named it wrongly (CONTRACT §2)
        message=lambda check_in_type: "Unknown check-in type",
    ),
    TypeRule(
        holds=lambda check_in_type: check_in_type.admitted_at is None,
        sql="a.used_at IS NULL",
        code=TicketAlreadyUsed.code,
        message=lambda check_in_type: f"Already checked in at {iso(check_in_type.admitted_at)}",
    ),
    TypeRule(
        holds=lambda check_in_type: not check_in_type.restricted or check_in_type.valid_for_ticket,
        sql=f"NOT EXISTS (SELECT 1 FROM {_LIMITED_TO} AS l WHERE l.checkintype_id = c.id)"
        f" OR EXISTS (SELECT 1 FROM {_LIMITED_TO} AS l WHERE l.checkintype_id = c.id"
        " AND l.tickettype_id = t.ticket_type_id)",
        code=InvalidParameters.code,
        message=lambda check_in_type: "Not valid for this ticket type",
    ),
)
# The table `a` is read from.
TYPE_ADMISSIONS = TicketCheckIn._meta.db_table


def type_rule_broken(check_in_type: CheckInType | None) -> TypeRule | None:
    """The first of `TYPE_RULES` a requested type breaks for the ticket; None if none."""
    return next((rule for rule in TYPE_RULES if not rule.holds(check_in_type)), None)


def enforce(rules: Iterable[Rule], ticket: Ticket, event: Event) -> None:
    """Raise the error of the first rule the ticket breaks; nothing changes, the body shows it.

    Raises: the rules' errors.
    """
    for rule in rules:
        if not rule.holds(ticket, event):
            raise rule.error(rule.message(ticket, event), ticket=ticket)


@functools.cache
def simple_check_in_sql() -> str:
    """The SQL condition under which one statement may admit a ticket: every rule, simple mode."""
    conditions = (*ADMISSIBLE, SIMPLE_MODE, *SIMPLE_CHECK_IN)
    return "\n              AND ".join(f"({condition.sql})" for condition in conditions)
