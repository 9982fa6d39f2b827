"""The gate's admission rules, declared once, and the one decision made of them (CONTRACT §7).

Each rule is read two ways. `decide` asks its Python predicate of a ticket in memory: the locked
path (`ticket_check_in`, `ticket_renew`) on the ticket it locked, a batch upload on the tickets a
chunk read, and the one-statement admission on the ticket its refusal branch read, to tell which
refusal (`refusal`). The statement (`checkin.services.statements`) puts the SQL predicate,
over the aliases `t` (the ticket), `o` (its order) and `e` (its event), in the WHERE clauses
that decide. The rules of a check-in type (`TYPE_RULES`) fail one requested type, not the
request. A rule added here therefore reaches every path; tests/write_api/test_gate_rules.py
holds every rule to both forms.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from events.models import CheckInType, Event
from ticketing.api.exceptions import ApplicationError, InvalidParameters
from ticketing.api.fields import iso
from tickets.exceptions import TicketAlreadyUsed, TicketRevoked
from tickets.models import Order, Ticket

from .exceptions import CheckInTypeRequired, EventNotActiveForTicket, OrderNotPaid, TicketNotUsed
from .gate_types import GateResult, TypeResult
from .models import CheckInLog, TicketCheckIn


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


@functools.cache
def simple_check_in_sql() -> str:
    """The SQL condition under which one statement may admit a ticket: every rule, simple mode."""
    conditions = (*ADMISSIBLE, SIMPLE_MODE, *SIMPLE_CHECK_IN)
    return "\n              AND ".join(f"({condition.sql})" for condition in conditions)


# --- The decision ---------------------------------------------------------------------------


@dataclass
class Decision:
    """What the gate decided for one ticket and one operation: refused whole (`refusal`, to
    raise or to record), or what changed in memory, for the path to write its own way."""

    refusal: ApplicationError | None = None
    results: list[TypeResult] = field(default_factory=list)  # per requested type, in order
    audit_types: list[int | None] = field(default_factory=list)  # a row each; None: untyped
    changed: list[str] = field(default_factory=list)  # the ticket's fields changed
    done: list[CheckInType] = field(default_factory=list)  # the types admitted or renewed

    def result(self, ticket: Ticket, action: str) -> GateResult:
        """The gate's result of an operation this decision let through."""
        if action == CheckInLog.Action.CHECK_IN:
            return GateResult(ticket=ticket, check_in_results=self.results, renew_results=[])
        return GateResult(ticket=ticket, check_in_results=[], renew_results=self.results)


def refusal(action: str, ticket: Ticket, event: Event, *, typed: bool) -> ApplicationError | None:
    """The refusal of the whole operation (`action`) on `ticket`, by the first rule it breaks
    (in this order, every path's); None when the ticket is admissible. `typed`: the gate sent
    check-in types. Each refusal carries the ticket as decided on."""
    for rule in ADMISSIBLE:
        if not rule.holds(ticket, event):
            return rule.error(rule.message(ticket, event), ticket=ticket)
    if action == CheckInLog.Action.RENEW:
        if ticket.status != Ticket.Status.USED:
            return TicketNotUsed(not_used_message(ticket), ticket=ticket)
        return None
    if SIMPLE_MODE.holds(ticket, event):
        for rule in SIMPLE_CHECK_IN:
            if not rule.holds(ticket, event):
                return rule.error(rule.message(ticket, event), ticket=ticket)
    elif not typed:
        return CheckInTypeRequired(ticket=ticket)
    return None


