"""A ticket's check-in types moving it in the sync feed once per transaction, not per row.

Admitting a ticket at its types (the one-statement admission) updates the ticket row itself
when it becomes used, and inserts a row per type: the trigger on those rows then updated the
ticket once more for each. A ticket already changed by the same transaction has its place in
the feed from that change (`change_xid` is the transaction's id, and the feed reads the
transaction's writes all at once or not at all), so the trigger leaves it alone.
"""

from django.db import migrations

CHANGED_ONCE = """
CREATE OR REPLACE FUNCTION tickets_ticketcheckin_changed() RETURNS trigger AS $$
BEGIN
    UPDATE tickets_ticket SET change_seq = 0
    WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.ticket_id ELSE NEW.ticket_id END
      AND change_xid IS DISTINCT FROM pg_current_xact_id()::text::bigint;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
"""

CHANGED_PER_ROW = """
CREATE OR REPLACE FUNCTION tickets_ticketcheckin_changed() RETURNS trigger AS $$
BEGIN
    UPDATE tickets_ticket SET change_seq = 0
    WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.ticket_id ELSE NEW.ticket_id END;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CHANGED_ONCE)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CHANGED_PER_ROW)


class Migration(migrations.Migration):
    dependencies = [("tickets", "0014_ticket_email_outbox")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
