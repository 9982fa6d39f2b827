"""Who renders the data of an event a change's statement recorded: a function per event type.

A statement cannot build the API's representation of what it changed, so it records the
changed rows (`WebhookEvent.source`) and the dispatch renders the data from them
(`outbox.webhook_events_complete`). The app whose statements record a type knows how to render
it, and it sits above this one (webhooks imports no app that sends events): it registers its
renderer here from its `AppConfig.ready()`, so the mapping is in code, fixed when the process
starts, and every process (web or worker) has the same.
"""

from __future__ import annotations

from collections.abc import Callable

from .models import WebhookEvent

# A renderer takes events of its type recorded by a statement (their `source` set, their data
# None) and returns each one's data by event id, for all of them in one pass.
Renderer = Callable[[list[WebhookEvent]], dict[str, dict]]

_RENDERERS: dict[str, Renderer] = {}


def renderer_register(*, types: list[str], render: Renderer) -> None:
    """Render the events of `types` a statement recorded with `render`. One renderer a type:
    registering another for a type that has one is a mistake, and fails."""
    for type in types:
        assert type in WebhookEvent.Type.values, type
        assert _RENDERERS.get(type, render) is render, f"{type} has a renderer already"
        _RENDERERS[type] = render


def renderer_for(type: str) -> Renderer:
    """The renderer of events of `type`. Raises: LookupError, if none is registered (an event
    recorded without its data that nothing can render: it must not go out with none)."""
    try:
        return _RENDERERS[type]
    except KeyError:
        raise LookupError(f"no renderer registered for webhook events of type {type}") from None
