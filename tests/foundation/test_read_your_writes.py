"""Read-your-writes fails closed (issue 45): when the record of a caller's last write cannot be
read, their reads go to the primary, never to a replica that may not have replayed it."""

from django.test import RequestFactory, override_settings

from ticketing import db_routing
from ticketing.settings.caches import redis_caches

# A Redis that refuses every connection: nothing listens on port 1.
UNREACHABLE = redis_caches(
    "redis://127.0.0.1:1/0", key_prefix="ryw", timeout_ms=50, breaker_seconds=0
)


def _request():
    return RequestFactory().get("/", HTTP_AUTHORIZATION="Bearer caller-token")


@override_settings(CACHES=UNREACHABLE)
def test_an_unreadable_record_sends_the_caller_to_the_primary():
    assert db_routing.caller_lsn(_request()) is None


def test_a_caller_with_no_write_remembered_may_read_a_replica():
    assert db_routing.caller_lsn(_request()) == 0


def test_a_remembered_write_is_what_the_next_read_needs(settings):
    from django.core.cache import caches

    caches["default"].set(db_routing.caller_key(_request()), 123456, timeout=60)
    assert db_routing.caller_lsn(_request()) == 123456
