"""`{{ value|human_date:"long" }}`: a date for people to read, in the active language's calendar
(`ticketing.dates`), where Django's `date` filter would always write the Gregorian year."""

from django import template

from ticketing.dates import human_date as format_human_date

register = template.Library()


@register.filter
def human_date(value, style="DATETIME_FORMAT"):
    return format_human_date(value, style)
