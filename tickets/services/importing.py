"""Importing tickets from the rows of a CSV file or a workbook: what `import_tickets` and the
admin's import share.

Each row gets the checks of `ticket_create` (holder details, reference codes, `external_id`
replay, quotas, an active event), but a batch of rows is checked in Python against a few
queries and written with one INSERT per table and one capacity UPDATE per ticket type. If a
concurrent writer takes an `external_id` or a reference code between the check and the write,
the batch falls back to `ticket_create` row by row, which settles such races.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from events.models import Event, TicketType
from events.services import ticket_type_claim_up_to, ticket_type_places_left
from ticketing.api.exceptions import ApplicationError

from ..codes import reference_code_generate, reference_code_validate
from ..exceptions import DuplicateExternalId, EventNotActive
from ..models import Ticket
from ..selectors import tickets_for_output
from .common import Actor
from .csv_input import Header
from .holders import Holder, holder_clean, is_same_creation
from .import_rows import RowRejected, TicketTypes
from .issuing import Issue, ticket_built, ticket_create, tickets_issue
from .xlsx_input import UnreadableCell

logger = logging.getLogger(__package__)

# Rows per batch (and, outside a caller's transaction, per transaction): a batch is checked
# with a few queries and written with one INSERT per table and one counter UPDATE per ticket
# type, so a sale of the same ticket type waits at most for one batch.
IMPORT_BATCH_ROWS = 1000


class ImportRollback(Exception):
    """Raised to leave an import's transaction without saving: a preview, a dry run, or an
    all-or-nothing import with rejections."""


# Checked here because a too-long value is a database error, not a validation message.
_MAX_LENGTHS = {
    name: Ticket._meta.get_field(name).max_length
    for name in ("firstname", "lastname", "email", "phone", "external_id", "reference_code")
}
_CODE_DRAWS = 5


def _reason(exc: ApplicationError) -> str:
    fields = exc.extra.get("fields")
    if fields:
        return "; ".join(f"{name}: {errors[0]}" for name, errors in fields.items())
    return exc.message


@dataclass
class RowOutcome:
    """What became of one row: `created`, `existing` (its external_id was imported) or
    `rejected` (with the reason, as the command prints it)."""

    line: int
    status: Literal["created", "existing", "rejected"]
    reason: str = ""
    ticket: Ticket | None = None
    values: dict[str, str] = field(default_factory=dict)


@dataclass
class _Candidate:
    outcome: RowOutcome
    ticket_type: TicketType
    holder: Holder
    external_id: str | None
    reference_code: str | None  # as chosen in the file; None: to be drawn
    twin: _Candidate | None = None  # an earlier row of the batch with the same external_id


class TicketImporter:
    """Issues an event's tickets from a file's rows, a batch at a time, in the caller's
    transaction.

    Tickets are paid external tickets in orders of their own, not counted against `api_quota`
    (as `ticket_create(via_api=False)`), with the `ticket.created` webhook event and, when
    `notify`, the holder's email task.
    """

    def __init__(
        self, *, event: Event, header: Header, actor: Actor, notify: bool, preview: bool = False
    ):
        self.event, self.header, self.actor, self.notify = event, header, actor, notify
        self.types = TicketTypes(event)
        # A preview (rolled back by its caller) counts places in memory instead of claiming
        # them: no ticket type row stays locked against sales while it reads the whole file.
        self.preview = preview
        self._places_left: dict[int, int] = {}
        # Nor does it insert (the inserts were most of its time): it keeps the tickets it would
        # create, so that later batches judge their external_ids and codes as the import will.
        self._previewed: dict[str, Ticket] = {}
        self._previewed_codes: set[str] = set()

    def import_batch(self, rows: list[tuple[int, list[str]]]) -> list[RowOutcome]:
        """One outcome per row, in order. Call inside a transaction: it holds the claims.

        Raises: EventNotActive (when some row would create a ticket).
        Locks: the ticket types' rows (their counter UPDATEs) until commit.
        """
        outcomes: list[RowOutcome] = []
        candidates: list[_Candidate] = []
        for line, cells in rows:
            outcome = RowOutcome(line=line, status="created")
            outcomes.append(outcome)
            try:
                candidates.append(self._candidate(outcome, cells))
            except RowRejected as exc:
                outcome.status, outcome.reason = "rejected", str(exc)
            except ApplicationError as exc:
                outcome.status, outcome.reason = "rejected", _reason(exc)
        new = self._replays_resolved(candidates)
        new = self._chosen_codes_checked(new)
        status = self.event.effective_status
        if status != Event.Status.ACTIVE and any(c.twin is None for c in new):
            raise EventNotActive(f"Event '{self.event.title}' is {status}.")
        try:
            with transaction.atomic():
                self._write([c for c in new if c.twin is None])
        except IntegrityError:
            self._write_one_by_one([c for c in new if c.twin is None])
        for candidate in new:
            if candidate.twin is not None:
                self._follow_twin(candidate)
        return outcomes

    def _candidate(self, outcome: RowOutcome, cells: list[str]) -> _Candidate:
        """The row's checked values. Raises: RowRejected, InvalidParameters."""
        header = self.header
        # A shifted row (an unquoted comma in a name) must not land in the wrong columns.
        if len(cells) != header.width:
            raise RowRejected(
                _("%(cells)d cells where the header has %(width)d")
                % {"cells": len(cells), "width": header.width}
            )
        values = {}
        for name, index in header.columns.items():
            if isinstance(cells[index], UnreadableCell):  # a workbook's formula or date
                raise RowRejected(f"{name}: {cells[index].reason}")
            value = cells[index].strip()
            if len(value) > _MAX_LENGTHS.get(name, len(value)):
                raise RowRejected(
                    _("%(name)s: longer than %(max)d characters")
                    % {"name": name, "max": _MAX_LENGTHS[name]}
                )
            values[name] = value
        outcome.values = values
        ticket_type = self.types.resolve(values["ticket_type"])
        holder = holder_clean(
            firstname=values["firstname"],
            lastname=values["lastname"],
            email=values["email"],
            phone=values["phone"],
        )
        reference_code = values.get("reference_code") or None
        if reference_code is not None:
            try:
                reference_code = reference_code_validate(reference_code)
            except ValueError as exc:
                raise RowRejected(f"reference_code: {exc}") from None
        return _Candidate(
            outcome=outcome,
            ticket_type=ticket_type,
            holder=holder,
            external_id=values.get("external_id") or None,
            reference_code=reference_code,
        )

    def _same(self, ticket: Ticket, candidate: _Candidate) -> bool:
        return is_same_creation(
            ticket,
            ticket_type_id=candidate.ticket_type.pk,
            holder=candidate.holder,
            reference_code=candidate.reference_code,
        )

    def _replays_resolved(self, candidates: list[_Candidate]) -> list[_Candidate]:
        """Settle rows whose external_id was imported before (one query); the rest are new.

        A later row of the batch with an earlier row's external_id follows that row (`twin`):
        it is that ticket's replay, as it would be if the rows came one request at a time.
        """
        ids = {c.external_id for c in candidates if c.external_id}
        existing = {
            t.external_id: t
            for t in tickets_for_output(
                Ticket.objects.filter(event_id=self.event.pk, external_id__in=ids)
            )
        }
        existing.update((i, self._previewed[i]) for i in ids & self._previewed.keys())
        first_with: dict[str, _Candidate] = {}
        new = []
        for candidate in candidates:
            ticket = existing.get(candidate.external_id) if candidate.external_id else None
            if ticket is not None:
                self._settle_replay(candidate, ticket)
                continue
            if candidate.external_id:
                candidate.twin = first_with.setdefault(candidate.external_id, candidate)
                if candidate.twin is candidate:
                    candidate.twin = None
            new.append(candidate)
        return new

    def _settle_replay(self, candidate: _Candidate, ticket: Ticket) -> None:
        outcome = candidate.outcome
        if self._same(ticket, candidate):
            outcome.status, outcome.ticket = "existing", ticket
        else:
            outcome.status = "rejected"
            outcome.reason = DuplicateExternalId(
                f"Ticket {ticket.reference_code} already has this external_id, with other details."
            ).message

    def _chosen_codes_checked(self, candidates: list[_Candidate]) -> list[_Candidate]:
        """Reject rows whose chosen reference code is taken (in the event or earlier in the
        batch); one query."""
        chosen = {c.reference_code for c in candidates if c.reference_code and c.twin is None}
        taken = set(
            Ticket.objects.filter(event_id=self.event.pk, reference_code__in=chosen).values_list(
                "reference_code", flat=True
            )
        )
        taken |= chosen & self._previewed_codes
        kept = []
        for candidate in candidates:
            code = candidate.reference_code
            if code and candidate.twin is None:
                if code in taken:
                    candidate.outcome.status = "rejected"
                    candidate.outcome.reason = _(
                        "Reference code %(code)s is taken in this event."
                    ) % {"code": code}
                    continue
                taken.add(code)
            kept.append(candidate)
        return kept

    def _claimed(self, candidates: list[_Candidate]) -> list[_Candidate]:
        """Claim places, one UPDATE per ticket type (a preview counts them in memory); rows
        past a type's capacity are rejected, the file's earlier rows first served.

        Locks: the ticket types' rows until commit, unless previewing.
        """
        by_type: dict[int, list[_Candidate]] = defaultdict(list)
        for candidate in candidates:
            by_type[candidate.ticket_type.pk].append(candidate)
        admitted = []
        for type_id, group in by_type.items():
            ticket_type = group[0].ticket_type
            if self.preview:
                left = self._places_left.setdefault(type_id, ticket_type_places_left(ticket_type))
                room = min(len(group), left)
                self._places_left[type_id] = left - room
            else:
                room = ticket_type_claim_up_to(ticket_type_id=type_id, count=len(group))
            admitted.extend(group[:room])
            for candidate in group[room:]:
                candidate.outcome.status = "rejected"
                candidate.outcome.reason = _("Ticket type '%(name)s' has no places left.") % {
                    "name": ticket_type.name
                }
        return sorted(admitted, key=lambda c: c.outcome.line)

    def _drawn_codes(self, candidates: list[_Candidate]) -> dict[int, str]:
        """A free reference code for each row (by id()) that chose none; one query per draw.

        Raises: IntegrityError when draws keep colliding, which sends the batch down the
        row-by-row path (where `ticket_create` says so per row).
        """
        used = {c.reference_code for c in candidates if c.reference_code}
        codes: dict[int, str] = {}
        pending = [c for c in candidates if not c.reference_code]
        for _draw in range(_CODE_DRAWS):
            if not pending:
                return codes
            drawn = {}
            for candidate in pending:
                code = reference_code_generate()
                while code in used:
                    code = reference_code_generate()
                used.add(code)
                drawn[id(candidate)] = code
            taken = set(
                Ticket.objects.filter(
                    event_id=self.event.pk, reference_code__in=drawn.values()
                ).values_list("reference_code", flat=True)
            )
            codes.update({key: code for key, code in drawn.items() if code not in taken})
            pending = [c for c in pending if drawn[id(c)] in taken]
        if pending:
            raise IntegrityError("could not draw free reference codes")
        return codes

    def _write(self, candidates: list[_Candidate]) -> None:
        """Claim places, then issue the tickets (`tickets_issue`: with their orders, webhook
        events and emails); a preview only keeps its tickets in memory.

        Raises: IntegrityError (a concurrent writer took an external_id or a code).
        """
        candidates = self._claimed(candidates)
        if not candidates:
            return
        codes = self._drawn_codes(candidates)
        issues = [
            Issue(
                ticket_type=c.ticket_type,
                holder=c.holder,
                reference_code=c.reference_code or codes[id(c)],
                external_id=c.external_id,
            )
            for c in candidates
        ]
        if self.preview:
            tickets = [ticket_built(event_id=self.event.pk, issue=issue) for issue in issues]
        else:
            tickets = tickets_issue(
                event=self.event, issues=issues, via_api=False, notify=self.notify
            )
        for candidate, ticket in zip(candidates, tickets, strict=True):
            candidate.outcome.ticket = ticket
            if self.preview:  # for the checks of the preview's later batches
                self._previewed_codes.add(ticket.reference_code)
                if ticket.external_id:
                    self._previewed[ticket.external_id] = ticket
            else:
                logger.info("ticket %s created by an import", ticket.pk)

    def _write_one_by_one(self, candidates: list[_Candidate]) -> None:
        """The slow path after a race: each row through `ticket_create`, in its own savepoint."""
        for candidate in candidates:
            outcome = candidate.outcome
            outcome.status, outcome.reason, outcome.ticket = "created", "", None
            try:
                with transaction.atomic():
                    result = ticket_create(
                        event=self.event,
                        ticket_type_id=candidate.ticket_type.pk,
                        firstname=candidate.holder.firstname,
                        lastname=candidate.holder.lastname,
                        email=candidate.holder.email,
                        phone=candidate.holder.phone,
                        external_id=candidate.external_id,
                        reference_code=candidate.reference_code,
                        suppress_notifications=not self.notify,
                        actor=self.actor,
                        via_api=False,
                    )
            except ApplicationError as exc:
                outcome.status, outcome.reason = "rejected", _reason(exc)
            else:
                outcome.ticket = result.ticket
                outcome.status = "existing" if result.idempotent else "created"

    def _follow_twin(self, candidate: _Candidate) -> None:
        twin, outcome = candidate.twin, candidate.outcome
        if twin.outcome.ticket is not None:
            self._settle_replay(candidate, twin.outcome.ticket)
        elif twin.outcome.status == "rejected":
            outcome.status, outcome.reason = "rejected", twin.outcome.reason
