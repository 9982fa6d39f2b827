"""Reads of OAuth applications."""

from oauth2_provider.models import get_application_model


def application_for_consent(*, application_id: int | None = None, client_id: str | None = None):
    """The application with its owner organizer loaded (one query), or None if there is none."""
    Application = get_application_model()
    queryset = Application.objects.select_related("organizer")
    if application_id is not None:
        return queryset.filter(pk=application_id).first()
    if client_id:
        return queryset.filter(client_id=client_id).first()
    return None
