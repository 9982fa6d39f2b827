"""Organizer scoping for the admin: what a staff user sees and may do follows their memberships.

How members get into the admin: Django's admin site admits active users with `is_staff`; once
in, a non-superuser's permissions come only from `Membership` rows, never from Django's model
permissions or groups. A member of an organizer may view everything of that organizer and
operate it (check in, undo a check-in, revoke, resend emails); an owner or admin may also
change it (prices, quotas, settings). Superusers see and do everything.

Scoping happens in four places, so that guessing another organizer's id never shows anything:
the querysets (changelists, change pages, actions: `get_queryset`), the object permissions,
the choices of foreign keys and many-to-many fields, and the changelist filters.
"""

from collections.abc import Callable, Iterable

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import Model, QuerySet
from django.http import Http404
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ticketing.admin_dates import HumanDatesMixin
from ticketing.api.exceptions import ApplicationError
from ticketing.api.fields import INT32_MAX

from .models import Membership, Organizer
from .permissions import may_manage

# How each model reaches its organizer ("pk" for the organizer itself).
_ORGANIZER_PATHS = {
    "organizers.Organizer": "pk",
    "organizers.Membership": "organizer",
    "events.Event": "organizer",
    "events.TicketType": "event__organizer",
    "events.CheckInType": "event__organizer",
    "events.FormField": "event__organizer",
    "tickets.Order": "event__organizer",
    "tickets.Ticket": "event__organizer",
    "checkin.CheckInLog": "ticket__event__organizer",
    "checkin.ScanRecord": "event__organizer",
    "checkin.TicketCheckIn": "ticket__event__organizer",
    "oauth_setup.Application": "organizer",
}


def person_with_account(name: str, account) -> str | None:
    """A holder or buyer as staff read them: the name given, then the linked user account if
    any (most tickets and orders, imported or created through the API, have none)."""
    if account is None:
        return name or None
    if name:
        return _("%(name)s (account %(username)s)") % {"name": name, "username": account.username}
    return _("account %(username)s") % {"username": account.username}


def organizer_path_for(model: type[Model]) -> str | None:
    return _ORGANIZER_PATHS.get(model._meta.label)


def organizer_roles(request) -> dict[int, str]:
    """`{organizer_id: role}` of the request's user, read once per request."""
    cached = getattr(request, "_admin_organizer_roles", None)
    if cached is None:
        user = request.user
        if not (user.is_authenticated and user.is_active):
            cached = {}
        else:
            cached = dict(
                Membership.objects.filter(user_id=user.pk).values_list("organizer_id", "role")
            )
        request._admin_organizer_roles = cached
    return cached


def member_organizer_ids(request) -> set[int]:
    return set(organizer_roles(request))


def managed_organizer_ids(request) -> set[int]:
    return {org_id for org_id, role in organizer_roles(request).items() if may_manage(role)}


def organizer_id_of(obj: Model, path: str) -> int | None:
    """Follow `path` ("event__organizer") from `obj` to the organizer's id."""
    if path == "pk":
        return obj.pk
    *hops, last = path.split("__")
    value = obj
    for hop in hops:
        value = getattr(value, hop, None)
        if value is None:
            return None
    return getattr(value, f"{last}_id", None)


def scope_queryset(queryset: QuerySet, organizer_ids: Iterable[int]) -> QuerySet:
    """`queryset` restricted to objects of the given organizers (unscoped models: nothing)."""
    path = organizer_path_for(queryset.model)
    if path is None:
        return queryset.none()
    return queryset.filter(**{f"{path}__in": list(organizer_ids)})


def can_manage(request, organizer_id: int | None) -> bool:
    if request.user.is_superuser:
        return True
    return organizer_id is not None and may_manage(organizer_roles(request).get(organizer_id))


def is_member(request, organizer_id: int | None) -> bool:
    if request.user.is_superuser:
        return True
    return organizer_id is not None and organizer_id in organizer_roles(request)


