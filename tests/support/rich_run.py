"""A recorded run with a line of every kind: each input type the core takes (hooks answered,
tools finished, failed and updated, prepared arguments, an approval checked and decided, a
suspension resumed into its transcript), streamed text, thinking and tool calls in step lines
and in runs of deltas, and the resume marker. For the tests of what a reader does with a
damaged line (tests/interpreters/transcript/test_damaged_steps.py).

    path = record(tmp_path / "rich.jsonl")                  # the transcript, resumed and finished
    config(), tools()                                      # what an LLM-only replay of it takes
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcore import (
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    Approve,
    Model,
    NextTurn,
    TextContent,
    UserMessage,
)
from agentcore.convert import default_convert_to_llm
from interpreters import ScriptedModel, agent_loop, resume_suspended
from interpreters.streams.scripted import Reply, ScriptedCall
from interpreters.transcript import TranscriptRecorder
from tests.support.clocks import TickingClock

__all__ = ["DECISIONS", "SUSPENDED", "config", "context", "model", "record", "tools"]

MODEL = Model(id="rich")
DECISIONS = {"g2": Approve()}


def _probe(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    on_update(AgentToolResult((TextContent(f"probing {args['x']}"),), details={"step": 1}))
    return AgentToolResult((TextContent(f"probed {args['x']}"),), details={"x": args["x"], "seen": [1, "two"]})


def _fail(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    raise RuntimeError(f"failed on {args['x']}")


def _gated(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult((TextContent(f"opened {args['x']}"),))


_X = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def tools() -> list[AgentTool]:
    return [AgentTool("probe", "Probe", "Probes.", _X, _probe, prepare_arguments=lambda a: {**a, "x": a.get("x", 0)}),
            AgentTool("fail", "Fail", "Fails.", _X, _fail),
            AgentTool("gated", "Gated", "Opens.", _X, _gated, requires_approval=lambda a: a["x"] > 0)]


def context() -> AgentContext:
    return AgentContext("You probe.", [UserMessage("earlier", timestamp=1)], tools())


def _replies(ctx: Any, _index: int) -> Reply | str:
    index = sum(1 for m in ctx.messages if m.role == "assistant")
    if index == 0:
        return Reply(thinking="Let me think about it.", text="Probing now.",
                     tool_calls=[ScriptedCall("probe", {"x": 1}, "p1"), ScriptedCall("fail", {"x": 2}, "f1")])
    if index == 1:
        return Reply(text="Gated ones.", tool_calls=[ScriptedCall("gated", {"x": 0}, "g0"),
                                                     ScriptedCall("gated", {"x": 1}, "g1"),
                                                     ScriptedCall("gated", {"x": 2}, "g2")])
    if index == 2:
        return Reply(text="One more.", tool_calls=[ScriptedCall("probe", {"x": 13}, "p2")])
    return "All done, " + "the answer is long enough to stream in several deltas. " * 3


def model() -> ScriptedModel:
    return ScriptedModel(_replies, clock=TickingClock(1000), chunk_size=7)


def config(polls: dict[str, int] | None = None) -> AgentLoopConfig:
    """``polls`` counts the steering and follow-up polls (share it between a run and its resume,
    as one LLM-only replay of both does)."""
    polls = {"steer": 0, "follow": 0} if polls is None else polls

    def steering() -> list[Any]:
        polls["steer"] += 1
        return [UserMessage("steer this way", timestamp=5)] if polls["steer"] == 2 else []

    def follow_ups() -> list[Any]:
        polls["follow"] += 1
        return [UserMessage("one more thing", timestamp=6)] if polls["follow"] == 1 else []

    def before(ctx: Any, signal: Any = None) -> Any:
        if ctx.tool_call.id == "p2":
            raise ValueError("before_tool_call refuses p2")
        return None

    def after(ctx: Any, signal: Any = None) -> Any:
        if ctx.tool_call.name == "probe":
            return AfterToolCallResult(details={"checked": True})
        return None

    def next_turn(ctx: Any) -> Any:
        return NextTurn(thinking_level="low") if ctx.message.content and len(ctx.new_messages) < 6 else None

    def decide(pending: Any) -> Any:
        return Approve() if pending.tool_call_id == "g1" else None

    return AgentLoopConfig(model=MODEL, transform_context=lambda messages, signal=None: list(messages),
                           convert_to_llm=default_convert_to_llm, get_steering_messages=steering,
                           get_follow_up_messages=follow_ups, before_tool_call=before, after_tool_call=after,
                           prepare_next_turn=next_turn, should_stop_after_turn=lambda ctx: False,
                           decide_tool_call=decide)


SUSPENDED: list[Any] = []
"""The suspension the last :func:`record` resumed, and the transcript as it was then (bytes)."""


def record(path: Path) -> Path:
    """The run, suspended on ``g2`` and resumed into the same transcript: ``path``."""
    polls = {"steer": 0, "follow": 0}
    stream = agent_loop("go", context(), config(polls), stream_fn=model(), clock=TickingClock(2000),
                        journal=TranscriptRecorder(path, context(), config(polls)))
    for _ in stream:
        pass
    suspension = stream.suspension
    assert suspension is not None and [p.tool_call_id for p in suspension.pending] == ["g2"]
    SUSPENDED[:] = [suspension, path.read_bytes()]
    resumed = resume_suspended(suspension, DECISIONS, context=context(), config=config(polls), stream_fn=model(),
                               clock=TickingClock(5000), transcript=path)
    for _ in resumed:
        pass
    assert resumed.suspension is None
    return path
