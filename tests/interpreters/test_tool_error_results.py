"""A tool's error result without raising: ``AgentToolResult(is_error=True)``, under both
interpreters, recorded and replayed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, AgentToolResult, Model, TextContent
from interpreters import ScriptedModel, tool
from interpreters.replay import replay
from interpreters.streams.scripted import tool_call

CONFIG = AgentLoopConfig(model=Model(id="m"))


@tool
def lookup(city: str) -> AgentToolResult:
    """Look a city up."""
    return AgentToolResult((TextContent(f"no such city: {city}"),), {"code": 404, "city": city}, is_error=True)


def test_an_error_result_keeps_its_details_and_the_model_sees_an_error(flavour: Any, tmp_path: Path) -> None:
    ctx = AgentContext("", [], [lookup])
    model = ScriptedModel([tool_call("lookup", {"city": "Atlantis"}), "It does not exist."])
    events, messages = flavour.record(tmp_path / "run.jsonl", "Where?", ctx, CONFIG, model)
    result = messages[2]
    assert (result.role, result.is_error, result.text) == ("toolResult", True, "no such city: Atlantis")
    assert dict(result.details) == {"code": 404, "city": "Atlantis"}
    end = next(e for e in events if e.type == "tool_execution_end")
    assert end.is_error is True and end.result.is_error is True
    assert model.requests[1].context.messages[2].is_error is True  # what the model is shown
    assert messages[-1].text == "It does not exist."
    assert replay(tmp_path / "run.jsonl").messages == messages
    assert '"is_error":true' in (tmp_path / "run.jsonl").read_text()
