from django.apps import AppConfig


class TicketsConfig(AppConfig):
    default_auto_field = "django.db.models.AutoField"
    name = "tickets"
