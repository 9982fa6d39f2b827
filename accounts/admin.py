from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.utils.translation import gettext_lazy as _

from ticketing.admin_dates import HumanDatesMixin

from .models import User


@admin.register(User)
class UserAdmin(HumanDatesMixin, DjangoUserAdmin):
    """Accounts are the platform's: only superusers manage them (organizer members see their
    colleagues on the organizer page)."""

    list_display = ["username", "full_name", "email", "is_staff", "is_superuser", "is_active"]
    search_fields = ["username", "full_name", "email"]
    ordering = ["username"]
    fieldsets = [
        (None, {"fields": ["username", "password"]}),
        (_("Profile"), {"fields": ["full_name", "email", "phone", "birthday", "gender", "avatar"]}),
        (
            _("Access"),
            {
                "fields": ["is_active", "is_staff", "is_superuser", "groups", "user_permissions"],
                "description": _(
                    "Staff status lets a user sign in to this admin; what they see there comes "
                    "from their organizer memberships."
                ),
            },
        ),
        (_("Dates"), {"fields": ["last_login", "date_joined"]}),
    ]
    add_fieldsets = [
        (None, {"classes": ["wide"], "fields": ["username", "email", "password1", "password2"]}),
    ]

    def has_module_permission(self, request):
        return request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_add_permission(self, request):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser
