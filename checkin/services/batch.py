"""A scanner's upload of the scans it made offline (CONTRACT §11, batch upload).

Each scan is applied on its own, in request order, by the gate's one decision
(`checkin.rules.decide`) with the gate's audit rows, each carrying the scan's id. What differs
from one check-in is only how the work is done, so that an upload costs a few statements per
chunk of scans instead of several round trips and a commit per scan: a chunk's tickets are read
and locked in one query, each scan is decided on them in memory (a later scan of the same ticket
sees what an earlier one did), and the chunk's changes, audit rows and scan records are written
in bulk, in one transaction. A rejection is decided from the rows read, never by an exception,
so one scan's rejection cannot undo another's work.

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

from dataclasses import dataclass
from functools import reduce
from operator import or_
from typing import Any

from django.db import IntegrityError
from django.db.models import Exists, OuterRef, Q

from events.models import Event
from ticketing.db import atomic_retrying_once
from tickets.models import Ticket, TicketFormAnswer
from tickets.selectors import with_form_answers_of
from tickets.services.common import Actor

from ..models import ScanRecord
from .admission_rows import scan_recorded_already
from .batch_chunk import Chunk, Scan, Upload
from .scans import scan_entries_of_answers

# Scans applied per transaction: a chunk's tickets stay locked until its commit.
CHUNK_SCANS = 100
_SCANNED_FIELDS = (
    *("id", "event_id", "reference_code", "nfc_uid", "status", "firstname", "lastname"),
    *("used_at", "updated_at", "order", "order__status", "ticket_type", "ticket_type__name"),
)


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
        upload = Upload.of(organizer_id=organizer_id, event=event, actor=actor)
        for start in range(0, len(fresh), CHUNK_SCANS):
            outcomes |= _chunk_apply(upload, fresh[start : start + CHUNK_SCANS])
    return [outcomes[scan.id] for scan in scans]


def _recorded(event: Event, scan_ids: list[str]) -> dict[str, ScanOutcome]:
    """The first results of the scans already recorded, as replays: an online scan's answer
    rendered as an upload's result (`scans.scan_entries_of_answers`)."""
    results, online = {}, []
    for record in ScanRecord.objects.filter(event=event, scan_id__in=scan_ids).only(
        "scan_id", "result", "status_code", "action", "success", "error", "ticket_id"
    ):
        if record.status_code is None:
            results[record.scan_id] = record.result
        else:
            online.append(record)
    if online:
        results |= scan_entries_of_answers(online)
    return {scan_id: ScanOutcome(result, replayed=True) for scan_id, result in results.items()}


def _chunk_apply(upload: Upload, scans: list[Scan]) -> dict[str, ScanOutcome]:
    outcomes: dict[str, ScanOutcome] = {}
    while True:
        try:
            return outcomes | _chunk(upload, scans)
        except IntegrityError as exc:
            if not scan_recorded_already(exc):
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


@atomic_retrying_once
def _chunk(upload: Upload, scans: list[Scan]) -> dict[str, ScanOutcome]:
    """Apply `scans` in one transaction: decide each in order on the tickets as read, then
    write everything; the scans' records last."""
    chunk = Chunk(upload, _tickets_locked(upload, scans))
    outcomes = {scan.id: ScanOutcome(chunk.apply(scan), replayed=False) for scan in scans}
    chunk.write()
    return outcomes


def _tickets_locked(upload: Upload, scans: list[Scan]) -> list[Ticket]:
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
