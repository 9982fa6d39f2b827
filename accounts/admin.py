from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin

from .models import User


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    """Accounts are the platform's: only superusers manage them (organizer members see their
    colleagues on the organizer page)."""

    list_display = ["username", "full_name", "email", "is_staff", "is_superuser", "is_active"]
    search_fields = ["username", "full_name", "email"]
    ordering = ["username"]
    fieldsets = [
        (None, {"fields": ["username", "password"]}),
        ("Profile", {"fields": ["full_name", "email", "phone", "birthday", "gender", "avatar"]}),
        (
            "Access",
            {
                "fields": ["is_active", "is_staff", "is_superuser", "groups", "user_permissions"],
                "description": (
                    "is_staff lets a user log in to this admin; what they see there comes from "
                    "their organizer memberships."
                ),
            },
        ),
        ("Dates", {"fields": ["last_login", "date_joined"]}),
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
