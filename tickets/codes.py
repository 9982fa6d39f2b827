"""Reference codes: the one normaliser (for lookups and new codes alike) and the generator.

Codes are stored upper-case (a check constraint holds it), so every lookup and every new code
goes through `reference_code_normalize` and compares exactly.
"""

import secrets

REFERENCE_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0 O 1 I: read aloud at gates
REFERENCE_CODE_LENGTH = 8
REFERENCE_CODE_MIN_LENGTH = 6
REFERENCE_CODE_MAX_LENGTH = 32
# What a chosen (imported, external) code may hold: wider than the generated alphabet.
REFERENCE_CODE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


def reference_code_normalize(raw: str) -> str:
    """Trimmed and upper-cased: the stored form. Lookups ignore case and surrounding spaces."""
    return raw.strip().upper()


def reference_code_validate(raw: str) -> str:
    """The normalised code, if it is one a ticket may be given; ValueError otherwise."""
    code = reference_code_normalize(raw)
    if (
        not REFERENCE_CODE_MIN_LENGTH <= len(code) <= REFERENCE_CODE_MAX_LENGTH
        or not set(code) <= REFERENCE_CODE_CHARS
    ):
        raise ValueError(
            f"Use {REFERENCE_CODE_MIN_LENGTH} to {REFERENCE_CODE_MAX_LENGTH} characters: "
            "letters A-Z, digits and '-'."
        )
    return code


def reference_code_generate() -> str:
    return "".join(secrets.choice(REFERENCE_CODE_ALPHABET) for _ in range(REFERENCE_CODE_LENGTH))


# 32 URL-safe characters (192 bits): the ticket page's address, which only the holder is sent.
PAGE_TOKEN_BYTES = 24


def page_token_generate() -> str:
    return secrets.token_urlsafe(PAGE_TOKEN_BYTES)
