"""The forms and read-only inlines of the ticket and order admin pages."""

from django import forms
from django.contrib import admin
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from events.models import CheckInType
from organizers.admin_scoping import FormAnswerInline, ReadOnlyInline, person_with_account

from ..models import Order, OrderFormAnswer, Ticket, TicketFormAnswer
from ..names import person_name_validate
from ..phones import phone_to_e164

# --- Forms ------------------------------------------------------------------------------------


def _name_clean(form: forms.ModelForm, field: str) -> str:
    try:
        return person_name_validate(form.cleaned_data[field])
    except ValueError as exc:
        raise forms.ValidationError(str(exc)) from None


class TicketForm(forms.ModelForm):
    """Holder details only: the lifecycle (status, check-ins, revocation) moves through the
    actions, which call the same services as the API."""

    class Meta:
        model = Ticket
        fields = ["firstname", "lastname", "email", "phone", "nfc_uid"]

    def clean_firstname(self):
        return _name_clean(self, "firstname")

    def clean_lastname(self):
        return _name_clean(self, "lastname")

    def clean_phone(self):
        phone = self.cleaned_data["phone"].strip()
        if not phone:
            return phone
        try:
            return phone_to_e164(phone)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_nfc_uid(self):
        nfc_uid = (self.cleaned_data.get("nfc_uid") or "").strip() or None
        if (
            nfc_uid is not None
            and Ticket.objects.filter(event_id=self.instance.event_id, nfc_uid=nfc_uid)
            .exclude(pk=self.instance.pk)
            .exists()
        ):
            raise forms.ValidationError(_("Another ticket of this event is bound to this NFC tag."))
        return nfc_uid


class OrderForm(forms.ModelForm):
    """The buyer's name and email may be corrected; status and payment move only through the
    services (cancelling revokes the tickets and frees their places)."""

    class Meta:
        model = Order
        fields = ["buyer_firstname", "buyer_lastname", "buyer_email"]

    def clean_buyer_firstname(self):
        return _name_clean(self, "buyer_firstname")

    def clean_buyer_lastname(self):
        return _name_clean(self, "buyer_lastname")


class ActionNoteForm(forms.Form):
    note = forms.CharField(
        label=gettext_lazy("Note"),
        required=False,
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )


class RevokeForm(forms.Form):
    reason = forms.CharField(
        label=gettext_lazy("Reason (stored as the ticket's revoke note)"),
        required=False,
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )


def check_in_types_form(types_by_event: dict[int, list[CheckInType]], data=None) -> forms.Form:
    """One multiple-choice field per event that has check-in types."""
    form = ActionNoteForm(data)
    for event_id, types in types_by_event.items():
        form.fields[f"types_{event_id}"] = forms.TypedMultipleChoiceField(
            label=_("Check-in types — %(event)s") % {"event": types[0].event.title},
            choices=[(t.pk, t.name) for t in types],
            coerce=int,
            required=False,
            widget=forms.CheckboxSelectMultiple,
        )
    return form


# --- Inlines ----------------------------------------------------------------------------------


class TicketFormAnswerInline(FormAnswerInline):
    model = TicketFormAnswer


class OrderTicketInline(ReadOnlyInline, admin.TabularInline):
    model = Ticket
    parent_organizer_path = "event__organizer"
    fk_name = "order"
    show_change_link = True
    fields = [
        "reference_code",
        "ticket_type_name",
        "holder_with_account",
        "email",
        "status",
        "used_at",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("ticket_type", "holder").order_by("id")

    @admin.display(description=gettext_lazy("ticket type"))
    def ticket_type_name(self, obj):
        return obj.ticket_type.name

    # Not named `holder`: the admin would show the model field of that name (the account).
    @admin.display(description=gettext_lazy("holder"))
    def holder_with_account(self, obj):
        return person_with_account(obj.holder_name, obj.holder)


class OrderFormAnswerInline(FormAnswerInline):
    model = OrderFormAnswer
