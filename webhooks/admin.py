"""Webhooks in the admin: endpoints and the delivery log, for owners and admins only.

Endpoints are created and changed through the services (the URL check, the encrypted secret);
deliveries are read-only, with their attempts and a redeliver action.
"""

import json

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from organizers.admin_scoping import (
    OrganizerScopedAdmin,
    ReadOnlyInline,
    can_manage,
    managed_organizer_ids,
)

from .exceptions import WebhookEndpointLimitReached, WebhookUrlRefused
from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from .serializers import EVENT_TYPE_CHOICES
from .services import (
    webhook_delivery_redeliver,
    webhook_endpoint_create,
    webhook_endpoint_update,
    webhook_endpoints_room_check,
    webhook_url_check,
)


class _ManagersOnlyAdmin(OrganizerScopedAdmin):
    """Webhooks are an organizer's settings: staff members do not see them at all."""

    def get_queryset(self, request):
        queryset = super(OrganizerScopedAdmin, self).get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(**{f"{self.organizer_path}__in": managed_organizer_ids(request)})

    def has_module_permission(self, request):
        return request.user.is_superuser or bool(managed_organizer_ids(request))

    def has_view_permission(self, request, obj=None):
        if obj is None:
            return self.has_module_permission(request)
        return can_manage(request, self.organizer_id_of(obj))


class WebhookEndpointForm(forms.ModelForm):
    event_types = forms.MultipleChoiceField(
        label=gettext_lazy("event types"),
        choices=[(t, gettext_lazy("every type") if t == "*" else t) for t in EVENT_TYPE_CHOICES],
        widget=forms.CheckboxSelectMultiple,
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["organizer", "url", "event_types", "is_active"]

    def clean_url(self):
        url = self.cleaned_data["url"].strip()
        if self.instance.pk is None or url != self.instance.url:
            try:
                webhook_url_check(url=url)
            except WebhookUrlRefused as exc:
                raise forms.ValidationError(exc.reason) from None
        return url

    def clean_event_types(self):
        value = self.cleaned_data["event_types"]
        if "*" in value and len(value) > 1:
            raise forms.ValidationError(_("“every type” stands alone."))
        return value

    def clean(self):
        cleaned = super().clean()
        organizer = cleaned.get("organizer")
        if self.instance.pk is None and organizer is not None:
            try:
                webhook_endpoints_room_check(organizer_id=organizer.pk)
            except WebhookEndpointLimitReached as exc:
                raise forms.ValidationError(exc.message) from None
        return cleaned


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(_ManagersOnlyAdmin):
    organizer_path = "organizer"
    form = WebhookEndpointForm
    list_display = ["url", "organizer", "types", "is_active", "failing_since", "created_at"]
    list_filter = ["is_active"]
    list_select_related = ["organizer"]
    search_fields = ["url"]
    readonly_fields = [
        "failing_since",
        "disabled_at",
        "unanswered_count",
        "backoff_until",
        "created_at",
        "updated_at",
    ]

    @admin.display(description=gettext_lazy("event types"))
    def types(self, obj):
        return ", ".join(obj.event_types)

    def get_readonly_fields(self, request, obj=None):
        # The organizer of an endpoint does not change; a new one is registered instead.
        return [*self.readonly_fields, "organizer"] if obj is not None else self.readonly_fields

    def get_fields(self, request, obj=None):
        fields = ["organizer", "url", "event_types"]
        return [*fields, "is_active", *self.readonly_fields] if obj is not None else fields

    def add_view(self, request, form_url="", extra_context=None):
        # The form found room, but another registration took it before the service's lock.
        try:
            return super().add_view(request, form_url, extra_context)
        except WebhookEndpointLimitReached as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.path)

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            webhook_endpoint_update(
                endpoint_id=obj.pk,
                url=data["url"],
                event_types=data["event_types"],
                is_active=data["is_active"],
            )
            return
        endpoint, secret = webhook_endpoint_create(
            organizer_id=data["organizer"].pk, url=data["url"], event_types=data["event_types"]
        )
        obj.pk = endpoint.pk
        self.message_user(
            request,
            _("The signing secret of this endpoint, shown only now: %(secret)s")
            % {"secret": secret},
            messages.WARNING,
        )


class WebhookAttemptInline(ReadOnlyInline, admin.TabularInline):
    model = WebhookAttempt
    parent_organizer_path = "endpoint__organizer"
    fields = ["attempted_at", "status_code", "duration_ms", "error", "next_retry_at"]
    readonly_fields = fields


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(_ManagersOnlyAdmin):
    organizer_path = "endpoint__organizer"
    allow_add = allow_change = allow_delete = False
    inlines = [WebhookAttemptInline]
    list_display = [
        "webhook_id",
        "event_type",
        "endpoint",
        "status",
        "attempt_count",
        "next_attempt_at",
        "created_at",
    ]
    list_filter = ["status", "event__type"]
    list_select_related = ["event", "endpoint"]
    search_fields = ["event__id", "endpoint__url"]
    fields = [
        "webhook_id",
        "event_type",
        "endpoint",
        "status",
        "attempt_count",
        "pending_since",
        "next_attempt_at",
        "delivered_at",
        "created_at",
        "body",
    ]
    readonly_fields = fields
    actions = ["redeliver"]

    @admin.display(description=gettext_lazy("webhook-id"), ordering="event_id")
    def webhook_id(self, obj):
        return obj.event_id

    @admin.display(description=gettext_lazy("type"), ordering="event__type")
    def event_type(self, obj):
        return obj.event.type

    @admin.display(description=gettext_lazy("body sent"))
    def body(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.event.payload, indent=2))

    @admin.action(
        description=gettext_lazy("Redeliver the selected deliveries"), permissions=["manage"]
    )
    def redeliver(self, request, queryset):
        self.apply_each(
            request,
            queryset.select_related("endpoint"),
            lambda delivery: webhook_delivery_redeliver(delivery_id=delivery.pk),
            done_message=lambda done: (
                ngettext(
                    "%(count)d delivery queued again.", "%(count)d deliveries queued again.", done
                )
                % {"count": done}
            ),
            label=lambda delivery: delivery.event_id,
        )
