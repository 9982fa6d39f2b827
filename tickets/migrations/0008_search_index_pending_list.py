"""A short pending list for the tickets' free-text index (PostgreSQL only; nothing on SQLite).

Every check-in updates its ticket's row outside HOT (the status, `updated_at` and the sync
feed's position are indexed), so each one adds the row's trigrams to this GIN index, and by
default they wait in a pending list of up to 4 MB that every search must read from end to end.
During a gate's rush `q=` then slowed from 13 ms to 42 ms after 3,000 check-ins (20,000
tickets). With a 256 kB list it stays at 10-11 ms, for 0.13 ms more per check-in (the update
that fills the list moves it into the index).
"""

from django.db import migrations

NAME = "ticket_search_trgm_idx"


def shorten(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER INDEX {NAME} SET (gin_pending_list_limit = 256)")


def restore(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER INDEX {NAME} RESET (gin_pending_list_limit)")


class Migration(migrations.Migration):
    dependencies = [("tickets", "0007_ticket_search_index")]

    operations = [migrations.RunPython(shorten, restore, elidable=False)]
