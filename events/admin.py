from decimal import Decimal

from django import forms
from django.contrib import admin, messages
from django.db.models import Prefetch
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from organizers.admin_scoping import (
    OrganizerFilter,
    OrganizerScopedAdmin,
    OrganizerScopedInline,
    ScopedRelatedFilter,
    can_manage,
    organizer_roles,
)
from ticketing.api.exceptions import ApplicationError
from ticketing.api.fields import format_baht, satangs_to_decimal_string

from .admin_signing import SigningKeyInline, rotate_signing_key, signing_keys_save
from .exceptions import CapacityBelowSold
from .models import CheckInType, Event, EventSigningKey, FormField, TicketType
from .selectors import events_with_counts, ticket_types_with_counts
from .services import (
    TICKET_TYPE_SETTINGS,
    event_end,
    event_publish,
    ticket_type_check_capacity,
    ticket_type_create,
    ticket_type_update,
)
from .signing_keys import event_signing_key_ensure


class EventFilter(ScopedRelatedFilter):
    title = _("event")
    parameter_name = "event_id"
    related_model = Event

    def choices_queryset(self, request, params):
        return super().choices_queryset(request, params).order_by("-start_at", "-id")


def capacity_text(ticket_type: TicketType) -> str:
    left = max(ticket_type.quantity - ticket_type.sold_count, 0)
    return gettext("%(sold)d / %(quantity)d sold · %(left)d left") % {
        "sold": ticket_type.sold_count,
        "quantity": ticket_type.quantity,
        "left": left,
    }


def api_capacity_text(ticket_type: TicketType) -> str:
    if ticket_type.api_quota is None:
        return gettext("%(issued)d issued via API · no separate API limit") % {
            "issued": ticket_type.api_sold_count
        }
    left = max(
        min(
            ticket_type.api_quota - ticket_type.api_sold_count,
            ticket_type.quantity - ticket_type.sold_count,
        ),
        0,
    )
    return gettext("%(issued)d / %(quota)d via API · %(left)d left") % {
        "issued": ticket_type.api_sold_count,
        "quota": ticket_type.api_quota,
        "left": left,
    }


class TicketTypeForm(forms.ModelForm):
    """The price is typed and shown in baht and stored in satangs (`price`), through Decimal:
    "19.99" is 1999 satangs exactly, where a float would make it 1998.9999...

    Quota edits are checked against the counters here, for a message beside the field;
    `ticket_type_update` checks again under a row lock when saving.
    """

    price_baht = forms.DecimalField(
        label=_("price (baht)"),
        min_value=Decimal(0),
        max_digits=9,  # below 2^31 satangs, the column's limit
        decimal_places=2,
        widget=forms.TextInput(attrs={"inputmode": "decimal", "size": 10}),
    )

    class Meta:
        model = TicketType
        fields = sorted(TICKET_TYPE_SETTINGS - {"price"})

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.initial.setdefault(
                "price_baht", Decimal(satangs_to_decimal_string(self.instance.price))
            )

    def clean(self):
        cleaned = super().clean()
        baht = cleaned.get("price_baht")
        if baht is not None:
            self.instance.price = int(baht * 100)  # exact: at most two decimal places
        if self.instance.pk is None:
            return cleaned
        try:
            ticket_type_check_capacity(
                ticket_type=self.instance,
                quantity=cleaned.get("quantity"),
                api_quota=cleaned.get("api_quota"),
            )
        except CapacityBelowSold as exc:
            for field, errors in exc.fields.items():
                self.add_error(field, errors)
        return cleaned


class TicketTypeInline(OrganizerScopedInline, admin.TabularInline):
    model = TicketType
    form = TicketTypeForm
    parent_organizer_path = "organizer"
    extra = 0
    fields = [
        "name",
        "price_baht",
        "kind",
        "pack_size",
        "quantity",
        "api_quota",
        "status",
        "position",
        "sales",
    ]
    readonly_fields = ["sales"]

    class Media:
        # Narrower inputs, so that every column fits the form's width at 1280 px.
        css = {"all": ["events/admin/ticket_types.css"]}

    def get_queryset(self, request):
        return ticket_types_with_counts(super().get_queryset(request).select_related("event"))

    @admin.display(description=_("sold · checked in · API"))
    def sales(self, obj):
        # One column of three lines rather than three columns: the table fits at 1280 px.
        if not obj.pk:
            return "—"
        return format_html(
            "{}<br>{}<br>{}",
            capacity_text(obj),
            _("%(n)s checked in") % {"n": obj.checked_in},
            api_capacity_text(obj),
        )


