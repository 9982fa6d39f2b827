"""No LIKE index on the events' ids (PostgreSQL only; nothing on SQLite).

PostgreSQL's backend gives a CharField primary key a second index for LIKE; an event's id is
only ever matched whole. The gate's check-in writes an event row in its own statement when an
endpoint is subscribed, and each index of the row with it.
"""

from django.db import migrations

NAME = "webhooks_webhookevent_id_b40855ca_like"


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {NAME}")


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {NAME} ON webhooks_webhookevent (id varchar_pattern_ops)"
        )


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0001_initial")]

    operations = [migrations.RunPython(drop, create, elidable=False)]
