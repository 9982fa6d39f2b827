"""django-oauth-toolkit hooks that make token responses, scopes and codes match the spec."""

import hashlib
import uuid
from datetime import timedelta

from django.db import router, transaction
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauthlib.oauth2.rfc6749 import errors

from .hashers import client_secret_rehash

APPLICATION_TOKEN_SCOPES = frozenset({"public"})

# Namespace of the token families of authorization codes (see `code_token_family`).
_CODE_FAMILY_NAMESPACE = uuid.UUID("4f1f9d3c-5c1a-4f7e-9d51-2c0b7c3f6a10")


class RefusedAfterValidation(errors.InvalidGrantError):
    """`invalid_grant` found while saving the tokens, after oauthlib's validation.

    oauthlib adds the JSON and no-store headers only to the errors of its validation; DOT
    answers one raised later with the error's own headers.
    """

    @property
    def headers(self):
        return {
            "Content-Type": "application/json",
            "Cache-Control": "no-store",
            "Pragma": "no-cache",
        }


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


def code_token_family(code: str) -> uuid.UUID:
    """The refresh-token family of the tokens issued from an authorization code.

    DOT deletes a code once redeemed, so nothing would say which tokens came from it when it
    is presented again (RFC 6749 §4.1.2: revoke them). Deriving the family from the code makes
    the family itself that record; it stores only a hash of the code, and every refresh
    rotated from those tokens stays in the family.
    """
    return uuid.uuid5(_CODE_FAMILY_NAMESPACE, hashlib.sha256(code.encode()).hexdigest())


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

    def authenticate_client(self, request, *args, **kwargs):
        if not super().authenticate_client(request, *args, **kwargs):
            return False
        client_secret_rehash(request)  # DOT checks a secret without upgrading its hash
        return True

    def is_pkce_required(self, client_id, request):
        """Public clients cannot keep a secret, so they must prove the code is theirs with PKCE
        (CONTRACT §4). Confidential clients may still send it; existing integrations send none.
        """
        Application = get_application_model()
        client_type = (
            Application.objects.filter(client_id=client_id)
            .values_list("client_type", flat=True)
            .first()
        )
        return client_type != Application.CLIENT_CONFIDENTIAL

    def save_bearer_token(self, token, request, *args, **kwargs):
        if request.grant_type == "refresh_token":
            self._save_rotation(token, request, *args, **kwargs)
        elif request.grant_type == "authorization_code":
            with transaction.atomic(using=router.db_for_write(get_access_token_model())):
                super().save_bearer_token(token, request, *args, **kwargs)
                _set_family(token, code_token_family(request.code))
        else:
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

    # --- Authorization codes ------------------------------------------------------------------

    def save_authorization_code(self, client_id, code, request, *args, **kwargs):
        super().save_authorization_code(client_id, code, request, *args, **kwargs)
        if not getattr(request, "redirect_uri_named", True):
            # The client named no redirect URI, so the token request need not name one
            # either (RFC 6749 §4.1.3); an empty one on the grant records that.
            grant = get_grant_model().objects.get(code=code["code"], application=request.client)
            grant.redirect_uri = ""
            grant.save(update_fields=["redirect_uri"])

    def confirm_redirect_uri(self, client_id, code, redirect_uri, client, request, *args, **kw):
        """RFC 6749 §4.1.3: named at /authorize, the redirect URI is required here, identical."""
        grant = get_grant_model().objects.get(code=code, application=client)
        if not grant.redirect_uri:
            # oauthlib put the client's only registered URI in place of a missing one.
            return redirect_uri == client.default_redirect_uri
        if request.using_default_redirect_uri:
            raise errors.MissingRedirectURIError(
                description="Send the redirect_uri of the authorization request.", request=request
            )
        return grant.redirect_uri_allowed(redirect_uri)

    def validate_code(self, client_id, code, client, request, *args, **kwargs):
        if super().validate_code(client_id, code, client, request, *args, **kwargs):
            return True
        # Unknown, expired, or already redeemed: if redeemed, its tokens are revoked
        # (RFC 6749 §4.1.2), for someone else may hold them.
        get_refresh_token_model().revoke_family(code_token_family(code))
        return False

    def invalidate_authorization_code(self, client_id, code, request, *args, **kwargs):
        try:
            super().invalidate_authorization_code(client_id, code, request, *args, **kwargs)
        except errors.InvalidGrantError:
            # A concurrent redemption of the same code deleted it first: a second use too.
            get_refresh_token_model().revoke_family(code_token_family(code))
            raise

    def get_code_challenge(self, code, request):
        challenge = super().get_code_challenge(code, request)
        if challenge is None and request.code_verifier is not None:
            # A verifier proves nothing about a code issued without a challenge; accepting it
            # would let a downgraded authorization request pass as a PKCE one (RFC 9700 §2.1.1).
            raise errors.InvalidGrantError(
                description="This code was issued without a code_challenge.", request=request
            )
        return challenge

    # --- A refresh token refreshed twice at once ----------------------------------------------

    def _save_rotation(self, token, request, *args, **kwargs):
        """DOT's rotation, once no other rotation of the same token is under way.

        DOT locks the token too, but only to rotate it whatever it finds: a token rotated or
        revoked by a request that passed validation at the same time would be rotated again.
        Locked here first, in a transaction around DOT's, its state after the other request
        is seen before DOT runs.
        """
        try:
            with transaction.atomic(using=router.db_for_write(get_access_token_model())):
                previous = getattr(request, "refresh_token_instance", None)
                if previous is not None:
                    RefreshToken = get_refresh_token_model()
                    previous = RefreshToken.objects.select_for_update().get(pk=previous.pk)
                    request.refresh_token_instance = previous
                if previous is None or previous.revoked is None:
                    super().save_bearer_token(token, request, *args, **kwargs)
                elif _within_grace_period(previous):
                    self._save_refresh_in_grace_period(token, request, previous, *args, **kwargs)
                else:
                    # Both requests passed validation before either rotated: this one is
                    # reuse that `validate_refresh_token` could not see yet.
                    request.reused_token_family = previous.token_family
                    raise RefusedAfterValidation(request=request)
        except RefusedAfterValidation:
            # Revoked here, once the transaction has rolled back: inside it, the refusal
            # would undo the revocation.
            get_refresh_token_model().revoke_family(getattr(request, "reused_token_family", None))
            raise

    def _save_refresh_in_grace_period(self, token, request, previous, *args, **kwargs):
        """With the opt-in grace period, a second refresh of a token just rotated: a new pair in
        the same family, for the same resources (RFC 8707).

        DOT would answer with the pair the first refresh got, which it no longer has: tokens
        are stored only as hashes (RFC 9700 §4.14). So DOT issues a pair as for a token of
        its own, which this puts in the family. Reuse after the grace period still revokes
        the family (`validate_refresh_token`).
        """
        if not get_access_token_model().objects.filter(source_refresh_token=previous).exists():
            # Revoked, not rotated, between validation and this lock: by the revocation
            # endpoint, or with its family.
            raise RefusedAfterValidation(request=request)
        request.refresh_token_instance = None  # not `previous`, which DOT would rotate again
        if previous.resource and not request.resource:
            request.resource = list(previous.resource)  # DOT checks them as if asked for
        super().save_bearer_token(token, request, *args, **kwargs)
        for resource in request.resource:
            if previous.resource and resource not in previous.resource:
                raise errors.CustomOAuth2Error(
                    error="invalid_target",
                    description=(
                        f"The requested resource '{resource}' is not allowed. Token refresh "
                        "cannot request resources beyond the original refresh token scope"
                    ),
                    request=request,
                )
        _set_family(token, previous.token_family)


def _set_family(token: dict, family: uuid.UUID) -> None:
    """Put the refresh token DOT just saved for `token` in `family`."""
    if "refresh_token" not in token:
        return
    checksum = hashlib.sha256(token["refresh_token"].encode()).hexdigest()
    refresh_token = get_refresh_token_model().objects.get(token_checksum=checksum, revoked=None)
    refresh_token.token_family = family
    refresh_token.save(update_fields=["token_family"])


def _within_grace_period(refresh_token) -> bool:
    """Whether a rotated refresh token may still be refreshed (never, unless opted in)."""
    grace = timedelta(seconds=oauth2_settings.REFRESH_TOKEN_GRACE_PERIOD_SECONDS)
    return bool(grace) and refresh_token.revoked > timezone.now() - grace
