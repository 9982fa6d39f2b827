"""The ticket page's token (CONTRACT §14): added empty, filled per existing ticket, then made
required and unique (a callable default on AddField would give every existing row one value)."""

import secrets

from django.db import migrations, models

import tickets.codes


def fill_tokens(apps, schema_editor):
    Ticket = apps.get_model("tickets", "Ticket")
    pending = Ticket.objects.filter(page_token__isnull=True).only("pk")
    batch = []
    for ticket in pending.iterator(chunk_size=2000):
        ticket.page_token = secrets.token_urlsafe(tickets.codes.PAGE_TOKEN_BYTES)
        batch.append(ticket)
        if len(batch) == 2000:
            Ticket.objects.bulk_update(batch, ["page_token"])
            batch = []
    Ticket.objects.bulk_update(batch, ["page_token"])


class Migration(migrations.Migration):
    dependencies = [("tickets", "0003_trigram_search")]

    operations = [
        migrations.AddField(
            model_name="ticket",
            name="page_token",
            field=models.CharField(editable=False, max_length=43, null=True),
        ),
        migrations.RunPython(fill_tokens, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name="ticket",
            name="page_token",
            field=models.CharField(
                default=tickets.codes.page_token_generate,
                editable=False,
                max_length=43,
                unique=True,
            ),
        ),
    ]
