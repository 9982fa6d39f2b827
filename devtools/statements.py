"""The SQL the load generator writes by hand (`manage.py generate_load_data`), each statement
beside the ORM path it replaces where there is one (`ticketing.twins`,
tests/statements/devtools_cases.py).

- `rows_copy`: rows written with COPY into ids reserved from the table's sequence in one block;
  200,000 tickets take seconds where `rows_bulk_create` (its ORM twin, and the path on SQLite)
  takes minutes.
- `statistics_refresh`: fresh planner statistics and a visibility map after a bulk load, as
  autovacuum would leave them.
"""

from __future__ import annotations

from typing import Protocol

from django.db import connection, models

from ticketing.twins import fetch_dict, replaces, without_orm_twin

BATCH_SIZE = 10_000


class Progress(Protocol):
    def advance(self, n: int) -> None: ...


def rows_bulk_create(model: type[models.Model], rows: list[dict], progress: Progress) -> None:
    """Insert `rows` (values by attname) with `bulk_create` in batches, setting each row's
    `id`: what `rows_copy` replaces."""
    for start in range(0, len(rows), BATCH_SIZE):
        batch = rows[start : start + BATCH_SIZE]
        created = model.objects.bulk_create([model(**row) for row in batch])
        for row, obj in zip(batch, created, strict=True):
            row["id"] = obj.id
        progress.advance(len(batch))


@replaces(rows_bulk_create)
def rows_copy(model: type[models.Model], rows: list[dict], progress: Progress) -> None:
    """Insert `rows` (values by attname) with COPY into ids reserved from the table's sequence
    in one block, setting each row's `id`.

    Locks: the table against other writers until the transaction ends, so the reserved block
    is ours alone and the sequence stays ahead of every id written.
    """
    table = model._meta.db_table
    fields = list(model._meta.concrete_fields)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    with connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE")
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%(table)s, 'id')) AS first_id", {"table": table}
        )
        first_id = fetch_dict(cursor)["first_id"]
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence(%(table)s, 'id'), %(last_id)s)",
            {"table": table, "last_id": first_id + len(rows) - 1},
        )
        for offset, row in enumerate(rows):
            row["id"] = first_id + offset
        attnames = [f.attname for f in fields]
        raw = cursor.cursor  # psycopg's own cursor: Django's wrapper has no copy()
        for start in range(0, len(rows), BATCH_SIZE):
            batch = rows[start : start + BATCH_SIZE]
            with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in batch:
                    copy.write_row([row[name] for name in attnames])
            progress.advance(len(batch))


@without_orm_twin("ANALYZE and VACUUM are maintenance commands the ORM has no API for")
def statistics_refresh(tables: list[str]) -> None:
    """Refresh the planner's statistics of `tables` (or the planner guesses), and outside a
    transaction their visibility map too (or index-only scans read the heap): VACUUM needs
    autocommit."""
    command = "ANALYZE" if connection.in_atomic_block else "VACUUM ANALYZE"
    with connection.cursor() as cursor:
        cursor.execute(f"{command} {', '.join(tables)}")