def decide(
    action: str,
    ticket: Ticket,
    event: Event,
    *,
    type_ids: list[int] | None,
    at: datetime,
    types: Callable[[], dict[int, CheckInType]],
) -> Decision:
    """Check in or renew (`action`) `ticket` at `at`, in memory: the one decision of every
    path. `types()` reads the event's check-in types as `check_in_types_for_ticket` annotates
    them for the ticket (multiple mode only; the decision changes their `admitted_at`).

    Simple mode (the event has no check-in types): the ticket itself is admitted or renewed.
    Multiple mode: each requested type is admitted at most once (renew: undone; default every
    admitted one); the ticket is `used` from its first admitted type, `used_at` the earliest
    admission, and `active` again once none remains.
    """
    refused = refusal(action, ticket, event, typed=bool(type_ids))
    if refused is not None:
        return Decision(refusal=refused)
    changed = ["status", "used_at"]
    if SIMPLE_MODE.holds(ticket, event):
        if action == CheckInLog.Action.CHECK_IN:
            ticket.status, ticket.used_at = Ticket.Status.USED, at
        else:
            ticket.status, ticket.used_at = Ticket.Status.ACTIVE, None
        return Decision(audit_types=[None], changed=changed)
    if action == CheckInLog.Action.CHECK_IN:
        return _types_admit(ticket, types(), type_ids, at)
    return _types_renew(ticket, types(), type_ids, at)


def not_used_message(ticket: Ticket) -> str:
    """Why a ticket that is not checked in cannot be renewed (TicketNotUsed)."""
    return f"Ticket {ticket.reference_code} is not checked in."


def type_result(type_id: int, check_in_type, rule: TypeRule) -> TypeResult:
    """The failed result of a requested type (`check_in_type`: as read, None when unknown)."""
    name = check_in_type.name if check_in_type is not None else None
    when = check_in_type.admitted_at if check_in_type is not None else None
    return TypeResult(type_id, name, when, False, rule.message(check_in_type), rule.code)


def _types_admit(ticket: Ticket, types: dict, type_ids: list[int], at: datetime) -> Decision:
    """Each requested type meeting `TYPE_RULES` admitted at `at` (a repeat later in the same
    request or upload is then a duplicate); the others' results tell the rule they broke."""
    decision = Decision()
    for type_id in type_ids:
        check_in_type = types.get(type_id)
        broken = type_rule_broken(check_in_type)
        if broken is not None:
            decision.results.append(type_result(type_id, check_in_type, broken))
            continue
        check_in_type.admitted_at = at
        decision.done.append(check_in_type)
        decision.results.append(TypeResult(type_id, check_in_type.name, at, True, None))
    if decision.done:
        decision.audit_types = [t.pk for t in decision.done]
        earliest = min(at, ticket.used_at) if ticket.used_at else at
        if ticket.status != Ticket.Status.USED or earliest != ticket.used_at:
            ticket.status, ticket.used_at = Ticket.Status.USED, earliest
            decision.changed = ["status", "used_at"]
    return decision


def _types_renew(ticket: Ticket, types: dict, type_ids: list[int] | None, at) -> Decision:
    """The requested types' admissions undone (default: every admitted one)."""
    if not type_ids:
        type_ids = [t.pk for t in types.values() if t.admitted_at is not None]
    decision = Decision()
    for type_id in type_ids:
        check_in_type = types.get(type_id)
        if check_in_type is None:
            decision.results.append(type_result(type_id, None, TYPE_RULES[0]))
        elif check_in_type.admitted_at is None:
            decision.results.append(
                TypeResult(type_id, check_in_type.name, None, False, "Not checked in", NOT_USED)
            )
        else:
            check_in_type.admitted_at = None
            decision.done.append(check_in_type)
            decision.results.append(TypeResult(type_id, check_in_type.name, at, True, None))
    decision.audit_types = [t.pk for t in decision.done]
    remaining = [t.admitted_at for t in types.values() if t.admitted_at is not None]
    if not remaining:
        ticket.status, ticket.used_at = Ticket.Status.ACTIVE, None
        decision.changed = ["status", "used_at"]
        if not decision.done:  # used before the event had types: one row for the ticket
            decision.audit_types = [None]
    elif min(remaining) != ticket.used_at:
        ticket.used_at = min(remaining)
        decision.changed = ["used_at"]
    return decision


NOT_USED = TicketNotUsed.code
