"""django-oauth-toolkit hooks that make token responses and scopes match the spec."""

from django.utils import timezone
from oauth2_provider.oauth2_validators import OAuth2Validator

APPLICATION_TOKEN_SCOPES = frozenset({"public"})


def token_may_act(access_token) -> bool:
    """What this project checks of a token beyond DOT, also for a token served from the cache.

    Not expired (DOT checks that itself, but a cached copy has only this check), and DOT accepts
    the tokens of a deactivated account until they expire: a person switched off in the admin
    must lose API access at once.
    """
    if access_token.is_expired():
        return False
    user = access_token.user
    return user is None or user.is_active


class TicketingOAuth2Validator(OAuth2Validator):
    def validate_scopes(self, client_id, scopes, client, request, *args, **kwargs):
        # An application token acts for its organizer through `public` (spec, Scopes);
        # `organizer` is a user's grant and means nothing without a user.
        if (
            request.grant_type == "client_credentials"
            and not set(scopes) <= APPLICATION_TOKEN_SCOPES
        ):
            return False
        return super().validate_scopes(client_id, scopes, client, request, *args, **kwargs)

    def save_bearer_token(self, token, request, *args, **kwargs):
        super().save_bearer_token(token, request, *args, **kwargs)
        # oauthlib serialises this same dict as the response body; the spec adds `created_at`.
        token["created_at"] = int(timezone.now().timestamp())

    def validate_bearer_token(self, token, scopes, request):
        if not super().validate_bearer_token(token, scopes, request):
            return False
        return token_may_act(request.access_token)

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        if not super().validate_refresh_token(refresh_token, client, request, *args, **kwargs):
            return False
        return request.user is None or request.user.is_active
