"""One trigram index for the tickets' free-text `q` (PostgreSQL only; nothing on SQLite).

`q` searches the reference code, names and email as one text, the columns joined by chr(31)
(`ticketing.api.filter_fields.JoinedText`), which Django compiles to exactly the expression below:
one LIKE per row instead of four, and one index the planner can weigh. At 20,000 tickets the
four per-column conditions made PostgreSQL prefer reading the whole event (10 ms a query, its
cost of UPPER and LIKE underestimated) to combining four indexes. The per-column indexes of
`0003_trigram_search` stay: the `email` filter and the admin's search use them.
"""

from django.db import migrations

NAME = "ticket_search_trgm_idx"
EXPRESSION = (
    "UPPER((reference_code || chr(31) || firstname || chr(31) || lastname || chr(31) "
    "|| email)::text)"
)


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {NAME} ON tickets_ticket "
            f"USING gin ({EXPRESSION} gin_trgm_ops)"
        )


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {NAME}")


class Migration(migrations.Migration):
    dependencies = [("tickets", "0006_check_in_history_names")]

    operations = [migrations.RunPython(create_index, drop_index, elidable=False)]
