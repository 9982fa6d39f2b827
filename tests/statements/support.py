"""What a statement's cases give the twin test: fresh arguments per run, and what to compare."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def _same(value: Any) -> Any:
    return value


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class Case:
    """One call of a statement and of its ORM twin on the same rows.

    `arguments` is called before each of the two runs (a run may change what it is given, such
    as an unsaved instance it saves); `result` turns what a run returned into something the two
    runs can agree on; `state` reads what a run wrote.
    """

    label: str
    arguments: Callable[[], dict[str, Any]]
    result: Callable[[Any], Any] = _same
    state: Callable[[], Any] = field(default=_nothing)
