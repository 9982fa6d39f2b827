"""Trigram indexes for the events list's free-text `q` (PostgreSQL only; nothing on SQLite).

`icontains` compiles to `UPPER("col"::text) LIKE UPPER(%s)` on PostgreSQL, so each index is on
exactly that expression. They are not in the models' state: SQLite has no such index.
"""

from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations

INDEXES = {
    "event_title_trgm_idx": "title",
    "event_location_name_trgm_idx": "location_name",
}


def create_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, column in INDEXES.items():
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON events_event "
            f"USING gin (UPPER({column}::text) gin_trgm_ops)"
        )


def drop_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0001_initial"),
    ]

    operations = [
        TrigramExtension(),
        migrations.RunPython(create_indexes, drop_indexes, elidable=False),
    ]
