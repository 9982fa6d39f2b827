"""The gate's one-statement admission (CONTRACT §7): a check-in by id or by scanned code,
decided, recorded and explained in one round trip, on PostgreSQL, without a tag to bind.

`admit_sql` decides with the SQL form of `checkin.rules` and records the admission, in simple
mode and with check-in types, and returns the ticket as it now is (with types, each requested
type's outcome in request order). When it admitted nothing, its second branch reads the ticket,
its order and its event as the statement's snapshot saw them, and `checkin.rules.refusal` tells
the refusal from them: a refusal costs the round trip an admission costs. PostgreSQL runs that
branch only when the first yielded nothing (a one-time filter), so the gate's commonest scan
pays for it only in the statement's length. What the statement cannot settle (every rule holds
as read, yet nothing was admitted: a concurrent scan changed the ticket) is the locked path's,
the ORM twin (`admit_orm`).

The statement admits in simple mode (`simple_admitted`, a conditional UPDATE), and in multiple
mode locks the ticket (`target`: `FOR UPDATE`, rechecked on the newest row), inserts each
requested type that meets `TYPE_RULES` (`ON CONFLICT DO NOTHING`: the unique pair is the last
word), moves the ticket to `used` when it must, and writes the audit rows. Data-modifying
clauses run whether or not the final SELECT reads them; each writes only from what an
admission yielded. Its row is read by column name: the `gate_*` columns, then the ticket's
output columns (`tickets.selectors.ticket_output_columns`).

`admit_scan` is the statement for a scan with an id (CONTRACT §7 retry-safe scans) and
without check-in types: `admit`'s, which also records the admission's decision under the id
(`ScanRecord`, a plain INSERT after the admission: a claim first could not be given the
decision, as a statement's clauses do not see each other's rows), with the image of the row
its answer is rendered from (`tickets.selectors.ticket_image_sql`), from which a replay renders
the same body (`scans.online_body`). Claim and admission commit together in autocommit; if the
id is taken (committed before, or by a request that commits it while the INSERT waits), the
unique violation undoes both. When it admitted nothing, its refusal branch says whether the id
was taken. The multiple-mode part of the statement is
`admission_typed_sql`, the reading of its row `admission_rows`.

It is a service's statement, hence here and not in `checkin/statements.py` with the app's
others: it records the webhook event (`tickets.services.publishing`) and its ORM twin is the
locked path (`gate`), which nothing below the services may import. `checkin.apps` imports it
when the app is ready, so that its twin is declared wherever the statements are listed.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from datetime import datetime
from typing import Unpack

from django.db import IntegrityError, OperationalError, transaction
from django.utils import timezone

from events.models import Event, TicketType
from events.selectors import event_get_for_organizer
from ticketing.api.exceptions import ApplicationError, NotFound
from ticketing.api.fields import datetime_representation
from ticketing.db import is_transient, select_list
from ticketing.twins import replaces
from tickets.keys import TicketKey
from tickets.models import Order, Ticket
from tickets.selectors import (
    ticket_from_output_row,
    ticket_image,
    ticket_image_sql,
    ticket_key_column,
    ticket_output_columns,
)
from tickets.services.common import Actor
from tickets.services.publishing import ticket_checked_in_sql

from ..gate_types import GateInputs, GateResult
from ..models import CheckInLog, ScanRecord
from ..rules import SIMPLE_MODE, simple_check_in_sql
from . import gate  # the locked path: the ORM twin
from .admission_rows import ScanTaken, admitted, refusal_as_read, scan_recorded_already
from .admission_typed_sql import (
    AUDIT_COLUMNS,
    AUDIT_VALUES,
    TICKET,
    TYPED,
    named,
    typed_ctes,
    types_head,
)

Outcome = GateResult | ApplicationError | None


def admit_orm(
    *,
    organizer_id: int,
    event_id: int,
    key: TicketKey,
    actor: Actor,
    publish: bool = True,
    **inputs,
) -> Outcome:
    """`admit` by the ORM: the locked path (`gate.ticket_check_in`), its refusal returned."""
    try:
        event = event_get_for_organizer(organizer_id=organizer_id, event_id=event_id)
        return gate.ticket_check_in(event=event, key=key, actor=actor, **inputs)
    except ApplicationError as exc:
        return exc


@replaces(admit_orm)
def admit(
    *,
    organizer_id: int,
    event_id: int,
    key: TicketKey,
    actor: Actor,
    publish: bool = True,
    **inputs: Unpack[GateInputs],
) -> Outcome:
    """A check-in (no tag to bind) by the statement: the admission, or the refusal (returned,
    with the ticket as found: NotFound, `checkin.rules.refusal`'s); None when only the locked
    path can tell. `publish`: record `ticket.checked_in` when some webhook endpoint of the
    organizer wants it, as the statement reads them (False: never, for the tools that measure
    the statement alone).

    Locks: with check-in types, the ticket row (`FOR UPDATE`) until the statement commits, so
    two gates cannot both admit one type; without, the UPDATE's own row lock.
    """
    return _admit(organizer_id, event_id, key, actor, publish=publish, scan=False, **inputs)


def admit_scan_orm(*, actor: Actor, **kwargs) -> Outcome | ScanTaken:
    """`admit_scan` by the ORM: the record looked up, the locked path, the decision saved
    with the image of the ticket it answers with."""
    event_id, scan_id = kwargs["event_id"], kwargs["scan_id"]
    organizer_id = kwargs["organizer_id"]
    if ScanRecord.objects.filter(
        event_id=event_id, event__organizer_id=organizer_id, scan_id=scan_id
    ).exists():
        return ScanTaken()
    outcome = admit_orm(actor=actor, **kwargs)
    if isinstance(outcome, GateResult):
        image = ticket_image(outcome.ticket, has_answers=outcome.ticket.has_form_answers)
        ScanRecord.objects.create(
            **{"event_id": event_id, "scan_id": scan_id, "ticket": outcome.ticket},
            **{"action": CheckInLog.Action.CHECK_IN, "success": True, "result": image},
            **{"status_code": 200, "actor_user": actor.user},
            actor_application=actor.application,
        )
    return outcome


@replaces(admit_scan_orm)
def admit_scan(
    *,
    organizer_id: int,
    event_id: int,
    key: TicketKey,
    actor: Actor,
    publish: bool = True,
    **inputs: Unpack[GateInputs],
) -> Outcome | ScanTaken:
    """`admit` of a scan with an id (CONTRACT §7 retry-safe scans) and without check-in types,
    with the scan's record of an admission's decision (`ScanRecord`: a 200, applied, and the
    image of the ticket's row as the answer shows it), in one autocommit statement. ScanTaken
    when the id was the event's already: as the statement saw it, or by its unique violation (a
    request committed the id first: nothing of the statement stays). A refusal or None is not
    recorded: the caller claims the id and decides in a transaction.

    Locks: the ticket's row, then the scan id's unique entry, until the statement commits. A
    transaction that holds the scan id and waits for the ticket deadlocks with it; the server
    ends one after its deadlock timeout: this one answers None.
    """
    in_transaction = transaction.get_connection().in_atomic_block
    try:
        with transaction.atomic() if in_transaction else contextlib.nullcontext():
            return _admit(organizer_id, event_id, key, actor, publish=publish, scan=True, **inputs)
    except IntegrityError as exc:
        if not scan_recorded_already(exc):
            raise
        return ScanTaken()
    except OperationalError as exc:
        if not is_transient(exc):
            raise
        return None


def _admit(
    organizer_id: int,
    event_id: int,
    key: TicketKey,
    actor: Actor,
    *,
    publish: bool,
    scan: bool,
    **inputs: Unpack[GateInputs],
) -> Outcome | ScanTaken:
    now = timezone.now()
    at = inputs.get("used_at") or now
    type_ids = inputs.get("check_in_type_ids") or []
    params = {
        "key": key.value,
        "key_code": key.reference_code,
        "nfc_uid": key.nfc_uid,
        "event_id": event_id,
        "organizer_id": organizer_id,
        "at": at,
        "now": now,
        "user_id": actor.user.pk if actor.user else None,
        "application_id": actor.application.pk if actor.application else None,
        "note": inputs.get("note", ""),
        "scan_id": inputs.get("scan_id"),
        "type_ids": type_ids,
    }
    if publish:
        params["now_text"] = datetime_representation(now)  # the webhook event's time
    connection = transaction.get_connection()
    typed = bool(type_ids)
    sql = admit_sql(
        key.column, publish=publish, typed=typed, guarded=key.reference_code is not None, scan=scan
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        names = _head_names.get(sql) or _head_names.setdefault(sql, _head_of(cursor))
    if row is None:
        return NotFound("Event not found.")
    head = dict(zip(names, row, strict=False))  # the row's first columns
    if head.get("gate_scan_taken"):
        return ScanTaken()
    ticket_row = row[len(names) :]
    if ticket_row[0] is None:  # the ticket's id: no ticket by this key in the event
        return NotFound("Ticket not found.")
    ticket = ticket_from_output_row(ticket_row, using=connection.alias)
    if head["gate_decided"]:
        return admitted(head, ticket, at=at)
    return refusal_as_read(head, ticket, event_id=event_id, alias=connection.alias, typed=typed)


def admitted_ticket(*, at: datetime, **kwargs) -> Ticket | None:
    """`admit` at `at`, as the tools and tests that measure or probe the statement use it:
    the admitted ticket, or None when it was not admitted (refused, or a concurrent scan won)."""
    outcome = admit(used_at=at, **kwargs)
    return outcome.ticket if isinstance(outcome, GateResult) else None


# --- The statement -------------------------------------------------------------------------


# The columns before the ticket's: whether it decided, with a scan id whether the id was
# taken; of a refusal, the event's title and status, the order's status and whether the event
# is in simple mode; typed, the `TYPED` columns.
REFUSAL = ("gate_event_title", "gate_event_status", "gate_order_status", "gate_simple_mode")
HEAD = frozenset(("gate_decided", "gate_scan_taken", *REFUSAL, *TYPED))

# The head's column names of each statement's text, read from its first answer: psycopg makes a
# description's columns anew, each with its type's information, whenever it is asked (40-odd
# columns: about a tenth of a scan's time in the server). The head's columns are named by the
# text itself, so its names hold for as long as the text.
_head_names: dict[str, tuple[str, ...]] = {}


def _head_of(cursor) -> tuple[str, ...]:
    return tuple(itertools.takewhile(HEAD.__contains__, (c[0] for c in cursor.description)))


def _refused(match: str, *, decided: str, typed: bool, scan: bool = False) -> str:
    """The statement's second branch, run when the first (`decided`) yielded nothing: the
    event, and the ticket by its key (`match`) with what the rules read (NULLs: no such
    ticket); no row when the organizer has no such event. `scan`: whether the scan id was
    taken, as the statement saw it."""
    facts = named(["e.title", "e.status", "o.status", f"({SIMPLE_MODE.sql})"], REFUSAL)
    no_types = "NULL, " * len(TYPED) if typed else ""
    taken = f"EXISTS ({_SCAN_RECORD}), " if scan else ""  # named by the first branch
    return f"""SELECT FALSE AS gate_decided, {taken}{facts}, {no_types}
            {ticket_output_columns(ticket="t", ticket_type="tt")}
        FROM {Event._meta.db_table} AS e
        LEFT JOIN {TICKET} AS t ON t.event_id = e.id AND {match}
        LEFT JOIN {Order._meta.db_table} AS o ON o.id = t.order_id
        LEFT JOIN {TicketType._meta.db_table} AS tt ON tt.id = t.ticket_type_id
        WHERE e.id = %(event_id)s AND e.organizer_id = %(organizer_id)s
          AND NOT EXISTS (SELECT 1 FROM {decided})"""


def _simple_admitted(match: str, name: str) -> str:
    return f"""{name} AS (
            UPDATE {TICKET} AS t
            SET status = '{Ticket.Status.USED}', used_at = %(at)s, updated_at = %(now)s
            FROM {Event._meta.db_table} AS e, {Order._meta.db_table} AS o
            WHERE t.event_id = %(event_id)s AND {match}
              AND e.id = t.event_id AND e.organizer_id = %(organizer_id)s
              AND o.id = t.order_id
              AND {simple_check_in_sql()}
            RETURNING {select_list(Ticket, "t")}
        )"""


@functools.cache
def admit_sql(
    key_column: str = "id",
    *,
    publish: bool = False,
    typed: bool = False,
    guarded: bool = False,
    scan: bool = False,
) -> str:
    """The statement for a ticket named by `key_column`; `typed` when the gate sent check-in
    types (the event may still have none: simple mode ignores them); `publish` records
    `ticket.checked_in` for an admission (`ticket_checked_in_sql`); `guarded` when the ticket
    must also still have a reference code (`%(key_code)s`: a signed code's, CONTRACT §14);
    `scan` (untyped only) admits only while `%(scan_id)s` is free in the event and records
    the admission's decision under it (`admit_scan`).

    Its row: whether it decided (`gate_decided`: admitted the ticket, or with types locked
    it), what the rules read of a refusal (`REFUSAL`: NULLs when it decided), typed the `TYPED`
    columns (NULLs when it refused), then the ticket's output columns: as admitted or locked,
    else as found (NULLs: no such ticket). No row: the organizer has no such event. With
    `scan`, after `gate_decided`: whether the scan id was taken (`gate_scan_taken`)."""
    flags = {"publish": publish, "typed": typed, "guarded": guarded, "scan": scan}
    return _compact(_admit_sql(key_column, **flags))


def _compact(sql: str) -> str:
    """`sql` without its indentation: psycopg keeps the conversion of a text of up to 4 KB."""
    return "\n".join(line.strip() for line in sql.splitlines() if line.strip())


def _admit_sql(key_column: str, *, publish: bool, typed: bool, guarded: bool, scan: bool) -> str:
    match = f"t.{ticket_key_column(key_column)} = %(key)s"
    if guarded:
        match += " AND t.reference_code = %(key_code)s"
    webhook = f", {ticket_checked_in_sql(admitted='admitted')}" if publish else ""
    ticket_type = TicketType._meta.db_table
    no_refusal = named(["NULL"] * len(REFUSAL), REFUSAL) + ", "
    if not typed:
        # With a scan id the text is longer: a short name for the admitted row keeps it within
        # what psycopg keeps converted (`_compact`).
        ad = "ad" if scan else "admitted"
        webhook = f", {ticket_checked_in_sql(admitted=ad)}" if publish else ""
        recorded = f", {_scan_recorded(ad)}" if scan else ""
        taken = "FALSE AS gate_scan_taken, " if scan else ""
        return f"""
        WITH {_simple_admitted(match, ad)}, {_audit(ad)}{webhook}{recorded}
        SELECT TRUE AS gate_decided, {taken}{no_refusal}
            {ticket_output_columns(ticket=ad, ticket_type="tt", whole=True)}
        FROM {ad} JOIN {ticket_type} AS tt ON tt.id = {ad}.ticket_type_id
        UNION ALL
        {_refused(match, decided=ad, typed=False, scan=scan)}
    """
    assert not scan, "a scan id is recorded with the untyped statement only"
    return f"""
        WITH {_simple_admitted(match, "simple_admitted")}, {typed_ctes(match)},
        admitted AS (
            SELECT * FROM simple_admitted
            UNION ALL
            SELECT * FROM typed_ticket WHERE EXISTS (SELECT 1 FROM inserted)
        ), shown AS (
            SELECT * FROM simple_admitted
            UNION ALL
            SELECT * FROM typed_ticket
        ), {_audit("simple_admitted")}{webhook}
        SELECT TRUE AS gate_decided, {no_refusal}{types_head()},
            {ticket_output_columns(ticket="s", ticket_type="tt")}
        FROM shown AS s JOIN {ticket_type} AS tt ON tt.id = s.ticket_type_id
        UNION ALL
        {_refused(match, decided="shown", typed=True)}
    """


def _audit(admitted: str) -> str:
    """The audit row of a simple-mode admission."""
    return f"""audit AS (
            INSERT INTO {CheckInLog._meta.db_table} ({AUDIT_COLUMNS})
            SELECT id, NULL, {AUDIT_VALUES}, event_id, %(scan_id)s
            FROM {admitted}
        )"""


_SCAN_RECORD = f"""SELECT 1 FROM {ScanRecord._meta.db_table}
            WHERE event_id = e.id AND scan_id = %(scan_id)s"""


def _scan_recorded(ad: str) -> str:
    """The scan id's record of the admission's decision (a 200, applied; `error` NULL) with the
    image of the ticket and its type as the statement's row shows them (`ticket_image_sql`),
    from which a replay renders the body the row rendered: a plain INSERT, whose unique
    violation (the id taken, committed before the statement or while it ran) undoes the whole
    statement."""
    image = ticket_image_sql(ticket=ad, ticket_type="tt")
    return f"""sr AS (
            INSERT INTO {ScanRecord._meta.db_table} (event_id, scan_id, action, ticket_id,
                success, result, status_code, actor_user_id, actor_application_id, created_at)
            SELECT {ad}.event_id, %(scan_id)s, '{CheckInLog.Action.CHECK_IN}', {ad}.id, TRUE,
                {image}, 200, %(user_id)s, %(application_id)s, %(now)s
            FROM {ad} JOIN {TicketType._meta.db_table} AS tt ON tt.id = {ad}.ticket_type_id
        )"""
