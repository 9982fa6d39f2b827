"""What the gate's one-statement admission (`checkin.services.statements`) answered, read from
its row: the admission's result, each requested type's outcome, or the refusal the rules tell
of the rows as the statement read them; of a scan with an id, that the id was taken."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from django.db import IntegrityError

from events.models import Event
from ticketing.api.exceptions import ApplicationError
from tickets.models import Order, Ticket

from ..gate_types import GateResult, TypeResult
from ..models import CheckInLog, ScanRecord, TicketCheckIn
from ..rules import TYPE_RULES, refusal, type_result

_SCAN_RECORD_UNIQUE = "scan_record_unique_scan"


@dataclass(frozen=True)
class ScanTaken:
    """`admit_scan`'s answer when the scan id is the event's already: replay its record."""


def scan_recorded_already(exc: IntegrityError) -> bool:
    """Whether `exc` broke the scan records' unique (event, scan id) (PostgreSQL: by name)."""
    constraint = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None)
    if constraint is not None:
        return constraint == _SCAN_RECORD_UNIQUE
    return f"{ScanRecord._meta.db_table}.scan_id" in str(exc)


def refusal_as_read(
    head: dict[str, Any], ticket: Ticket, *, event_id: int, alias: str, typed: bool
) -> ApplicationError | None:
    """The refusal `checkin.rules.refusal` tells of the ticket, its order and its event as the
    statement's refusal branch read them; None if every rule held (a concurrent scan won)."""
    event = Event.from_db(
        alias,
        ["id", "title", "status"],
        [event_id, head["gate_event_title"], head["gate_event_status"]],
    )
    ticket.order = Order.from_db(
        alias, ["id", "status"], [ticket.order_id, head["gate_order_status"]]
    )
    ticket.event_has_check_in_types = not head["gate_simple_mode"]
    return refusal(CheckInLog.Action.CHECK_IN, ticket, event, typed=typed)


def admitted(head: dict[str, Any], ticket: Ticket, *, at: datetime) -> GateResult:
    """The result of a statement that admitted the ticket (simple mode) or locked it and
    decided each requested type."""
    if "gate_type_ids" not in head or head["gate_admitted_simple"]:
        return GateResult(ticket=ticket, check_in_results=[], renew_results=[])
    results = type_results(
        ticket,
        zip(
            head["gate_type_ids"],
            head["gate_type_names"],
            head["gate_admitted_at"],
            head["gate_broken"],
            strict=True,
        ),
        set(head["gate_inserted"]),
        at,
    )
    return GateResult(ticket=ticket, check_in_results=results, renew_results=[])


def type_results(ticket: Ticket, requested, inserted: set[int], at: datetime):
    """Each requested type's result, in request order, as `checkin.rules.decide` words it."""
    requested = list(requested)
    done: dict[int, datetime] = {}  # admitted by this request: a repeat is a duplicate
    raced = [t for t, _, _, rule in requested if rule is None and t not in inserted]
    if raced:  # a concurrent check-in admitted them after the statement read: when?
        done |= dict(
            TicketCheckIn.objects.filter(
                ticket_id=ticket.pk, check_in_type_id__in=raced
            ).values_list("check_in_type_id", "used_at")
        )
    results = []
    for type_id, name, when, rule in requested:
        if rule is None and type_id in inserted:
            inserted.discard(type_id)
            done[type_id] = at
            results.append(TypeResult(type_id, name, at, True, None))
            continue
        if rule is None:
            when, rule = done.get(type_id, at), 1  # the rule "already checked in for this type"
        seen = SimpleNamespace(name=name, admitted_at=when) if name is not None else None
        results.append(type_result(type_id, seen, TYPE_RULES[rule]))
    return results
