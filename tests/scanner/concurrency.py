"""Helpers of the scanner tests that run uploads in threads against rows the test holds locked
(PostgreSQL): each waits where the test wants it, with no fixed sleep."""

import threading
import time

from django.db import connection


def wait_until_waiting_on_locks(count: int, threads) -> None:
    """Until `count` sessions of this database wait on a lock (the uploads reached the rows
    the test holds), while `threads` are all still running."""
    deadline = time.monotonic() + 30
    while True:
        with connection.cursor() as cursor:
            # Within a transaction the statistics views keep their first reading unless cleared.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0] >= count:
                return
        assert all(thread.is_alive() for thread in threads), "an upload ended instead of waiting"
        assert time.monotonic() < deadline, "the uploads never reached the locked rows"
        time.sleep(0.01)


def in_thread(call) -> tuple[threading.Thread, list]:
    """Run `call` in a thread of its own (its own connection); its answer lands in the list."""
    out: list = []

    def run():
        try:
            out.append(call())
        except Exception as exc:  # reported by the test
            out.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out
