"""Reads of OAuth applications."""

import hashlib

from oauth2_provider.models import get_access_token_model, get_application_model

from organizers.permissions import sees_every_token


def application_for_consent(*, application_id: int | None = None, client_id: str | None = None):
    """The application with its owner organizer loaded (one query), or None if there is none."""
    Application = get_application_model()
    queryset = Application.objects.select_related("organizer")
    if application_id is not None:
        return queryset.filter(pk=application_id).first()
    if client_id:
        return queryset.filter(client_id=client_id).first()
    return None


def access_token_visible_to(*, token_value: str, application) -> bool:
    """Whether `application` may learn about this access token (introspection, RFC 7662 §4).

    Whom the rule admits is `sees_every_token`'s; whether the token exists is not revealed to
    anyone else.
    """
    if application is None:
        return False
    if sees_every_token(application):
        return True
    checksum = hashlib.sha256(token_value.encode()).hexdigest()
    return (
        get_access_token_model()
        .objects.filter(token_checksum=checksum, application=application)
        .exists()
    )
