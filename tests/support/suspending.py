"""Helpers shared by the suspension tests: a scripted model on the test clock, and a reply that
calls tools by id."""

from __future__ import annotations

from typing import Any

from interpreters import ScriptedModel
from interpreters.streams.scripted import Reply
from tests.support.clocks import clock

__all__ = ["calls", "model"]


def model(*replies: Any) -> ScriptedModel:
    """A scripted model giving ``replies`` in order, its timestamps from the test clock."""
    return ScriptedModel(list(replies), clock=clock)


def calls(*specs: tuple[str, dict[str, Any], str]) -> Reply:
    """A reply that calls tools: ``(name, arguments, tool call id)`` each."""
    return Reply(tool_calls=list(specs))
