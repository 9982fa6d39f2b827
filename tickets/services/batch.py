"""A scanner's upload of the scans it made offline (CONTRACT §11, batch upload).

Each scan is applied alone, in its own transaction, through the gate's services: same rules,
locks and audit rows as one check-in or renew, the audit rows carrying the scan's id. The
scan's record (`ScanRecord`, unique by event and scan id) is written in that transaction, last:
of two uploads of one scan, racing or not, the second's record collides, its transaction rolls
back whatever it did, and it replays the first's result. A rejected scan keeps its error code
in its record and, when the ticket is known, in an audit row, so staff see which tickets two
offline gates both admitted. In multiple mode each requested type that failed gets such a row
with its own code, and a scan none of whose types succeeded is rejected: `ticket_already_used`
(check-in) or `ticket_not_used` (renew) when some type failed for that reason, otherwise
`invalid_parameters` (types unknown or not valid for the ticket type). A scan some of whose
types succeeded was applied: its `error` is null, and its type results tell the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from events.models import CheckInType, Event
from ticketing.api.exceptions import ApplicationError, InvalidParameters
from ticketing.db import atomic_retrying_once

from ..exceptions import TicketAlreadyUsed, TicketNotUsed
from ..models import CheckInLog, Order, ScanRecord
from ..selectors_scanner import ScannerTicketRow, scanner_ticket_check_ins
from ..serializers import ScannerTicketSerializer, TypeResultSerializer
from .common import Actor
from .gate import audit_row, ticket_check_in_at_gate, ticket_renew
from .scans import GateInputs, GateResult, TicketKey, TypeResult


@dataclass(frozen=True)
class Scan:
    """One scan as the scanner queued it: its id and, if it parsed, what to apply."""

    id: str
    action: str = CheckInLog.Action.CHECK_IN
    key: TicketKey | None = None
    inputs: GateInputs | None = None
    invalid: dict[str, list[str]] | None = None  # the field errors of a scan that did not parse


@dataclass(frozen=True)
class ScanOutcome:
    """A scan's result as first decided (`result`, JSON-ready), and whether this is a replay."""

    result: dict[str, Any]
    replayed: bool


def scans_apply(
    *, organizer_id: int, event: Event, scans: list[Scan], actor: Actor
) -> list[ScanOutcome]:
    """Apply each scan of an upload on its own, in order; a scan id seen before replays.

    Each result is stored as rendered, so a replay is the first answer. Raises nothing a scan
    can cause: each scan's rejection is its result.
    Locks: per scan, what its check-in or renew locks, until that scan's commit.
    """
    known = dict(
        ScanRecord.objects.filter(event=event, scan_id__in=[scan.id for scan in scans]).values_list(
            "scan_id", "result"
        )
    )
    multiple = CheckInType.objects.filter(event=event).exists()
    outcomes = []
    for scan in scans:
        if scan.id in known:
            outcomes.append(ScanOutcome(known[scan.id], replayed=True))
            continue
        outcomes.append(
            _apply_once(
                organizer_id=organizer_id,
                event=event,
                scan=scan,
                actor=actor,
                multiple=multiple,
            )
        )
    return outcomes


def _apply_once(*, event: Event, scan: Scan, **kwargs) -> ScanOutcome:
    try:
        return ScanOutcome(_apply(event=event, scan=scan, **kwargs), replayed=False)
    except IntegrityError:
        # Another upload recorded this scan first (its record is committed once we get here).
        result = (
            ScanRecord.objects.filter(event=event, scan_id=scan.id)
            .values_list("result", flat=True)
            .first()
        )
        if result is None:
            raise
        return ScanOutcome(result, replayed=True)


