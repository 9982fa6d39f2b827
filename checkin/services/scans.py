"""Retry-safe scans (CONTRACT §7): a check-in or renew that carries a scan id is applied once in
its event; a repeat, online or in a scanner's upload (§11), either way round and racing or not,
changes nothing and replays the first answer with `replayed: true`.

`ScanRecord` is the one record of what was answered to a scan id in an event. The common scan,
a check-in without check-in types that the one statement admits, records its decision in that
statement (`statements.admit_scan`: one round trip, as without a scan id) with the image of the
ticket's row the answer was rendered from; a replay renders its body from that image as the
first was rendered from the row, so it is the same body whatever changed the ticket since. A
refusal that statement tells is stored with the claim of the id in a second one. Otherwise an
online scan claims the id before it applies (`checkin.statements.scan_claim`), and stores its
answer (a rejection's 4xx too) in the transaction that made the change, so a crash loses both or
neither. Either way a second request with the id waits on the first one's uncommitted record
(or ticket), then finds the id taken and replays it.

"The first answer" across channels: in its own channel it is replayed as stored (an online
scan's status and body, an upload's result entry). The other channel renders the stored decision
(success, error code, message, type results; an online scan's status) in its own shape, with the
ticket as it stands at the replay: an upload keeps only a scanner's view of the ticket and an
online answer the API's, and neither can be made from the other. An upload keeps no image of
the API's ticket for that: it would write a copy of each admitted row with every scan of a
chunk, for the rare online repeat of an uploaded scan (a late copy of a request its gate gave
up, queued and uploaded), whose body was never an answer to repeat byte for byte.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Unpack

from django.db import transaction

from events.selectors import event_get_for_organizer
from ticketing.api.error_body import application_error_body, error_body, request_level_fields
from ticketing.api.exceptions import ApplicationError, NotFound, api_error_codes
from ticketing.db import atomic_retrying_once
from tickets.exceptions import ticket_body
from tickets.keys import TicketKey
from tickets.models import Order, Ticket
from tickets.selectors import TICKET_IMAGE, ticket_for_output, ticket_from_image
from tickets.services.common import Actor

from ..gate_types import GateInputs, GateResult
from ..models import CheckInLog, ScanRecord, TicketCheckIn
from ..selectors_scanner import ScannerTicketRow
from ..serializers import GateResultSerializer, ScannerTicketSerializer
from ..statements import scan_claim
from . import gate, statements
from .batch_chunk import scan_message, scan_rejection


@dataclass(frozen=True)
class ScanReplay:
    """The first answer to an online scan's id, replayed: its status and its body, which says
    `replayed: true`."""

    status_code: int
    body: dict[str, Any]


def gate_scan(
    *,
    organizer_id: int,
    event_id: int,
    action: str,
    key: TicketKey,
    actor: Actor,
    **inputs: Unpack[GateInputs],
) -> GateResult | ScanReplay:
    """Check in or renew (`action`) the ticket named by `key`, once per `scan_id`.

    Without a scan id: `ticket_check_in_at_gate` or `ticket_renew`, unchanged. With one: the
    first request applies and stores its answer (or the one statement's decision); a later one
    gets the stored answer.

    Raises: NotFound, the gate's rejections (with a scan id, after its answer is stored).
    Locks: with a scan id, its record (the unique event and scan id) until commit, so a second
    request with it waits for the first; then the gate's (the one statement: the gate's, then
    the record).
    """
    if inputs.get("scan_id") is None:
        return _apply(organizer_id, event_id, action, key=key, actor=actor, **inputs)
    answer = None
    if action == CheckInLog.Action.CHECK_IN and _one_statement(inputs):
        answer = _by_one_statement(organizer_id, event_id, key=key, actor=actor, **inputs)
    if answer is None:  # only the locked path can tell: claim, decide, store, in a transaction
        answer = _once(organizer_id, event_id, action, key=key, actor=actor, **inputs)
    if isinstance(answer, ApplicationError):
        raise answer  # stored and committed: the exception handler renders it, as stored
    return answer


def _apply(organizer_id: int, event_id: int, action: str, **kwargs) -> GateResult:
    if action == CheckInLog.Action.CHECK_IN:
        return ticket_check_in_at_gate(organizer_id=organizer_id, event_id=event_id, **kwargs)
    event = event_get_for_organizer(organizer_id=organizer_id, event_id=event_id)
    return gate.ticket_renew(event=event, **kwargs)


def _one_statement(inputs: GateInputs) -> bool:
    """Whether the one statement can take the check-in: on PostgreSQL, without a tag to bind
    (and with a scan id, without check-in types: `statements.admit_scan`)."""
    if inputs.get("nfc_uid") is not None:
        return False
    if inputs.get("scan_id") is not None and inputs.get("check_in_type_ids"):
        return False
    return transaction.get_connection().vendor == "postgresql"


def ticket_check_in_at_gate(
    *, organizer_id: int, event_id: int, key: TicketKey, actor: Actor, **inputs: Unpack[GateInputs]
) -> GateResult:
    """`gate.ticket_check_in` for an event named by id and a ticket by `key`: the API's
    check-in, by id or by scanned code. The one statement (`statements.admit`)
    first, on PostgreSQL without a tag to bind; what it cannot settle goes to the locked path.

    Raises: NotFound (event or ticket), and what `gate.ticket_check_in` raises.
    """
    if inputs.get("nfc_uid") is None and transaction.get_connection().vendor == "postgresql":
        outcome = statements.admit(
            organizer_id=organizer_id, event_id=event_id, key=key, actor=actor, **inputs
        )
        if isinstance(outcome, ApplicationError):
            raise outcome
        if outcome is not None:
            return outcome
    event = event_get_for_organizer(organizer_id=organizer_id, event_id=event_id)
    return gate.ticket_check_in(event=event, key=key, actor=actor, **inputs)


def _by_one_statement(
    organizer_id: int, event_id: int, *, actor: Actor, **kwargs
) -> GateResult | ScanReplay | ApplicationError | None:
    """The check-in by `statements.admit_scan`. A refusal it tells is stored with the claim of
    the scan id in one statement (`scan_claim`): the statement read it without locks, as it
    answers a scan without an id. None: only the locked path can tell."""
    outcome = statements.admit_scan(
        organizer_id=organizer_id, event_id=event_id, actor=actor, **kwargs
    )
    if outcome is None or isinstance(outcome, GateResult):
        return outcome
    scan_id = kwargs["scan_id"]
    if isinstance(outcome, ApplicationError):
        claim = _claim(event_id, scan_id, CheckInLog.Action.CHECK_IN, actor, **_rejected(outcome))
        if scan_claim(organizer_id=organizer_id, record=claim) is not None:
            return outcome
    return _replayed(organizer_id=organizer_id, event_id=event_id, scan_id=scan_id)  # taken


def _claim(event_id: int, scan_id: str, action: str, actor: Actor, **answer) -> ScanRecord:
    """A scan id's record, unsaved: undecided (to be decided in its transaction) or `answer`."""
    return ScanRecord(
        **{"event_id": event_id, "scan_id": scan_id, "action": action},
        **{"actor_user": actor.user, "actor_application": actor.application},
        **({"success": False, "result": {}} | answer),
    )


