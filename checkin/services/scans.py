"""The gate's value types, where the admin and the tools still import them from."""

from tickets.gate_types import GateInputs, GateResult, TicketKey, TypeResult

__all__ = ["GateInputs", "GateResult", "TicketKey", "TypeResult"]