@atomic_retrying_once
def _apply(
    *,
    organizer_id: int,
    event: Event,
    scan: Scan,
    actor: Actor,
    multiple: bool,
) -> dict[str, Any]:
    """Apply one scan and record it, in one transaction; the record's insert is last."""
    ticket = None
    try:
        if scan.invalid is not None:
            raise InvalidParameters("This scan is malformed.", fields=scan.invalid)
        inputs = {**scan.inputs, "scan_id": scan.id}
        if scan.action == CheckInLog.Action.CHECK_IN:
            gate_result = ticket_check_in_at_gate(
                organizer_id=organizer_id, event_id=event.pk, key=scan.key, actor=actor, **inputs
            )
        else:
            gate_result = ticket_renew(event=event, key=scan.key, actor=actor, **inputs)
    except ApplicationError as exc:
        ticket = getattr(exc, "ticket", None)
        if ticket is not None:
            _rejected_row(ticket, scan, actor, error=exc.code).save()
        paid = ticket is not None and ticket.order.status == Order.Status.PAID
        result = {
            "id": scan.id,
            "success": False,
            "error": exc.code,
            "message": exc.message,
            **_render(None, _row(ticket, multiple, order_paid=paid)),
        }
    else:
        ticket = gate_result.ticket
        failed = [
            r for r in (*gate_result.check_in_results, *gate_result.renew_results) if not r.success
        ]
        if failed:
            # In request order, after the rows of the types the gate admitted or renewed. An
            # unknown type has no name, and no row to refer to.
            CheckInLog.objects.bulk_create(
                _rejected_row(
                    ticket,
                    scan,
                    actor,
                    error=r.code,
                    type_id=r.check_in_type_id if r.check_in_type_name is not None else None,
                )
                for r in failed
            )
        result = {
            "id": scan.id,
            "success": gate_result.success,
            "error": _rejection(scan.action, gate_result, failed),
            "message": _message(scan.action, gate_result),
            # The gate admits and renews only tickets of paid orders (rule ADMISSIBLE).
            **_render(gate_result, _row(ticket, multiple, order_paid=True)),
        }
    ScanRecord.objects.create(
        event=event,
        scan_id=scan.id,
        action=scan.action,
        ticket=ticket,
        success=result["success"],
        error=result["error"],
        result=result,
        actor_user=actor.user,
        actor_application=actor.application,
    )
    return result


def _rejected_row(ticket, scan: Scan, actor: Actor, *, error: str, type_id=None) -> CheckInLog:
    """The audit row of a scan rejected for the ticket, or for one of its requested types."""
    return audit_row(
        ticket,
        action=scan.action,
        at=scan.inputs.get("used_at") or timezone.now(),
        actor=actor,
        nfc_uid=scan.key.nfc_uid,
        note=scan.inputs.get("note", ""),
        type_id=type_id,
        scan_id=scan.id,
        error=error,
    )


def _render(result: GateResult | None, row: ScannerTicketRow | None) -> dict[str, Any]:
    """The ticket and type results of a scan's result, JSON-ready (as stored and replayed)."""
    return {
        "ticket": ScannerTicketSerializer(row).data if row is not None else None,
        "check_in_results": TypeResultSerializer(
            result.check_in_results if result else [], many=True
        ).data,
        "renew_results": TypeResultSerializer(
            result.renew_results if result else [], many=True
        ).data,
    }


def _row(ticket, multiple: bool, *, order_paid: bool) -> ScannerTicketRow | None:
    if ticket is None:
        return None
    return ScannerTicketRow.of(
        ticket, scanner_ticket_check_ins(ticket, multiple=multiple), order_paid=order_paid
    )


def _rejection(action: str, result: GateResult, failed: list[TypeResult]) -> str | None:
    """The error code of a multiple-mode scan none of whose requested types succeeded; None
    if one did (the scan was applied) or in simple mode (no types)."""
    if not failed or len(failed) < len(result.check_in_results) + len(result.renew_results):
        return None
    state = TicketAlreadyUsed.code if action == CheckInLog.Action.CHECK_IN else TicketNotUsed.code
    return state if any(r.code == state for r in failed) else InvalidParameters.code


def _message(action: str, result: GateResult) -> str:
    done = "checked in" if action == CheckInLog.Action.CHECK_IN else "renewed"
    ref = result.ticket.reference_code
    if result.success:
        return f"Ticket {ref} {done}."
    if any(r.success for r in (*result.check_in_results, *result.renew_results)):
        return f"Ticket {ref}: not every check-in type was {done}."
    return f"Ticket {ref}: no check-in type was {done}."
