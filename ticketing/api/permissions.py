"""The checks of CONTRACT §3 that know no organizer: the token (step 1), its kind (2) and its
scope (3) for `/me`. Whom a token may act for, and everything else of §3, is decided in
`organizers.permissions`.

Each class declares its OpenAPI security requirement (`openapi_security`) and the statuses it
can answer besides 401 (`openapi_errors`), which the document reads.
"""

from rest_framework.permissions import BasePermission

from .caller import caller_of
from .exceptions import InsufficientScope, UserTokenRequired
from .security import ANY_TOKEN, USER_PUBLIC

# The spec's scopes. A token with neither acts only where a permission admits its own scope
# (the staff check-in page's: `organizers.permissions.CheckInResource`).
API_SCOPES = frozenset({"public", "organizer"})


class HasValidToken(BasePermission):
    """Any valid token with one of the spec's scopes (steps 1, 3). The default for every API
    view."""

    openapi_security = ANY_TOKEN
    openapi_errors = (403,)

    def has_permission(self, request, view) -> bool:
        if not caller_of(request).scopes & API_SCOPES:
            raise InsufficientScope("public")
        return True


class AllowAnyone(BasePermission):
    """No token needed (`/info`)."""

    openapi_security = []
    openapi_errors = ()

    def has_permission(self, request, view) -> bool:
        return True


class UserToken(BasePermission):
    """A user token with scope `public` (steps 1–3): `/me`."""

    openapi_security = USER_PUBLIC
    openapi_errors = (403,)

    def has_permission(self, request, view) -> bool:
        caller = caller_of(request)
        if not caller.is_user_token:
            raise UserTokenRequired()
        if not caller.has_scope("public"):
            raise InsufficientScope("public")
        return True
