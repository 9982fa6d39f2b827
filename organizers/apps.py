from django.apps import AppConfig


class OrganizersConfig(AppConfig):
    default_auto_field = "django.db.models.AutoField"
    name = "organizers"
