"""The multiple-mode part of the gate's one-statement admission (`checkin.services.statements`,
whose docstring tells what it does): the ticket locked, the requested check-in types decided
and inserted, their audit rows, the ticket moved to `used`; and the columns it answers."""

from __future__ import annotations

from events.models import CheckInType, Event
from ticketing.db import select_list
from tickets.models import Order, Ticket

from ..models import CheckInLog, TicketCheckIn
from ..rules import ADMISSIBLE, SIMPLE_MODE, TYPE_RULES

TICKET = Ticket._meta.db_table
# Typed, the columns after the refusal's: whether it admitted in simple mode, then per
# requested type (request order) its id, name, admission time as read and first broken rule,
# and the types it inserted.
TYPED = (
    *("gate_admitted_simple", "gate_type_ids", "gate_type_names", "gate_admitted_at"),
    *("gate_broken", "gate_inserted"),
)
AUDIT_COLUMNS = """ticket_id, check_in_type_id, action, at, actor_user_id, actor_application_id,
                nfc_uid, note, created_at, event_id, scan_id"""
AUDIT_VALUES = f"""'{CheckInLog.Action.CHECK_IN}', %(at)s, %(user_id)s, %(application_id)s,
                %(nfc_uid)s, %(note)s, %(now)s"""


def named(values: list[str], names: tuple[str, ...]) -> str:
    return ", ".join(f"{value} AS {name}" for value, name in zip(values, names, strict=True))


def typed_ctes(match: str) -> str:
    """Multiple mode: the locked ticket, the requested types, their admissions and audit rows."""
    admissible = " AND ".join(f"({rule.sql})" for rule in ADMISSIBLE)
    broken = " ".join(f"WHEN NOT ({rule.sql}) THEN {n}" for n, rule in enumerate(TYPE_RULES))
    return f"""target AS (
            SELECT {select_list(Ticket, "t")}
            FROM {TICKET} AS t
            JOIN {Event._meta.db_table} AS e ON e.id = t.event_id
            JOIN {Order._meta.db_table} AS o ON o.id = t.order_id
            WHERE t.event_id = %(event_id)s AND {match}
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
            INSERT INTO {CheckInLog._meta.db_table} ({AUDIT_COLUMNS})
            SELECT t.id, r.type_id, {AUDIT_VALUES}, t.event_id, %(scan_id)s
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


def types_head() -> str:
    arrays = [
        *(f"ARRAY(SELECT {c} FROM requested ORDER BY ord)" for c in ("type_id", "name")),
        *(f"ARRAY(SELECT {c} FROM requested ORDER BY ord)" for c in ("admitted_at", "broken")),
        "ARRAY(SELECT check_in_type_id FROM inserted)",
    ]
    return named(["EXISTS (SELECT 1 FROM simple_admitted)", *arrays], TYPED)
