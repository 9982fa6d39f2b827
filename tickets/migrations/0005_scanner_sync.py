"""The scanner sync feed, batch upload and live counts (CONTRACT §11, §12).

Every change of a ticket moves it in the sync feed: database triggers set its `change_seq`
(and, on PostgreSQL, `change_xid`, the writing transaction's id) on every insert and update
of the row, when its check-in types change, and when its ticket type is renamed. A trigger is
the one place every path goes through: the ORM, `bulk_update`, the admin, the import, the
one-statement admission and raw SQL alike (`tickets.selectors_scanner` explains how the
feed reads them). SQLite has no sequence: a one-row counter table stands in for it.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

POSTGRESQL_FORWARD = """
CREATE SEQUENCE IF NOT EXISTS tickets_ticket_change_seq;

CREATE OR REPLACE FUNCTION tickets_ticket_changed() RETURNS trigger AS $$
BEGIN
    NEW.change_seq := nextval('tickets_ticket_change_seq');
    NEW.change_xid := pg_current_xact_id()::text::bigint;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER tickets_ticket_changed BEFORE INSERT OR UPDATE ON tickets_ticket
    FOR EACH ROW EXECUTE FUNCTION tickets_ticket_changed();

CREATE OR REPLACE FUNCTION tickets_ticketcheckin_changed() RETURNS trigger AS $$
BEGIN
    UPDATE tickets_ticket SET change_seq = 0
    WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.ticket_id ELSE NEW.ticket_id END;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER tickets_ticketcheckin_changed AFTER INSERT OR UPDATE OR DELETE
    ON tickets_ticketcheckin FOR EACH ROW EXECUTE FUNCTION tickets_ticketcheckin_changed();

CREATE OR REPLACE FUNCTION tickets_tickettype_renamed() RETURNS trigger AS $$
BEGIN
    IF NEW.name IS DISTINCT FROM OLD.name THEN
        UPDATE tickets_ticket SET change_seq = 0 WHERE ticket_type_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER tickets_tickettype_renamed AFTER UPDATE OF name ON events_tickettype
    FOR EACH ROW EXECUTE FUNCTION tickets_tickettype_renamed();
"""

POSTGRESQL_BACKWARD = """
DROP TRIGGER IF EXISTS tickets_tickettype_renamed ON events_tickettype;
DROP FUNCTION IF EXISTS tickets_tickettype_renamed();
DROP TRIGGER IF EXISTS tickets_ticketcheckin_changed ON tickets_ticketcheckin;
DROP FUNCTION IF EXISTS tickets_ticketcheckin_changed();
DROP TRIGGER IF EXISTS tickets_ticket_changed ON tickets_ticket;
DROP FUNCTION IF EXISTS tickets_ticket_changed();
DROP SEQUENCE IF EXISTS tickets_ticket_change_seq;
"""

# SQLite: one writer at a time, so a counter bumped inside the writing transaction is enough.
# A trigger does not fire itself again (recursive_triggers is off), so the inner UPDATE of the
# ticket stops there; the check-in and rename triggers' UPDATEs fire the ticket's trigger.
_SQLITE_BUMP = """
    UPDATE tickets_change_counter SET value = value + 1 WHERE id = 1;
    UPDATE tickets_ticket SET change_seq = (SELECT value FROM tickets_change_counter WHERE id = 1)