class _ChoiceScopingMixin:
    """Foreign-key and many-to-many choices limited to what the user may manage."""

    def _scoped_choices(self, request, db_field, kwargs):
        if request.user.is_superuser:
            return kwargs
        related = db_field.remote_field.model
        queryset = kwargs.get("queryset", related._default_manager.all())
        kwargs["queryset"] = scope_queryset(queryset, managed_organizer_ids(request))
        return kwargs

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        return super().formfield_for_foreignkey(
            db_field, request, **self._scoped_choices(request, db_field, kwargs)
        )

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        return super().formfield_for_manytomany(
            db_field, request, **self._scoped_choices(request, db_field, kwargs)
        )


class OrganizerScopedAdmin(HumanDatesMixin, _ChoiceScopingMixin, admin.ModelAdmin):
    """A ModelAdmin whose rows and permissions follow the user's memberships.

    `allow_add`, `allow_change` and `allow_delete` switch an operation off for everyone,
    superusers included: tickets and orders, for instance, are created and changed only
    through their services (capacity counters, audit rows), never by a plain model form.
    """

    allow_add = True
    allow_change = True
    allow_delete = True

    @property
    def organizer_path(self) -> str:
        path = organizer_path_for(self.model)
        assert path is not None, f"{self.model._meta.label} has no organizer path"
        return path

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return scope_queryset(queryset, member_organizer_ids(request))

    def get_object(self, request, object_id, from_field=None):
        # Django redirects to the index for a missing object; another organizer's id must look
        # exactly like an id that does not exist, and a 404 says so plainly.
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            raise Http404("No such object.")
        return obj

    def organizer_id_of(self, obj: Model) -> int | None:
        return organizer_id_of(obj, self.organizer_path)

    # --- permissions --------------------------------------------------------------------------

    def has_module_permission(self, request):
        if request.user.is_superuser:
            return True
        return bool(organizer_roles(request))

    def has_view_permission(self, request, obj=None):
        if request.user.is_superuser:
            return True
        if obj is None:
            return bool(organizer_roles(request))
        return is_member(request, self.organizer_id_of(obj))

    def has_change_permission(self, request, obj=None):
        if not self.allow_change:
            return False
        if obj is None:
            return request.user.is_superuser or bool(managed_organizer_ids(request))
        return can_manage(request, self.organizer_id_of(obj))

    def has_add_permission(self, request):
        if not self.allow_add:
            return False
        return request.user.is_superuser or bool(managed_organizer_ids(request))

    def has_delete_permission(self, request, obj=None):
        if not self.allow_delete:
            return False
        if obj is None:
            return request.user.is_superuser or bool(managed_organizer_ids(request))
        return can_manage(request, self.organizer_id_of(obj))

    # Used by `@admin.action(permissions=["operate"])` / `["manage"]`.
    def has_operate_permission(self, request):
        return request.user.is_superuser or bool(organizer_roles(request))

    def has_manage_permission(self, request):
        return request.user.is_superuser or bool(managed_organizer_ids(request))

    # --- actions ------------------------------------------------------------------------------

    def action_page(self, request, *, action, title, form, objects, describe, button):
        """An intermediate page for an action that needs input (a note) or a confirmation.

        It posts back to the changelist with the same selection and `apply=1`, where the
        action runs again and, finding `apply`, does the work.
        """
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "opts": self.model._meta,
            "form": form,
            "items": [describe(obj) for obj in objects[:50]],
            "more": max(len(objects) - 50, 0),
            "selected_ids": [obj.pk for obj in objects],
            "action": action,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "button": button,
        }
        return TemplateResponse(request, "admin/action_form.html", context)

    def apply_each(
        self,
        request,
        objects: Iterable[Model],
        operation: Callable[[Model], str | None],
        *,
        done_message: Callable[[int], str],
        label: Callable[[Model], str] | None = None,
        explain: Callable[[ApplicationError], str | None] | None = None,
    ) -> None:
        """Apply `operation` (one service call, one transaction) to each object and report.

        `operation` returns None when done, else a sentence saying why not; a service's
        `ApplicationError` is that object's failure, in the service's words (or `explain`'s,
        where it returns a sentence). `label(obj)` prefixes each failure.
        """
        done, failures = 0, []
        for obj in objects:
            try:
                problem = operation(obj)
            except ApplicationError as exc:
                problem = (explain(exc) if explain else None) or exc.message
            if problem:
                failures.append(f"{label(obj)}: {problem}" if label else problem)
            else:
                done += 1
        self.report(request, done=done, done_message=done_message(done), failures=failures)

    # --- messages -----------------------------------------------------------------------------

    def report(self, request, *, done: int, done_message: str, failures: list[str]) -> None:
        """One success line and one line listing why the others failed (first 20 shown)."""
        if done:
            self.message_user(request, done_message, messages.SUCCESS)
        if failures:
            shown = failures[:20]
            more = len(failures) - len(shown)
            text = _("%(count)d not done: %(failures)s") % {
                "count": len(failures),
                "failures": "; ".join(shown),
            }
            if more:
                text += _("; and %(more)d more.") % {"more": more}
            self.message_user(request, text, messages.ERROR)
        if not done and not failures:
            self.message_user(request, _("Nothing to do."), messages.WARNING)


