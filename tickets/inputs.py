"""What the ticket endpoints accept: their input serializers and the limits they state.

Each serializer validates shape and type and normalises (phones to E.164, reference codes to
their stored form); the rules are the services'. The OpenAPI document takes its request schemas
from these classes, with the patterns below stated where a field's rule cannot be.
"""

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from ticketing.api.fields import INT32_MAX, Int32Field, StrictCharField
from ticketing.api.schema_rules import SPACE, at_least_one_of, exactly_one_of

from .codes import REFERENCE_CODE_MAX_LENGTH, REFERENCE_CODE_MIN_LENGTH, reference_code_validate
from .names import NAME_REFUSED_CHARACTERS, person_name_validate
from .phones import phone_to_e164
from .signed_codes import SIGNED_CODE_MAX_LENGTH, is_signed_code

# Phones the document promises: Thai mobile numbers, national (`0812345678`) or E.164
# (`+66812345678`). Any number valid for libphonenumber is accepted, but only a pattern that
# libphonenumber accepts in full can be stated without a generated client being refused.
PHONE_PATTERN = r"^(?:\+66|0)(?:6[1-6]|[89][0-9])[0-9]{7}$"
REFERENCE_CODE_PATTERN = (
    rf"^[{SPACE}]*(?:[A-Za-z0-9-]{{{REFERENCE_CODE_MIN_LENGTH},{REFERENCE_CODE_MAX_LENGTH}}})?"
    rf"[{SPACE}]*$"
)
# A name: not blank, and no control character or line break anywhere (`tickets.names`).
NAME_PATTERN = (
    rf"^[^{NAME_REFUSED_CHARACTERS}]*[^{SPACE}{NAME_REFUSED_CHARACTERS}]"
    rf"[^{NAME_REFUSED_CHARACTERS}]*$"
)
SEARCH_KEYS = ("reference_code", "nfc_uid", "ticket_id")


class TicketCreateInputSerializer(serializers.Serializer):
    openapi_rules = {
        "properties": {
            "firstname": {"pattern": NAME_PATTERN},
            "lastname": {"pattern": NAME_PATTERN},
            "phone": {"pattern": PHONE_PATTERN},
            # The pattern bounds the code; the spaces around it are trimmed, in any number.
            "reference_code": {"pattern": REFERENCE_CODE_PATTERN, "maxLength": None},
        }
    }

    ticket_type_id = Int32Field(min_value=1, max_value=INT32_MAX)
    firstname = StrictCharField(max_length=150)
    lastname = StrictCharField(max_length=150)
    email = serializers.EmailField(max_length=254)
    phone = StrictCharField(
        max_length=32,
        help_text="A valid number in any format, stored in E.164 (default region TH). The "
        "pattern states Thai mobile numbers; other valid numbers are accepted too.",
    )
    external_id = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=64,
        help_text="Your id for this ticket: sending it again replays the creation.",
    )
    reference_code = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=64,
        help_text="6–32 of A-Z 0-9 '-', case-insensitive; generated when omitted.",
    )
    suppress_notifications = serializers.BooleanField(required=False, default=False)

    def validate_firstname(self, value: str) -> str:
        return self._name(value)

    def validate_lastname(self, value: str) -> str:
        return self._name(value)

    @staticmethod
    def _name(value: str) -> str:
        try:
            return person_name_validate(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate_phone(self, value: str) -> str:
        try:
            return phone_to_e164(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate_reference_code(self, value: str | None) -> str | None:
        if not value or not value.strip():
            return None
        try:
            return reference_code_validate(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate_external_id(self, value: str | None) -> str | None:
        return (value or "").strip() or None


class TicketInvalidateInputSerializer(serializers.Serializer):
    openapi_rules = at_least_one_of("ticket_id", "reference_code")

    ticket_id = Int32Field(required=False, min_value=1, max_value=INT32_MAX)
    reference_code = StrictCharField(
        required=False, max_length=64, help_text="Case and surrounding spaces are ignored."
    )
    reason = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        default="",
        help_text="Stored as the ticket's revoke_note.",
    )

    def validate(self, attrs):
        if "ticket_id" not in attrs and "reference_code" not in attrs:
            message = "Send ticket_id or reference_code."
            raise serializers.ValidationError({"ticket_id": [message], "reference_code": [message]})
        return attrs


# What a printed reference code field took before signed codes (a code is 6-32 characters).
PRINTED_CODE_MAX_LENGTH = 64


class TicketKeyInput(serializers.Serializer):
    """The three ways to name a ticket of the event; exactly one must be sent (CONTRACT §6, §7).
    A reference code may be the whole signed code of the QR code (§14), resolved by `TicketKey`:
    hence its length."""

    reference_code = StrictCharField(
        required=False,
        max_length=SIGNED_CODE_MAX_LENGTH,
        help_text="As printed, or the QR code's whole signed code (`T1.…`). Case and "
        "surrounding spaces of a printed code are ignored; a signed code that does not verify "
        "for this event is an unknown code.",
    )
    nfc_uid = StrictCharField(required=False, max_length=64)
    ticket_id = Int32Field(required=False, min_value=1, max_value=INT32_MAX)

    def validate_reference_code(self, value: str) -> str:
        """Only a signed code may be longer than a printed one may ever be."""
        if len(value) > PRINTED_CODE_MAX_LENGTH and not is_signed_code(value.strip()):
            message = f"Ensure this field has no more than {PRINTED_CODE_MAX_LENGTH} characters."
            raise serializers.ValidationError(message)
        return value

    def to_internal_value(self, data):
        # Here rather than in `validate`: which keys were sent is read from `data`, so that one
        # instance can validate many inputs (`run_validation`, as a batch's scans are).
        attrs = super().to_internal_value(data)
        sent = [key for key in SEARCH_KEYS if key in data]
        if len(sent) != 1:
            named = sent or list(SEARCH_KEYS)
            message = "Send exactly one of reference_code, nfc_uid or ticket_id."
            raise ValidationError({key: [message] for key in named})
        if attrs.get(sent[0]) is None:  # `ticket_id=` parses as "not given"
            raise ValidationError({sent[0]: ["This field may not be blank."]})
        return attrs


class TicketKeyParams(TicketKeyInput):
    """The ticket to find, by exactly one key."""

    # Three query parameters in the document, each saying this rule in words.
    openapi_rules = exactly_one_of(*SEARCH_KEYS)


class TicketSearchParams(serializers.Serializer):
    event_id = Int32Field(min_value=1, max_value=INT32_MAX)
    reference_code = serializers.CharField(max_length=64)
