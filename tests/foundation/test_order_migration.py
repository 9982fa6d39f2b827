"""Moving `Order` into `tickets` changed Django's state only: migrating back to the apps' first
migrations and forward across the move leaves every table, column, index and constraint as it
was (later migrations add indexes of their own), the moving migrations emit no SQL, and the
content types (so permissions and admin history) follow the model with their ids."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tickets.models import Order, OrderFormAnswer, Ticket

TABLES = ("orders_order", "orders_orderformanswer", Ticket._meta.db_table)
BEFORE_THE_MOVE = [("tickets", "0001_initial"), ("orders", "0001_initial")]
MOVING_MIGRATIONS = [("tickets", "0002_order"), ("orders", "0002_order_moved_to_tickets")]


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
    rows = ContentType.objects.filter(app_label=app_label, model__in=["order", "orderformanswer"])
    return dict(rows.values_list("model", "id"))


@pytest.mark.django_db(transaction=True)
def test_migrating_across_the_move_changes_no_table_and_keeps_the_content_types():
    moved = {
        "order": ContentType.objects.get_for_model(Order).id,
        "orderformanswer": ContentType.objects.get_for_model(OrderFormAnswer).id,
    }
    current = _schema()
    assert set(current) == set(TABLES)
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    try:
        _migrate(BEFORE_THE_MOVE)
        before = _schema()
        assert _content_type_ids("orders") == moved
        assert _content_type_ids("tickets") == {}
        _migrate(MOVING_MIGRATIONS)
        assert _schema() == before
        assert _content_type_ids("tickets") == moved
        assert _content_type_ids("orders") == {}
    finally:
        _migrate(leaves)
    assert _schema() == current


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
