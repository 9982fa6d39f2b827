"""Who may act for which organizer (CONTRACT §3): the one module that knows the organizer,
application and membership rules (the checks of a token alone, `ticketing.api.permissions`,
come first and know no organizer).

Views declare one of the permission classes; selectors ask `organizer_reach` what a token may
reach (an `OrganizerReach`, kept below with its query in `reach`); the admin asks
`may_manage`; introspection asks `sees_every_token`. Checks run in the contract's order and the
first failed one wins. Organizer-scoped classes resolve the path's organizer once and leave its
id on `request.organizer_id` (and the caller's role on `request.membership_role`: `owner`,
`admin`, `staff`, or None for an application token) for the view's selectors. Each class
declares its OpenAPI security requirement (`openapi_security`) and the statuses it can answer
besides 401 (`openapi_errors`), which the document reads.

An application is owned by one organizer or by none (a platform application). A platform
application acts for its users, never as an organizer by itself.
"""

from rest_framework.permissions import BasePermission

from ticketing.api.caller import Caller, caller_of
from ticketing.api.exceptions import (
    ApplicationNotOwned,
    InsufficientScope,
    NotFound,
    NotOrganizerMember,
    OrganizerMismatch,
    UserTokenRequired,
)
from ticketing.api.permissions import UserToken
from ticketing.api.security import (
    APPLICATION_TOKEN,
    BEARER,
    QUERY_TOKEN,
    USER_PUBLIC,
    USER_TOKEN,
)

from .models import Membership
from .reach import OrganizerReach
from .selectors import OrganizerAccess, organizer_access

# Owners and admins manage an organizer (prices, quotas, settings); staff only operate it.
MANAGER_ROLES = frozenset({Membership.Role.OWNER, Membership.Role.ADMIN})

_ORGANIZER = [
    {USER_TOKEN: ["organizer"]},
    {APPLICATION_TOKEN: ["public"]},
    {BEARER: []},
    {QUERY_TOKEN: []},
]
_ORGANIZER_USER = [{USER_TOKEN: ["organizer"]}, {BEARER: []}, {QUERY_TOKEN: []}]

# The scope of the staff check-in page's tokens (CONTRACT §15), in place of `organizer`: the
# one permission that admits it is `CheckInResource`, which the check-in routes declare. Every
# other route asks for `public` or `organizer`, which such a token lacks, so it answers 403
# `insufficient_scope`. No client can ask for it: it is not one of OAUTH2_PROVIDER's SCOPES.
CHECK_IN_SCOPE = "check-in"


def organizer_reach(caller: Caller) -> OrganizerReach:
    owner_id = caller.application.organizer_id
    if caller.is_user_token:
        # Through an organizer's application only that organizer; through a platform one, any.
        return OrganizerReach(organizer_id=owner_id, member_user_id=caller.token.user_id)
    if owner_id is None:
        return OrganizerReach(none=True)  # a platform application acts for no organizer
    return OrganizerReach(organizer_id=owner_id)


def acts_as_member(caller: Caller) -> bool:
    """A user token acts for its user's organizers only with scope `organizer` (step 3)."""
    return caller.is_user_token and caller.has_scope("organizer")


def user_organizer_ids(*, user_id: int) -> list[int]:
    """The organizers a signed-in user (a session, not a token: the staff check-in page) acts
    for: those they are a member of, in id order. Being a superuser adds none."""
    return list(
        Membership.objects.filter(user_id=user_id)
        .order_by("organizer_id")
        .values_list("organizer_id", flat=True)
    )


def user_is_member(*, user_id: int, organizer_id: int) -> bool:
    """Whether a signed-in user is a member of the organizer (one query)."""
    return Membership.objects.filter(user_id=user_id, organizer_id=organizer_id).exists()


def may_manage(role: str | None) -> bool:
    return role in MANAGER_ROLES


def sees_every_token(application) -> bool:
    """Introspection (RFC 7662 §4): an application learns about its own tokens only, except a
    platform application, which may act for the users of every organizer."""
    return application.organizer_id is None


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


def _member_organizer(request, view, caller: Caller) -> OrganizerAccess:
    """Step 4 for a user token: its role as kept with the token (`Caller.kept_roles`), else as
    the database says (a role found is then kept)."""
    kept = caller.kept_roles
    organizer_id = view.kwargs.get("organizer_id")
    role = kept.role_in(organizer_id) if kept is not None else None
    if role is not None:
        request.organizer_id = organizer_id
        return OrganizerAccess(organizer_id=organizer_id, role=role)
    organizer = _organizer_from_path(request, view, with_membership_of=caller.user)
    if kept is not None and organizer.role is not None:
        kept.keep(organizer.organizer_id, organizer.role)
    return organizer