"""
SQLITE_FORWARD = [
    "CREATE TABLE IF NOT EXISTS tickets_change_counter"
    " (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO tickets_change_counter (id, value) VALUES (1, 0)",
    f"CREATE TRIGGER tickets_ticket_inserted AFTER INSERT ON tickets_ticket BEGIN {_SQLITE_BUMP}"
    " WHERE id = NEW.id; END",
    f"CREATE TRIGGER tickets_ticket_updated AFTER UPDATE ON tickets_ticket BEGIN {_SQLITE_BUMP}"
    " WHERE id = NEW.id; END",
    "CREATE TRIGGER tickets_ticketcheckin_inserted AFTER INSERT ON tickets_ticketcheckin BEGIN"
    " UPDATE tickets_ticket SET change_seq = 0 WHERE id = NEW.ticket_id; END",
    "CREATE TRIGGER tickets_ticketcheckin_updated AFTER UPDATE ON tickets_ticketcheckin BEGIN"
    " UPDATE tickets_ticket SET change_seq = 0 WHERE id = NEW.ticket_id; END",
    "CREATE TRIGGER tickets_ticketcheckin_deleted AFTER DELETE ON tickets_ticketcheckin BEGIN"
    " UPDATE tickets_ticket SET change_seq = 0 WHERE id = OLD.ticket_id; END",
    "CREATE TRIGGER tickets_tickettype_renamed AFTER UPDATE OF name ON events_tickettype"
    " WHEN NEW.name IS NOT OLD.name BEGIN"
    " UPDATE tickets_ticket SET change_seq = 0 WHERE ticket_type_id = NEW.id; END",
]
SQLITE_BACKWARD = [
    *(
        f"DROP TRIGGER IF EXISTS {name}"
        for name in (
            "tickets_tickettype_renamed",
            "tickets_ticketcheckin_deleted",
            "tickets_ticketcheckin_updated",
            "tickets_ticketcheckin_inserted",
            "tickets_ticket_updated",
            "tickets_ticket_inserted",
        )
    ),
    "DROP TABLE IF EXISTS tickets_change_counter",
]


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_FORWARD)
    else:
        for statement in SQLITE_FORWARD:
            schema_editor.execute(statement)
    # Every existing ticket gets its place in the feed; every audit row its event.
    schema_editor.execute("UPDATE tickets_ticket SET change_seq = 0")
    schema_editor.execute(
        "UPDATE tickets_checkinlog SET event_id ="
        " (SELECT t.event_id FROM tickets_ticket t WHERE t.id = tickets_checkinlog.ticket_id)"
        " WHERE event_id IS NULL"
    )


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRESQL_BACKWARD)
    else:
        for statement in SQLITE_BACKWARD:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0002_trigram_search"),
        ("tickets", "0004_ticket_page_token"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        migrations.swappable_dependency(settings.OAUTH2_PROVIDER_APPLICATION_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ScanRecord",
            fields=[
                (
                    "id",
                    models.AutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("scan_id", models.CharField(max_length=64)),
                (
                    "action",
                    models.CharField(
                        choices=[("check_in", "Check-in"), ("renew", "Renew (undo check-in)")],
                        max_length=16,
                    ),
                ),
                ("success", models.BooleanField()),
                ("error", models.CharField(blank=True, max_length=32, null=True)),
                ("result", models.JSONField(help_text="The first result, as replayed.")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.AddField(
            model_name="checkinlog",
            name="error",
            field=models.CharField(blank=True, max_length=32, null=True),
        ),
        migrations.AddField(
            model_name="checkinlog",
            name="event",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="events.event",
            ),
        ),
        migrations.AddField(
            model_name="checkinlog",
            name="scan_id",
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddField(
            model_name="ticket",
            name="change_seq",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="ticket",
            name="change_xid",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.AddIndex(
            model_name="checkinlog",
            index=models.Index(
                condition=models.Q(("action", "check_in"), ("error__isnull", True)),
                fields=["event", "at"],
                name="check_in_log_timeline_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="checkinlog",
            index=models.Index(
                condition=models.Q(("scan_id__isnull", False)),
                fields=["scan_id"],
                name="check_in_log_scan_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="ticket",
            index=models.Index(
                fields=["event", "change_xid", "change_seq"], name="ticket_event_change_idx"
            ),
        ),
        migrations.AddIndex(
            model_name="ticket",
            index=models.Index(
                fields=["event", "ticket_type", "status"], name="ticket_event_type_status_idx"
            ),
        ),
        migrations.AddField(
            model_name="scanrecord",
            name="actor_application",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.OAUTH2_PROVIDER_APPLICATION_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="scanrecord",
            name="actor_user",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="scanrecord",
            name="event",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="events.event"
            ),
        ),
        migrations.AddField(
            model_name="scanrecord",
            name="ticket",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="tickets.ticket",
            ),
        ),
        migrations.AddConstraint(
            model_name="scanrecord",
            constraint=models.UniqueConstraint(
                fields=("event", "scan_id"), name="scan_record_unique_scan"
            ),
        ),
        migrations.RunPython(create_triggers, drop_triggers, elidable=False),
    ]
