"""Fewer indexes on the check-in log, which every check-in writes a row of (issue 14): the
ticket's own index is the leading column of `check_in_log_ticket_idx`; the check-in type and the
actors, mostly NULL on a gate's row, get partial indexes that such a row does not write.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("events", "0002_trigram_search"),
        ("tickets", "0009_gate_writes_fewer_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        migrations.swappable_dependency(settings.OAUTH2_PROVIDER_APPLICATION_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="checkinlog",
            name="actor_application",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.OAUTH2_PROVIDER_APPLICATION_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="checkinlog",
            name="actor_user",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="checkinlog",
            name="check_in_type",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="events.checkintype",
            ),
        ),
        migrations.AlterField(
            model_name="checkinlog",
            name="ticket",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="check_in_logs",
                to="tickets.ticket",
            ),
        ),
        migrations.AddIndex(
            model_name="checkinlog",
            index=models.Index(
                condition=models.Q(("check_in_type__isnull", False)),
                fields=["check_in_type"],
                name="check_in_log_type_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="checkinlog",
            index=models.Index(
                condition=models.Q(("actor_user__isnull", False)),
                fields=["actor_user"],
                name="check_in_log_user_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="checkinlog",
            index=models.Index(
                condition=models.Q(("actor_application__isnull", False)),
                fields=["actor_application"],
                name="check_in_log_application_idx",
            ),
        ),
    ]
