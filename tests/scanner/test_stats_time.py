"""`generated_at` is when the figures are exact, told by the database that counted them
(CONTRACT §12): not the app server's clock, which a lagging replica's data is older than."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection

from checkin.stats import event_check_in_stats

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def _database_now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def test_generated_at_is_the_counting_databases_time(event):
    before = _database_now()
    with time_machine.travel(datetime(2001, 1, 1, tzinfo=UTC), tick=False):  # the app's clock
        stats = event_check_in_stats(event=event)
    after = _database_now()

    assert before - timedelta(seconds=1) <= stats.generated_at <= after
    assert stats.generated_at.tzinfo is not None
