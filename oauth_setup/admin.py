from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from oauth2_provider.generators import generate_client_secret

from organizers.admin_scoping import OrganizerFilter, OrganizerScopedAdmin, can_manage
from ticketing.api.exceptions import ApplicationError

from .models import Application
from .services import GRANT_TYPES, application_create

# DOT registers its own admin for the application model; ours adds the owner organizer,
# scoping, creation through `application_create`, and a secret shown once.
if admin.site.is_registered(Application):
    admin.site.unregister(Application)

SECRET_NOTICE = gettext_lazy(
    "Client secret of '{name}' (client id {client_id}): {secret} — copy it now. It is stored "
    "hashed and cannot be shown again; use 'Generate a new client secret' if it is lost."
)
_GRANT_KEYS = {grant: key for key, grant in GRANT_TYPES.items()}


class _CreateRejected(Exception):
    """Carries the service's error out of the add view's transaction, which it rolls back."""

    def __init__(self, error: ApplicationError):
        self.error = error


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
            "client_type",
            "authorization_grant_type",
            "allow_client_credentials",
            "redirect_uris",
            "post_logout_redirect_uris",
            "allowed_origins",
        ]
        if obj is not None:
            fields.insert(2, "client_id")
        if request.user.is_superuser:
            # Skipping consent is a trust decision about a first-party client: the platform's.
            fields.append("skip_authorization")
        return fields

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        # How a client authenticates is fixed at creation (the service checks the combination);
        # a different kind of client is a new application with its own credentials.
        readonly = [
            "client_id",
            "client_type",
            "authorization_grant_type",
            "allow_client_credentials",
        ]
        if not request.user.is_superuser:
            readonly.append("organizer")
        return readonly

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        fields = form.base_fields
        if "authorization_grant_type" in fields:
            fields["authorization_grant_type"].choices = [
                (grant, label) for grant, label in Application.GRANT_TYPES if grant in _GRANT_KEYS
            ]
        if "organizer" in fields and not request.user.is_superuser:
            # Only the platform's staff create platform (organizer-less) applications.
            fields["organizer"].required = True
            fields["organizer"].empty_label = None
        return form

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except _CreateRejected as rejected:
            self.message_user(request, rejected.error.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        try:
            created = application_create(
                name=obj.name,
                organizer=obj.organizer,
                grant_type=_GRANT_KEYS[obj.authorization_grant_type],
                redirect_uris=obj.redirect_uris.split(),
                allow_client_credentials=obj.allow_client_credentials,
                public=obj.client_type == Application.CLIENT_PUBLIC,
                skip_authorization=obj.skip_authorization,
            )
        except ApplicationError as exc:
            raise _CreateRejected(exc) from None
        application = created.application
        extra = {
            "post_logout_redirect_uris": obj.post_logout_redirect_uris,
            "allowed_origins": obj.allowed_origins,
        }
        Application.objects.filter(pk=application.pk).update(**extra)
        # The admin goes on with `obj` (log entry, redirect): make it the created row.
        obj.__dict__.update({**application.__dict__, **extra})
        if created.client_secret:
            self.message_user(
                request,
                SECRET_NOTICE.format(
                    name=application.name,
                    client_id=application.client_id,
                    secret=created.client_secret,
                ),
                messages.WARNING,
            )
        else:
            self.message_user(
                request,
                _("'%(name)s' is a public client: it has no secret and must use PKCE.")
                % {"name": application.name},
                messages.INFO,
            )

    @admin.action(description=gettext_lazy("Generate a new client secret"), permissions=["manage"])
    def regenerate_secret(self, request, queryset):
        def regenerate(application: Application) -> str | None:
            if not can_manage(request, application.organizer_id):
                return _("you may not manage this application")
            if application.client_type == Application.CLIENT_PUBLIC:
                return _("a public client has no secret")
            secret = generate_client_secret()
            application.client_secret = secret
            application.hash_client_secret = True
            application.save(update_fields=["client_secret", "hash_client_secret", "updated"])
            self.message_user(
                request,
                SECRET_NOTICE.format(
                    name=application.name, client_id=application.client_id, secret=secret
                ),
                messages.WARNING,
            )
            return None

        self.apply_each(
            request,
            queryset,
            regenerate,
            label=lambda application: application.name,
            done_message=lambda done: (
                ngettext(
                    "Generated %(count)d new client secret; the old one stops working now.",
                    "Generated %(count)d new client secrets; the old ones stop working now.",
                    done,
                )
                % {"count": done}
            ),
        )
