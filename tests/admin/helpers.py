"""Build the POST an admin change page would send, and read what a changelist shows."""

import re
from html.parser import HTMLParser

from django import forms


def _field_data(bound_field) -> dict:
    name = bound_field.html_name
    widget = bound_field.field.widget
    value = bound_field.value()
    if isinstance(widget, forms.MultiWidget):
        parts = widget.decompress(value) if value is not None else [None] * len(widget.widgets)
        return {
            f"{name}{suffix}": "" if part is None else str(part)
            for suffix, part in zip(widget.widgets_names, parts, strict=True)
        }
    if isinstance(bound_field.field, forms.FileField):
        return {}
    if isinstance(widget, forms.CheckboxInput):
        return {name: "on"} if value else {}
    if value is None:
        return {name: ""}
    if isinstance(value, list | tuple):
        return {name: [str(getattr(v, "pk", v)) for v in value]}
    return {name: str(getattr(value, "pk", value))}


def change_form_data(response) -> dict:
    """The main form and every inline formset, with their current values."""
    data: dict = {}
    for field in response.context["adminform"].form:
        data.update(_field_data(field))
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        for field in formset.management_form:
            data[field.html_name] = str(field.value())
        for form in formset.forms:
            for field in form:
                data.update(_field_data(field))
    return data


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


class _TableText(HTMLParser):
    """The text of each cell of the changelist's table, row by row."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self._in_table = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("id", "result_list") in attrs:
            self._in_table = True
        elif self._in_table and tag == "tr":
            self.rows.append([])
        elif self._in_table and tag in ("th", "td"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_table = False
        elif self._cell is not None and tag in ("th", "td"):
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def changelist_column(response, header: str) -> list[str]:
    """The text shown under `header` in each row of a changelist page, top to bottom."""
    table = _TableText()
    table.feed(response.content.decode())
    head, *rows = table.rows
    index = [h.lower() for h in head].index(header.lower())
    return [row[index] for row in rows]


def field_cells(response, name: str) -> list[str]:
    """The text of every table cell that shows the field or column `name` (inlines too)."""
    html = response.content.decode()
    cells = re.findall(rf'<td class="field-{name}">(.*?)</td>', html, flags=re.DOTALL)
    return [" ".join(re.sub(r"<[^>]+>", " ", cell).split()) for cell in cells]
