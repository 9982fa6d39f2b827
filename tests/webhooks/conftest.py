"""The webhook fixtures, defined in `helpers` so that other test packages can use them too."""

from .helpers import (  # noqa: F401
    manager,
    private_urls_allowed,
    receiver,
    shared_database,
    workers,
)
