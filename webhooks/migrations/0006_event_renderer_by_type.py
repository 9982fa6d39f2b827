# The renderer of an event a statement recorded is now chosen by its type, in code
# (`webhooks.renderers`), no longer named by the row. Expand, then contract (deploy/README.md):
# this release stops using the column; the next one drops it.
#
# While this release rolls out, old processes still write the column and read it: old app
# servers name the renderer in their rows, and old workers render only the rows that name one.
# So the column stays for now with a database default, the dotted path of the one renderer any
# row ever named (`tickets.services.publishing.ticket_row_render`, for `ticket.created` and
# `ticket.checked_in`, which is where the new mapping sends those types too): a row the new code
# writes, which omits the column, is still rendered by an old worker. Rows queued by the old
# code are rendered by the new one through their type, whatever they named.

from django.db import migrations, models

THE_ONE_RENDERER = "tickets.services.publishing.ticket_row_render"


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0005_translatable_verbose_names"),
    ]

    operations = [
        migrations.AlterField(
            model_name="webhookevent",
            name="renderer",
            field=models.CharField(
                blank=True,
                db_default=THE_ONE_RENDERER,
                editable=False,
                max_length=200,
                verbose_name="renderer",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.RemoveField(model_name="webhookevent", name="renderer")],
        ),
    ]
