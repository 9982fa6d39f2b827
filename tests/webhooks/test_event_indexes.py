"""The webhook event table keeps only the indexes a lookup needs: the gate's check-in writes an
event row, and each of its indexes, in its own statement (webhooks 0002)."""

import pytest
from django.db import connection

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_the_event_id_has_no_like_index():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s ORDER BY indexname",
            ["webhooks_webhookevent"],
        )
        names = [row[0] for row in cursor.fetchall()]
    assert not [name for name in names if name.endswith("_like")], names
    assert "webhooks_webhookevent_pkey" in names
