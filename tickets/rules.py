"""The gate's admission rules, declared once (CONTRACT §7).

Each rule is read two ways. The locked path (`ticket_check_in`, `ticket_renew`) asks its Python
predicate of the locked ticket and raises the rule's error with its message. The one-statement
admission (`tickets.services.gate`) puts its SQL predicate, over the aliases `t` (the ticket),
`o` (its order) and `e` (its event), in the WHERE clause of its UPDATE. A rule added here
therefore reaches both; tests/write_api/test_gate_rules.py holds every rule to both paths.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from events.models import CheckInType, Event
from ticketing.api.exceptions import ApplicationError

from .exceptions import (
    EventNotActiveForTicket,
    OrderNotPaid,
    TicketAlreadyUsed,
    TicketRevoked,
)
from .models import Order, Ticket
from .services.common import iso


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
