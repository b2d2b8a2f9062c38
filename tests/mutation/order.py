"""A pytest plugin for the mutation run (``-p tests.mutation.order`` in ``[tool.mutmut]``):
the codec's registry check runs first, whatever the test files are named.

mutmut credits what runs while the test modules are imported (the codec builds its registry
then) to the first test it runs, and runs a mutant of that code against that test alone. The
first test is the one that checks every registered type (docs/mutation.md)."""

from __future__ import annotations

import pytest

FIRST = "tests/core/test_codec_edges.py::test_every_record_type_has_its_tag_and_comes_back_equal_through_json_text"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move :data:`FIRST` to the front when it was collected."""
    for i, item in enumerate(items):
        if item.nodeid == FIRST:
            items.insert(0, items.pop(i))
            return
