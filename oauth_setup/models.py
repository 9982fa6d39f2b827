from django.db import models
from oauth2_provider.models import AbstractApplication


class Application(AbstractApplication):
    """An OAuth client, owned by one organizer or by none (a platform application)."""

    organizer = models.ForeignKey(
        "organizers.Organizer",
        on_delete=models.CASCADE,
        blank=True,
        null=True,
        related_name="applications",
        help_text="Owner. Empty for a platform application, which may act for any organizer.",
    )
    # DOT gives an application one grant type; a check-in integration typically needs its
    # users' authorization code and, for unattended jobs, client credentials as well.
    allow_client_credentials = models.BooleanField(
        default=False,
        help_text="Also accept the client-credentials grant (application tokens).",
    )

    class Meta(AbstractApplication.Meta):
        swappable = "OAUTH2_PROVIDER_APPLICATION_MODEL"

    def allows_grant_type(self, *grant_types: str) -> bool:
        if super().allows_grant_type(*grant_types):
            return True
        return self.allow_client_credentials and self.GRANT_CLIENT_CREDENTIALS in grant_types

    @property
    def is_platform(self) -> bool:
        return self.organizer_id is None
