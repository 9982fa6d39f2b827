"""A scanner's upload of the scans it made offline (CONTRACT §11, batch upload).

Each scan is applied on its own, in request order, by the gate's rules (`tickets.rules`, and for
check-in types `check_in_types_admit` / `check_in_types_renew`) with the gate's audit rows, each
carrying the scan's id. What differs from one check-in is only how the work is done, so that an
upload costs a few statements per chunk of scans instead of several round trips and a commit
per scan: a chunk's tickets are read and locked in one query, each scan is decided on them in
memory (a later scan of the same ticket sees what an earlier one did), and the chunk's changes,
audit rows and scan records are written in bulk, in one transaction. A rejection is decided from
the rows read, never by an exception, so one scan's rejection cannot undo another's work.

The scan's record (`ScanRecord`, unique by event and scan id) is the chunk's last write. Of two
uploads of one scan, racing or not, the second one's record collides: its chunk rolls back
whatever it did, and is applied again with the scans recorded meanwhile replaying the first
result. A rejected scan keeps its error code in its record and, when the ticket is known, in an
audit row, so staff see which tickets two offline gates both admitted. In multiple mode each
requested type that failed gets such a row with its own code, and a scan none of whose types
succeeded is rejected: `ticket_already_used` (check-in) or `ticket_not_used` (renew) when some
type failed for that reason, otherwise `invalid_parameters` (types unknown or not valid for the
ticket type). A scan some of whose types succeeded was applied: its `error` is null, and its
type results tell the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from operator import or_
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from events.models import CheckInType, Event
from ticketing.api.exceptions import InvalidParameters, NotFound
from ticketing.db import atomic_retrying_once
from webhooks.services import webhook_wants

from ..exceptions import CheckInTypeRequired, TicketAlreadyUsed, TicketNotUsed
from ..models import CheckInLog, Order, ScanRecord, Ticket, TicketCheckIn, TicketFormAnswer
from ..rules import ADMISSIBLE, SIMPLE_CHECK_IN, SIMPLE_MODE, Rule
from ..selectors import with_form_answers_of
from ..selectors_scanner import ScannerTicketRow
from ..serializers import ScannerTicketSerializer, TypeResultSerializer
from .common import Actor
from .gate import audit_row, check_in_types_admit, check_in_types_renew, not_used_message
from .publishing import Type, ticket_event_record
from .scans import GateInputs, GateResult, TicketKey, TypeResult

# Scans applied per transaction: a chunk's tickets stay locked until its commit.
CHUNK_SCANS = 100
_SCANNED_FIELDS = (
    *("id", "event_id", "reference_code", "nfc_uid", "status", "firstname", "lastname"),
    *("used_at", "updated_at", "order", "order__status", "ticket_type", "ticket_type__name"),
)
_SCAN_RECORD_UNIQUE = "scan_record_unique_scan"


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
    Locks: per chunk of `CHUNK_SCANS` scans, its tickets (in id order) until the chunk commits.
    """
    outcomes = _recorded(event, [scan.id for scan in scans])
    fresh = [scan for scan in scans if scan.id not in outcomes]
    if fresh:
        upload = _Upload.of(organizer_id=organizer_id, event=event, actor=actor)
        for start in range(0, len(fresh), CHUNK_SCANS):
            outcomes |= _chunk_apply(upload, fresh[start : start + CHUNK_SCANS])
    return [outcomes[scan.id] for scan in scans]


def _recorded(event: Event, scan_ids: list[str]) -> dict[str, ScanOutcome]:
    """The first results of the scans already recorded, as replays."""
    rows = ScanRecord.objects.filter(event=event, scan_id__in=scan_ids).values_list(
        "scan_id", "result"
    )
    return {scan_id: ScanOutcome(result, replayed=True) for scan_id, result in rows}


