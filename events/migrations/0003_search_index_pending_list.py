"""A short pending list for the events' free-text indexes (PostgreSQL only; nothing on SQLite).

Rows inserted since the last (auto)vacuum wait in a GIN index's pending list, by default up to
4 MB, which every search reads from end to end and which the planner prices as such. After an
import of 40,000 events (still all pending) PostgreSQL preferred reading the whole table to a
search of `q=`. Events are written rarely: a 256 kB list costs their writes next to nothing.
"""

from django.db import migrations

NAMES = ("event_title_trgm_idx", "event_location_name_trgm_idx")


def shorten(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for name in NAMES:
            schema_editor.execute(f"ALTER INDEX {name} SET (gin_pending_list_limit = 256)")


def restore(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for name in NAMES:
            schema_editor.execute(f"ALTER INDEX {name} RESET (gin_pending_list_limit)")


class Migration(migrations.Migration):
    dependencies = [("events", "0002_trigram_search")]

    operations = [migrations.RunPython(shorten, restore, elidable=False)]
