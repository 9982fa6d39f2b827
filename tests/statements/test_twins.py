"""Every hand-written statement against the ORM query it replaces (`ticketing.twins`): both run
on the same PostgreSQL rows, inside a savepoint each, and must return and write the same.

Each app's cases live in `tests/statements/<app>_cases.py` as `CASES`, keyed by the statement's
dotted name."""

import importlib
import pkgutil

import pytest
from django.db import transaction
from django.utils.module_loading import autodiscover_modules

import tests.statements
from ticketing.twins import REGISTRY

autodiscover_modules("statements")

CASES = {}
for module in pkgutil.iter_modules(tests.statements.__path__):
    if module.name.endswith("_cases"):
        CASES |= importlib.import_module(f"tests.statements.{module.name}").CASES

TWINNED = sorted(name for name, twin in REGISTRY.items() if twin.orm is not None)


def test_statements_are_declared():
    assert "checkin.statements.scan_claim" in TWINNED


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_statement_has_a_twin_with_cases_or_says_why_not(name):
    twin = REGISTRY[name]
    if twin.orm is None:
        assert len(twin.why_no_orm) > 20, "say why the ORM cannot express it"
    else:
        assert name in CASES, f"no cases in tests/statements for {name}"


def test_no_cases_for_statements_that_are_gone():
    assert set(CASES) <= set(TWINNED)


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("name", TWINNED)
def test_statement_matches_its_orm_twin(name):
    twin = REGISTRY[name]
    cases = CASES[name]()
    assert cases
    for case in cases:
        outcomes = []
        for function in (twin.statement, twin.orm):
            savepoint = transaction.savepoint()
            returned = function(**case.arguments())
            outcomes.append((case.result(returned), case.state()))
            transaction.savepoint_rollback(savepoint)
        assert outcomes[0] == outcomes[1], case.label
