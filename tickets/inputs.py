"""What the ticket endpoints accept: their input serializers and the limits they state.

Each serializer validates shape and type and normalises (phones to E.164, reference codes to
their stored form); the rules are the services'. The OpenAPI document takes its request schemas
from these classes, with the patterns below stated where a field's rule cannot be.
"""

from rest_framework import serializers

from ticketing.api.fields import INT32_MAX, Int32Field, StrictCharField
from ticketing.api.schema_rules import SPACE, at_least_one_of

from .codes import REFERENCE_CODE_MAX_LENGTH, REFERENCE_CODE_MIN_LENGTH, reference_code_validate
from .names import NAME_REFUSED_CHARACTERS, person_name_validate
from .phones import phone_to_e164

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


class TicketSearchParams(serializers.Serializer):
    event_id = Int32Field(min_value=1, max_value=INT32_MAX)
    reference_code = serializers.CharField(max_length=64)