class OrganizerScopedInline(HumanDatesMixin, _ChoiceScopingMixin, admin.options.InlineModelAdmin):
    """Inline rows of a parent the user may see; `parent_organizer_path` leads from the parent
    (the `obj` Django passes to inline permission checks) to its organizer."""

    parent_organizer_path = "organizer"
    allow_add = True
    allow_change = True
    allow_delete = True

    def _parent_org(self, obj) -> int | None:
        return organizer_id_of(obj, self.parent_organizer_path) if obj is not None else None

    def has_view_permission(self, request, obj=None):
        if request.user.is_superuser:
            return True
        if obj is None:
            return bool(organizer_roles(request))
        return is_member(request, self._parent_org(obj))

    def _may_write(self, request, obj) -> bool:
        if obj is None:
            # The parent's add form: the parent admin already required a managed organizer.
            return request.user.is_superuser or bool(managed_organizer_ids(request))
        return can_manage(request, self._parent_org(obj))

    def has_change_permission(self, request, obj=None):
        return self.allow_change and self._may_write(request, obj)

    def has_add_permission(self, request, obj=None):
        return self.allow_add and self._may_write(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self.allow_delete and self._may_write(request, obj)


class ReadOnlyInline(OrganizerScopedInline):
    allow_add = False
    allow_change = False
    allow_delete = False
    extra = 0
    can_delete = False
    show_change_link = False


class FormAnswerInline(ReadOnlyInline, admin.TabularInline):
    """An order's or a ticket's answers to the event's custom questions, read-only."""

    parent_organizer_path = "event__organizer"
    verbose_name_plural = gettext_lazy("form answers")
    fields = ["question", "value"]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("field")

    @admin.display(description=gettext_lazy("question"))
    def question(self, obj):
        return obj.field.label


class ScopedRelatedFilter(admin.SimpleListFilter):
    """A changelist filter whose choices are only the user's organizers' objects."""

    related_model: type[Model]
    field_path: str = ""  # the lookup that filters by the chosen id; default `parameter_name`

    def choices_queryset(self, request, params) -> QuerySet:
        queryset = self.related_model._default_manager.all()
        if request.user.is_superuser:
            return queryset
        return scope_queryset(queryset, member_organizer_ids(request))

    def __init__(self, request, params, model, model_admin):
        self._params = dict(params)
        super().__init__(request, params, model, model_admin)

    def lookups(self, request, model_admin):
        return [(str(obj.pk), str(obj)) for obj in self.choices_queryset(request, self._params)]

    def queryset(self, request, queryset):
        value = self.value()
        if value is None:
            return queryset
        if not (value.isascii() and value.isdigit() and int(value) <= INT32_MAX):
            return queryset.none()
        return queryset.filter(**{self.field_path or self.parameter_name: int(value)})


class OrganizerFilter(ScopedRelatedFilter):
    title = gettext_lazy("organizer")
    parameter_name = "organizer_id"
    related_model = Organizer
