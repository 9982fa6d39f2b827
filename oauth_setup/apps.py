from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class OauthSetupConfig(AppConfig):
    default_auto_field = "django.db.models.AutoField"
    name = "oauth_setup"
    verbose_name = _("API applications")

    def ready(self):
        # Access logs (runserver, gunicorn) carry the query string, and with it any
        # `access_token=` a client sent there; they bypass settings.LOGGING's handler.
        from ticketing.logging import install_token_scrubbing

        from . import checks, signals  # noqa: F401  (registers checks, connects receivers)

        install_token_scrubbing()
