"""Moving `TicketCheckIn`, `CheckInLog` and `ScanRecord` into `checkin` changed Django's state
only: migrating back to before the move and forward across it leaves every table, column, index
and constraint as it was, the moving migrations emit no SQL, and the content types (so
permissions and admin history) follow the models with their ids."""

import importlib

import pytest
from django.apps import apps
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from checkin.models import CheckInLog, ScanRecord, TicketCheckIn

MOVED = (TicketCheckIn, CheckInLog, ScanRecord)
MODELS = ["ticketcheckin", "checkinlog", "scanrecord"]
TABLES = ("tickets_ticketcheckin", "tickets_checkinlog", "tickets_scanrecord")
BEFORE_THE_MOVE = [("tickets", "0015_check_in_type_change_once"), ("checkin", None)]
MOVING_MIGRATIONS = [
    ("checkin", "0001_initial"),
    ("tickets", "0016_check_in_models_moved_to_checkin"),
    ("checkin", "0002_content_types"),
]
# Where the move ends: later migrations of these apps change the tables for reasons of their own.
AFTER_THE_MOVE = [("tickets", "0016_check_in_models_moved_to_checkin"), MOVING_MIGRATIONS[-1]]
content_types_migration = importlib.import_module("checkin.migrations.0002_content_types")


def _schema() -> dict:
    with connection.cursor() as cursor:
        existing = {t.name for t in connection.introspection.get_table_list(cursor)}
        return {
            table: {
                "columns": [
                    (c.name, c.type_code, c.null_ok)
                    for c in connection.introspection.get_table_description(cursor, table)
                ],
                "constraints": connection.introspection.get_constraints(cursor, table),
            }
            for table in TABLES
            if table in existing
        }


def _migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    ContentType.objects.clear_cache()


def _content_type_ids(app_label: str) -> dict[str, int]:
    rows = ContentType.objects.filter(app_label=app_label, model__in=MODELS)
    return dict(rows.values_list("model", "id"))


def test_the_models_keep_their_tables():
    assert [m._meta.app_label for m in MOVED] == ["checkin"] * 3
    assert tuple(m._meta.db_table for m in MOVED) == TABLES


@pytest.mark.django_db(transaction=True)
def test_migrating_across_the_move_changes_no_table_and_keeps_the_content_types():
    moved = {m._meta.model_name: ContentType.objects.get_for_model(m).id for m in MOVED}
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        _migrate(AFTER_THE_MOVE)
        current = _schema()
        assert set(current) == set(TABLES)
        _migrate(BEFORE_THE_MOVE)
        assert _schema() == current
        assert _content_type_ids("tickets") == moved
        assert _content_type_ids("checkin") == {}
        _migrate(AFTER_THE_MOVE)
        assert _schema() == current
        assert _content_type_ids("checkin") == moved
        assert _content_type_ids("tickets") == {}
    finally:
        _migrate(leaves)


class _Editor:
    connection = connection


@pytest.mark.django_db
def test_a_content_type_already_in_checkin_is_left_with_the_old_one():
    """Renaming would break the unique (app_label, model): both rows stay as they were, and the
    other models move."""
    ids = _content_type_ids("checkin")
    ContentType.objects.filter(id=ids["scanrecord"]).update(app_label="tickets")
    old = ContentType.objects.create(app_label="tickets", model="checkinlog")

    content_types_migration.content_types_to_checkin(apps, _Editor())
    ContentType.objects.clear_cache()

    assert _content_type_ids("checkin") == ids
    assert _content_type_ids("tickets") == {"checkinlog": old.id}


@pytest.mark.django_db(transaction=True)  # SQLite's schema editor refuses a test transaction
@pytest.mark.parametrize("app_label, name", MOVING_MIGRATIONS)
def test_moving_migrations_emit_no_sql(app_label, name, capsys):
    call_command("sqlmigrate", app_label, name)
    statements = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.strip() and not line.startswith("--") and line.strip() not in ("BEGIN;", "COMMIT;")
    ]
    assert statements == []
