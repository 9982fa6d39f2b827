"""Writes of organizers and their memberships."""

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from ticketing.api.exceptions import InvalidParameters

from .exceptions import OrganizerSlugTaken
from .models import Membership, Organizer


@transaction.atomic
def organizer_create(
    *, name: str, slug: str, description: str = "", owner_username: str | None = None
) -> Organizer:
    """Create an organizer, with `owner_username` (an existing user) as its owner.

    Raises: InvalidParameters (bad name or slug, unknown owner), OrganizerSlugTaken.
    """
    organizer = Organizer(name=name.strip(), slug=slug.strip(), description=description.strip())
    try:
        organizer.full_clean(validate_unique=False)
    except ValidationError as exc:
        raise InvalidParameters(_first_message(exc), fields=exc.message_dict) from None
    owner = None
    if owner_username:
        owner = get_user_model().objects.filter(username=owner_username).first()
        if owner is None:
            raise InvalidParameters(f"There is no user named {owner_username!r}.")
    try:
        with transaction.atomic():  # the unique slug is the rule; two runs at once both check it
            organizer.save()
    except IntegrityError:
        raise OrganizerSlugTaken(f"The slug {organizer.slug!r} is taken.") from None
    if owner is not None:
        Membership.objects.create(user=owner, organizer=organizer, role=Membership.Role.OWNER)
    return organizer


def _first_message(exc: ValidationError) -> str:
    name, messages = next(iter(exc.message_dict.items()))
    return f"{name}: {messages[0]}"
