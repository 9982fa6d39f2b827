from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class OrdersConfig(AppConfig):
    """Installed only so that its migrations, which created the order tables, keep running."""

    default_auto_field = "django.db.models.AutoField"
    name = "orders"
    verbose_name = _("Orders (history)")
