"""Rate limits on the Django cache through django-ratelimit (CONTRACT §9).

With Redis configured the counters are shared by every process and machine.
"""

from django.conf import settings
from django_ratelimit.core import get_usage
from rest_framework.throttling import BaseThrottle

from .exceptions import RateLimited


class _CacheRateThrottle(BaseThrottle):
    group: str
    rate_setting: str

    def key(self, request) -> str:
        raise NotImplementedError

    def allow_request(self, request, view) -> bool:
        key = self.key(request)
        usage = get_usage(
            request,
            group=self.group,
            key=lambda group, req: key,
            rate=getattr(settings, self.rate_setting),
            increment=True,
        )
        if usage is not None and usage["should_limit"]:
            raise RateLimited(retry_after=usage["time_left"])
        return True


def token_rate_key(token) -> str:
    """Whom a token's requests count against: its application and its user, not the token.

    A client can mint tokens at will (client credentials, a refresh): counting each token on its
    own would give every new one a fresh budget. So an application token counts against its
    application, and a user's token against that user within the application. One counter:
    django-ratelimit's two round trips (add, then incr), as with one counter per token.
    """
    if token.application_id is None:  # made by hand, with no client to mint more
        return f"token:{token.pk}"
    return f"app:{token.application_id}:user:{token.user_id or '-'}"


class TokenRateThrottle(_CacheRateThrottle):
    """Per application and user on every endpoint; per client address where no token was sent."""

    group = "api"
    rate_setting = "API_RATE_LIMIT"

    def key(self, request) -> str:
        if request.auth is not None:
            return token_rate_key(request.auth)
        return f"ip:{self.get_ident(request)}"


class UserRateThrottle(_CacheRateThrottle):
    """Per user, whatever token they use: `GET /me` allows 10 a minute."""

    group = "me"
    rate_setting = "ME_RATE_LIMIT"

    def key(self, request) -> str:
        if request.auth is not None and request.auth.user_id is not None:
            return f"user:{request.auth.user_id}"
        return f"ip:{self.get_ident(request)}"
