"""`make restore-drill` (deploy/topology/restore_drill.py), smaller: pgBackRest archiving a
PostgreSQL of the drill's own, a full backup, check-ins through the app, a point-in-time restore
into a fresh cluster, compared with what the app acknowledged. The schema is copied from the
tests' database rather than migrated, to keep it under a minute.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db]


def test_a_point_in_time_restore_holds_every_check_in_acknowledged_before_its_target(settings):
    if shutil.which("pgbackrest") is None:
        if os.environ.get("REQUIRE_ALL_TESTS"):
            pytest.fail("pgbackrest is missing (Debian package pgbackrest)")
        pytest.skip("needs pgbackrest (Debian package pgbackrest)")
    database = connection.settings_dict
    schema_from = f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/"
    schema_from += database["NAME"]
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTHONPATH")},
        "REDIS_URL": settings.REDIS_URL,
        "DRILL_PORT": "15610",
        "RESTORED_PORT": "15611",
        "DRILL_APP_PORT": "18310",
    }
    done = subprocess.run(
        [sys.executable, "deploy/topology/restore_drill.py", "--before", "40", "--after", "10",
         "--schema-from", schema_from],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    assert "acknowledged before the target: 40 " in done.stdout
    assert "after it: 10" in done.stdout
    restored = re.search(r"restored: (\d+) scan records, (\d+) tickets used, (\d+) check-in rows",
                         done.stdout)  # fmt: skip
    assert restored is not None and restored.groups() == ("40", "40", "40"), done.stdout
    assert "restore drill: ok" in done.stdout
