"""A view's cap on requests running at once (`concurrency_slot`, CONTRACT §9) says how many."""

import uuid
from contextlib import ExitStack

import pytest

from ticketing.api.exceptions import RateLimited
from ticketing.api.throttling import concurrency_slot


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        (1, "1 such request is running already; try again in 2 seconds."),
        (2, "2 such requests are running already; try again in 2 seconds."),
    ],
)
def test_a_request_past_the_slots_is_told_how_many_run(limit, message):
    name = f"test-slots-{uuid.uuid4().hex}"
    with ExitStack() as running:
        for _ in range(limit):
            running.enter_context(concurrency_slot(name, limit=limit, seconds=60, retry_after=2))
        with pytest.raises(RateLimited) as refused:
            running.enter_context(concurrency_slot(name, limit=limit, seconds=60, retry_after=2))
    assert (refused.value.message, refused.value.headers) == (message, {"Retry-After": "2"})
    # Given back: the next one runs.
    with concurrency_slot(name, limit=limit, seconds=60, retry_after=2):
        pass