class CheckInTypeInline(OrganizerScopedInline, admin.TabularInline):
    model = CheckInType
    parent_organizer_path = "organizer"
    extra = 0
    fields = ["name", "position", "ticket_types"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("event")
            .prefetch_related(
                Prefetch("ticket_types", queryset=TicketType.objects.select_related("event"))
            )
        )

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        field = formset.form.base_fields.get("ticket_types")
        if field is None:
            return formset
        # Only this event's ticket types (a new event has none yet), read once for all rows:
        # a model choice field would query them again for every check-in type.
        field.queryset = TicketType.objects.filter(event=obj) if obj else TicketType.objects.none()
        choices = [(ticket_type.pk, ticket_type.name) for ticket_type in field.queryset]

        class CheckInTypeForm(formset.form):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.fields["ticket_types"].choices = choices

        formset.form = CheckInTypeForm
        return formset


class FormFieldInline(OrganizerScopedInline, admin.TabularInline):
    model = FormField
    parent_organizer_path = "organizer"
    extra = 0
    fields = ["label", "applies_to", "required", "position"]


@admin.register(Event)
class EventAdmin(OrganizerScopedAdmin):
    change_form_template = "admin/events/event/change_form.html"
    list_display = [
        "title",
        "shown_as",
        "start_at",
        "sold",
        "checked_in",
        "remaining",
        "organizer",
    ]
    list_filter = ["status", OrganizerFilter]
    list_select_related = ["organizer"]
    search_fields = ["title", "location_name"]
    ordering = ["-start_at", "-id"]
    inlines = [TicketTypeInline, CheckInTypeInline, FormFieldInline, SigningKeyInline]
    actions = ["publish", "end_now", rotate_signing_key]
    fieldsets = [
        # `shown_as` is the status as clients see it (an active event past its end is ended):
        # the stored `status` beside it read as "Status" twice.
        (None, {"fields": ["organizer", "title", "shown_as", "tickets_link"]}),
        (
            _("When and where"),
            {"fields": ["start_at", "end_at", "location_name", "location_address"]},
        ),
        (_("Description"), {"fields": ["description", "description_en"]}),
        (_("Images"), {"fields": ["cover", "poster", "display_icon"], "classes": ["collapse"]}),
        (_("Scanning"), {"fields": ["signed_codes"]}),
    ]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if not change:  # a new event's codes are signed from its first ticket on (§14)
            event_signing_key_ensure(event_id=obj.pk)

    def get_queryset(self, request):
        return events_with_counts(super().get_queryset(request))

    def get_list_display(self, request):
        # The organizer column only tells apart the events of someone who sees several.
        names = super().get_list_display(request)
        if request.user.is_superuser or len(organizer_roles(request)) > 1:
            return names
        return [name for name in names if name != "organizer"]

    def get_readonly_fields(self, request, obj=None):
        # Status moves only through the actions (and `end_events`); an event never changes
        # organizer, since its tickets and orders belong to that organizer's books.
        readonly = ["status", "shown_as", "tickets_link"]
        if obj is not None:
            readonly.append("organizer")
        return readonly

    @admin.display(description=_("status"), ordering="status")
    def shown_as(self, obj):
        return Event.Status(obj.effective_status).label if obj.pk else "—"

    @admin.display(description=_("tickets"))
    def tickets_link(self, obj):
        # By URL name: the ticket admin belongs to the tickets app, which events never imports.
        if not obj.pk:
            return "—"
        url = reverse("admin:tickets_ticket_changelist") + f"?event_id={obj.pk}"
        return format_html('<a href="{}">{}</a>', url, _("Tickets of this event"))

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            query = f"?event_id={obj.pk}"
            links = [
                (reverse("admin:tickets_ticket_export") + query, _("Export tickets (CSV)")),
                (
                    reverse("admin:tickets_ticket_export") + query + "&format=xlsx",
                    _("Export tickets (Excel)"),
                ),
                (reverse("admin:tickets_order_export") + query, _("Export orders (CSV)")),
                (
                    reverse("admin:tickets_order_export") + query + "&format=xlsx",
                    _("Export orders (Excel)"),
                ),
                (reverse("event-dashboard", args=[obj.pk]), _("Dashboard")),
            ]
            if can_manage(request, obj.organizer_id):
                links.insert(
                    0, (reverse("admin:tickets_ticket_import") + query, _("Import attendees"))
                )
            context["event_links"] = links
        return super().render_change_form(request, context, add, change, form_url, obj)

    @admin.display(description=_("sold / quantity"))
    def sold(self, obj):
        return f"{obj.sold_total} / {obj.quantity_total}"

    @admin.display(description=_("checked in"))
    def checked_in(self, obj):
        return obj.checked_in_total

    @admin.display(description=_("remaining"))
    def remaining(self, obj):
        return max(obj.quantity_total - obj.sold_total, 0)

    def save_formset(self, request, form, formset, change):
        if formset.model is EventSigningKey:
            return signing_keys_save(self, request, form, formset)
        if formset.model is not TicketType:
            return super().save_formset(request, form, formset, change)
        # Ticket types go through the services so the sale counters are never written from a
        # stale form, and the quota rule is checked again under the row lock.
        formset.save(commit=False)
        for obj in formset.deleted_objects:
            obj.delete()
        for obj in formset.new_objects:
            created = ticket_type_create(
                event=form.instance,
                **{name: getattr(obj, name) for name in TICKET_TYPE_SETTINGS},
            )
            obj.pk = created.pk
        for obj, changed in formset.changed_objects:
            changed = ["price" if name == "price_baht" else name for name in changed]
            changes = {name: getattr(obj, name) for name in changed if name in TICKET_TYPE_SETTINGS}
            try:
                ticket_type_update(ticket_type_id=obj.pk, **changes)
            except ApplicationError as exc:
                self.message_user(request, f"{obj.name}: {exc.message}", messages.ERROR)

    def _status_action(self, request, queryset, service, done_text):
        def change(event: Event) -> str | None:
            if not can_manage(request, event.organizer_id):
                return gettext("%(event)s: you may not manage this organizer's events") % {
                    "event": event.title
                }
            service(event_id=event.pk)  # its message names the event
            return None

        self.apply_each(request, queryset, change, done_message=done_text)

    @admin.action(description=_("Publish (draft → active)"), permissions=["manage"])
    def publish(self, request, queryset):
        self._status_action(
            request,
            queryset,
            event_publish,
            lambda n: ngettext("Published %d event.", "Published %d events.", n) % n,
        )

    @admin.action(description=_("End now (active → ended)"), permissions=["manage"])
    def end_now(self, request, queryset):
        self._status_action(
            request,
            queryset,
            event_end,
            lambda n: ngettext("Ended %d event.", "Ended %d events.", n) % n,
        )


@admin.register(TicketType)
class TicketTypeAdmin(OrganizerScopedAdmin):
    """An overview across events; ticket types are edited on their event's page.

    Deleting stays allowed (to managers) so that deleting a draft event can take its ticket
    types along; a ticket type with tickets is protected by the database either way.
    """

    allow_add = False
    allow_change = False
    list_display = ["name", "event", "price_display", "status", "capacity", "api_capacity"]
    list_filter = ["status", EventFilter]
    list_select_related = ["event"]
    search_fields = ["name", "event__title"]
    ordering = ["event", "position", "id"]
    show_full_result_count = False

    @admin.display(description=_("price"))
    def price_display(self, obj):
        return format_baht(obj.price)

    @admin.display(description=_("sold / quantity"))
    def capacity(self, obj):
        return capacity_text(obj)

    @admin.display(description=_("API-issued / API quota"))
    def api_capacity(self, obj):
        return api_capacity_text(obj)