def _rejected(exc: ApplicationError) -> dict[str, Any]:
    """A rejection's answer, as its scan id's record keeps it."""
    ticket = getattr(exc, "ticket", None)
    return {
        "status_code": exc.status_code,
        "result": application_error_body(exc),
        "ticket_id": ticket.pk if ticket is not None else None,
        "error": exc.code,
    }


@atomic_retrying_once
def _once(
    organizer_id: int, event_id: int, action: str, *, actor: Actor, **kwargs
) -> GateResult | ScanReplay | ApplicationError:
    """Claim the scan id, apply, store the answer: one transaction. A rejection is returned,
    not raised, so that its stored answer commits."""
    claim = _claim(event_id, kwargs["scan_id"], action, actor)
    record_id = scan_claim(organizer_id=organizer_id, record=claim)
    if record_id is None:
        return _replayed(organizer_id=organizer_id, event_id=event_id, scan_id=claim.scan_id)
    try:
        result = _apply(organizer_id, event_id, action, actor=actor, **kwargs)
    except ApplicationError as exc:
        if exc.status_code >= 500:
            raise  # not an answer to the scan: nothing is stored, a retry applies it
        ScanRecord.objects.filter(pk=record_id).update(**_rejected(exc))
        return exc
    ScanRecord.objects.filter(pk=record_id).update(
        status_code=200,
        result=GateResultSerializer.represent(result),
        ticket_id=result.ticket.pk,
        success=result.success,
        error=scan_rejection(action, result),
    )
    return result


def _replayed(*, organizer_id: int, event_id: int, scan_id: str) -> ScanReplay:
    """The first answer to `scan_id` in the organizer's event, as an online answer.

    Raises: NotFound (no such event of the organizer: nothing was claimed)."""
    record = next(
        iter(
            ScanRecord.objects.filter(
                event_id=event_id, event__organizer_id=organizer_id, scan_id=scan_id
            )[:1]
        ),
        None,
    )
    if record is None:
        raise NotFound("Event not found.")
    if record.status_code is not None:
        return ScanReplay(record.status_code, {**online_body(record), "replayed": True})
    return _online_answer_of_entry(record)


