"""Trigram indexes for the tickets' free-text `q`, the `email` filter and the admin's search
(PostgreSQL only; nothing on SQLite).

`icontains` compiles to `UPPER("col"::text) LIKE UPPER(%s)` and `iexact` (the admin's
`=reference_code`) to `UPPER("col"::text) = UPPER(%s)` on PostgreSQL; a trigram GIN index on
exactly `UPPER(col::text)` serves both. They are not in the models' state: SQLite has no such
index. The `pg_trgm` extension comes with `events.0002_trigram_search`.

`fastupdate` stays on (PostgreSQL's default): rows written since the last (auto)vacuum wait in a
pending list of at most 4 MB that searches read through. Off, 200,000 tickets inserted in one
statement took over the 15 s statement timeout with the five indexes.
"""

from django.db import migrations

INDEXES = {
    "ticket_reference_code_trgm_idx": "reference_code",
    "ticket_firstname_trgm_idx": "firstname",
    "ticket_lastname_trgm_idx": "lastname",
    "ticket_email_trgm_idx": "email",
    "ticket_nfc_uid_trgm_idx": "nfc_uid",
}


def create_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, column in INDEXES.items():
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON tickets_ticket "
            f"USING gin (UPPER({column}::text) gin_trgm_ops)"
        )


def drop_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0002_trigram_search"),
        ("tickets", "0002_order"),
    ]

    operations = [
        migrations.RunPython(create_indexes, drop_indexes, elidable=False),
    ]
