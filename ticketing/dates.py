"""Dates and times for people to read: the one place that knows each language's calendar.

Thai readers count years in the Buddhist era (พ.ศ., the Gregorian year + 543: 2026 is 2569),
and Thai pages and emails say so; English keeps the Gregorian year. Django's formats give the
Thai month and day names but always the Gregorian year, so the era's year is written into the
format here. The ticket page, the ticket email and the check-in page all format through
`human_date`, the admin through `admin_date` (`ticketing.admin_dates`), and the check-in page's
script through `intl_locale`, so no page a person reads in Thai shows another calendar.
Machine-readable values (the API, ISO 8601 `datetime` attributes, iCalendar) stay Gregorian.
"""

from datetime import date, datetime

from django.conf import settings
from django.utils import timezone, translation
from django.utils.formats import date_format, get_format

# Years added to the Gregorian year, per language; a language not listed is Gregorian.
ERA_YEAR_OFFSETS = {"th": 543}

# Named styles, in Django's date format syntax (any language's names; the year is the era's).
# Django's own named formats (DATETIME_FORMAT, DATE_FORMAT, ...) are styles too, per locale.
STYLES = {
    "long": "l j F Y, H:i",  # Thursday 24 December 2026, 19:00 (the ticket email)
    "short": "j M Y H:i",  # 24 Dec 2026 19:00 (the check-in page's list of events, the admin)
}
# The admin writes every time in one style, and a date alone (a birthday) in the locale's.
ADMIN_STYLE = "short"
ADMIN_DAY_STYLE = "DATE_FORMAT"

# The same calendars for dates a page's script formats (Intl.DateTimeFormat).
INTL_LOCALES = {"th": "th-TH-u-ca-buddhist", "en": "en-GB-u-ca-gregory"}


def _language(language: str | None) -> str:
    code = language or translation.get_language() or settings.LANGUAGE_CODE
    return code.split("-")[0].lower()


def _with_year(format_string: str, year: int) -> str:
    """The format with its year specifiers (`Y`, `y`) replaced by `year`, escaped as literal."""
    out, escaped = [], False
    for char in format_string:
        if escaped:
            out.append(char)
            escaped = False
        elif char == "\\":
            out.append(char)
            escaped = True
        elif char in "Yy":
            digits = str(year) if char == "Y" else f"{year % 100:02d}"
            out.append("".join(f"\\{digit}" for digit in digits))
        else:
            out.append(char)
    return "".join(out)


def human_date(
    value: datetime | date | None, style: str = "DATETIME_FORMAT", *, language: str | None = None
) -> str:
    """`value` as a reader of `language` (default: the active one) expects it, in the current
    time zone; "" for no value.

    `style` is a name of `STYLES` or of Django's formats (`DATETIME_FORMAT`, `DATE_FORMAT`,
    ...). A year is written in the language's era (`ERA_YEAR_OFFSETS`).
    """
    if value is None or value == "":
        return ""
    language = _language(language)
    if isinstance(value, datetime) and timezone.is_aware(value):
        value = timezone.localtime(value)
    with translation.override(language):
        format_string = get_format(STYLES.get(style, style), lang=language)
        offset = ERA_YEAR_OFFSETS.get(language)
        if offset:
            format_string = _with_year(format_string, value.year + offset)
        return date_format(value, format_string)


def admin_date(value: datetime | date | None) -> str:
    """A date or time as the admin writes it ("" for none)."""
    return human_date(value, ADMIN_STYLE if isinstance(value, datetime) else ADMIN_DAY_STYLE)


def intl_locale(language: str | None = None) -> str:
    """The BCP 47 locale, calendar included, a page's script formats dates with."""
    language = _language(language)
    return INTL_LOCALES.get(language, language)
