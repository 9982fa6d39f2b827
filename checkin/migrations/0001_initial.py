"""The gate owns its records: `TicketCheckIn`, `CheckInLog` and `ScanRecord` move here from the
`tickets` app.

Only Django's state moves. The tables keep their names (`tickets_ticketcheckin`,
`tickets_checkinlog`, `tickets_scanrecord`), columns, indexes, constraints and the triggers of
tickets.0005 and 0015, so no row moves and no table changes; `tickets.0016` then drops the models
from that app's state, and `checkin.0002` moves their content types.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("events", "0003_search_index_pending_list"),
        ("tickets", "0015_check_in_type_change_once"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        migrations.swappable_dependency(settings.OAUTH2_PROVIDER_APPLICATION_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="CheckInLog",
                    fields=[
                        (
                            "id",
                            models.AutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "action",
                            models.CharField(
                                choices=[
                                    ("check_in", "Check-in"),
                                    ("renew", "Renew (undo check-in)"),
                                ],
                                max_length=16,
                            ),
                        ),
                        (
                            "at",
                            models.DateTimeField(
                                help_text="Check-in time as the gate reported it."
                            ),
                        ),
                        ("nfc_uid", models.CharField(blank=True, max_length=64, null=True)),
                        ("note", models.TextField(blank=True)),
                        ("scan_id", models.CharField(blank=True, max_length=64, null=True)),
                        ("error", models.CharField(blank=True, max_length=32, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "actor_application",
                            models.ForeignKey(
                                blank=True,
                                db_index=False,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.OAUTH2_PROVIDER_APPLICATION_MODEL,
                            ),
                        ),
                        (
                            "actor_user",
                            models.ForeignKey(
                                blank=True,
                                db_index=False,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "check_in_type",
                            models.ForeignKey(
                                blank=True,
                                db_index=False,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="events.checkintype",
                            ),
                        ),
                        (
                            "event",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="events.event",
                            ),
                        ),
                        (
                            "ticket",
                            models.ForeignKey(
                                db_index=False,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="check_in_logs",
                                to="tickets.ticket",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "check-in record",
                        "verbose_name_plural": "check-in history",
                        "db_table": "tickets_checkinlog",
                        "ordering": ["-created_at", "-id"],
                        "indexes": [
                            models.Index(
                                fields=["ticket", "created_at"], name="check_in_log_ticket_idx"
                            ),
                            models.Index(
                                condition=models.Q(("action", "check_in"), ("error__isnull", True)),
                                fields=["event", "at"],
                                name="check_in_log_timeline_idx",
                            ),
                            models.Index(
                                condition=models.Q(("scan_id__isnull", False)),
                                fields=["scan_id"],
                                name="check_in_log_scan_idx",
                            ),
                            models.Index(
                                condition=models.Q(("check_in_type__isnull", False)),
                                fields=["check_in_type"],
                                name="check_in_log_type_idx",
                            ),
                            models.Index(
                                condition=models.Q(("actor_user__isnull", False)),
                                fields=["actor_user"],
                                name="check_in_log_user_idx",
                            ),
                            models.Index(
                                condition=models.Q(("actor_application__isnull", False)),
                                fields=["actor_application"],
                                name="check_in_log_application_idx",
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="ScanRecord",
                    fields=[
                        (
                            "id",
                            models.AutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("scan_id", models.CharField(max_length=64)),
                        (
                            "action",
                            models.CharField(
                                choices=[
                                    ("check_in", "Check-in"),
                                    ("renew", "Renew (undo check-in)"),
                                ],
                                max_length=16,
                            ),
                        ),
                        ("success", models.BooleanField()),
                        ("error", models.CharField(blank=True, max_length=32, null=True)),
                        ("result", models.JSONField(help_text="The first result, as replayed.")),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "actor_application",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.OAUTH2_PROVIDER_APPLICATION_MODEL,
                            ),
                        ),
                        (
                            "actor_user",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "event",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="events.event",
                            ),
                        ),
                        (
                            "ticket",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="tickets.ticket",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "tickets_scanrecord",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("event", "scan_id"), name="scan_record_unique_scan"
                            )
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="TicketCheckIn",
                    fields=[
                        (
                            "id",
                            models.AutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("used_at", models.DateTimeField()),
                        (
                            "check_in_type",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="ticket_check_ins",
                                to="events.checkintype",
                            ),
                        ),
                        (
                            "ticket",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="type_check_ins",
                                to="tickets.ticket",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "tickets_ticketcheckin",
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("ticket", "check_in_type"),
                                name="ticket_check_in_unique_type",
                            )
                        ],
                    },
                ),
            ],
        ),
    ]
