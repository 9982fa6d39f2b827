"""System checks of the project's settings, run by `check`, `migrate` and `make serve`."""

from django.conf import settings
from django.core.checks import Error, Tags, register

# Backends that deliver nothing: a ticket email (its reference code admits the holder) would
# be printed to the logs, or kept in memory and lost.
_UNDELIVERED_EMAIL = {
    "django.core.mail.backends.console.EmailBackend": "written to the logs",
    "django.core.mail.backends.locmem.EmailBackend": "kept in memory and lost",
    "django.core.mail.backends.dummy.EmailBackend": "dropped",
}


@register(Tags.security)
def email_is_delivered(app_configs, **kwargs):
    """With DEBUG off, ticket emails must reach their holders (not deploy-only: serve refuses)."""
    fate = _UNDELIVERED_EMAIL.get(settings.EMAIL_BACKEND)
    if settings.DEBUG or fate is None:
        return []
    return [
        Error(
            f"EMAIL_BACKEND is {settings.EMAIL_BACKEND} with DEBUG off: ticket emails, whose "
            f"reference codes admit their holder, would be {fate} instead of sent.",
            hint=(
                "Set EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend with EMAIL_HOST "
                "and EMAIL_PORT (or the file backend with EMAIL_FILE_PATH for a trial run)."
            ),
            id="ticketing.E001",
        )
    ]
