"""The access rules of CONTRACT §3, in its order; the first failed check wins.

Views declare one class. Organizer-scoped classes resolve the path's organizer once and leave its
id on `request.organizer_id` (and the caller's role on `request.membership_role`: `owner`, `admin`,
`staff`, or None for an application token) for the view's selectors.
"""

from rest_framework.permissions import BasePermission

from organizers.selectors import OrganizerAccess, organizer_access

from .caller import caller_of
from .exceptions import (
    ApplicationNotOwned,
    InsufficientScope,
    NotFound,
    NotOrganizerMember,
    OrganizerMismatch,
    UserTokenRequired,
)


class HasValidToken(BasePermission):
    """Any valid token (step 1). The default for every API view."""

    def has_permission(self, request, view) -> bool:
        caller_of(request)
        return True


class AllowAnyone(BasePermission):
    """No token needed (`/info`)."""

    def has_permission(self, request, view) -> bool:
        return True


class UserToken(BasePermission):
    """A user token with scope `public` (steps 1–3): `/me`."""

    def has_permission(self, request, view) -> bool:
        caller = caller_of(request)
        if not caller.is_user_token:
            raise UserTokenRequired()
        if not caller.has_scope("public"):
            raise InsufficientScope("public")
        return True


def _organizer_from_path(request, view, *, with_membership_of=None) -> OrganizerAccess:
    """Step 4: the path's organizer, with the caller's role (None: not a member) in one query."""
    access = organizer_access(
        organizer_id=view.kwargs.get("organizer_id"),
        user_id=getattr(with_membership_of, "pk", None),
    )
    if access is None:
        raise NotFound("Organizer not found.")
    request.organizer_id = access.organizer_id
    return access


def _check_application_owner(caller, organizer: OrganizerAccess) -> None:
    """Steps 5 and 6: tokens issued through another organizer's application."""
    owner_id = caller.application.organizer_id
    if owner_id is None or owner_id == organizer.organizer_id:
        if owner_id is None and not caller.is_user_token:
            # A platform application acts for users, never as an organizer by itself.
            raise ApplicationNotOwned()
        return
    if caller.is_user_token:
        raise OrganizerMismatch()
    raise ApplicationNotOwned()


class UserOrganizerResource(BasePermission):
    """The user's own tickets and orders of one organizer (`/organizers/{o}/tickets|orders`)."""

    def has_permission(self, request, view) -> bool:
        UserToken().has_permission(request, view)
        organizer = _organizer_from_path(request, view)
        _check_application_owner(caller_of(request), organizer)
        return True


class OrganizerResource(BasePermission):
    """Every `/organizers/{o}/events...` path: an application token of the organizer, or a
    user token with scope `organizer` whose user is a member (steps 1, 3–7).
    """

    requires_user_token = False

    def has_permission(self, request, view) -> bool:
        caller = caller_of(request)
        if self.requires_user_token and not caller.is_user_token:
            raise UserTokenRequired()
        if caller.is_user_token:
            if not caller.has_scope("organizer"):
                raise InsufficientScope("organizer")
            organizer = _organizer_from_path(request, view, with_membership_of=caller.user)
        else:
            if not caller.has_scope("public"):
                raise InsufficientScope("public")
            organizer = _organizer_from_path(request, view)
        _check_application_owner(caller, organizer)
        if caller.is_user_token:
            if organizer.role is None:
                raise NotOrganizerMember()
            request.membership_role = organizer.role
        else:
            request.membership_role = None
        return True


class OrganizerUserResource(OrganizerResource):
    """Organizer resources that only a person may change (ticket creation: step 2)."""

    requires_user_token = True
