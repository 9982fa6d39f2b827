"""Deployment checks of the token cache's configuration."""

from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.caches, deploy=True)
def token_cache_is_shared(app_configs, **kwargs):
    """Cached tokens are only forgotten everywhere if every process reads the same cache."""
    backend = settings.CACHES["default"]["BACKEND"]
    if settings.API_TOKEN_CACHE_SECONDS and backend.endswith("LocMemCache"):
        return [
            Warning(
                "API_TOKEN_CACHE_SECONDS is on with an in-process cache: a token revoked in one "
                "process would still be served by the others.",
                hint="Set REDIS_URL, or API_TOKEN_CACHE_SECONDS=0.",
                id="oauth_setup.W001",
            )
        ]
    return []
