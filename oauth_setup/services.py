"""Writes of OAuth applications."""

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from oauth2_provider.generators import generate_client_secret

from organizers.models import Organizer
from ticketing.api.exceptions import InvalidParameters

from .models import Application

GRANT_TYPES = {
    "authorization-code": Application.GRANT_AUTHORIZATION_CODE,
    "client-credentials": Application.GRANT_CLIENT_CREDENTIALS,
}


@dataclass(frozen=True)
class CreatedApplication:
    application: Application
    client_secret: str | None
    """The plaintext secret: only the hash is stored, so this is the one chance to show it."""


@transaction.atomic
def application_create(
    *,
    name: str,
    organizer: Organizer | None,
    grant_type: str,
    redirect_uris: list[str] = (),
    allow_client_credentials: bool = False,
    public: bool = False,
    skip_authorization: bool = False,
) -> CreatedApplication:
    """Register an OAuth client owned by `organizer` (None: a platform application).

    `grant_type` is `authorization-code` or `client-credentials`; `allow_client_credentials`
    lets an authorization-code application also take application tokens. A public client
    (a mobile or browser app) has no secret and must use PKCE.

    Raises: InvalidParameters (unknown grant, missing or invalid redirect URI, a public client
    asking for client credentials).
    """
    if grant_type not in GRANT_TYPES:
        raise InvalidParameters(
            f"Unknown grant {grant_type!r}; use one of: {', '.join(GRANT_TYPES)}."
        )
    grant = GRANT_TYPES[grant_type]
    is_client_credentials = grant == Application.GRANT_CLIENT_CREDENTIALS
    uses_client_credentials = is_client_credentials or allow_client_credentials
    if public and uses_client_credentials:
        raise InvalidParameters(
            "A public client has no secret, so it cannot use client credentials."
        )
    secret = None if public else generate_client_secret()
    application = Application(
        name=name.strip(),
        organizer=organizer,
        client_type=Application.CLIENT_PUBLIC if public else Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=grant,
        allow_client_credentials=allow_client_credentials and not is_client_credentials,
        redirect_uris=" ".join(uri.strip() for uri in redirect_uris if uri.strip()),
        client_secret=secret or "",
        skip_authorization=skip_authorization,
    )
    try:
        application.full_clean(exclude=["client_secret"])
    except ValidationError as exc:
        name_, messages = next(iter(exc.message_dict.items()))
        raise InvalidParameters(f"{name_}: {messages[0]}", fields=exc.message_dict) from None
    application.save()  # hashes client_secret (DOT's ClientSecretField)
    return CreatedApplication(application=application, client_secret=secret)
