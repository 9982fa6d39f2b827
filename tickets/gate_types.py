"""What a gate sends (the ticket's key, the scan's inputs) and what it gets back (CONTRACT §7).

Value types below the services: the gate's services, the rules, the serializers, the views that
parse a scan and the admin that reports one all read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from django.utils import timezone

from .codes import reference_code_normalize
from .models import Ticket


@dataclass(frozen=True)
class TypeResult:
    """The outcome for one requested check-in type, in request order."""

    check_in_type_id: int
    check_in_type_name: str | None
    used_at: datetime | None
    success: bool
    error: str | None  # for people: why the type failed
    code: str | None = None  # of a failure: the CONTRACT §2 code an upload records for it


@dataclass(frozen=True)
class GateResult:
    ticket: Ticket
    check_in_results: list[TypeResult]
    renew_results: list[TypeResult]

    @property
    def success(self) -> bool:
        """True when every requested type succeeded (always, in simple mode)."""
        return all(r.success for r in (*self.check_in_results, *self.renew_results))


class GateInputs(TypedDict, total=False):
    """What a gate sends with a check-in or a renew: the same for both (CONTRACT §7)."""

    check_in_type_ids: list[int] | None  # multiple mode; renew's default: every admitted type
    used_at: datetime | None  # when the gate scanned; default now
    nfc_uid: str | None  # check-in binds it to the ticket; both record it in the audit row
    note: str
    scan_id: str | None  # a scanner's upload: its id for the scan, recorded in the audit rows


@dataclass(frozen=True)
class TicketKey:
    """A ticket of the event named by one of its unique keys: its id, its reference code (as
    stored: normalised) or the NFC tag bound to it. Both paths find the ticket by the key itself,
    so the row the lookup matched is the row admitted or locked (CONTRACT §7, scan by code)."""

    column: str  # "id", "reference_code" or "nfc_uid": each a unique index within the event
    value: int | str

    @classmethod
    def id(cls, ticket_id: int) -> TicketKey:
        return cls("id", ticket_id)

    @classmethod
    def of(
        cls,
        *,
        ticket_id: int | None = None,
        reference_code: str | None = None,
        nfc_uid: str | None = None,
    ) -> TicketKey:
        """The key a gate sent: exactly one of the three (the input serializer holds that)."""
        if reference_code is not None:
            return cls("reference_code", reference_code_normalize(reference_code))
        if nfc_uid is not None:
            return cls("nfc_uid", nfc_uid)
        return cls.id(ticket_id)

    @property
    def filters(self) -> dict[str, int | str]:
        return {self.column: self.value}

    @property
    def nfc_uid(self) -> str | None:
        """The tag the gate read, when it named the ticket by one: the audit row records it."""
        return self.value if self.column == "nfc_uid" else None


def iso(value: datetime) -> str:
    """A time in the gate's messages: ISO 8601, local, to the second."""
    return timezone.localtime(value).isoformat(timespec="seconds")
