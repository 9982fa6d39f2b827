"""Encryption at rest for what the service keeps secret (webhook secrets, event signing keys).

The keys come from the environment (`WEBHOOK_SECRET_KEY`, default `SECRET_KEY`), never from the
database, so a dump alone reveals no secret. Several keys may be listed: the first encrypts,
every one decrypts, so a key can be rotated without losing what was encrypted. Each use passes
its own label, so the same configured key gives each use a Fernet key used for nothing else.
"""

import base64
import hashlib

from cryptography.fernet import Fernet, MultiFernet
from django.conf import settings


def fernet(label: str) -> MultiFernet:
    """Fernet (AES-128-CBC with HMAC-SHA256) under the configured keys, separated by `label`."""
    # A Fernet key is 32 bytes; any configured string becomes one through SHA-256.
    keys = [
        base64.urlsafe_b64encode(hashlib.sha256(f"{label}:".encode() + key.encode()).digest())
        for key in settings.WEBHOOK_SECRET_KEYS
    ]
    return MultiFernet([Fernet(key) for key in keys])
