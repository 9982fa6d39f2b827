from django import forms
from django.contrib import admin
from django.utils.translation import ngettext

from ticketing.admin_scoping import (
    EventFilter,
    FormAnswerInline,
    OrganizerScopedAdmin,
    ReadOnlyInline,
    can_manage,
    person_with_account,
)
from ticketing.api.exceptions import ApplicationError
from tickets.models import Ticket
from tickets.services import Actor

from .models import Order, OrderFormAnswer
from .services import order_cancel

MAX_ACTION_ORDERS = 200


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

    @admin.display(description="ticket type")
    def ticket_type_name(self, obj):
        return obj.ticket_type.name

    # Not named `holder`: the admin would show the model field of that name (the account).
    @admin.display(description="holder")
    def holder_with_account(self, obj):
        return person_with_account(obj.holder_name, obj.holder)


def _buyer_name(order: Order) -> str:
    return f"{order.buyer_firstname} {order.buyer_lastname}".strip()


class OrderFormAnswerInline(FormAnswerInline):
    model = OrderFormAnswer


class OrderForm(forms.ModelForm):
    """The buyer's name and email may be corrected; status and payment move only through the
    services (cancelling revokes the tickets and frees their places)."""

    class Meta:
        model = Order
        fields = ["buyer_firstname", "buyer_lastname", "buyer_email"]


@admin.register(Order)
class OrderAdmin(OrganizerScopedAdmin):
    allow_add = False
    allow_delete = False
    form = OrderForm
    list_display = [
        "id",
        "buyer_with_account",
        "buyer_email",
        "event",
        "status",
        "kind",
        "paid_at",
        "created_at",
    ]
    list_display_links = ["id", "buyer_with_account"]
    list_select_related = ["event"]
    list_filter = ["status", "kind", EventFilter]
    search_fields = ["id__exact", "buyer_email", "buyer_firstname", "buyer_lastname"]
    search_help_text = "Order number (exact), buyer email or name (contains)."
    ordering = ["-id"]
    list_per_page = 50
    show_full_result_count = False
    inlines = [OrderTicketInline, OrderFormAnswerInline]
    actions = ["cancel_orders"]
    fieldsets = [
        (None, {"fields": ["event", "status", "kind", "paid_at", "cancelled_at"]}),
        (
            "Buyer",
            {
                "fields": [
                    "buyer_firstname",
                    "buyer_lastname",
                    "buyer_email",
                    "buyer_phone",
                    "buyer_phone_country",
                    "buyer_account",
                ]
            },
        ),
        ("Dates", {"fields": ["created_at", "updated_at"]}),
    ]
    readonly_fields = [
        "event",
        "status",
        "kind",
        "paid_at",
        "cancelled_at",
        "buyer_phone",
        "buyer_phone_country",
        "buyer_account",
        "created_at",
        "updated_at",
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("event", "buyer")

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    # Not named `buyer`: the admin would show the model field of that name (the account).
    @admin.display(description="buyer", ordering="buyer_lastname")
    def buyer_with_account(self, obj):
        return person_with_account(_buyer_name(obj), obj.buyer)

    @admin.display(description="account")
    def buyer_account(self, obj):
        return str(obj.buyer) if obj.buyer_id else "—"

    def save_model(self, request, obj, form, change):
        # Only the edited buyer fields: a cancellation committed meanwhile stays cancelled.
        if form.changed_data:
            obj.save(update_fields=[*form.changed_data, "updated_at"])

    @admin.action(description="Cancel orders (revokes their tickets)…", permissions=["manage"])
    def cancel_orders(self, request, queryset):
        orders = list(queryset.select_related("event").order_by("pk")[: MAX_ACTION_ORDERS + 1])
        if len(orders) > MAX_ACTION_ORDERS:
            self.message_user(
                request, f"Select at most {MAX_ACTION_ORDERS} orders per action.", "error"
            )
            return None
        if "apply" not in request.POST:
            return self.action_page(
                request,
                action="cancel_orders",
                title="Cancel orders",
                form=forms.Form(),
                objects=orders,
                describe=lambda o: (
                    f"Order #{o.pk} — {_buyer_name(o)} <{o.buyer_email}> "
                    f"({o.get_status_display()}, {o.event.title})"
                ),
                button="Cancel these orders and revoke their tickets",
            )
        actor = Actor(user=request.user)
        done, failures = 0, []
        for order in orders:
            if not can_manage(request, order.event.organizer_id):
                failures.append(f"Order #{order.pk}: only owners and admins may cancel orders")
                continue
            if order.status == Order.Status.CANCELLED:
                failures.append(f"Order #{order.pk}: already cancelled")
                continue
            try:
                order_cancel(order_id=order.pk, actor=actor)
            except ApplicationError as exc:
                failures.append(f"Order #{order.pk}: {exc.message}")
            else:
                done += 1
        self.report(
            request,
            done=done,
            done_message=ngettext("Cancelled %d order.", "Cancelled %d orders.", done) % done,
            failures=failures,
        )
        return None
