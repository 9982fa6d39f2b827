"""The webhook fixtures (a real receiver, a database worker processes share) for the queue tests."""

from tests.webhooks.helpers import manager, receiver, shared_database  # noqa: F401
