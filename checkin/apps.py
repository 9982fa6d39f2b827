from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CheckinConfig(AppConfig):
    """The gate: check-in and renew, the scanners' sync feed and batch upload, the live counts, the
    check-in log's admin and the staff check-in page (CONTRACT §7, §11, §12, §15)."""

    default_auto_field = "django.db.models.AutoField"
    name = "checkin"
    verbose_name = _("Check-in")

    def ready(self):
        from django.contrib.auth.signals import user_logged_out

        from .services import statements  # noqa: F401  (declares the admission with its twin)
        from .services.page_tokens import page_tokens_revoke

        def revoke(sender, request, user, **kwargs):
            if user is not None:
                page_tokens_revoke(user=user)

        # Signing out ends the page's API access too, not 15 minutes later.
        user_logged_out.connect(revoke, weak=False, dispatch_uid="checkin_page_tokens_revoke")
