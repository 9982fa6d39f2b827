from django.apps import AppConfig


class OrdersConfig(AppConfig):
    """Installed only so that its migrations, which created the order tables, keep running."""

    default_auto_field = "django.db.models.AutoField"
    name = "orders"
