"""Domain errors of organizers. Only the operators' commands create organizers, so the API
never answers with these codes (`listed=False`)."""

from ticketing.api.exceptions import Conflict


class OrganizerSlugTaken(Conflict, listed=False):
    code = "duplicate_slug"
