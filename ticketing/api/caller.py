"""Who is calling: the token, its user (if any), its application and granted scopes."""

from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from rest_framework.request import Request

from .exceptions import InvalidToken


class RoleMemo(Protocol):
    """The caller's roles in organizers, kept between requests by the authentication
    (`oauth_setup.token_cache.KeptRoles`), so that a permission need not ask the database."""

    def role_in(self, organizer_id: int) -> str | None: ...

    def keep(self, organizer_id: int, role: str) -> None:
        """Keep a role just read from the database."""


@dataclass(frozen=True)
class Caller:
    token: object  # oauth2_provider AccessToken
    kept_roles: RoleMemo | None = None  # None: ask the database

    @property
    def user(self):
        return self.token.user

    @property
    def application(self):
        return self.token.application

    @property
    def is_user_token(self) -> bool:
        """Authorization-code (and refreshed) tokens carry a user; client credentials do not."""
        return self.token.user_id is not None

    @cached_property
    def scopes(self) -> frozenset[str]:
        return frozenset((self.token.scope or "").split())

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


def caller_of(request: Request) -> Caller:
    """The authenticated caller, or 401 `invalid_token`."""
    caller = getattr(request, "_caller", None)
    if caller is None:
        if request.auth is None:
            raise InvalidToken()
        caller = Caller(token=request.auth, kept_roles=getattr(request, "kept_roles", None))
        request._caller = caller
    return caller
