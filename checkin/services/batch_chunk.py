"""A chunk of a batch upload (CONTRACT §11): its scans decided in memory on the tickets read,
by the gate's one decision (`checkin.rules.decide`), and its writes made in bulk. See
`checkin.services.batch`, which reads the scans (`Scan`) and what every chunk of an upload
shares (`Upload`) from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import Q
from django.utils import timezone

from events.models import CheckInType, Event
from ticketing.api.error_body import error_body
from ticketing.api.exceptions import ApplicationError, InvalidParameters, NotFound
from tickets.exceptions import TicketAlreadyUsed
from tickets.keys import TicketKey
from tickets.models import Order, Ticket
from tickets.services.common import Actor
from tickets.services.publishing import Type, ticket_event_record
from webhooks.selectors import webhook_types_wanted

from ..exceptions import TicketNotUsed
from ..gate_types import GateInputs, GateResult
from ..models import CheckInLog, ScanRecord, TicketCheckIn
from ..rules import decide
from ..selectors_scanner import ScannerTicketRow
from ..serializers import ScannerTicketSerializer, TypeResultSerializer
from ..statements import tickets_save
from .gate import PUBLISHED, audit_row


@dataclass(frozen=True)
class Scan:
    """One scan as the scanner queued it: its id and, if it parsed, what to apply."""

    id: str
    action: str = CheckInLog.Action.CHECK_IN
    key: TicketKey | None = None
    inputs: GateInputs | None = None
    invalid: dict[str, list[str]] | None = None  # the field errors of a scan that did not parse


@dataclass(frozen=True)
class Upload:
    """What every chunk of an upload shares: the event, its check-in types, who scans."""

    organizer_id: int
    event: Event
    actor: Actor
    types: list[CheckInType]  # the event's, in order; none in simple mode
    restricted: dict[int, set[int]]  # check-in type id → the ticket types it is limited to
    publish: frozenset[str]  # the webhook event types some endpoint of the organizer wants

    @classmethod
    def of(cls, *, organizer_id: int, event: Event, actor: Actor) -> Upload:
        types = list(CheckInType.objects.filter(event_id=event.pk))
        restricted: dict[int, set[int]] = {}
        if types:
            through = CheckInType.ticket_types.through.objects.filter(
                checkintype_id__in=[t.pk for t in types]
            )
            for type_id, ticket_type_id in through.values_list("checkintype_id", "tickettype_id"):
                restricted.setdefault(type_id, set()).add(ticket_type_id)
        wanted = webhook_types_wanted(organizer_id=organizer_id)
        publish = frozenset(
            t for t in (Type.TICKET_CHECKED_IN, Type.TICKET_RENEWED) if {"*", t} & wanted
        )
        return cls(organizer_id, event, actor, types, restricted, publish)

    @property
    def publishing(self) -> bool:
        return bool(self.publish)


@dataclass(slots=True)
class _TicketCheckInType:
    """A check-in type as `check_in_types_for_ticket` annotates it for one ticket: what
    `checkin.rules.decide` reads and changes."""

    pk: int
    name: str
    restricted: bool
    valid_for_ticket: bool
    admitted_at: datetime | None


@dataclass
class Chunk:
    """A chunk's tickets in memory as its scans change them, and what is left to write."""

    upload: Upload
    tickets: list[Ticket]
    now: datetime = field(default_factory=timezone.now)
    changed: dict[int, Ticket] = field(default_factory=dict)
    logs: list[CheckInLog] = field(default_factory=list)
    records: list[ScanRecord] = field(default_factory=list)
    # Multiple mode: each ticket's check-in types as `check_in_types_for_ticket` gives them,
    # and the admissions as read (ticket id, type id) → time.
    types: dict[int, dict[int, _TicketCheckInType]] = field(default_factory=dict)
    admissions: dict[tuple[int, int], datetime] = field(default_factory=dict)

    def __post_init__(self):
        self.by_key = {}
        multiple = bool(self.upload.types)
        for ticket in self.tickets:
            ticket.event_has_check_in_types = multiple  # what SIMPLE_MODE asks
            for column in ("id", "reference_code", "nfc_uid"):
                value = getattr(ticket, column)
                if value is not None:
                    self.by_key[(column, value)] = ticket
        if multiple and self.tickets:
            self.admissions = {
                (ticket_id, type_id): used_at
                for ticket_id, type_id, used_at in TicketCheckIn.objects.filter(
                    ticket__in=self.tickets
                ).values_list("ticket_id", "check_in_type_id", "used_at")
            }
        self.ticket_row = ScannerTicketSerializer().to_representation
        self.type_rows = TypeResultSerializer(many=True).to_representation

    # --- deciding, in memory ---

    def apply(self, scan: Scan) -> dict[str, Any]:
        """Decide `scan` on the tickets as they stand, note its writes; its result."""
        ticket = None
        if scan.invalid is not None:
            result = self._rejected(scan, None, InvalidParameters(_MALFORMED))
        else:
            ticket = self.by_key.get((scan.key.column, scan.key.value))
            if ticket is not None and scan.key.reference_code not in (None, ticket.reference_code):
                ticket = None  # a signed code of the ticket's former reference code
            if ticket is None:
                result = self._rejected(scan, None, NotFound(_NOT_FOUND))
            else:
                result = self._decide(scan, ticket)
        self.records.append(
            ScanRecord(
                event=self.upload.event,
                scan_id=scan.id,
                action=scan.action,
                ticket=ticket,
                success=result["success"],
                error=result["error"],
                result=result,
                actor_user=self.upload.actor.user,
                actor_application=self.upload.actor.application,
            )
        )
        return result

    def _decide(self, scan: Scan, ticket: Ticket) -> dict[str, Any]:
        """The gate's decision (`checkin.rules.decide`) on the ticket as it stands; its
        changes noted for `write`."""
        at = scan.inputs.get("used_at") or self.now
        decision = decide(
            scan.action,
            ticket,
            self.upload.event,
            type_ids=scan.inputs.get("check_in_type_ids"),
            at=at,
            types=lambda: self._types(ticket),
        )
        if decision.refusal is not None:
            return self._rejected(scan, ticket, decision.refusal)
        self.logs.extend(self._row(scan, ticket, at=at, type_id=t) for t in decision.audit_types)
        if decision.changed:
            ticket.updated_at = self.now
            self.changed[ticket.pk] = ticket
        if decision.audit_types and PUBLISHED[scan.action] in self.upload.publish:
            # The webhook event of the change, with the ticket as this scan left it.
            ticket_event_record(
                organizer_id=self.upload.organizer_id,
                ticket=ticket,
                type=PUBLISHED[scan.action],
            )
        return self._applied(scan, decision.result(ticket, scan.action))

    def _types(self, ticket: Ticket) -> dict[int, _TicketCheckInType]:
        """`check_in_types_for_ticket(ticket)` from what the chunk read, kept for its scans."""
        types = self.types.get(ticket.pk)
        if types is None:
            types = self.types[ticket.pk] = {}
            for base in self.upload.types:
                limited_to = self.upload.restricted.get(base.pk)
                types[base.pk] = _TicketCheckInType(
                    base.pk,
                    base.name,
                    restricted=limited_to is not None,
                    valid_for_ticket=ticket.ticket_type_id in (limited_to or ()),
                    admitted_at=self.admissions.get((ticket.pk, base.pk)),
                )
        return types

    def _row(self, scan: Scan, ticket: Ticket, *, at, type_id=None, error=None) -> CheckInLog:
        return audit_row(
            ticket,
            action=scan.action,
            at=at,
            actor=self.upload.actor,
            nfc_uid=scan.key.nfc_uid,
            note=scan.inputs.get("note", ""),
            type_id=type_id,
            scan_id=scan.id,
            error=error,
        )

    # --- results ---

    def _rejected(self, scan: Scan, ticket: Ticket | None, rejection: ApplicationError) -> dict:
        """A scan rejected whole: its audit row when the ticket is known, and its result."""
        if ticket is not None:
            at = scan.inputs.get("used_at") or self.now
            self.logs.append(self._row(scan, ticket, at=at, error=rejection.code))
        paid = ticket is not None and ticket.order.status == Order.Status.PAID
        body = error_body(rejection.code, rejection.message)
        return {"id": scan.id, **body, **self._render(None, ticket, order_paid=paid)}

    def _applied(self, scan: Scan, result: GateResult) -> dict:
        """A scan the gate's rules let through: the rows of its failed types (in request order,
        after those of the types admitted or renewed) and its result."""
        failed = [r for r in (*result.check_in_results, *result.renew_results) if not r.success]
        at = scan.inputs.get("used_at") or self.now
        for r in failed:
            # An unknown type has no name, and no row to refer to.
            type_id = r.check_in_type_id if r.check_in_type_name is not None else None
            self.logs.append(self._row(scan, result.ticket, at=at, type_id=type_id, error=r.code))
        partly = any(r.success for r in (*result.check_in_results, *result.renew_results))
        message = scan_message(scan.action, result.ticket.reference_code, result.success, partly)
        return {
            "id": scan.id,
            "success": result.success,
            "error": scan_rejection(scan.action, result),
            "message": message,
            # The gate admits and renews only tickets of paid orders (rule ADMISSIBLE).
            **self._render(result, result.ticket, order_paid=True),
        }

    def _render(self, result: GateResult | None, ticket: Ticket | None, *, order_paid: bool):
        """The ticket and type results of a scan's result, JSON-ready (as stored and replayed):
        the ticket as this scan left it."""
        row = None
        if ticket is not None:
            types = self._types(ticket).values() if self.upload.types else ()
            admitted = sorted(t.pk for t in types if t.admitted_at is not None)
            row = self.ticket_row(ScannerTicketRow.of(ticket, admitted, order_paid=order_paid))
        return {
            "ticket": row,
            "check_in_results": self.type_rows(result.check_in_results if result else []),
            "renew_results": self.type_rows(result.renew_results if result else []),
        }

    # --- writing, in bulk ---

    def write(self) -> None:
        """The chunk's changes: tickets, check-in types, audit rows, then the scans' records
        (sorted by scan id, so two uploads sharing scans wait on each other in one order)."""
        if self.changed:
            tickets_save(tickets=sorted(self.changed.values(), key=lambda t: t.pk))
        gone, new = self._admissions_changed()
        if gone:
            TicketCheckIn.objects.filter(
                reduce(or_, (Q(ticket_id=t, check_in_type_id=c) for t, c in gone))
            ).delete()
        if new:
            TicketCheckIn.objects.bulk_create(new)
        if self.logs:
            CheckInLog.objects.bulk_create(self.logs)
        ScanRecord.objects.bulk_create(sorted(self.records, key=lambda r: r.scan_id))

    def _admissions_changed(self) -> tuple[list[tuple[int, int]], list[TicketCheckIn]]:
        """The admissions to delete and to create: each ticket's types now against as read."""
        gone, new = [], []
        for ticket_id, types in self.types.items():
            for type_id, check_in_type in types.items():
                before = self.admissions.get((ticket_id, type_id))
                now = check_in_type.admitted_at
                if before is not None and now != before:
                    gone.append((ticket_id, type_id))
                if now is not None and now != before:
                    new.append(
                        TicketCheckIn(ticket_id=ticket_id, check_in_type_id=type_id, used_at=now)
                    )
        return gone, new


_MALFORMED = "This scan is malformed."
_NOT_FOUND = "Ticket not found."


def scan_rejection(action: str, result: GateResult) -> str | None:
    """The error code of a multiple-mode scan none of whose requested types succeeded; None
    if one did (the scan was applied) or in simple mode (no types). An online scan with a scan
    id records it too, for an upload that replays it."""
    decided = (*result.check_in_results, *result.renew_results)
    failed = [r for r in decided if not r.success]
    if not failed or len(failed) < len(decided):
        return None
    state = TicketAlreadyUsed.code if action == CheckInLog.Action.CHECK_IN else TicketNotUsed.code
    return state if any(r.code == state for r in failed) else InvalidParameters.code


def scan_message(action: str, reference_code: str, success: bool, partly: bool) -> str:
    """An applied scan's message: every requested type done (`success`), some (`partly`) or
    none."""
    done = "checked in" if action == CheckInLog.Action.CHECK_IN else "renewed"
    if success:
        return f"Ticket {reference_code} {done}."
    if partly:
        return f"Ticket {reference_code}: not every check-in type was {done}."
    return f"Ticket {reference_code}: no check-in type was {done}."
