"""The SQL this app writes by hand, each statement beside the ORM query it replaces and pinned
to it by the twin test (`ticketing.twins`, tests/statements/tickets_cases.py). Rows are read by
column name (`rows`).

- `issue.ticket_issue`: the API's creation (CONTRACT §5) in one statement. Every sale of a type
  takes that type's row lock to claim its place; in the ORM path (`issuing.tickets_write`, then
  the claim) that is a transaction of several round trips, here one autocommit statement, which
  writes what the ORM path writes, row for row (each value as the ORM prepares it:
  `ticketing.db.insert_params`), and holds the lock only while it runs.
- `reads.event_ticket_page`, `reads.event_ticket_count`: the event's ticket list without
  parameters. The ORM compiled a new statement per page (a third of the list's time) and a
  second counted.
- `reads.event_ticket`: one ticket of the organizer's event by a unique key, with the tenant
  check in the same statement.
- `reads.caller_ticket`: `GET /tickets/search`. Compiling the ORM's query cost more than running
  it, on every scan of a gate that does not know the event's organizer.

Clauses other statements are built from, the gate's admission among them:
`rows.ticket_output_columns` (the row `selectors.ticket_from_output_row` reads by position) and
`issue.ticket_event_sql` (the `ticket.*` webhook event a statement records with the row it
changed).
"""

from . import issue, reads, rows

__all__ = ["issue", "reads", "rows"]
