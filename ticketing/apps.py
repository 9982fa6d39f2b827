from django.apps import AppConfig


class TicketingConfig(AppConfig):
    """The project's own checks; its models live in the domain apps."""

    name = "ticketing"

    def ready(self):
        from . import checks  # noqa: F401  (registers the checks)
