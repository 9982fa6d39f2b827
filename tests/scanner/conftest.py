"""Fixtures of the scanner endpoints; their helpers are in `tests.scanner.helpers`."""

import pytest

from tests.support import TokenClient, mint_token


@pytest.fixture
def client(application, member) -> TokenClient:
    return TokenClient(mint_token(application=application, user=member, scope="public organizer"))
