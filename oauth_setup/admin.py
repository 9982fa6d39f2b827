from django.contrib import admin, messages
from oauth2_provider.generators import generate_client_secret

from ticketing.admin_scoping import OrganizerFilter, OrganizerScopedAdmin, can_manage

from .models import Application

# DOT registers its own admin for the application model; ours adds the owner organizer,
# scoping, and a client secret that is never shown after the request that created it.
if admin.site.is_registered(Application):
    admin.site.unregister(Application)

SECRET_NOTICE = (
    "Client secret of '{name}' (client id {client_id}): {secret} — copy it now. It is stored "
    "hashed and cannot be shown again; use 'Generate a new client secret' if it is lost."
)


@admin.register(Application)
class ApplicationAdmin(OrganizerScopedAdmin):
    list_display = [
        "name",
        "organizer",
        "client_id",
        "client_type",
        "authorization_grant_type",
        "allow_client_credentials",
        "created",
    ]
    list_filter = ["client_type", "authorization_grant_type", OrganizerFilter]
    list_select_related = ["organizer"]
    search_fields = ["name", "client_id"]
    ordering = ["name", "id"]
    radio_fields = {
        "client_type": admin.HORIZONTAL,
        "authorization_grant_type": admin.VERTICAL,
    }
    actions = ["regenerate_secret"]

    def get_fields(self, request, obj=None):
        fields = [
            "name",
            "organizer",
            "client_id",
            "client_type",
            "authorization_grant_type",
            "allow_client_credentials",
            "redirect_uris",
            "post_logout_redirect_uris",
            "allowed_origins",
        ]
        if request.user.is_superuser:
            # Skipping consent is a trust decision about a first-party client: the platform's.
            fields.append("skip_authorization")
        return fields

    def get_readonly_fields(self, request, obj=None):
        readonly = ["client_id"]
        if obj is not None and not request.user.is_superuser:
            readonly.append("organizer")
        return readonly

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if "organizer" in form.base_fields and not request.user.is_superuser:
            # Only the platform's staff create platform (organizer-less) applications.
            form.base_fields["organizer"].required = True
            form.base_fields["organizer"].empty_label = None
        return form

    def save_model(self, request, obj, form, change):
        secret = None
        if not change:
            # DOT hashes the secret when the row is saved; this is the only moment the
            # plaintext exists, so it is shown to the creator once and never again.
            secret = generate_client_secret()
            obj.client_secret = secret
            obj.hash_client_secret = True
        super().save_model(request, obj, form, change)
        if secret:
            self.message_user(
                request,
                SECRET_NOTICE.format(name=obj.name, client_id=obj.client_id, secret=secret),
                messages.WARNING,
            )

    @admin.action(description="Generate a new client secret", permissions=["manage"])
    def regenerate_secret(self, request, queryset):
        done, failures = 0, []
        for application in queryset:
            if not can_manage(request, application.organizer_id):
                failures.append(f"{application.name}: you may not manage this application")
                continue
            secret = generate_client_secret()
            application.client_secret = secret
            application.hash_client_secret = True
            application.save(update_fields=["client_secret", "hash_client_secret", "updated"])
            done += 1
            self.message_user(
                request,
                SECRET_NOTICE.format(
                    name=application.name, client_id=application.client_id, secret=secret
                ),
                messages.WARNING,
            )
        self.report(
            request,
            done=done,
            done_message=f"Generated {done} new client secret(s); the old ones stop working now.",
            failures=failures,
        )
