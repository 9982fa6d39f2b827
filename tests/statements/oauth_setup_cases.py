"""Cases for `oauth_setup.statements`: the client lookup of every token request."""

from django.db import DEFAULT_DB_ALIAS

from oauth_setup.models import Application
from tests.factories import ApplicationFactory, OrganizerFactory

from .support import Case


def _loaded(application) -> dict | None:
    """Every field of the application as loaded, and the database it was read from."""
    if application is None:
        return None
    fields = {f.attname: getattr(application, f.attname) for f in application._meta.concrete_fields}
    return {**fields, "type": type(application), "db": application._state.db}


def _cases() -> list[Case]:
    organizer = OrganizerFactory()
    owned = ApplicationFactory(organizer=organizer)
    public = ApplicationFactory(
        organizer=organizer,
        client_type=Application.CLIENT_PUBLIC,
        allow_client_credentials=False,
        client_secret="",
    )
    platform = ApplicationFactory(organizer=None)
    asked = {
        "an organizer's application": owned.client_id,
        "a public client": public.client_id,
        "a platform application": platform.client_id,
        "no such client": "no-such-client",
        "the client id in other case": owned.client_id.swapcase(),
        "an empty client id": "",
    }
    return [
        Case(
            label=label,
            arguments=lambda client_id=client_id: {
                "model": Application,
                "client_id": client_id,
                "using": DEFAULT_DB_ALIAS,
            },
            result=_loaded,
        )
        for label, client_id in asked.items()
    ]


CASES = {"oauth_setup.statements.application_by_client_id": _cases}
