"""The tools the tests' runs call, defined once.

Module-level ``@tool`` s, so Ray pickles them by reference (see tests/support/clocks.py). ``add`` returns
an int (its result's ``details`` hold it), ``add_text`` the sum as text (no ``details``); both
are named ``add`` for the model.
"""

from __future__ import annotations

from interpreters import tool

__all__ = ["add", "add_text", "multiply"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="add")
def add_text(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b
