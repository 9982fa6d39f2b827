"""The check-in page's API credentials: a short-lived user token, minted for the signed-in user.

The page is a client of the public API like any scanner app, so it needs a bearer token; the
user has already signed in to this site, so sending them through the authorization-code flow
of the site's own page would only add redirects. The token belongs to a platform application
(owned by no organizer, so §3 step 5 never fires), with the user as its user: every request
the page makes is then checked by the API's access rules unchanged, membership included (a
staff member of organizer 1 gets 403 `not_organizer_member` at organizer 2). Its scope is
the check-in routes' own (`CHECK_IN_SCOPE`), not `organizer`: it acts on those routes only
(§15), so a token taken from the page, by whatever role, creates no ticket and no webhook.
It lives minutes, not the API's two hours: the page asks for a new one while the session
lasts, and a stolen one is soon worthless.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import AccessToken
from oauthlib.common import generate_token

from accounts.models import User
from oauth_setup.models import Application
from organizers.permissions import CHECK_IN_SCOPE

CLIENT_ID = "staff-check-in-page"
APPLICATION_NAME = "Staff check-in page"
TOKEN_SECONDS = 15 * 60
SCOPE = CHECK_IN_SCOPE


@dataclass(frozen=True)
class PageToken:
    access_token: str
    expires_in: int


def _page_application():
    """The platform application the page's tokens belong to, created on first use.

    No redirect URI and a secret nobody is shown: no one can run a grant with it, so its tokens
    only come from `page_token_issue`.
    """
    application = Application.objects.filter(client_id=CLIENT_ID).first()
    if application is not None:
        return application
    with transaction.atomic():
        application, _ = Application.objects.get_or_create(
            client_id=CLIENT_ID,
            defaults={
                "name": APPLICATION_NAME,
                "organizer": None,
                "client_type": Application.CLIENT_CONFIDENTIAL,
                "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
                "redirect_uris": "",
                "client_secret": generate_token(),
            },
        )
    return application


def page_token_issue(*, user: User) -> PageToken:
    """A new access token for the page, for `user`, scope `SCOPE`, valid `TOKEN_SECONDS`."""
    raw = generate_token()
    AccessToken.objects.create(
        user=user,
        application=_page_application(),
        token=raw,
        scope=SCOPE,
        expires=timezone.now() + timedelta(seconds=TOKEN_SECONDS),
    )
    return PageToken(access_token=raw, expires_in=TOKEN_SECONDS)


def page_tokens_revoke(*, user: User) -> int:
    """Delete the user's page tokens (at sign-out): the API refuses them at once.

    Deleted one by one through the ORM, so the token cache hears of each (oauth_setup's
    signals) and no process keeps serving one.
    """
    deleted, _ = AccessToken.objects.filter(user=user, application__client_id=CLIENT_ID).delete()
    return deleted
