"""Fixtures of the OAuth tests; the helpers that walk the flow are in `tests.oauth.flow`."""

import pytest

from oauth_setup.models import Application
from tests.factories import ApplicationFactory


@pytest.fixture
def public_application(organizer):
    """A mobile app: public client, no secret, PKCE required."""
    return ApplicationFactory(
        organizer=organizer,
        name="Mobile app",
        client_type=Application.CLIENT_PUBLIC,
        client_secret="",
        allow_client_credentials=False,
    )
