"""Endpoint signing secrets: generated here, kept encrypted at rest.

Encrypted with the service's keys (`ticketing.encryption`): a dump alone reveals no secret.
"""

import base64
import secrets

from cryptography.fernet import MultiFernet

from ticketing.encryption import fernet

SECRET_PREFIX = "whsec_"


def secret_generate() -> str:
    """A Standard Webhooks secret: `whsec_` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _fernet() -> MultiFernet:
    return fernet("ticketing.webhooks")  # the label every stored secret was encrypted under


def secret_encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def secret_decrypt(token: str) -> str:
    return _fernet().decrypt(token.encode()).decode()
