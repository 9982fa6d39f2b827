"""A change of an order's payment state moves its tickets in the sync feed (CONTRACT §11).

A scanner admits offline only a ticket whose order is paid (`order_paid`), so paying an order,
cancelling it or setting it back to pending must reach the scanners as a change of each of its
tickets. As with the triggers of 0005, a trigger is the one place every path goes through (a
service, the admin, an `update()`, raw SQL), and it runs in the writing transaction: it touches
the order's tickets, whose own trigger gives each a new feed position. On PostgreSQL the tickets
are locked in id order first, as every path that locks several tickets does.
"""

from django.db import migrations

POSTGRESQL_FORWARD = """
CREATE OR REPLACE FUNCTION tickets_order_status_changed() RETURNS trigger AS $$
BEGIN
    UPDATE tickets_ticket SET change_seq = 0
    WHERE id IN (
        SELECT id FROM tickets_ticket WHERE order_id = NEW.id ORDER BY id FOR UPDATE
    );
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER tickets_order_status_changed AFTER UPDATE OF status ON orders_order
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION tickets_order_status_changed();
"""

POSTGRESQL_BACKWARD = """
DROP TRIGGER IF EXISTS tickets_order_status_changed ON orders_order;
DROP FUNCTION IF EXISTS tickets_order_status_changed();
"""

# The ticket's own trigger (0005) fires on this UPDATE and gives it its new position.
SQLITE_FORWARD = (
    "CREATE TRIGGER tickets_order_status_changed AFTER UPDATE OF status ON orders_order"
    " WHEN NEW.status IS NOT OLD.status BEGIN"
    " UPDATE tickets_ticket SET change_seq = 0 WHERE order_id = NEW.id; END"
)
SQLITE_BACKWARD = "DROP TRIGGER IF EXISTS tickets_order_status_changed"


def create_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_FORWARD)
    else:
        schema_editor.execute(SQLITE_FORWARD)


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_BACKWARD)
    else:
        schema_editor.execute(SQLITE_BACKWARD)


class Migration(migrations.Migration):
    dependencies = [
        ("tickets", "0010_check_in_log_fewer_indexes"),
    ]

    operations = [
        migrations.RunPython(create_trigger, drop_trigger, elidable=False),
    ]
