"""Build the POST an admin change page would send, from the page the test just loaded."""

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
