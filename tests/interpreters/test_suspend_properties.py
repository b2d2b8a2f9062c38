"""Properties of suspension over random conversations.

Random replies call tools that run at once, require approval, require it for some arguments or
are deferred, in parallel or sequential batches; each call gets a random decision. One run gets
every decision at once (``decide_tool_call``). Another gets a random part of them at once and
the rest through suspensions, resumed from the suspension's JSON on a random interpreter, the
transcript continued at each resume. Both end with the same messages, and a strict replay of
the recorded suspend → resume transcript gives the live run's events and messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import AgentContext, AgentLoopConfig, Approve, Deny, Model, ToolOutput
from agentcore.codec import from_json, to_json
from interpreters import ScriptedModel, tool
from interpreters.replay import replay
from interpreters.streams.scripted import Reply, ScriptedCall
from interpreters.transcript import TranscriptRecorder
from tests.support.clocks import clock
from tests.support.flavours import ASYNCIO, SYNC


@tool
def plain(x: int) -> str:
    """Runs at once."""
    return f"plain {x}"


@tool(requires_approval=True)
def gated(x: int) -> str:
    """Always asks."""
    return f"gated {x}"


@tool(requires_approval=lambda args: args["x"] % 2 == 1)
def odd(x: int) -> str:
    """Asks for odd numbers."""
    return f"odd {x}"


@tool(deferred=True)
def later(x: int) -> str:
    """Answered from outside."""
    raise AssertionError("never executed")


TOOLS = [plain, gated, odd, later]
NAMES = [t.name for t in TOOLS]

call = st.tuples(st.sampled_from(NAMES), st.integers(0, 9))
conversation = st.lists(st.lists(call, min_size=1, max_size=3), min_size=1, max_size=3)


def decision_for(name: str, x: int, pick: int) -> Any:
    if name == "later":
        return [ToolOutput(f"out {x}"), ToolOutput(f"failed {x}", is_error=True), Deny(f"no {x}")][pick % 3]
    return [Approve(), Approve(arguments={"x": x + 100}), Deny(f"no {x}"), Deny()][pick % 4]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(conversation, st.sampled_from(["parallel", "sequential"]), st.data())
def test_suspending_anywhere_gives_the_messages_of_one_run_with_the_decisions_at_once(
        tmp_path_factory: Any, turns: list[list[tuple[str, int]]], mode: str, data: st.DataObject) -> None:
    replies: list[Any] = []
    decisions: dict[str, Any] = {}
    now: set[str] = set()
    for t, calls in enumerate(turns):
        scripted = []
        for i, (name, x) in enumerate(calls):
            call_id = f"t{t}c{i}"
            scripted.append(ScriptedCall(name, {"x": x}, call_id))
            decisions[call_id] = decision_for(name, x, data.draw(st.integers(0, 11), label=f"decision {call_id}"))
            if data.draw(st.booleans(), label=f"at once {call_id}"):
                now.add(call_id)
        replies.append(Reply(tool_calls=scripted))
    replies.append("done")
    context = AgentContext("sys", (), TOOLS)

    def config(decide: Any) -> AgentLoopConfig:
        return AgentLoopConfig(model=Model(id="m"), tool_execution=mode, decide_tool_call=decide)

    # one run, every decision at once
    _, expected, suspension = SYNC.start_suspending(
        "go", context, config(lambda p: decisions[p.tool_call_id]), ScriptedModel(replies, clock=clock), clock=clock)
    assert suspension is None

    # the same, a random part decided at once and the rest through suspensions
    path = Path(tmp_path_factory.mktemp("run")) / "run.jsonl"
    model = ScriptedModel(replies, clock=clock)
    cfg = config(lambda p: decisions[p.tool_call_id] if p.tool_call_id in now else None)
    first = data.draw(st.sampled_from([SYNC, ASYNCIO]), label="first interpreter")
    events, messages, suspension = first.start_suspending("go", context, cfg, model, clock=clock,
                                                          journal=TranscriptRecorder(path, context, cfg))
    while suspension is not None:
        assert events[-1].type == "agent_suspended"
        assert all(p.tool_call_id not in now for p in suspension.pending)
        stored = from_json(json.loads(json.dumps(to_json(suspension))))
        flavour = data.draw(st.sampled_from([SYNC, ASYNCIO]), label="resumed with")
        more, messages, suspension = flavour.resume(
            stored, {p.tool_call_id: decisions[p.tool_call_id] for p in stored.pending}, context, cfg, model,
            clock=clock, transcript=path)
        events += more
    assert events[-1].type == "agent_end"
    assert messages == expected

    recorded = replay(path)
    assert recorded.finished and recorded.events == events and recorded.messages == messages
