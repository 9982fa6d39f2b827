"""The SQL this app writes by hand, each statement beside the ORM query it replaces and pinned
to it by the twin test (`ticketing.twins`, tests/statements/oauth_setup_cases.py).

- `application_by_client_id`: django-oauth-toolkit's lookup of every token request's client
  (`Application.objects.get(client_id=...)`, which the model's manager sends here). The ORM's
  building of the same query was a quarter of a token's Python (1,243 calls of 4,607).

The model comes as an argument, from its manager: the manager's module imports this one, so
this one cannot import it back.
"""

from __future__ import annotations

from django.db import connections
from oauth2_provider.models import AbstractApplication

from ticketing.db import from_row, select_list
from ticketing.twins import fetch_dict, replaces


def application_by_client_id_orm(
    *, model: type[AbstractApplication], client_id: str, using: str
) -> AbstractApplication | None:
    """`application_by_client_id` by the ORM (a queryset's `get`, not the manager's, which comes
    here): what the statement replaces."""
    return model.objects.db_manager(using).filter(client_id=client_id).first()


@replaces(application_by_client_id_orm)
def application_by_client_id(
    *, model: type[AbstractApplication], client_id: str, using: str
) -> AbstractApplication | None:
    """The application (`model`) of the unique `client_id` read from the database `using`, or
    None."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT {select_list(model, 'a')} FROM {model._meta.db_table} AS a"
            " WHERE a.client_id = %s",
            [client_id],
        )
        row = fetch_dict(cursor)
    if row is None:
        return None
    fields = model._meta.concrete_fields
    return from_row(model, [row[f.column] for f in fields], using=using)
