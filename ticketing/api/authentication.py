"""Accept the access token from the header, the query string, or a form or JSON body."""

import json

from oauth2_provider.contrib.rest_framework import OAuth2Authentication


class OAuth2TokenAuthentication(OAuth2Authentication):
    """DOT's bearer authentication, plus `access_token` in a JSON body.

    oauthlib already reads the `Authorization` header, the query string and a form body; a JSON
    body is handed to it as the header the client could have sent. An invalid token is not an
    error here: the view's permission decides, so that every endpoint answers the same way.
    """

    www_authenticate_realm = "api"

    def authenticate(self, request):
        django_request = request._request
        if "HTTP_AUTHORIZATION" not in django_request.META and request.content_type.startswith(
            "application/json"
        ):
            token = _json_body_token(django_request.body)
            if token:
                django_request.META["HTTP_AUTHORIZATION"] = f"Bearer {token}"
                django_request._sent_body_token = True
        elif request.method == "POST" and django_request.POST.get("access_token"):
            django_request._sent_body_token = True
        return super().authenticate(request)

    def authenticate_header(self, request):
        return "Bearer"


def _json_body_token(body: bytes) -> str | None:
    try:
        data = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        return None
    token = data.get("access_token") if isinstance(data, dict) else None
    return token if isinstance(token, str) and token.isprintable() else None
