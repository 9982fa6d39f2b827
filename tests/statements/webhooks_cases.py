"""Cases for `webhooks.statements`: none to compare. What runs there is the advisory locks of
`organizer_slots` (`without_orm_twin`: tests/webhooks/test_statements.py holds them to the
count in the process that stands for them on SQLite); `event_insert_sql` is a clause that runs
inside other apps' statements, and is compared there (`tickets_cases`: the API's creation)
and with the row the ORM saves (tests/webhooks/test_statements.py)."""

CASES: dict = {}
