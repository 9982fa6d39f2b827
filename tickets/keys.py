"""How a gate or a search names a ticket of an event (CONTRACT §6, §7, §14): by id, by its
reference code as printed, by the NFC tag bound to it, or by the signed code of its QR code. The
input that takes one of them (`TicketKeyInput`), and the key it resolves to (`TicketKey`), once
for every endpoint that takes a scanned code.
"""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from ticketing.api.fields import INT32_MAX, Int32Field, StrictCharField
from ticketing.api.schema_rules import exactly_one_of

from .codes import reference_code_normalize
from .signed_codes import SIGNED_CODE_MAX_LENGTH, SIGNED_CODE_PREFIX, signed_code_read

SEARCH_KEYS = ("reference_code", "nfc_uid", "ticket_id")


def is_signed_code(text: str) -> bool:
    """Whether a scanned text is meant as a signed code (its prefix), verified or not."""
    return text.startswith(SIGNED_CODE_PREFIX)


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


@dataclass(frozen=True)
class TicketKey:
    """A ticket of the event named by one of its unique keys: its id, its reference code (as
    stored: normalised) or the NFC tag bound to it. Both paths find the ticket by the key itself,
    so the row the lookup matched is the row admitted or locked (CONTRACT §7, scan by code).

    A signed code (CONTRACT §14) is resolved here, once, for every endpoint that takes a scanned
    code: verified, it names the ticket by id, which must still have the reference code it was
    signed with (`reference_code`); unverified, it names no ticket, as an unknown code."""

    column: str  # "id", "reference_code" or "nfc_uid": each a unique index within the event
    value: int | str
    reference_code: str | None = None  # a signed code's: the ticket's code must still be this

    @classmethod
    def id(cls, ticket_id: int) -> TicketKey:
        return cls("id", ticket_id)

    @classmethod
    def of(
        cls,
        *,
        organizer_id: int,
        event_id: int,
        ticket_id: int | None = None,
        reference_code: str | None = None,
        nfc_uid: str | None = None,
    ) -> TicketKey:
        """The key a gate sent for the organizer's event: exactly one of the three (the input
        serializer holds that)."""
        if reference_code is not None:
            return cls.scanned(reference_code, organizer_id=organizer_id, event_id=event_id)
        if nfc_uid is not None:
            return cls("nfc_uid", nfc_uid)
        return cls.id(ticket_id)

    @classmethod
    def scanned(cls, code: str, *, organizer_id: int, event_id: int) -> TicketKey:
        """A code as printed or read from the QR code: a reference code, or a signed code."""
        code = code.strip()
        if not is_signed_code(code):
            return cls("reference_code", reference_code_normalize(code))
        signed = signed_code_read(code, organizer_id=organizer_id, event_id=event_id)
        if signed is None:
            return cls.id(0)  # ids start at 1: no ticket, so the answer an unknown code gets
        return cls("id", signed.ticket_id, signed.reference_code)

    @property
    def filters(self) -> dict[str, int | str]:
        if self.reference_code is not None:
            return {self.column: self.value, "reference_code": self.reference_code}
        return {self.column: self.value}

    @property
    def nfc_uid(self) -> str | None:
        """The tag the gate read, when it named the ticket by one: the audit row records it."""
        return self.value if self.column == "nfc_uid" else None
