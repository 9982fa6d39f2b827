"""The gate's locked path: check-in and renew of a ticket locked in the gate's transaction
(CONTRACT §7).

Every path decides with `checkin.rules.decide`; this one reads the ticket with
`select_for_update`, and writes what the decision changed. It serves what the one-statement
admission (`checkin.services.statements`) does not: a renew, a tag to bind, SQLite, and a
check-in whose ticket a concurrent scan changed after the statement's snapshot. The unique
constraints on `nfc_uid` and on (ticket, check-in type) are the last word on bindings and
per-type admissions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Unpack

from django.db import IntegrityError
from django.utils import timezone

from events.models import Event
from ticketing.db import atomic_retrying_once
from tickets.keys import TicketKey
from tickets.models import Ticket
from tickets.selectors import ticket_for_output
from tickets.services.common import Actor, ticket_lock, violates
from tickets.services.publishing import Type, ticket_event_record

from ..exceptions import DuplicateNfcUid
from ..gate_types import GateInputs, GateResult
from ..models import CheckInLog, TicketCheckIn
from ..rules import decide
from ..selectors import check_in_types_for_ticket

__all__ = ["ticket_check_in", "ticket_renew"]  # a check-in by the event's id starts in `admission`

PUBLISHED = {
    CheckInLog.Action.CHECK_IN: Type.TICKET_CHECKED_IN,
    CheckInLog.Action.RENEW: Type.TICKET_RENEWED,
}


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


@_gate
def ticket_check_in(
    *, event: Event, key: TicketKey, actor: Actor, **inputs: Unpack[GateInputs]
) -> GateResult:
    """Admit a ticket (simple mode) or record the requested check-in types (multiple mode), as
    `checkin.rules.decide` decides; writes one audit row per admission. `nfc_uid` binds the
    tag to the ticket.

    Raises: NotFound, the refusals of `checkin.rules.refusal` (TicketRevoked, OrderNotPaid,
    EventNotActiveForTicket; in simple mode TicketAlreadyUsed; CheckInTypeRequired),
    DuplicateNfcUid.
    Locks: the ticket row until commit, so two gates cannot both admit it.
    """
    return _operate(CheckInLog.Action.CHECK_IN, event, key, actor, inputs)


@_gate
def ticket_renew(
    *, event: Event, key: TicketKey, actor: Actor, **inputs: Unpack[GateInputs]
) -> GateResult:
    """Undo a check-in: the whole ticket (simple mode) or the requested types (default: all),
    as `checkin.rules.decide` decides. `nfc_uid` is recorded in the audit rows, not bound.

    Raises: NotFound, TicketRevoked, OrderNotPaid, EventNotActiveForTicket, TicketNotUsed.
    Locks: the ticket row until commit.
    """
    return _operate(CheckInLog.Action.RENEW, event, key, actor, inputs)


def _operate(action: str, event: Event, key: TicketKey, actor: Actor, inputs) -> GateResult:
    ticket = ticket_lock(event=event, **key.filters)
    at = inputs.get("used_at") or timezone.now()
    decision = decide(
        action,
        ticket,
        event,
        type_ids=inputs.get("check_in_type_ids"),
        at=at,
        types=lambda: check_in_types_for_ticket(ticket),
    )
    if decision.refusal is not None:
        raise decision.refusal
    changed = decision.changed
    nfc_uid = inputs.get("nfc_uid")
    if action == CheckInLog.Action.CHECK_IN and nfc_uid not in (None, ticket.nfc_uid):
        # The latest binding wins; another ticket's is the unique constraint's call (`_gate`).
        ticket.nfc_uid = nfc_uid
        changed = [*changed, "nfc_uid"]
    type_ids = [t.pk for t in decision.done]
    if action == CheckInLog.Action.CHECK_IN and type_ids:
        TicketCheckIn.objects.bulk_create(
            TicketCheckIn(ticket=ticket, check_in_type_id=t, used_at=at) for t in type_ids
        )
    elif type_ids:
        TicketCheckIn.objects.filter(ticket=ticket, check_in_type_id__in=type_ids).delete()
    CheckInLog.objects.bulk_create(
        audit_row(
            ticket,
            action=action,
            at=at,
            actor=actor,
            nfc_uid=nfc_uid,
            note=inputs.get("note", ""),
            type_id=type_id,
            scan_id=inputs.get("scan_id"),
        )
        for type_id in decision.audit_types
    )
    if changed:
        ticket.save(update_fields=[*changed, "updated_at"])
    if decision.audit_types:
        ticket_event_record(organizer_id=event.organizer_id, ticket=ticket, type=PUBLISHED[action])
    return decision.result(ticket, action)


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
