"""Scopes in words, for the consent page: the names alone mean nothing to a ticket buyer."""

from django.utils.translation import gettext_lazy as _
from oauth2_provider.scopes import get_scopes_backend

# What the holder of a token with this scope can do, said to the person granting it, in the
# page's language.
CONSENT_WORDING = {
    "public": _("See your profile (name, email, phone, birthday) and your own tickets and orders."),
    "organizer": _(
        "Work for the organizers you belong to: see every order and ticket of their events, "
        "check tickets in and create tickets."
    ),
}


def scope_explanations(scopes: list[str]) -> list[dict[str, str]]:
    """One `{name, description}` per requested scope, in request order."""
    described = get_scopes_backend().get_all_scopes()
    return [
        {"name": scope, "description": CONSENT_WORDING.get(scope) or described.get(scope, scope)}
        for scope in scopes
    ]
