"""A run that suspends with something in each part of its state, for the tests of a suspension
as data (tests/core/test_suspension_data.py, tests/interpreters/test_suspension_checked.py).

Turn one looks (``look``, whose result's ``details`` hold what the test asks for); turn two asks
for ``ls`` (runs at once), ``rm`` (needs an approval) and ``ask`` (deferred), then the calls in
:data:`EXTRA` (a test may add one, as the model's raw JSON text): the run suspends on ``c2`` and
``c4``. In sequential mode it suspends on ``c2`` alone, before ``c3`` and ``c4`` are
reached; ``ls`` comes first there so that the batch has an emitted result when it suspends. The
model quotes every tool result when it has them all.

The stored version-1 suspensions in tests/data (``suspension-v1-*.json``) were written by the
library at format version 1 from :func:`suspend` (with ``details=None``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, AgentToolResult, Approve, Model, TextContent, ToolOutput
from interpreters import ScriptedModel, tool
from interpreters.streams.scripted import Reply, ScriptedCall
from tests.support.clocks import clock

__all__ = ["DATA", "DECISIONS", "EXTRA", "LOOKED", "RAN", "context", "config", "model", "reply", "suspend"]

DATA = Path(__file__).parents[1] / "data"
RAN: list[str] = []
LOOKED: list[Any] = [None]
"""What ``look`` puts in its result's ``details`` (set by a test)."""
EXTRA: list[ScriptedCall] = []
"""More calls of turn two (set by a test)."""
DECISIONS = {"c2": Approve(), "c4": ToolOutput("the attic")}


@tool
def look() -> AgentToolResult:
    """Look around."""
    return AgentToolResult([TextContent("a room")], details=LOOKED[0])


@tool(requires_approval=True)
def rm(path: str) -> str:
    """Remove a file."""
    RAN.append(f"rm {path}")
    return f"removed {path}"


@tool
def ls() -> str:
    """List the files."""
    RAN.append("ls")
    return "a.txt b.txt"


@tool(requires_approval=True)
def scale(factor: float | None) -> str:
    """Scale the picture (a transcript writes NaN and the infinities as null: the schema takes it)."""
    RAN.append(f"scale {factor}")
    return f"scaled by {factor}"


@tool(deferred=True)
def ask(question: str) -> str:
    """Ask a person."""
    raise AssertionError("a deferred tool is never executed")


def reply(ctx: Any, _index: int) -> Reply | str:
    assistants = sum(1 for m in ctx.messages if m.role == "assistant")
    if assistants == 0:
        return Reply(text="Let me look.", tool_calls=[ScriptedCall("look", {}, "c1")])
    if assistants == 1:
        return Reply(tool_calls=[ScriptedCall("ls", {}, "c3"), ScriptedCall("rm", {"path": "a.txt"}, "c2"),
                                 ScriptedCall("ask", {"question": "Where to?"}, "c4"), *EXTRA])
    seen = [f"{m.tool_call_id}={m.content[0].text}" for m in ctx.messages if m.role == "toolResult"]
    return "Done: " + ", ".join(seen)


def model() -> ScriptedModel:
    return ScriptedModel(reply, clock=clock)


def context() -> AgentContext:
    return AgentContext("You tidy up.", (), [look, rm, ls, scale, ask])


def config(mode: str = "parallel", **options: Any) -> AgentLoopConfig:
    return AgentLoopConfig(model=Model(id="tidy"), tool_execution=mode, **options)  # type: ignore[arg-type]


def suspend(mode: str = "parallel", **options: Any) -> Any:
    """Run (sync) to the suspension: the ``Suspension``."""
    from interpreters import agent_loop

    stream = agent_loop("Tidy up.", context(), config(mode), stream_fn=model(), clock=clock, **options)
    stream.result()
    assert stream.suspension is not None
    return stream.suspension
