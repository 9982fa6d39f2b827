"""Phone numbers: what the API, the admin and the import accept, stored as E.164.

A local number is read in the default region (Thailand): `0812345678` is `+66812345678`.
"""

import phonenumbers

PHONE_DEFAULT_REGION = "TH"


def phone_parse(value: str) -> phonenumbers.PhoneNumber:
    """The valid number `value` is (default region TH). Raises ValueError otherwise."""
    try:
        parsed = phonenumbers.parse(value.strip(), PHONE_DEFAULT_REGION)
    except phonenumbers.NumberParseException:
        raise ValueError("Enter a valid phone number.") from None
    if not phonenumbers.is_valid_number(parsed):
        raise ValueError("Enter a valid phone number.")
    return parsed


def phone_to_e164(value: str) -> str:
    """`0812345678` → `+66812345678`. Raises ValueError for anything that is not a valid number."""
    return phone_e164(phone_parse(value))


def phone_e164(parsed: phonenumbers.PhoneNumber) -> str:
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


def phone_country(parsed: phonenumbers.PhoneNumber) -> str:
    """The number's ISO 3166 alpha-2 region, or "" for a non-geographic one."""
    return phonenumbers.region_code_for_number(parsed) or ""
