"""Fewer indexes for a check-in to write (issue 14).

A check-in changes indexed columns (status, `updated_at`, the feed position), so PostgreSQL
inserts the new row version into every index of the table. Seven added nothing to the gate:

- the per-column trigram indexes of `0003_trigram_search`: the `email` filter and the admin's
  search now go through the joined one of `0007_ticket_search_index` (each column's text is part
  of it) and recheck their column; the admin's exact search by tag gets a partial btree, which
  a check-in of a ticket without a tag does not write;
- the event's own foreign-key index: every other index of the table leads with the event;
- `page_token`'s LIKE index (`unique=True` on a CharField): it is only ever matched exactly.

Measured in-process on 20,000 tickets, the admission statement took 940-990 µs instead of
1,120-1,270 µs.
"""

import importlib

import django.db.models.deletion
import django.db.models.functions.text
from django.db import migrations, models

import tickets.codes

# SQLite alters a table by remaking it, which drops the table's triggers and fails on the other
# tables' triggers that name it: the feed's triggers (0005) are set aside around the change.
scanner_sync = importlib.import_module("tickets.migrations.0005_scanner_sync")

PER_COLUMN_TRIGRAM_INDEXES = {
    "ticket_reference_code_trgm_idx": "reference_code",
    "ticket_firstname_trgm_idx": "firstname",
    "ticket_lastname_trgm_idx": "lastname",
    "ticket_email_trgm_idx": "email",
    "ticket_nfc_uid_trgm_idx": "nfc_uid",
}


def drop_trigram_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in PER_COLUMN_TRIGRAM_INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


def create_trigram_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, column in PER_COLUMN_TRIGRAM_INDEXES.items():
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON tickets_ticket "
            f"USING gin (UPPER({column}::text) gin_trgm_ops)"
        )


def sqlite_triggers_drop(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in scanner_sync.SQLITE_BACKWARD:
            if statement.startswith("DROP TRIGGER"):
                schema_editor.execute(statement)


def sqlite_triggers_create(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in scanner_sync.SQLITE_FORWARD:  # the counter's statements are idempotent
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0002_trigram_search"),
        ("tickets", "0008_search_index_pending_list"),
    ]

    operations = [
        migrations.RunPython(drop_trigram_indexes, create_trigram_indexes, elidable=False),
        migrations.RunPython(sqlite_triggers_drop, sqlite_triggers_create, elidable=False),
        migrations.AlterField(
            model_name="ticket",
            name="event",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="tickets",
                to="events.event",
            ),
        ),
        migrations.AlterField(
            model_name="ticket",
            name="page_token",
            field=models.CharField(
                default=tickets.codes.page_token_generate, editable=False, max_length=43
            ),
        ),
        migrations.AddConstraint(
            model_name="ticket",
            constraint=models.UniqueConstraint(
                fields=("page_token",), name="ticket_unique_page_token"
            ),
        ),
        migrations.AddIndex(
            model_name="ticket",
            index=models.Index(
                django.db.models.functions.text.Upper("nfc_uid"),
                condition=models.Q(("nfc_uid__isnull", False)),
                name="ticket_nfc_uid_upper_idx",
            ),
        ),
        migrations.RunPython(sqlite_triggers_create, sqlite_triggers_drop, elidable=False),
    ]
