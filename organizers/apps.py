from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class OrganizersConfig(AppConfig):
    default_auto_field = "django.db.models.AutoField"
    name = "organizers"
    verbose_name = _("Organizers")