def online_body(record: ScanRecord) -> dict[str, Any]:
    """An online scan's first answer body: as stored, or of an admission by the one statement
    (`statements.admit_scan`: a 200, applied, no check-in types), rendered as that statement's
    answer was (the ticket loaded from its row, `admission_rows.admitted`'s result of an untyped
    admission, the view's serializer) from the image it stored of that row: the same body,
    whatever changed the ticket since. Only its form answers are read now (the first answer read
    them just after the statement, too)."""
    if TICKET_IMAGE in record.result:
        ticket = ticket_from_image(record.result, using=transaction.get_connection().alias)
        admitted = GateResult(ticket=ticket, check_in_results=[], renew_results=[])
        return GateResultSerializer.represent(admitted)
    if record.result:
        return record.result
    # Recorded by the statement before it stored the image: the decision alone, rendered with
    # the ticket as it stands.
    ticket = None
    if record.ticket_id is not None:
        ticket = ticket_for_output(event_id=record.event_id, id=record.ticket_id)
    return {
        "success": record.success,
        "ticket": ticket_body(ticket) if ticket is not None else None,
        "check_in_results": [],
        "renew_results": [],
    }


def _online_answer_of_entry(record: ScanRecord) -> ScanReplay:
    """An upload's result entry, rendered as the online answer of its decision."""
    entry = record.result
    ticket = None
    if record.ticket_id is not None:
        ticket = ticket_for_output(event_id=record.event_id, id=record.ticket_id)
    shown = ticket_body(ticket) if ticket is not None else None
    if entry["error"] is None or entry["check_in_results"] or entry["renew_results"]:
        # Applied, or with check-in types decided one by one: online, a 200 that tells each.
        body = {
            "success": entry["success"],
            "ticket": shown,
            "check_in_results": entry["check_in_results"],
            "renew_results": entry["renew_results"],
        }
        return ScanReplay(200, {**body, "replayed": True})
    code, message = entry["error"], entry["message"]
    status = _status_of(code)
    extra: dict[str, Any] = {}
    if status == 400:
        extra["fields"] = request_level_fields(message)
    if shown is not None and code != NotFound.code:
        extra["ticket"] = shown
    return ScanReplay(status, error_body(code, message, **extra, replayed=True))


@functools.cache
def _status_of(code: str) -> int:
    return next(status for status, codes in api_error_codes().items() if code in codes)


def scan_entries_of_answers(records: list[ScanRecord]) -> dict[str, dict[str, Any]]:
    """Online scans' stored answers, rendered as an upload's result entries (CONTRACT §11)
    with each ticket as it stands now: the scan id's entry."""
    ticket_ids = {r.ticket_id for r in records if r.ticket_id is not None}
    rows = _scanner_rows(ticket_ids) if ticket_ids else {}
    entries = {}
    for record in records:
        body = record.result  # of the one statement's admission, the ticket's image: no body
        types = {
            "check_in_results": body.get("check_in_results", []),
            "renew_results": body.get("renew_results", []),
        }
        if record.status_code == 200:
            partly = any(
                r["success"] for r in (*types["check_in_results"], *types["renew_results"])
            )
            shown = body.get("ticket") or rows.get(record.ticket_id) or {}
            reference_code = shown.get("reference_code", "")
            message = scan_message(record.action, reference_code, record.success, partly)
        else:
            message = body["message"]
        entries[record.scan_id] = {
            "id": record.scan_id,
            "success": record.success,
            "error": record.error,
            "message": message,
            "ticket": rows.get(record.ticket_id),
            **types,
        }
    return entries


def _scanner_rows(ticket_ids: set[int]) -> dict[int, dict[str, Any]]:
    """The tickets as a scanner keeps them, now: by id."""
    tickets = Ticket.objects.select_related("order", "ticket_type").filter(pk__in=ticket_ids)
    admitted: dict[int, list[int]] = {}
    for ticket_id, type_id in (
        TicketCheckIn.objects.filter(ticket_id__in=ticket_ids)
        .order_by("check_in_type_id")
        .values_list("ticket_id", "check_in_type_id")
    ):
        admitted.setdefault(ticket_id, []).append(type_id)
    render = ScannerTicketSerializer().to_representation
    return {
        ticket.pk: render(
            ScannerTicketRow.of(
                ticket,
                admitted.get(ticket.pk, []),
                order_paid=ticket.order.status == Order.Status.PAID,
            )
        )
        for ticket in tickets
    }
