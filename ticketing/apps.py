from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class TicketingConfig(AppConfig):
    """The project's own checks; its models live in the domain apps."""

    name = "ticketing"

    def ready(self):
        from . import checks  # noqa: F401  (registers the checks)

        # Every app's `exceptions.py`, so that `api_error_codes()` lists every code whatever
        # the views imported so far.
        autodiscover_modules("exceptions")
