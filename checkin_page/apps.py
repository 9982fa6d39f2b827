from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CheckinPageConfig(AppConfig):
    """The staff check-in page (CONTRACT §15): a web page that is a client of the public API."""

    name = "checkin_page"
    verbose_name = _("Check-in page")

    def ready(self):
        from django.contrib.auth.signals import user_logged_out

        from .services import page_tokens_revoke

        def revoke(sender, request, user, **kwargs):
            if user is not None:
                page_tokens_revoke(user=user)

        # Signing out ends the page's API access too, not 15 minutes later.
        user_logged_out.connect(revoke, weak=False, dispatch_uid="checkin_page_tokens_revoke")
