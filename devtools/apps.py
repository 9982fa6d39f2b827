from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DevtoolsConfig(AppConfig):
    """Tooling, not domain: demo data, load data and bench-only views. It uses the domain apps'
    models and services and nothing imports it."""

    name = "devtools"
    verbose_name = _("Developer tools")
