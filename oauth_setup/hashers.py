"""How OAuth client secrets are stored: a hash suited to random, high-entropy secrets.

A password hasher is slow on purpose (PBKDF2 with a million iterations: most of a second of
CPU) because people choose guessable passwords. A client secret is generated (DOT's default:
128 random letters and digits): no hashing speed makes guessing it feasible, so a slow hash
only made every client-credentials token cost that CPU, which any caller sending a client id
could spend. `ClientSecretHasher` is PBKDF2-HMAC-SHA256 with one iteration, which
is a salted HMAC; it is DOT's `CLIENT_SECRET_HASHER`, listed in PASSWORD_HASHERS after the
default, so people's passwords keep the slow one.

A secret stored by the slow hasher before still works: `client_secret_rehash` stores it again
with this one once it has been presented and checked.
"""

import base64
import binascii
from urllib.parse import unquote_plus

from django.contrib.auth.hashers import (
    PBKDF2PasswordHasher,
    check_password,
    identify_hasher,
    make_password,
)
from oauth2_provider.models import get_application_model
from oauth2_provider.settings import oauth2_settings


class ClientSecretHasher(PBKDF2PasswordHasher):
    """PBKDF2-HMAC-SHA256 with one iteration: a salted HMAC, for generated secrets only."""

    algorithm = "client_secret_pbkdf2_sha256"
    iterations = 1


def client_secret_rehash(request) -> None:
    """Store the secret an authenticated client presented with `CLIENT_SECRET_HASHER`, if its
    stored hash was made by another hasher (DOT checks it without updating it).

    `request` is oauthlib's, after DOT authenticated `request.client` by HTTP Basic or by
    `client_secret` in the body (RFC 6749 §2.3.1). The slow check runs again here, once per
    application; the update is conditional, so a secret changed meanwhile is kept.
    """
    application = request.client
    stored = application.client_secret
    preferred = oauth2_settings.CLIENT_SECRET_HASHER
    if not application.hash_client_secret or _algorithm(stored) in (None, preferred):
        return

    def store(secret: str) -> None:
        get_application_model().objects.filter(pk=application.pk, client_secret=stored).update(
            client_secret=make_password(secret, hasher=preferred)
        )

    for secret in (_basic_secret(request), getattr(request, "client_secret", None)):
        if secret and check_password(secret, stored, setter=store, preferred=preferred):
            return


def _algorithm(encoded: str) -> str | None:
    try:
        return identify_hasher(encoded).algorithm
    except ValueError:  # stored in the clear (DOT's hash_client_secret off)
        return None


def _basic_secret(request) -> str | None:
    """The secret of `Authorization: Basic`, decoded as DOT decodes it."""
    kind, _, credentials = (request.headers.get("Authorization") or "").partition(" ")
    if kind != "Basic":
        return None
    try:
        decoded = base64.b64decode(credentials).decode(
            getattr(request, "encoding", None) or "utf-8"
        )
    except (binascii.Error, UnicodeDecodeError, LookupError):
        return None
    _, colon, secret = decoded.partition(":")
    return unquote_plus(secret) if colon else None
