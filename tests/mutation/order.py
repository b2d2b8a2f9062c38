"""A pytest plugin for the mutation run (``-p tests.mutation.order`` in ``[tool.mutmut]``):
the check of what the codec builds at import runs first, whatever the test files are named.

mutmut credits what runs while the test modules are imported (the codec builds its registry
then) to the first test it runs, and runs a mutant of that code against that test alone. The
first test runs every check of the codec (docs/mutation.md)."""

from __future__ import annotations

import pytest

FIRST = "tests/core/test_codec_registry.py::test_what_the_codec_builds_at_import_is_checked_by_every_codec_test"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move :data:`FIRST` to the front when it was collected."""
    for i, item in enumerate(items):
        if item.nodeid == FIRST:
            items.insert(0, items.pop(i))
            return
