"""The gate: check-in and renew (CONTRACT §7).

Two paths admit a ticket, and both take their conditions from the rules declared in
`checkin.rules`. On PostgreSQL a check-in by the event's id, with or without check-in types, is
one statement whose WHERE clauses are the rules (`checkin.services.admission`), so the database
decides. Everything else takes the locked path here (`ticket_check_in`, `ticket_renew`): the
ticket row is locked with `select_for_update`, the rules are asked of it, and a rejection names
the rule the ticket broke. The unique constraints on `nfc_uid` and on (ticket, check-in type)
are the last word on bindings and per-type admissions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Unpack

from django.db import IntegrityError
from django.utils import timezone

from events.models import CheckInType, Event
from ticketing.db import atomic_retrying_once
from tickets.exceptions import CheckInTypeRequired, DuplicateNfcUid, TicketNotUsed
from tickets.gate_types import GateInputs, GateResult, TicketKey, TypeResult
from tickets.models import Ticket
from tickets.selectors import ticket_for_output
from tickets.services.common import Actor, ticket_lock, violates
from tickets.services.publishing import Type, ticket_event_record

from ..models import CheckInLog, TicketCheckIn
from ..rules import ADMISSIBLE, SIMPLE_CHECK_IN, SIMPLE_MODE, enforce, type_rule_broken
from ..selectors import check_in_types_for_ticket

__all__ = [  # the gate's operations; a check-in by the event's id starts in `admission`
    "ticket_check_in",
    "ticket_renew",
]


def _gate(func: Callable[..., GateResult]) -> Callable[..., GateResult]:
    """Run a gate operation in its transaction; a tag another ticket holds becomes a clean 409.

    The 409 body shows the ticket as it stands: the failed transaction changed nothing. The
    ticket is named by `ticket_id` or by a `TicketKey`; the operation receives the key.
    """
    atomic_func = atomic_retrying_once(func)

    @functools.wraps(func)
    def wrapper(
        *,
        event: Event,
        ticket_id: int | None = None,
        key: TicketKey | None = None,
        nfc_uid: str | None = None,
        **kwargs,
    ):
        key = key or TicketKey.id(ticket_id)
        nfc_uid = nfc_uid if nfc_uid is not None else key.nfc_uid  # bound already: recorded
        try:
            return atomic_func(event=event, key=key, nfc_uid=nfc_uid, **kwargs)
        except IntegrityError as exc:
            if nfc_uid is None or not violates(exc, "nfc_uid"):
                raise
            ticket = ticket_for_output(event_id=event.pk, **key.filters)
            raise DuplicateNfcUid(
                f"NFC tag {nfc_uid} is bound to another ticket of this event.", ticket=ticket
            ) from None

    return wrapper


# --- The locked path ------------------------------------------------------------------------


@_gate
def ticket_check_in(
    *, event: Event, key: TicketKey, actor: Actor, **inputs: Unpack[GateInputs]
) -> GateResult:
    """Admit a ticket (simple mode) or record the requested check-in types (multiple mode).

    Simple mode when the event has no check-in types (`check_in_type_ids` is then ignored).
    In multiple mode each type is admitted at most once; the ticket is `used` from its first
    admitted type and `used_at` is the earliest admitted time. Writes one audit row per
    admission. `nfc_uid` binds the tag to the ticket.

    Raises: NotFound, the errors of the rules (TicketRevoked, OrderNotPaid,
    EventNotActiveForTicket; in simple mode TicketAlreadyUsed), CheckInTypeRequired (multiple
    mode without types), DuplicateNfcUid.
    Locks: the ticket row until commit, so two gates cannot both admit it.
    """
    check_in_type_ids, used_at = inputs.get("check_in_type_ids"), inputs.get("used_at")
    nfc_uid, note = inputs.get("nfc_uid"), inputs.get("note", "")
    ticket = ticket_lock(event=event, **key.filters)
    enforce(ADMISSIBLE, ticket, event)
    at = used_at or timezone.now()
    log = functools.partial(
        audit_row,
        ticket,
        action=CheckInLog.Action.CHECK_IN,
        actor=actor,
        nfc_uid=nfc_uid,
        note=note,
        scan_id=inputs.get("scan_id"),
    )
    changed: list[str] = []

    if SIMPLE_MODE.holds(ticket, event):
        enforce(SIMPLE_CHECK_IN, ticket, event)
        _bind_nfc_uid(ticket, nfc_uid, changed)
        ticket.status, ticket.used_at = Ticket.Status.USED, at
        _save(ticket, [*changed, "status", "used_at"])
        log(at=at).save()
        _publish(event, ticket, Type.TICKET_CHECKED_IN)
        return GateResult(ticket=ticket, check_in_results=[], renew_results=[])

    if not check_in_type_ids:
        raise CheckInTypeRequired(ticket=ticket)
    _bind_nfc_uid(ticket, nfc_uid, changed)
    decided = check_in_types_admit(ticket, check_in_types_for_ticket(ticket), check_in_type_ids, at)
    if decided.done:
        TicketCheckIn.objects.bulk_create(
            TicketCheckIn(ticket=ticket, check_in_type=t, used_at=at) for t in decided.done
        )
        CheckInLog.objects.bulk_create(log(at=at, type_id=t.pk) for t in decided.done)
    _save(ticket, [*changed, *decided.changed])
    if decided.done:
        _publish(event, ticket, Type.TICKET_CHECKED_IN)
    return GateResult(ticket=ticket, check_in_results=decided.results, renew_results=[])


@_gate
def ticket_renew(
    *, event: Event, key: TicketKey, actor: Actor, **inputs: Unpack[GateInputs]
) -> GateResult:
    """Undo a check-in: the whole ticket (simple mode) or the requested types (default: all).

    In multiple mode the ticket returns to `active` once no type remains checked in; otherwise
    its `used_at` becomes the earliest remaining admission. `used_at` is the time recorded in the
    audit row (default now); `nfc_uid` is recorded there too, not bound.

    Raises: NotFound, TicketRevoked, OrderNotPaid, EventNotActiveForTicket, TicketNotUsed.
    Locks: the ticket row until commit.
    """
    check_in_type_ids, used_at = inputs.get("check_in_type_ids"), inputs.get("used_at")
    nfc_uid, note = inputs.get("nfc_uid"), inputs.get("note", "")
    ticket = ticket_lock(event=event, **key.filters)
    enforce(ADMISSIBLE, ticket, event)
    if ticket.status != Ticket.Status.USED:
        raise TicketNotUsed(not_used_message(ticket), ticket=ticket)
    at = used_at or timezone.now()
    log = functools.partial(
        audit_row,
        ticket,
        action=CheckInLog.Action.RENEW,
        at=at,
        actor=actor,
        nfc_uid=nfc_uid,
        note=note,
        scan_id=inputs.get("scan_id"),
    )

    if SIMPLE_MODE.holds(ticket, event):
        ticket.status, ticket.used_at = Ticket.Status.ACTIVE, None
        _save(ticket, ["status", "used_at"])
        log().save()
        _publish(event, ticket, Type.TICKET_RENEWED)
        return GateResult(ticket=ticket, check_in_results=[], renew_results=[])

    decided = check_in_types_renew(ticket, check_in_types_for_ticket(ticket), check_in_type_ids, at)
    if decided.done:
        renewed = [t.pk for t in decided.done]
        TicketCheckIn.objects.filter(ticket=ticket, check_in_type_id__in=renewed).delete()
        CheckInLog.objects.bulk_create(log(type_id=type_id) for type_id in renewed)
    if decided.untyped:
        log().save()
    _save(ticket, decided.changed)
    if decided.done or decided.untyped:
        _publish(event, ticket, Type.TICKET_RENEWED)
    return GateResult(ticket=ticket, check_in_results=[], renew_results=decided.results)


# --- The rules of check-in types, on a ticket in memory -------------------------------------


@dataclass(frozen=True)
class TypesDecided:
    """A multiple-mode check-in or renew, decided on the ticket in memory: what the caller
    writes (the locked path for one ticket, a batch upload for many)."""

    results: list[TypeResult]  # per requested type, in request order
    done: list[CheckInType]  # the types admitted or renewed, each with its audit row
    changed: list[str]  # the ticket's fields changed in memory
    untyped: bool = False  # renew of a ticket used with no type to undo: one row without type


def not_used_message(ticket: Ticket) -> str:
    """Why a ticket that is not checked in cannot be renewed (TicketNotUsed)."""
    return f"Ticket {ticket.reference_code} is not checked in."


def check_in_types_admit(
    ticket: Ticket, types: dict[int, CheckInType], type_ids: list[int], at: datetime
) -> TypesDecided:
    """Admit `ticket` at each requested type it may use and has not used, at `at`.

    `types` is `check_in_types_for_ticket(ticket)`. A type is admitted when it meets every rule
    of `TYPE_RULES`, else its result tells the first it breaks. Each admitted type's
    `admitted_at` becomes `at`, so a repeat later in the same request (or upload) is a
    duplicate. The ticket is `used` from its first admitted type and its `used_at` is the
    earliest admitted time.
    """
    results: list[TypeResult] = []
    admitted: list[CheckInType] = []
    for type_id in type_ids:
        check_in_type = types.get(type_id)
        broken = type_rule_broken(check_in_type)
        if broken is not None:
            name, when = (
                (None, None)
                if check_in_type is None
                else (check_in_type.name, check_in_type.admitted_at)
            )
            message = broken.message(check_in_type)
            results.append(TypeResult(type_id, name, when, False, message, broken.code))
        else:
            check_in_type.admitted_at = at
            admitted.append(check_in_type)
            results.append(TypeResult(type_id, check_in_type.name, at, True, None))
    changed: list[str] = []
    if admitted:
        earliest = min(at, ticket.used_at) if ticket.used_at else at
        if ticket.status != Ticket.Status.USED or earliest != ticket.used_at:
            ticket.status, ticket.used_at = Ticket.Status.USED, earliest
            changed = ["status", "used_at"]
    return TypesDecided(results, admitted, changed)


def check_in_types_renew(
    ticket: Ticket, types: dict[int, CheckInType], type_ids: list[int] | None, at: datetime
) -> TypesDecided:
    """Undo the requested types' admissions of a used `ticket` (default: every admitted one).

    The ticket returns to `active` once no type remains checked in; otherwise its `used_at`
    becomes the earliest remaining admission.
    """
    if not type_ids:
        type_ids = [t.pk for t in types.values() if t.admitted_at is not None]
    results: list[TypeResult] = []
    renewed: list[CheckInType] = []
    for type_id in type_ids:
        check_in_type = types.get(type_id)
        if check_in_type is None:
            results.append(_unknown_type(type_id))
        elif check_in_type.admitted_at is None:
            error = "Not checked in"
            results.append(
                TypeResult(type_id, check_in_type.name, None, False, error, TicketNotUsed.code)
            )
        else:
            check_in_type.admitted_at = None
            renewed.append(check_in_type)
            results.append(TypeResult(type_id, check_in_type.name, at, True, None))
    remaining = [t.admitted_at for t in types.values() if t.admitted_at is not None]
    if not remaining:
        ticket.status, ticket.used_at = Ticket.Status.ACTIVE, None
        # Used before the event had types: nothing per type to undo, one row for the ticket.
        return TypesDecided(results, renewed, ["status", "used_at"], untyped=not renewed)
    if min(remaining) != ticket.used_at:
        ticket.used_at = min(remaining)
        return TypesDecided(results, renewed, ["used_at"])
    return TypesDecided(results, renewed, [])


def _unknown_type(type_id: int) -> TypeResult:
    # Not a type of this event: the rule of `TYPE_RULES` that says so.
    rule = type_rule_broken(None)
    return TypeResult(type_id, None, None, False, rule.message(None), rule.code)


def _bind_nfc_uid(ticket: Ticket, nfc_uid: str | None, changed: list[str]) -> None:
    """Bind the tag the gate read to this ticket (the latest binding wins).

    Whether another ticket of the event holds the tag is the unique constraint's call, not a
    prior read (which could not see a binding being committed meanwhile): its IntegrityError
    becomes DuplicateNfcUid in `_gate`.
    """
    if nfc_uid is not None and nfc_uid != ticket.nfc_uid:
        ticket.nfc_uid = nfc_uid
        changed.append("nfc_uid")


def audit_row(
    ticket: Ticket,
    *,
    action: str,
    at: datetime,
    actor: Actor,
    nfc_uid,
    note,
    type_id=None,
    scan_id=None,
    error=None,
):
    """An audit row; a rejected scan of an upload records its error code (CONTRACT §11)."""
    return CheckInLog(
        ticket=ticket,
        event_id=ticket.event_id,
        scan_id=scan_id,
        error=error,
        check_in_type_id=type_id,
        action=action,
        at=at,
        actor_user=actor.user,
        actor_application=actor.application,
        nfc_uid=nfc_uid,
        note=note,
    )


def _publish(event: Event, ticket: Ticket, type: Type) -> None:
    """The webhook event of an admission or a renewal, in the gate's transaction."""
    ticket_event_record(organizer_id=event.organizer_id, ticket=ticket, type=type)


def _save(ticket: Ticket, changed: list[str]) -> None:
    if changed:
        ticket.save(update_fields=[*changed, "updated_at"])
