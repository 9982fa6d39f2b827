"""What a gate sends with a scan and what it gets back (CONTRACT §7): value types below the
gate's services, which its rules, serializers, views and admin read. The ticket's key is
`tickets.gate_types.TicketKey`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from tickets.models import Ticket


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
    scan_id: str | None  # the gate's id for the scan (an upload's, or a retry-safe online
    # scan's: CONTRACT §7), recorded in the audit rows
