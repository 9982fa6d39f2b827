from django.apps import AppConfig
from django.contrib import admin
from django.utils.module_loading import autodiscover_modules
from django.utils.translation import gettext_lazy as _


class TicketingConfig(AppConfig):
    """The project's own checks; its models live in the domain apps."""

    name = "ticketing"

    def ready(self):
        from . import checks  # noqa: F401  (registers the checks)

        # Every app's `exceptions.py`, so that `api_error_codes()` lists every code whatever
        # the views imported so far.
        autodiscover_modules("exceptions")

        # The admin is the organizers' back office: it says so rather than "Django administration".
        admin.site.site_header = _("Ticketing back office")
        admin.site.site_title = _("Ticketing back office")
        admin.site.index_title = _("Events, tickets and check-in")
