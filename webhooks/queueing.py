"""The tasks the delivery code queues next: a dispatch's other events, a retry, an owner's
email. `tasks` defines them and runs that code (`delivering`, and through it `outbox` and
`outcomes`), so that code does not import `tasks`: it queues through `QUEUE`, whose tasks
`WebhooksConfig.ready()` hands over from `tasks`. Imports then go one way,
tasks → delivering → sending, outbox, outcomes → queueing.

A task's path is what its queued rows name (`webhooks.tasks.<name>`), and a worker of the
previous release runs the rows this one queues (deploy/README.md): the tasks stay in `tasks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class _Queue:
    events_dispatch: Any = None  # tasks.webhook_events_dispatch: a batch of events
    deliver: Any = None  # tasks.webhook_deliver: one delivery's attempt
    endpoint_disabled_email: Any = None  # tasks.webhook_endpoint_disabled_email

    def provide(self, *, events_dispatch, deliver, endpoint_disabled_email) -> None:
        self.events_dispatch = events_dispatch
        self.deliver = deliver
        self.endpoint_disabled_email = endpoint_disabled_email


QUEUE = _Queue()
