"""Cases for `events.statements`: the event-scoped tenant check. Its caller has already
resolved the organizer the token acts for (`organizers.statements.organizer_access`), so the
cases vary whose event is asked for, not the kind of caller."""

from django.db import DEFAULT_DB_ALIAS

from tests.factories import EventFactory, OrganizerFactory

from .support import Case


def _loaded(event) -> dict | None:
    """Every field of the event as loaded, and the database it was read from."""
    if event is None:
        return None
    fields = {f.attname: getattr(event, f.attname) for f in event._meta.concrete_fields}
    return {**fields, "db": event._state.db, "adding": event._state.adding}


def _cases() -> list[Case]:
    organizer, other = OrganizerFactory(), OrganizerFactory()
    plain = EventFactory(organizer=organizer)
    full = EventFactory(
        organizer=organizer,
        description="คำอธิบาย",
        description_en="About",
        signed_codes=True,
        cover="events/covers/c.png",
        poster="events/posters/p.png",
        location_address="99 Popular Road",
    )
    others = EventFactory(organizer=other)
    missing = others.pk + 1000
    asked = {
        "the organizer's event": (organizer.pk, plain.pk),
        "the organizer's event, every optional field set": (organizer.pk, full.pk),
        "another organizer's event": (organizer.pk, others.pk),
        "the other organizer's own event": (other.pk, others.pk),
        "no such event": (organizer.pk, missing),
        "no such organizer": (missing, plain.pk),
        "the organizer's id given as the event's": (organizer.pk, organizer.pk),
    }
    return [
        Case(
            label=label,
            arguments=lambda organizer_id=organizer_id, event_id=event_id: {
                "organizer_id": organizer_id,
                "event_id": event_id,
                "using": DEFAULT_DB_ALIAS,
            },
            result=_loaded,
        )
        for label, (organizer_id, event_id) in asked.items()
    ]


CASES = {"events.statements.event_of_organizer": _cases}
