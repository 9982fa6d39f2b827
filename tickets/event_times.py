"""An event's time as people read it: a same-day event's date is printed once
("24 December 2026, 19:00 – 23:30"), and only an event over several days repeats it."""

from datetime import datetime

from django.utils import timezone

from ticketing.dates import human_date

# Per style of `human_date`: the date and the time alone, in Django's format syntax or names.
PARTS = {
    "long": ("l j F Y", "H:i"),
    "DATETIME_FORMAT": ("DATE_FORMAT", "TIME_FORMAT"),
}


def event_times(start: datetime, end: datetime, style: str = "DATETIME_FORMAT") -> tuple[str, str]:
    """The start and the end as text, in the current time zone and language; the end is a time
    alone when the event ends on the day it starts."""
    if timezone.localtime(start).date() != timezone.localtime(end).date():
        return human_date(start, style), human_date(end, style)
    date_part, time_part = PARTS.get(style, PARTS["DATETIME_FORMAT"])
    return f"{human_date(start, date_part)}, {human_date(start, time_part)}", human_date(
        end, time_part
    )


def event_when(start: datetime, end: datetime, style: str = "DATETIME_FORMAT") -> str:
    return " – ".join(event_times(start, end, style))
