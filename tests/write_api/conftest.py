"""Fixtures for the gate's write endpoints; their helpers are in `tests.write_api.helpers`."""

import pytest

from tests.factories import TicketFactory
from tests.support import mint_token


@pytest.fixture
def ticket(event, ticket_type):
    return TicketFactory(event=event, ticket_type=ticket_type, reference_code="GATE0001")


@pytest.fixture
def user_token(application, member) -> str:
    return mint_token(application=application, user=member, scope="public organizer")


@pytest.fixture
def app_token(application) -> str:
    return mint_token(application=application, scope="public")
