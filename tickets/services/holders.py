"""A ticket's holder as a creation or an import names them: checked once, for both, and compared
when a creation is sent again (a replay must name the same holder)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email

from ticketing.api.exceptions import InvalidParameters

from ..models import Ticket
from ..names import person_name_validate
from ..phones import phone_country, phone_e164, phone_parse


@dataclass(frozen=True)
class Holder:
    firstname: str
    lastname: str
    email: str
    phone: str  # E.164
    phone_country: str = field(default="", compare=False)  # ISO 3166 alpha-2, for the order


def holder_clean(*, firstname: str, lastname: str, email: str, phone: str) -> Holder:
    """Trimmed, validated holder details. Raises: InvalidParameters."""
    fields: dict[str, list[str]] = {}
    firstname, lastname, email = firstname.strip(), lastname.strip(), email.strip()
    for name, value in (("firstname", firstname), ("lastname", lastname)):
        if not value:
            fields[name] = ["This field may not be blank."]
            continue
        try:
            person_name_validate(value)
        except ValueError as exc:
            fields[name] = [str(exc)]
    try:
        validate_email(email)
    except DjangoValidationError:
        fields["email"] = ["Enter a valid email address."]
    country = ""
    try:
        parsed = phone_parse(phone)
    except ValueError as exc:
        fields["phone"] = [str(exc)]
    else:
        # Parsed once: the import checks thousands of rows and this is its costliest check.
        phone, country = phone_e164(parsed), phone_country(parsed)
    if fields:
        raise InvalidParameters(next(iter(fields.values()))[0], fields=fields)
    return Holder(
        firstname=firstname, lastname=lastname, email=email, phone=phone, phone_country=country
    )


def is_same_creation(
    ticket: Ticket, *, ticket_type_id: int, holder: Holder, reference_code: str | None
) -> bool:
    """A replay sends the same ticket type and holder (and code, if it chose one)."""
    return (
        ticket.ticket_type_id == ticket_type_id
        and ticket.firstname == holder.firstname
        and ticket.lastname == holder.lastname
        and ticket.email.lower() == holder.email.lower()
        and ticket.phone == holder.phone
        and (reference_code is None or ticket.reference_code == reference_code)
    )
