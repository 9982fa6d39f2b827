"""Django's browser middleware (session, CSRF, user, messages), skipped by bearer-token API calls.

Apart from `ticketing.middleware`, which the logging configuration imports before the apps are
loaded: these import `django.contrib.auth`'s models.
"""

from django.contrib.auth import middleware as auth_middleware
from django.contrib.messages import middleware as messages_middleware
from django.contrib.sessions import middleware as sessions_middleware
from django.middleware import csrf


def is_bearer_api_call(request) -> bool:
    """An API call with `Authorization: Bearer`: the token is the whole of its authentication.

    The API authenticates only by token (DRF's views are CSRF-exempt, no session authentication),
    so such a call reads no session, shows no messages and has no user but the token's: the
    browser's middleware below would only cost it time (a tenth of a scan's worker time).
    """
    return (
        request.path_info.startswith("/api/")
        and request.META.get("HTTP_AUTHORIZATION", "")[:7].lower() == "bearer "
    )


class _BrowserOnly:
    """Mixin for a Django middleware that bearer-token API calls pass straight through."""

    def __call__(self, request):
        if is_bearer_api_call(request):
            return self.get_response(request)
        return super().__call__(request)


class SessionMiddleware(_BrowserOnly, sessions_middleware.SessionMiddleware):
    """Django's, for everything but bearer-token API calls."""


class CsrfViewMiddleware(_BrowserOnly, csrf.CsrfViewMiddleware):
    """Django's, for everything but bearer-token API calls (whose views are exempt anyway)."""

    def process_view(self, request, callback, callback_args, callback_kwargs):
        if is_bearer_api_call(request):
            return None
        return super().process_view(request, callback, callback_args, callback_kwargs)


class AuthenticationMiddleware(_BrowserOnly, auth_middleware.AuthenticationMiddleware):
    """Django's, for everything but bearer-token API calls (DRF sets their `user`)."""


class MessageMiddleware(_BrowserOnly, messages_middleware.MessageMiddleware):
    """Django's, for everything but bearer-token API calls."""
