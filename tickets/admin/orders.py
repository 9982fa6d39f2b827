"""The order admin: buyers' details may be corrected, and owners and admins cancel orders (which
revokes their tickets) through the same service as the API."""

from django import forms
from django.contrib import admin
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from events.admin import EventFilter
from organizers.admin_scoping import OrganizerScopedAdmin, can_manage, person_with_account

from ..models import Order
from ..services.common import Actor
from ..services.revoking import order_cancel
from .forms import OrderForm, OrderFormAnswerInline, OrderTicketInline

MAX_ACTION_ORDERS = 200


def _buyer_name(order: Order) -> str:
    return f"{order.buyer_firstname} {order.buyer_lastname}".strip()


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
    search_help_text = gettext_lazy("Order number (exact), buyer email or name (contains).")
    ordering = ["-id"]
    list_per_page = 50
    show_full_result_count = False
    inlines = [OrderTicketInline, OrderFormAnswerInline]
    actions = ["cancel_orders"]
    fieldsets = [
        (None, {"fields": ["event", "status", "kind", "paid_at", "cancelled_at"]}),
        (
            gettext_lazy("Buyer"),
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
        (gettext_lazy("Dates"), {"fields": ["created_at", "updated_at"]}),
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
    @admin.display(description=gettext_lazy("buyer"), ordering="buyer_lastname")
    def buyer_with_account(self, obj):
        return person_with_account(_buyer_name(obj), obj.buyer)

    @admin.display(description=gettext_lazy("account"))
    def buyer_account(self, obj):
        return str(obj.buyer) if obj.buyer_id else "—"

    def save_model(self, request, obj, form, change):
        # Only the edited buyer fields: a cancellation committed meanwhile stays cancelled.
        if form.changed_data:
            obj.save(update_fields=[*form.changed_data, "updated_at"])

    @admin.action(
        description=gettext_lazy("Cancel orders (revokes their tickets)…"), permissions=["manage"]
    )
    def cancel_orders(self, request, queryset):
        orders = list(queryset.select_related("event").order_by("pk")[: MAX_ACTION_ORDERS + 1])
        if len(orders) > MAX_ACTION_ORDERS:
            self.message_user(
                request,
                _("Select at most %(count)d orders per action.") % {"count": MAX_ACTION_ORDERS},
                "error",
            )
            return None
        if "apply" not in request.POST:
            return self.action_page(
                request,
                action="cancel_orders",
                title=_("Cancel orders"),
                form=forms.Form(),
                objects=orders,
                describe=lambda o: (
                    _("Order #%(id)s") % {"id": o.pk} + f" — {_buyer_name(o)} <{o.buyer_email}> "
                    f"({o.get_status_display()}, {o.event.title})"
                ),
                button=_("Cancel these orders and revoke their tickets"),
            )
        actor = Actor(user=request.user)

        def cancel(order: Order) -> str | None:
            if not can_manage(request, order.event.organizer_id):
                return _("only owners and admins may cancel orders")
            if order.status == Order.Status.CANCELLED:
                return _("already cancelled")
            order_cancel(order_id=order.pk, actor=actor)
            return None

        self.apply_each(
            request,
            orders,
            cancel,
            done_message=lambda done: (
                ngettext("Cancelled %d order.", "Cancelled %d orders.", done) % done
            ),
            label=lambda order: _("Order #%(id)s") % {"id": order.pk},
        )
        return None
