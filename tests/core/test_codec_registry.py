"""What the codec builds when it is imported (its registry of record types, which classes go to
the encoder as they are, which ones msgspec decodes by itself), checked by every check of
``test_codec_edges.py`` run as one test.

The mutation run makes this its first test (``tests/mutation/order.py``): mutmut credits the code
that runs while the test modules are imported to the first test it runs, and tests a mutant of
that code against that test alone, so the first test has to check all of it."""

from __future__ import annotations

import inspect
import itertools
from typing import Any

from . import test_codec_edges as edges


def _calls(test: Any) -> list[dict[str, Any]]:
    """The arguments ``test`` is run with: one call, or one per combination of its
    ``parametrize`` marks."""
    marks = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
    grids = []
    for mark in marks:
        names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
        rows = [v.values if hasattr(v, "values") else v for v in mark.args[1]]
        grids.append([dict(zip(names, row if len(names) > 1 else (row,))) for row in rows])
    return [dict(kv for part in combo for kv in part.items()) for combo in itertools.product(*grids)]


def test_what_the_codec_builds_at_import_is_checked_by_every_codec_test() -> None:
    tests = [(name, fn) for name, fn in vars(edges).items() if name.startswith("test_") and inspect.isfunction(fn)]
    assert len(tests) > 30
    for name, fn in tests:
        params = inspect.signature(fn).parameters
        for kwargs in _calls(fn):
            if set(kwargs) != set(params):  # a fixture this runner does not give
                continue
            fn(**kwargs)
