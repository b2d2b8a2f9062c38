"""Helpers shared by the suspension tests: a scripted model on the test clock, and a reply that
calls tools by id."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from clocks import clock

from interpreters import ScriptedModel
from interpreters.streams.scripted import Reply

__all__ = ["calls", "model", "script_module"]


def model(*replies: Any) -> ScriptedModel:
    """A scripted model giving ``replies`` in order, its timestamps from the test clock."""
    return ScriptedModel(list(replies), clock=clock)


def calls(*specs: tuple[str, dict[str, Any], str]) -> Reply:
    """A reply that calls tools: ``(name, arguments, tool call id)`` each."""
    return Reply(tool_calls=list(specs))


def script_module(name: str) -> Any:
    """The script ``tests/scripts/<name>.py`` imported as a module (its functions, for the tests
    that also run it in another process)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
