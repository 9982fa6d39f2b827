from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from oauth2_provider.models import AbstractApplication

from .statements import application_by_client_id


class ApplicationManager(models.Manager):
    def get(self, *args, **kwargs):
        """By `client_id` alone, as django-oauth-toolkit finds the client of every token request:
        one plain statement (`statements.application_by_client_id`). The ORM's building of the
        same query was a quarter of a token's Python (1,243 calls of 4,607).

        Raises: Application.DoesNotExist."""
        if args or kwargs.keys() != {"client_id"}:
            return super().get(*args, **kwargs)
        application = application_by_client_id(
            model=self.model, client_id=kwargs["client_id"], using=self.db
        )
        if application is None:
            raise self.model.DoesNotExist(
                f"{self.model._meta.object_name} matching query does not exist."
            )
        return application

    def get_by_natural_key(self, client_id):
        return self.get(client_id=client_id)


class Application(AbstractApplication):
    """An OAuth client, owned by one organizer or by none (a platform application)."""

    objects = ApplicationManager()

    organizer = models.ForeignKey(
        "organizers.Organizer",
        on_delete=models.CASCADE,
        blank=True,
        null=True,
        related_name="applications",
        help_text=_("Owner. Empty for a platform application, which may act for any organizer."),
        verbose_name=_("organizer"),
    )
    # DOT gives an application one grant type; a check-in integration typically needs its
    # users' authorization code and, for unattended jobs, client credentials as well.
    allow_client_credentials = models.BooleanField(
        default=False,
        help_text=_("Also accept the client-credentials grant (application tokens)."),
        verbose_name=_("allow client credentials"),
    )

    class Meta(AbstractApplication.Meta):
        verbose_name = _("application")
        verbose_name_plural = _("applications")
        swappable = "OAUTH2_PROVIDER_APPLICATION_MODEL"
        constraints = [
            # Anyone can send a public client's id: only the person's click says that the
            # request comes from the app they mean (RFC 9700 §4.1.1, RFC 8252 §8.6).
            models.CheckConstraint(
                condition=~Q(client_type="public", skip_authorization=True),
                name="public_client_never_skips_consent",
                violation_error_message="A public client cannot skip the consent page.",
            ),
        ]

    def redirect_uri_allowed(self, uri: str) -> bool:
        """Exactly one of the registered URIs (CONTRACT §4).

        DOT also lets a loopback URI through on any port (RFC 8252 §7.3), so any program on
        the user's machine could receive the code.
        """
        return uri in self.redirect_uris.split()

    def allows_grant_type(self, *grant_types: str) -> bool:
        if super().allows_grant_type(*grant_types):
            return True
        return self.allow_client_credentials and self.GRANT_CLIENT_CREDENTIALS in grant_types
