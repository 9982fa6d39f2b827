"""System checks of the project's settings: run by `check`, `migrate` and `make serve`, and the
deployment ones by `check --deploy`."""

import ipaddress
from urllib.parse import urlsplit

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


@register(Tags.security)
def site_url_is_public(app_configs, **kwargs):
    """With DEBUG off, SITE_URL must be the public https address: every ticket link is built
    from it (`ticket_url`, emails, webhook payloads, `.ics`), and its default is where the
    server listens (`http://0.0.0.0:8000` in a container). Not deploy-only: every process
    refuses to start (`manage.py` commands, workers, and gunicorn's `on_starting`). A loopback
    address over plain HTTP stays allowed: its links reach only this machine, as in a trial
    with `make serve`."""
    site = urlsplit(settings.SITE_URL)
    if settings.DEBUG or (site.scheme == "https" and site.hostname):
        return []
    if site.scheme == "http" and _is_loopback(site.hostname):
        return []
    return [
        Error(
            f"SITE_URL is {settings.SITE_URL!r} with DEBUG off: ticket links (emails, "
            "`ticket_url`, webhook payloads, calendar files) would point there.",
            hint=(
                "Set SITE_URL to the https:// address clients reach the service at, e.g. "
                "https://tickets.example.com."
            ),
            id="ticketing.E002",
        )
    ]


def _is_loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


@register(Tags.security, deploy=True)
def csrf_middleware_is_installed(app_configs, **kwargs):
    """Django's CSRF middleware, or a subclass of it, is in MIDDLEWARE. Django's own check
    (security.W003) looks for its dotted path only, and production silences it for ours:
    `ticketing.middleware.CsrfViewMiddleware`, which bearer-token API calls skip."""
    from django.middleware.csrf import CsrfViewMiddleware
    from django.utils.module_loading import import_string

    if any(issubclass(import_string(path), CsrfViewMiddleware) for path in settings.MIDDLEWARE):
        return []
    return [
        Error(
            "No CSRF middleware in MIDDLEWARE: the admin's and the pages' forms are unprotected.",
            hint="Keep ticketing.middleware.CsrfViewMiddleware in MIDDLEWARE.",
            id="ticketing.E003",
        )
    ]
