"""A chunk of a batch upload (CONTRACT §11): its scans decided in memory on the tickets read,
by the gate's rules (`checkin.rules`; for check-in types `check_in_types_admit` and
`check_in_types_renew`), and its writes made in bulk. See `checkin.services.batch`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from operator import or_
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from events.models import Event
from ticketing.api.error_body import error_body
from ticketing.api.exceptions import InvalidParameters, NotFound
from tickets.exceptions import CheckInTypeRequired, TicketAlreadyUsed, TicketNotUsed
from tickets.gate_types import GateResult, TypeResult
from tickets.models import Order, Ticket
from tickets.serializers import ScannerTicketSerializer, TypeResultSerializer
from tickets.services.publishing import Type, ticket_event_record

from ..models import CheckInLog, ScanRecord, TicketCheckIn
from ..rules import ADMISSIBLE, SIMPLE_CHECK_IN, SIMPLE_MODE, Rule
from ..selectors_scanner import ScannerTicketRow
from .gate import audit_row, check_in_types_admit, check_in_types_renew, not_used_message

if TYPE_CHECKING:
    from .batch import Scan, Upload


@dataclass(slots=True)
class _TicketCheckInType:
    """A check-in type as `check_in_types_for_ticket` annotates it for one ticket: what
    `check_in_types_admit` and `check_in_types_renew` read and change."""

    pk: int
    name: str
    restricted: bool
    valid_for_ticket: bool
    admitted_at: datetime | None


@dataclass(frozen=True)
class _Rejection:
    code: str
    message: str


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
            result = self._rejected(scan, None, _Rejection(InvalidParameters.code, _MALFORMED))
        else:
            ticket = self.by_key.get((scan.key.column, scan.key.value))
            if ticket is None:
                result = self._rejected(scan, None, _Rejection(NotFound.code, _NOT_FOUND))
            elif scan.action == CheckInLog.Action.CHECK_IN:
                result = self._check_in(scan, ticket)
            else:
                result = self._renew(scan, ticket)
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

    def _check_in(self, scan: Scan, ticket: Ticket) -> dict[str, Any]:
        """`ticket_check_in`'s rules, in its order."""
        event = self.upload.event
        rejection = _broken(ADMISSIBLE, ticket, event)
        if rejection is not None:
            return self._rejected(scan, ticket, rejection)
        at = scan.inputs.get("used_at") or self.now
        if SIMPLE_MODE.holds(ticket, event):
            rejection = _broken(SIMPLE_CHECK_IN, ticket, event)
            if rejection is not None:
                return self._rejected(scan, ticket, rejection)
            ticket.status, ticket.used_at = Ticket.Status.USED, at
            self._changed(ticket, Type.TICKET_CHECKED_IN)
            self.logs.append(self._row(scan, ticket, at=at))
            return self._applied(scan, GateResult(ticket, [], []))
        type_ids = scan.inputs.get("check_in_type_ids")
        if not type_ids:
            required = _Rejection(CheckInTypeRequired.code, CheckInTypeRequired.default_message)
            return self._rejected(scan, ticket, required)
        decided = check_in_types_admit(ticket, self._types(ticket), type_ids, at)
        self.logs.extend(self._row(scan, ticket, at=at, type_id=t.pk) for t in decided.done)
        if decided.changed:
            self._changed(ticket)
        if decided.done:
            self._published(ticket, Type.TICKET_CHECKED_IN)
        return self._applied(scan, GateResult(ticket, decided.results, []))

    def _renew(self, scan: Scan, ticket: Ticket) -> dict[str, Any]:
        """`ticket_renew`'s rules, in its order."""
        event = self.upload.event
        rejection = _broken(ADMISSIBLE, ticket, event)
        if rejection is None and ticket.status != Ticket.Status.USED:
            rejection = _Rejection(TicketNotUsed.code, not_used_message(ticket))
        if rejection is not None:
            return self._rejected(scan, ticket, rejection)
        at = scan.inputs.get("used_at") or self.now
        if SIMPLE_MODE.holds(ticket, event):
            ticket.status, ticket.used_at = Ticket.Status.ACTIVE, None
            self._changed(ticket, Type.TICKET_RENEWED)
            self.logs.append(self._row(scan, ticket, at=at))
            return self._applied(scan, GateResult(ticket, [], []))
        type_ids = scan.inputs.get("check_in_type_ids")
        decided = check_in_types_renew(ticket, self._types(ticket), type_ids, at)
        self.logs.extend(self._row(scan, ticket, at=at, type_id=t.pk) for t in decided.done)
        if decided.untyped:
            self.logs.append(self._row(scan, ticket, at=at))
        if decided.changed:
            self._changed(ticket)
        if decided.done or decided.untyped:
            self._published(ticket, Type.TICKET_RENEWED)
        return self._applied(scan, GateResult(ticket, [], decided.results))

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

    def _changed(self, ticket: Ticket, published: str | None = None) -> None:
        ticket.updated_at = self.now
        self.changed[ticket.pk] = ticket
        if published is not None:
            self._published(ticket, published)

    def _published(self, ticket: Ticket, type: str) -> None:
        """The webhook event of the change, with the ticket as this scan left it."""
        if type in self.upload.publish:
            ticket_event_record(organizer_id=self.upload.organizer_id, ticket=ticket, type=type)

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

    def _rejected(self, scan: Scan, ticket: Ticket | None, rejection: _Rejection) -> dict:
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
        return {
            "id": scan.id,
            "success": result.success,
            "error": _rejection(scan.action, result, failed),
            "message": _message(scan.action, result),
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
            _tickets_save(sorted(self.changed.values(), key=lambda t: t.pk))
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


def _tickets_save(tickets: list[Ticket]) -> None:
    """Write the tickets' status, used_at and updated_at in one statement, from a VALUES list.

    The ORM's `bulk_update` writes a CASE over every row for each field, which the database
    evaluates row by row: for a chunk's hundred tickets it cost more than the rest of the chunk.
    """
    connection = transaction.get_connection()
    fields = [Ticket._meta.get_field(name) for name in ("status", "used_at", "updated_at")]
    # PostgreSQL types a VALUES column from its values: all NULL would be text.
    at = "CAST(%s AS timestamp with time zone)" if connection.vendor == "postgresql" else "%s"
    rows = ", ".join([f"(%s, %s, {at}, {at})"] * len(tickets))
    params = [
        value
        for ticket in tickets
        for value in (
            ticket.pk,
            *(
                field.get_db_prep_save(getattr(ticket, field.attname), connection)
                for field in fields
            ),
        )
    ]
    table = Ticket._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET status = v.column2, used_at = v.column3, updated_at = v.column4"
            f" FROM (VALUES {rows}) AS v WHERE {table}.id = v.column1",
            params,
        )


_MALFORMED = "This scan is malformed."
_NOT_FOUND = "Ticket not found."


def _broken(rules: tuple[Rule, ...], ticket: Ticket, event: Event) -> _Rejection | None:
    """The first of `rules` the ticket breaks, as `enforce` would raise it; None if none."""
    for rule in rules:
        if not rule.holds(ticket, event):
            return _Rejection(rule.error.code, rule.message(ticket, event))
    return None


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
