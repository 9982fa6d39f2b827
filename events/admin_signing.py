"""The event page's signing keys (CONTRACT §14): listed read-only, retired by a tick, rotated by
an action of the event list. Every change goes through `signing_keys`' services; only the
organizer's owners and admins (those who manage its events) may make one."""

from django import forms
from django.contrib import admin, messages
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from organizers.admin_scoping import OrganizerScopedInline, can_manage
from ticketing.api.exceptions import ApplicationError

from .models import Event, EventSigningKey
from .signing_keys import event_signing_key_retire, event_signing_key_rotate


class SigningKeyForm(forms.ModelForm):
    retire = forms.BooleanField(
        required=False,
        label=_("retire"),
        help_text=_("Codes this key signed stop working at once (scanners: not found)."),
    )

    class Meta:
        model = EventSigningKey
        fields: list[str] = []


class SigningKeyInline(OrganizerScopedInline, admin.TabularInline):
    """The event's keys in use, newest (the active one) first; retired ones are history."""

    model = EventSigningKey
    form = SigningKeyForm
    parent_organizer_path = "organizer"
    allow_add = False
    allow_delete = False
    can_delete = False
    extra = 0
    verbose_name_plural = _("signing keys (QR codes)")
    fields = ["key_id", "active", "created_at", "retired_at", "retire"]
    readonly_fields = ["key_id", "active", "created_at", "retired_at"]

    def get_queryset(self, request):
        return super().get_queryset(request).order_by("retired_at", "-id")

    @admin.display(description=_("signs new codes"), boolean=True)
    def active(self, obj):
        if obj.retired_at is not None:
            return False
        newest = obj.event.signing_keys.filter(retired_at__isnull=True).order_by("-id").first()
        return newest is not None and newest.pk == obj.pk


def signing_keys_save(model_admin, request, form, formset) -> None:
    """Retire the keys whose box was ticked, each through the service."""
    formset.save(commit=False)  # writes nothing (no field is editable); the change message reads it
    event = form.instance
    for key_form in formset.forms:
        key = key_form.instance
        if not key_form.cleaned_data.get("retire") or key.retired_at is not None:
            continue
        if not can_manage(request, event.organizer_id):
            model_admin.message_user(request, _("You may not manage this event."), messages.ERROR)
            return
        try:
            event_signing_key_retire(event_id=event.pk, key_id=key.key_id)
        except ApplicationError as exc:
            model_admin.message_user(request, f"{key.key_id}: {exc.message}", messages.ERROR)
        else:
            model_admin.message_user(request, _("Retired signing key %s.") % key.key_id)


@admin.action(description=_("Rotate signing key (new QR codes use a new key)"))
def rotate_signing_key(model_admin, request, queryset):
    def rotate(event: Event) -> str | None:
        if not can_manage(request, event.organizer_id):
            return f"{event.title}: you may not manage this organizer's events"
        event_signing_key_rotate(event_id=event.pk)
        return None

    model_admin.apply_each(
        request,
        queryset,
        rotate,
        done_message=lambda n: (
            ngettext(
                "Rotated the signing key of %d event.", "Rotated the signing keys of %d events.", n
            )
            % n
        ),
    )


rotate_signing_key.allowed_permissions = ("manage",)
