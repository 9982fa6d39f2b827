"""A check-in at the gate, by id or by scanned code, decided, recorded and explained in one
statement.

On PostgreSQL, without a tag to bind, one statement (`admit_sql`) decides with the rules of
`checkin.rules` and records the admission, in simple mode and with check-in types, and returns
the ticket as it now is (with types, each requested type's outcome in request order). When it
admitted nothing, its second branch reads why (`_refused`: every rule's verdict and the ticket,
as the statement's snapshot saw them), so a refusal (already used, revoked, unpaid, draft event,
types required, unknown ticket or event) costs the round trip an admission costs. PostgreSQL
runs that branch only when the first yielded nothing (a one-time filter), so the gate's
commonest scan pays for it only in the statement's length. The locked path
(`gate.ticket_check_in`) answers what the statement could not settle: a concurrent scan changed
the ticket after the statement's snapshot (every rule holds as read, yet nothing was admitted),
SQLite, or a tag to bind.

The statement is built from the rules, over the aliases they are written for. It admits in
simple mode (`simple_admitted`, a conditional UPDATE), and in multiple mode locks the ticket
(`target`: `FOR UPDATE`, rechecked on the newest row), inserts each requested type that meets
`TYPE_RULES` (`ON CONFLICT DO NOTHING`: the unique pair is the last word), moves the ticket to
`used` when it must, and writes the audit rows. Data-modifying clauses run whether or not the
final SELECT reads them; each writes only from what an admission yielded.
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Unpack

from django.db import transaction
from django.utils import timezone

from events.models import CheckInType, Event, TicketType
from events.selectors import event_get_for_organizer
from ticketing.api.exceptions import ApplicationError, NotFound
from ticketing.db import select_list
from tickets.exceptions import CheckInTypeRequired
from tickets.gate_types import GateInputs, GateResult, TicketKey, TypeResult
from tickets.models import Order, Ticket
from tickets.selectors import ticket_from_output_row, ticket_key_column, ticket_output_columns
from tickets.services.common import Actor
from tickets.services.publishing import Type, ticket_checked_in_params, ticket_checked_in_sql
from webhooks.selectors import webhook_wants

from ..models import CheckInLog, TicketCheckIn
from ..rules import ADMISSIBLE, SIMPLE_CHECK_IN, SIMPLE_MODE, TYPE_RULES, simple_check_in_sql


def ticket_check_in_at_gate(
    *, organizer_id: int, event_id: int, key: TicketKey, actor: Actor, **options: Unpack[GateInputs]
) -> GateResult:
    """`gate.ticket_check_in` for an event named by id and a ticket by `key`: the API's
    check-in, by id or by scanned code. `admit` first, on PostgreSQL without a tag to bind;
    what it cannot settle goes to the locked path, which decides and explains.

    Raises: NotFound (event or ticket), and what `gate.ticket_check_in` raises.
    """
    if options.get("nfc_uid") is None and transaction.get_connection().vendor == "postgresql":
        result = admit(
            organizer_id=organizer_id, event_id=event_id, key=key, actor=actor, **options
        )
        if result is not None:
            return result
    from . import gate  # the locked path, which this module's statement mostly spares

    event = event_get_for_organizer(organizer_id=organizer_id, event_id=event_id)
    return gate.ticket_check_in(event=event, key=key, actor=actor, **options)


def admit(
    *,
    organizer_id: int,
    event_id: int,
    key: TicketKey,
    actor: Actor,
    publish: bool | None = None,
    **options: Unpack[GateInputs],
) -> GateResult | None:
    """A check-in (no tag to bind) by the statement: the admission, or the refusal raised with
    the ticket as found; None when only the locked path can tell. `publish`: record
    `ticket.checked_in` (default: when some webhook endpoint of the organizer wants it, as the
    process knows it).

    Raises: NotFound, the rules' errors, CheckInTypeRequired.
    Locks: with check-in types, the ticket row (`FOR UPDATE`) until the statement commits, so
    two gates cannot both admit one type; without, the UPDATE's own row lock.
    """
    now = timezone.now()
    at = options.get("used_at") or now
    type_ids = options.get("check_in_type_ids") or []
    if publish is None:
        publish = webhook_wants(organizer_id=organizer_id, type=Type.TICKET_CHECKED_IN)
    params = {
        "key": key.value,
        "nfc_uid": key.nfc_uid,
        "event_id": event_id,
        "organizer_id": organizer_id,
        "at": at,
        "now": now,
        "user_id": actor.user.pk if actor.user else None,
        "application_id": actor.application.pk if actor.application else None,
        "note": options.get("note", ""),
        "scan_id": options.get("scan_id"),
        "type_ids": type_ids,
    }
    if publish:
        params |= ticket_checked_in_params(organizer_id=organizer_id, event_id=event_id, at=now)
    connection = transaction.get_connection()
    typed = bool(type_ids)
    with connection.cursor() as cursor:
        cursor.execute(admit_sql(key.column, publish=publish, typed=typed), params)
        row = cursor.fetchone()
    if row is None:
        raise NotFound("Event not found.")
    decided, verdicts, row = row[0], row[1 : 1 + HEAD], row[1 + HEAD :]
    if decided:
        return _admitted(row, alias=connection.alias, typed=typed, at=at)
    found = row[TYPED_HEAD:] if typed else row
    if found[0] is None:  # the ticket's id: no ticket by this key in the event
        raise NotFound("Ticket not found.")
    ticket = ticket_from_output_row(found, using=connection.alias)
    _refuse(verdicts, ticket, alias=connection.alias, event_id=event_id, typed=typed)
    return None  # every rule held as read, yet nothing was admitted: a concurrent scan won


def admitted_ticket(*, at: datetime, **kwargs) -> Ticket | None:
    """`admit` at `at`, as the tools and tests that measure or probe the statement use it:
    the admitted ticket, or None when it was not admitted (refused, or a concurrent scan won)."""
    try:
        result = admit(used_at=at, **kwargs)
    except ApplicationError:
        return None
    return result.ticket if result is not None else None


def _admitted(row, *, alias: str, typed: bool, at: datetime) -> GateResult:
    """The result of an admission statement that yielded a row: it admitted the ticket
    (simple mode) or locked it and decided each requested type."""
    if not typed:
        ticket = ticket_from_output_row(row, using=alias)
        return GateResult(ticket=ticket, check_in_results=[], renew_results=[])
    ticket = ticket_from_output_row(row[TYPED_HEAD:], using=alias)
    simple, type_ids, names, admitted_at, broken, inserted = row[:TYPED_HEAD]
    if simple:
        return GateResult(ticket=ticket, check_in_results=[], renew_results=[])
    results = _type_results(ticket, type_ids, names, admitted_at, broken, set(inserted), at)
    return GateResult(ticket=ticket, check_in_results=results, renew_results=[])


def _refuse(head, ticket: Ticket, *, alias: str, event_id: int, typed: bool) -> None:
    """Raise the refusal the statement's `HEAD` columns (its `_refused` branch) tell, with the
    ticket as read; return if every rule held (a concurrent scan changed the ticket after the
    statement's snapshot).

    Raises: the rules' errors, CheckInTypeRequired.
    """
    title, event_status, order_status, *verdicts = head
    event = Event.from_db(alias, ["id", "title", "status"], [event_id, title, event_status])
    ticket.order = Order.from_db(alias, ["id", "status"], [ticket.order_id, order_status])
    simple = verdicts[len(ADMISSIBLE)]
    ticket.event_has_check_in_types = not simple
    rules = (*ADMISSIBLE, *SIMPLE_CHECK_IN) if simple else ADMISSIBLE
    holds = verdicts[: len(ADMISSIBLE)] + (verdicts[len(ADMISSIBLE) + 1 :] if simple else [])
    for rule, held in zip(rules, holds, strict=True):
        if not held:
            raise rule.error(rule.message(ticket, event), ticket=ticket)
    if not simple and not typed:
        raise CheckInTypeRequired(ticket=ticket)


def _type_results(ticket: Ticket, type_ids, names, admitted_at, broken, inserted, at):
    """Each requested type's result, in request order, as `check_in_types_admit` words it."""
    done: dict[int, datetime] = {}  # admitted by this request: a repeat is a duplicate
    raced = [
        type_id
        for type_id, rule in zip(type_ids, broken, strict=True)
        if rule is None and type_id not in inserted
    ]
    if raced:  # a concurrent check-in admitted them after the statement read: when?
        done |= dict(
            TicketCheckIn.objects.filter(
                ticket_id=ticket.pk, check_in_type_id__in=raced
            ).values_list("check_in_type_id", "used_at")
        )
    results = []
    for type_id, name, when, rule in zip(type_ids, names, admitted_at, broken, strict=True):
        if rule is None and type_id in inserted:
            inserted.discard(type_id)
            done[type_id] = at
            results.append(TypeResult(type_id, name, at, True, None))
            continue
        if rule is None:
            when, rule = done.get(type_id, at), 1  # the rule "already checked in for this type"
        view = _TypeAsRead(name, when)
        failed = TYPE_RULES[rule]
        message = failed.message(view if name is not None else None)
        results.append(TypeResult(type_id, name, when, False, message, failed.code))
    return results


class _TypeAsRead:
    """What a type rule's message reads of a requested type."""

    __slots__ = ("admitted_at", "name")

    def __init__(self, name: str, admitted_at: datetime | None):
        self.name, self.admitted_at = name, admitted_at


# --- The statement -------------------------------------------------------------------------


TICKET = Ticket._meta.db_table
# The verdicts of a refusal, after the statement's first column: the event's title and status,
# the order's status, and each rule's verdict (ADMISSIBLE, SIMPLE_MODE, SIMPLE_CHECK_IN).
HEAD = 3 + len(ADMISSIBLE) + 1 + len(SIMPLE_CHECK_IN)
# What the typed statement's row holds after them, before the ticket: whether it admitted in
# simple mode, then per requested type (request order) its id, name, admission time as read
# and first broken rule, and the types it inserted.
TYPED_HEAD = 6

_AUDIT_COLUMNS = """ticket_id, check_in_type_id, action, at, actor_user_id, actor_application_id,
                nfc_uid, note, created_at, event_id, scan_id"""
_AUDIT_VALUES = f"""'{CheckInLog.Action.CHECK_IN}', %(at)s, %(user_id)s, %(application_id)s,
                %(nfc_uid)s, %(note)s, %(now)s"""


def _refused(key: str, *, decided: str, typed: bool) -> str:
    """The statement's second branch, run when the first (`decided`) yielded nothing: the
    event, and the ticket by its key with every rule's verdict (NULLs: no such ticket); no row
    when the organizer has no such event."""
    verdicts = ", ".join(f"({rule.sql})" for rule in (*ADMISSIBLE, SIMPLE_MODE, *SIMPLE_CHECK_IN))
    no_types = "NULL, " * TYPED_HEAD if typed else ""
    return f"""SELECT FALSE, e.title, e.status, o.status, {verdicts}, {no_types}
            {ticket_output_columns(ticket="t", ticket_type="tt")}
        FROM {Event._meta.db_table} AS e
        LEFT JOIN {TICKET} AS t ON t.event_id = e.id AND t.{key} = %(key)s
        LEFT JOIN {Order._meta.db_table} AS o ON o.id = t.order_id
        LEFT JOIN {TicketType._meta.db_table} AS tt ON tt.id = t.ticket_type_id
        WHERE e.id = %(event_id)s AND e.organizer_id = %(organizer_id)s
          AND NOT EXISTS (SELECT 1 FROM {decided})"""


def _simple_admitted(key: str, name: str) -> str:
    return f"""{name} AS (
            UPDATE {TICKET} AS t
            SET status = '{Ticket.Status.USED}', used_at = %(at)s, updated_at = %(now)s
            FROM {Event._meta.db_table} AS e, {Order._meta.db_table} AS o
            WHERE t.event_id = %(event_id)s AND t.{key} = %(key)s
              AND e.id = t.event_id AND e.organizer_id = %(organizer_id)s
              AND o.id = t.order_id
              AND {simple_check_in_sql()}
            RETURNING {select_list(Ticket, "t")}
        )"""


def _typed(key: str) -> str:
    """Multiple mode: the locked ticket, the requested types, their admissions and audit rows."""
    admissible = " AND ".join(f"({rule.sql})" for rule in ADMISSIBLE)
    broken = " ".join(f"WHEN NOT ({rule.sql}) THEN {n}" for n, rule in enumerate(TYPE_RULES))
    return f"""target AS (
            SELECT {select_list(Ticket, "t")}
            FROM {TICKET} AS t
            JOIN {Event._meta.db_table} AS e ON e.id = t.event_id
            JOIN {Order._meta.db_table} AS o ON o.id = t.order_id
            WHERE t.event_id = %(event_id)s AND t.{key} = %(key)s
              AND e.organizer_id = %(organizer_id)s AND {admissible} AND NOT ({SIMPLE_MODE.sql})
            FOR UPDATE OF t
        ), requested AS (
            SELECT r.type_id, r.ord, c.name, a.used_at AS admitted_at,
                CASE {broken} END AS broken,
                r.ord = MIN(r.ord) OVER (PARTITION BY r.type_id) AS first
            FROM target AS t
            CROSS JOIN unnest(%(type_ids)s::integer[]) WITH ORDINALITY AS r(type_id, ord)
            LEFT JOIN {CheckInType._meta.db_table} AS c
              ON c.id = r.type_id AND c.event_id = t.event_id
            LEFT JOIN LATERAL (
                -- By the ticket and the type at once (LIMIT: not merged into a join on
                -- the type alone): the unique pair's index finds the one row, whatever the
                -- statistics say of a table that grows all night.
                SELECT used_at FROM {TicketCheckIn._meta.db_table}
                WHERE ticket_id = t.id AND check_in_type_id = c.id
                LIMIT 1
            ) AS a ON TRUE
        ), inserted AS (
            INSERT INTO {TicketCheckIn._meta.db_table} (ticket_id, check_in_type_id, used_at)
            SELECT t.id, r.type_id, %(at)s FROM target AS t, requested AS r
            WHERE r.first AND r.broken IS NULL
            ON CONFLICT (ticket_id, check_in_type_id) DO NOTHING
            RETURNING check_in_type_id
        ), type_audit AS (
            INSERT INTO {CheckInLog._meta.db_table} ({_AUDIT_COLUMNS})
            SELECT t.id, r.type_id, {_AUDIT_VALUES}, t.event_id, %(scan_id)s
            FROM target AS t, requested AS r
            WHERE r.first AND r.type_id IN (SELECT check_in_type_id FROM inserted)
            ORDER BY r.ord
        ), typed_updated AS (
            UPDATE {TICKET} AS t
            SET status = '{Ticket.Status.USED}', used_at = LEAST(COALESCE(t.used_at, %(at)s),
                %(at)s), updated_at = %(now)s
            WHERE t.id = (SELECT id FROM target) AND EXISTS (SELECT 1 FROM inserted)
              AND (t.status <> '{Ticket.Status.USED}' OR t.used_at IS NULL OR t.used_at > %(at)s)
            RETURNING {select_list(Ticket, "t")}
        ), typed_ticket AS (
            SELECT * FROM typed_updated
            UNION ALL
            SELECT * FROM target WHERE NOT EXISTS (SELECT 1 FROM typed_updated)
        )"""


def _types_head() -> str:
    return """ARRAY(SELECT type_id FROM requested ORDER BY ord),
            ARRAY(SELECT name FROM requested ORDER BY ord),
            ARRAY(SELECT admitted_at FROM requested ORDER BY ord),
            ARRAY(SELECT broken FROM requested ORDER BY ord),
            ARRAY(SELECT check_in_type_id FROM inserted),"""


@functools.cache
def admit_sql(key_column: str = "id", *, publish: bool = False, typed: bool = False) -> str:
    """The statement for a ticket named by `key_column`; `typed` when the gate sent check-in
    types (the event may still have none: simple mode ignores them); `publish` records
    `ticket.checked_in` for an admission (`ticket_checked_in_sql`).

    Its row: whether it decided (admitted the ticket, or with types locked it), the `HEAD`
    verdicts of a refusal (NULLs when it decided), typed the `TYPED_HEAD` columns (NULLs when it
    refused), then the ticket's output columns: as admitted or locked, else as found (NULLs: no
    such ticket). No row: the organizer has no such event."""
    key = ticket_key_column(key_column)
    webhook = f", {ticket_checked_in_sql(admitted='admitted')}" if publish else ""
    ticket_type = TicketType._meta.db_table
    no_verdicts = "NULL, " * HEAD
    if not typed:
        return f"""
        WITH {_simple_admitted(key, "admitted")}, {_audit("admitted")}{webhook}
        SELECT TRUE, {no_verdicts}{ticket_output_columns(ticket="admitted", ticket_type="tt")}
        FROM admitted JOIN {ticket_type} AS tt ON tt.id = admitted.ticket_type_id
        UNION ALL
        {_refused(key, decided="admitted", typed=False)}
    """
    return f"""
        WITH {_simple_admitted(key, "simple_admitted")}, {_typed(key)},
        admitted AS (
            SELECT * FROM simple_admitted
            UNION ALL
            SELECT * FROM typed_ticket WHERE EXISTS (SELECT 1 FROM inserted)
        ), shown AS (
            SELECT * FROM simple_admitted
            UNION ALL
            SELECT * FROM typed_ticket
        ), {_audit("simple_admitted")}{webhook}
        SELECT TRUE, {no_verdicts}EXISTS (SELECT 1 FROM simple_admitted), {_types_head()}
            {ticket_output_columns(ticket="s", ticket_type="tt")}
        FROM shown AS s JOIN {ticket_type} AS tt ON tt.id = s.ticket_type_id
        UNION ALL
        {_refused(key, decided="shown", typed=True)}
    """


def _audit(admitted: str) -> str:
    """The audit row of a simple-mode admission."""
    return f"""audit AS (
            INSERT INTO {CheckInLog._meta.db_table} ({_AUDIT_COLUMNS})
            SELECT id, NULL, {_AUDIT_VALUES}, event_id, %(scan_id)s
            FROM {admitted}
        )"""
