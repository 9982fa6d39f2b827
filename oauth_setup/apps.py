from django.apps import AppConfig


class OauthSetupConfig(AppConfig):
    default_auto_field = "django.db.models.AutoField"
    name = "oauth_setup"
