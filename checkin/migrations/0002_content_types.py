"""The content types of the moved models follow them from `tickets` to `checkin` with their ids,
so that permissions (`checkin.view_checkinlog`, ...) and admin history stay linked to the models.

A model whose `checkin` row already exists (created by a run that knew the new app before this
migration) keeps both rows as they are: renaming would break the unique (app_label, model), and
merging them would mean choosing between two sets of permissions. `remove_stale_contenttypes`
then lists the old row for an operator to look at.
"""

from django.db import migrations

MODELS = ("ticketcheckin", "checkinlog", "scanrecord")


def _move_content_types(apps, schema_editor, *, source: str, target: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType").objects.db_manager(
        schema_editor.connection.alias
    )
    for model in MODELS:
        if not content_types.filter(app_label=target, model=model).exists():
            content_types.filter(app_label=source, model=model).update(app_label=target)


def content_types_to_checkin(apps, schema_editor) -> None:
    _move_content_types(apps, schema_editor, source="tickets", target="checkin")


def content_types_to_tickets(apps, schema_editor) -> None:
    _move_content_types(apps, schema_editor, source="checkin", target="tickets")


class Migration(migrations.Migration):
    dependencies = [
        ("checkin", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("tickets", "0016_check_in_models_moved_to_checkin"),
    ]

    operations = [
        migrations.RunPython(content_types_to_checkin, content_types_to_tickets),
    ]
