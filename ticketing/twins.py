"""How hand-written SQL is declared: each statement in its app's `statements.py`, beside the ORM
query it replaces, and registered with it here.

`@replaces(orm_twin)` on a statement's function records the pair; one parametrized test
(tests/statements/test_twins.py) runs every registered pair on PostgreSQL against the same rows
and compares what they return and write, so a statement cannot drift from the ORM meaning it
stands for. A statement the ORM cannot express at all (a server probe) says so with
`@without_orm_twin(why)`.
The architecture test refuses SQL in any other module.

Rows are read by column name (`fetch_dicts`, `fetch_dict`), never by position.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Twin:
    """A hand-written statement and the ORM query it replaces."""

    name: str
    statement: Callable[..., Any]
    orm: Callable[..., Any] | None
    why_no_orm: str = ""


REGISTRY: dict[str, Twin] = {}


def _name(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def replaces(orm: Callable[..., Any]) -> Callable[[F], F]:
    """Declare the decorated function as the statement that replaces `orm`, which takes the
    same arguments and means the same."""

    def register(statement: F) -> F:
        REGISTRY[_name(statement)] = Twin(_name(statement), statement, orm)
        return statement

    return register


def without_orm_twin(why: str) -> Callable[[F], F]:
    """Declare the decorated function as a statement the ORM cannot express, and why."""

    def register(statement: F) -> F:
        REGISTRY[_name(statement)] = Twin(_name(statement), statement, None, why)
        return statement

    return register


def fetch_dicts(cursor) -> list[dict[str, Any]]:
    """The cursor's remaining rows, each by column name."""
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def fetch_dict(cursor) -> dict[str, Any] | None:
    """The cursor's next row by column name, or None."""
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip((column[0] for column in cursor.description), row, strict=True))
