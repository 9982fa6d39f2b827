from django.contrib import admin

from .admin_scoping import OrganizerScopedAdmin, OrganizerScopedInline
from .models import Membership, Organizer


class MembershipInline(OrganizerScopedInline, admin.TabularInline):
    """Who belongs to the organizer. Granting access (and `is_staff`) is a superuser's job:
    a membership gives admin rights, so members cannot hand them out themselves."""

    model = Membership
    parent_organizer_path = "pk"
    extra = 0
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]
    raw_id_fields = ["user"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("user")

    def _may_write(self, request, obj):
        return request.user.is_superuser


@admin.register(Organizer)
class OrganizerAdmin(OrganizerScopedAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    fields = [
        "name",
        "slug",
        "description",
        "avatar",
        "email_language",
        "contact_email",
        "contact_phone",
    ]
    inlines = [MembershipInline]

    def has_add_permission(self, request):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser

    def get_readonly_fields(self, request, obj=None):
        # The slug is part of the organizer's public URLs; only staff of the platform move it.
        if obj is not None and not request.user.is_superuser:
            return ["slug"]
        return []

    def get_prepopulated_fields(self, request, obj=None):
        return self.prepopulated_fields if obj is None else {}
