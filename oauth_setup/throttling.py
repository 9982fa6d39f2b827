"""Limits on guessing credentials: client secrets on /oauth/*, passwords on the sign-in pages.

Failed checks are counted per client address and per client or account, in the cache
(django-ratelimit, like the token endpoint's per-address limit). Once either count reaches
CREDENTIAL_FAILURE_RATE_LIMIT, further attempts are refused with 429 until the window ends,
even with the right credential, so a guesser learns nothing more. Only failures count: a
resource server introspecting every request it serves, or an app busy signing users in, never
fails and is never slowed. As every counter, they fail open when the cache is down.
"""

import base64
import binascii
from dataclasses import dataclass
from urllib.parse import unquote_plus

from django.conf import settings
from django_ratelimit.core import get_usage

_GROUP = "credential-failures"


@dataclass(frozen=True)
class Attempt:
    """Who tries: the client address, and the client id or username (None if none given)."""

    account: str | None

    def _buckets(self):
        yield f"{_GROUP}:address", "ip"  # django-ratelimit's client address, as /oauth/token's
        if self.account:
            yield f"{_GROUP}:account", lambda _group, _request: self.account

    def retry_after(self, request) -> int | None:
        """Seconds until the attempt may be made, or None if it may be made now."""
        for group, key in self._buckets():
            usage = _usage(request, group, key, increment=False)
            if usage is not None and usage["count"] >= usage["limit"]:
                return max(1, int(usage["time_left"]))
        return None

    def failed(self, request) -> None:
        for group, key in self._buckets():
            _usage(request, group, key, increment=True)


def _usage(request, group: str, key, *, increment: bool):
    return get_usage(
        request,
        group=group,
        key=key,
        rate=settings.CREDENTIAL_FAILURE_RATE_LIMIT,
        increment=increment,
    )


def client_attempt(request) -> Attempt:
    """An OAuth client authenticating with HTTP Basic or `client_id` in the body (RFC 6749 §2.3)."""
    return Attempt(account=_basic_client_id(request) or _body_client_id(request))


def sign_in_attempt(request) -> Attempt:
    """A person signing in: usernames are counted case-insensitively, as people type them."""
    username = request.POST.get("username", "").strip().casefold()
    return Attempt(account=f"user:{username}" if username else None)


def _body_client_id(request) -> str | None:
    client_id = request.POST.get("client_id")
    return f"client:{client_id}" if client_id else None


def _basic_client_id(request) -> str | None:
    kind, _, credentials = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if kind.lower() != "basic":
        return None
    try:
        client_id, _, _ = base64.b64decode(credentials, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return f"client:{unquote_plus(client_id)}" if client_id else None
