"""Dates in the admin as `ticketing.dates` writes them: in Thai, the Buddhist era's year.

Django's admin formats a date column or a read-only date field with the locale's format, whose
year is always Gregorian, and has no hook for the value alone. So a model admin (or an inline)
with `HumanDatesMixin` shows each of its model's date fields, where it lists them or shows them
read-only, through a column of its own (`<name>_shown`): the field's label, sorted by the
field, its value as `ticketing.dates.admin_date` writes it. Editable date inputs are left to Django.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from types import MethodType

from django.contrib import admin
from django.db import models

from .dates import admin_date

# A time of day alone (a chart's bucket end): no year, so no era to write.
ADMIN_TIME_STYLE = "H:i"
_SHOWN = "_shown"


@cache
def _date_fields(model: type[models.Model]) -> dict[str, models.Field]:
    return {
        field.name: field
        for field in model._meta.concrete_fields
        if isinstance(field, models.DateField | models.DateTimeField)
    }


@cache
def _column(model: type[models.Model], name: str) -> Callable:
    field = _date_fields(model)[name]

    @admin.display(description=field.verbose_name, ordering=name)
    def column(obj):
        return admin_date(getattr(obj, name)) or "—"

    column.__name__ = name + _SHOWN
    return column


class HumanDatesMixin:
    """Shows the model's date fields, listed or read-only, as `admin_date` writes them.

    The read-only renaming wraps, on the instance, what the admin's class answers: subclasses
    override `get_readonly_fields` or `get_fields` without calling super(), and the form must
    exclude exactly the names its fieldsets show.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        cls = type(self)

        def readonly(self, request, obj=None):
            return [self._shown(name) for name in cls.get_readonly_fields(self, request, obj)]

        def fields(self, request, obj=None):
            names = set(cls.get_readonly_fields(self, request, obj))
            return [self._shown(name, names) for name in cls.get_fields(self, request, obj)]

        def fieldsets(self, request, obj=None):
            names = set(cls.get_readonly_fields(self, request, obj))
            return [
                (title, {**options, "fields": self._shown(list(options["fields"]), names)})
                for title, options in cls.get_fieldsets(self, request, obj)
            ]

        self.get_readonly_fields = MethodType(readonly, self)
        self.get_fields = MethodType(fields, self)
        self.get_fieldsets = MethodType(fieldsets, self)

    def get_list_display(self, request):
        """The list's columns, dates through their own (subclasses call super())."""
        return [self._shown(name) for name in super().get_list_display(request)]

    def _shown(self, name, readonly=None):
        """`name`, or its column's name if it is a date field (and read-only, if given)."""
        dates = _date_fields(self.model)
        if isinstance(name, list | tuple):
            return type(name)(self._shown(part, readonly) for part in name)
        if isinstance(name, str) and name in dates and (readonly is None or name in readonly):
            return name + _SHOWN
        return name

    def __getattr__(self, name: str):
        if name.endswith(_SHOWN) and name[: -len(_SHOWN)] in _date_fields(self.model):
            return _column(self.model, name[: -len(_SHOWN)])
        raise AttributeError(name)
