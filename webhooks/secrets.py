"""Endpoint signing secrets: generated here, kept encrypted at rest.

The key comes from the environment (`WEBHOOK_SECRET_KEY`, default `SECRET_KEY`), never from the
database, so a dump alone reveals no secret. Several keys may be listed: the first encrypts,
every one decrypts, so a key can be rotated without losing the endpoints.
"""

import base64
import hashlib
import secrets

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings

SECRET_PREFIX = "whsec_"


def secret_generate() -> str:
    """A Standard Webhooks secret: `whsec_` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _fernet() -> MultiFernet:
    # A Fernet key is 32 bytes; any configured string becomes one through SHA-256, with a label
    # so the same SECRET_KEY gives a key used for nothing else.
    keys = [
        base64.urlsafe_b64encode(hashlib.sha256(b"ticketing.webhooks:" + key.encode()).digest())
        for key in settings.WEBHOOK_SECRET_KEYS
    ]
    return MultiFernet([Fernet(key) for key in keys])


def secret_encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def secret_decrypt(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode()
