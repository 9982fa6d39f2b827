from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TicketsConfig(AppConfig):
    default_auto_field = "django.db.models.AutoField"
    name = "tickets"
    verbose_name = _("Tickets and check-in")