def _chunk_apply(upload: _Upload, scans: list[Scan]) -> dict[str, ScanOutcome]:
    outcomes: dict[str, ScanOutcome] = {}
    while True:
        try:
            return outcomes | _chunk(upload, scans)
        except IntegrityError as exc:
            if not _scan_recorded_already(exc):
                raise
            # Another upload recorded some of these scans first (committed: our insert waited
            # for it). They replay its results; the others are applied again. Each round
            # replays at least one scan more, so this ends.
            recorded = _recorded(upload.event, [scan.id for scan in scans])
            if not recorded:
                raise
        outcomes |= recorded
        scans = [scan for scan in scans if scan.id not in recorded]
        if not scans:
            return outcomes


def _scan_recorded_already(exc: IntegrityError) -> bool:
    """Whether `exc` broke the scan records' unique (event, scan id) (PostgreSQL: by name)."""
    constraint = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None)
    if constraint is not None:
        return constraint == _SCAN_RECORD_UNIQUE
    return f"{ScanRecord._meta.db_table}.scan_id" in str(exc)


@atomic_retrying_once
def _chunk(upload: _Upload, scans: list[Scan]) -> dict[str, ScanOutcome]:
    """Apply `scans` in one transaction: decide each in order on the tickets as read, then
    write everything; the scans' records last."""
    chunk = _Chunk(upload, _tickets_locked(upload, scans))
    outcomes = {scan.id: ScanOutcome(chunk.apply(scan), replayed=False) for scan in scans}
    chunk.write()
    return outcomes


def _tickets_locked(upload: _Upload, scans: list[Scan]) -> list[Ticket]:
    """The event's tickets the scans name, by any of their keys, locked in id order until
    commit: one query for the chunk."""
    keys: dict[str, set] = {}
    for scan in scans:
        if scan.key is not None:
            keys.setdefault(scan.key.column, set()).add(scan.key.value)
    if not keys:
        return []
    tickets = (
        Ticket.objects.select_for_update(of=("self",))
        .select_related("order", "ticket_type")
        .filter(reduce(or_, (Q(**{f"{column}__in": values}) for column, values in keys.items())))
        .filter(event_id=upload.event.pk)
        .order_by("pk")
    )
    if upload.publishing:  # the webhook's Ticket shows the form answers
        tickets = tickets.annotate(
            has_answers=Exists(TicketFormAnswer.objects.filter(ticket_id=OuterRef("pk")))
        )
    else:  # what the rules, the audit rows and the scanner's ticket read
        tickets = tickets.only(*_SCANNED_FIELDS)
    tickets = list(tickets)
    if upload.publishing:
        with_form_answers_of(tickets)
    return tickets


@dataclass(frozen=True)
class _Upload:
    """What every chunk of an upload shares: the event, its check-in types, who scans."""

    organizer_id: int
    event: Event
    actor: Actor
    types: list[CheckInType]  # the event's, in order; none in simple mode
    restricted: dict[int, set[int]]  # check-in type id → the ticket types it is limited to
    publish: frozenset[str]  # the webhook event types some endpoint of the organizer wants

    @classmethod
    def of(cls, *, organizer_id: int, event: Event, actor: Actor) -> _Upload:
        types = list(CheckInType.objects.filter(event_id=event.pk))
        restricted: dict[int, set[int]] = {}
        if types:
            through = CheckInType.ticket_types.through.objects.filter(
                checkintype_id__in=[t.pk for t in types]
            )
            for type_id, ticket_type_id in through.values_list("checkintype_id", "tickettype_id"):
                restricted.setdefault(type_id, set()).add(ticket_type_id)
        publish = frozenset(
            t
            for t in (Type.TICKET_CHECKED_IN, Type.TICKET_RENEWED)
            if webhook_wants(organizer_id=organizer_id, type=t)
        )
        return cls(organizer_id, event, actor, types, restricted, publish)

    @property
    def publishing(self) -> bool:
        return bool(self.publish)


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
class _Chunk:
    """A chunk's tickets in memory as its scans change them, and what is left to write."""

    upload: _Upload
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
        return {
            "id": scan.id,
            "success": False,
            "error": rejection.code,
            "message": rejection.message,
            **self._render(None, ticket, order_paid=paid),
        }

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