def _own_organizer(request, view, caller: Caller) -> OrganizerAccess | None:
    """Step 4 for an application token on its own organizer's path, without a query: an
    organizer's deletion takes its applications and their tokens with it."""
    owner_id = caller.application.organizer_id
    if owner_id is None or owner_id != view.kwargs.get("organizer_id"):
        return None
    request.organizer_id = owner_id
    return OrganizerAccess(organizer_id=owner_id, role=None)


def _check_application_owner(caller: Caller, organizer: OrganizerAccess) -> None:
    """Steps 5 and 6: tokens issued through another organizer's application (a user token
    through a platform application never mismatches)."""
    reach = organizer_reach(caller)
    if reach.none or reach.organizer_id not in (None, organizer.organizer_id):
        raise OrganizerMismatch() if caller.is_user_token else ApplicationNotOwned()


class UserOrganizerResource(BasePermission):
    """The user's own tickets and orders of one organizer (`/organizers/{o}/tickets|orders`)."""

    openapi_security = USER_PUBLIC
    openapi_errors = (403, 404)

    def has_permission(self, request, view) -> bool:
        UserToken().has_permission(request, view)
        organizer = _organizer_from_path(request, view)
        _check_application_owner(caller_of(request), organizer)
        return True


class OrganizerResource(BasePermission):
    """Every `/organizers/{o}/events...` path: an application token of the organizer, or a
    user token with scope `organizer` whose user is a member (steps 1, 3–7).
    """

    openapi_security = _ORGANIZER
    openapi_errors = (403, 404)
    requires_user_token = False
    member_scopes = frozenset({"organizer"})  # any one of them lets a user token act (step 3)

    def has_permission(self, request, view) -> bool:
        caller = caller_of(request)
        if self.requires_user_token and not caller.is_user_token:
            raise UserTokenRequired()
        if caller.is_user_token:
            if not caller.scopes & self.member_scopes:
                raise InsufficientScope("organizer")
            organizer = _member_organizer(request, view, caller)
        else:
            if not caller.has_scope("public"):
                raise InsufficientScope("public")
            organizer = _own_organizer(request, view, caller) or _organizer_from_path(request, view)
        _check_application_owner(caller, organizer)
        if caller.is_user_token:
            if organizer.role is None:
                raise NotOrganizerMember()
            request.membership_role = organizer.role
        else:
            request.membership_role = None
        return True


class CheckInResource(OrganizerResource):
    """The check-in routes (scan and renew by code, stats, sync feed, batch upload): also the
    staff check-in page's tokens, whose scope is `CHECK_IN_SCOPE` (CONTRACT §15)."""

    member_scopes = frozenset({"organizer", CHECK_IN_SCOPE})


class OrganizerUserResource(OrganizerResource):
    """Organizer resources that only a person may change (ticket creation: step 2)."""

    openapi_security = _ORGANIZER_USER
    requires_user_token = True


class OrganizerManagerUserResource(OrganizerUserResource):
    """An organizer's settings (webhooks, CONTRACT §13): a user token of an owner or admin; a
    member whose role is `staff` is `not_organizer_member`."""

    def has_permission(self, request, view) -> bool:
        super().has_permission(request, view)
        if not may_manage(request.membership_role):
            raise NotOrganizerMember("Only the organizer's owners and admins may do this.")
        return True


class TicketSearchAccess(BasePermission):
    """`GET /tickets/search` sits under no organizer path, so steps 4–7 cannot run here; what a
    token may see is `organizer_reach`'s, which the selector applies.

    A user token needs scope `public` or `organizer`; an application token needs `public` and
    an owning organizer.
    """

    openapi_security = [
        {USER_TOKEN: ["public"]},
        {USER_TOKEN: ["organizer"]},
        {APPLICATION_TOKEN: ["public"]},
        {BEARER: []},
        {QUERY_TOKEN: []},
    ]
    openapi_errors = (403, 404)

    def has_permission(self, request, view) -> bool:
        caller = caller_of(request)
        if caller.is_user_token:
            if not (caller.has_scope("public") or caller.has_scope("organizer")):
                raise InsufficientScope("public")
            return True
        if not caller.has_scope("public"):
            raise InsufficientScope("public")
        if organizer_reach(caller).none:
            raise ApplicationNotOwned("A platform application is not owned by any organizer.")
        return True
