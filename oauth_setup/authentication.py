"""Accept the access token from the header, the query string, or a form or JSON body."""

import json
import time

from django.conf import settings
from oauth2_provider.contrib.rest_framework import OAuth2Authentication

from ticketing.api.throttling import count_request

from . import token_cache


class OAuth2TokenAuthentication(OAuth2Authentication):
    """DOT's bearer authentication, plus `access_token` in a JSON body and a token cache.

    oauthlib already reads the `Authorization` header, the query string and a form body; a JSON
    body is handed to it as the header the client could have sent. A token DOT has validated is
    served from the token cache on later calls, once its revocation marker, read in the round
    trip that counts the request's rate limits, says it may (`token_cache`); the request then
    carries the roles kept with it (`kept_roles`). An invalid token is not an error here: the
    view's permission decides, so that every endpoint answers the same way.
    """

    www_authenticate_realm = "api"

    def authenticate(self, request):
        # The Django request's META, body and form are DRF's request's own attributes (proxied).
        if "HTTP_AUTHORIZATION" not in request.META and request.content_type.startswith(
            "application/json"
        ):
            token = _json_body_token(request.body)
            if token:
                request.META["HTTP_AUTHORIZATION"] = f"Bearer {token}"
                request._sent_body_token = True
        elif (
            "HTTP_AUTHORIZATION" not in request.META
            and request.method == "POST"
            and request.POST.get("access_token")
        ):
            request._sent_body_token = True

        raw_token = _header_token(request.META.get("HTTP_AUTHORIZATION"))
        if raw_token is None or not settings.API_TOKEN_CACHE_SECONDS:
            return super().authenticate(request)  # the throttles count it themselves

        # One round trip to the cache: the rate-limit counters, and the token's marker.
        checksum = token_cache.checksum_of(raw_token)
        marker = [token_cache.marker_key(checksum)]
        read_at = time.monotonic()
        copy = token_cache.cached_token(raw_token)
        if copy is not None:
            if count_request(request, copy, marker) == [False]:
                request.kept_roles = token_cache.KeptRoles(checksum, read_at=read_at)
                return copy.user, copy
            token_cache.drop(checksum)  # marked, or the cache did not say: ask the database
        authenticated = super().authenticate(request)
        if (
            authenticated is not None
            and copy is None
            and count_request(request, authenticated[1], marker) == [False]
        ):
            token_cache.remember(authenticated[1], read_at=read_at)
            request.kept_roles = token_cache.KeptRoles(checksum, read_at=read_at)
        return authenticated

    def authenticate_header(self, request):
        return "Bearer"


def _header_token(header: str | None) -> str | None:
    """The token of `Authorization: Bearer <token>`, read as oauthlib reads it (which wins over
    any other place the token could be sent)."""
    parts = (header or "").split()
    if len(parts) == 2 and parts[0].lower() == "bearer":
        return parts[1]
    return None


def _json_body_token(body: bytes) -> str | None:
    try:
        data = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        return None
    token = data.get("access_token") if isinstance(data, dict) else None
    return token if isinstance(token, str) and token.isprintable() else None
