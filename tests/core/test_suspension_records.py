"""A suspension as a record: read back from its JSON it is the suspension that was written, frozen
all through (every free-form value, tool arguments, details, what a call waits with, is a
``FrozenDict`` or a tuple again, never a plain ``dict`` or ``list`` that a hook or a later step
could change), and the run resumed from it goes on as the original would; it matches
(``Suspension.is_at``) only its own point of its run.

Written against the survivors of the mutation sample (docs/mutation.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
from pyrsistent import PVector

from agentcore import (
    AgentContext,
    AgentTool,
    AgentToolResult,
    Approve,
    Model,
    Resumed,
    Started,
    StreamEventReceived,
    TextContent,
    ToolFinished,
    UserMessage,
    initial_state,
    replace,
    step,
)
from agentcore.codec import dumps, from_json, loads, to_json
from agentcore.effects import ExecuteTool
from agentcore.frozen import FrozenDict, freeze
from agentcore.state import Finished, LoopState, Suspended, Suspension

from .world import call, reply, stream_events

GATED = AgentTool("gated", "gated", "", {"type": "object"}, print, requires_approval=True)
FREE = AgentTool("free", "free", "", {"type": "object"}, print)
ARGS = {"path": "a.txt", "opts": {"modes": ["r", "w"], "deep": {"n": 1}}}
DETAILS = {"lines": [1, 2], "meta": {"k": "v"}}
FROZEN_ARGS, FROZEN_DETAILS = freeze(ARGS), freeze(DETAILS)


def suspended() -> LoopState:
    """A sequential batch: ``f`` ran (its result has nested details), ``g`` waits for approval."""
    s = initial_state(AgentContext("", (), (FREE, GATED)), model=Model(id="m"), tool_execution="sequential")
    s, effects = step(s, Started((UserMessage("go", timestamp=1),), 1)).unwrap()
    llm = effects[-1]
    for ev in stream_events(reply(call("f", "free", **ARGS), call("g", "gated", **ARGS))):
        s, effects = step(s, StreamEventReceived(llm.id, ev, 2)).unwrap()
    execute = [e for e in effects if isinstance(e, ExecuteTool)][0]
    s, _ = step(s, ToolFinished(execute.id, AgentToolResult((TextContent("ok"),), details=DETAILS), 3)).unwrap()
    assert isinstance(s.phase, Suspended)
    return s


def values(value: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    """Every value inside ``value``, with its path: records' fields, tuples', vectors' and
    mappings' items."""
    yield path, value
    if isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            yield from values(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, (tuple, list, PVector)):
        for i, item in enumerate(value):
            yield from values(item, f"{path}[{i}]")
    elif isinstance(value, dict) or isinstance(value, FrozenDict):
        for key, item in value.items():
            yield from values(item, f"{path}.{key}")


def unfrozen(value: Any) -> list[str]:
    return [f"{path}: {type(v).__name__}" for path, v in values(value)
            if isinstance(v, (list, set, bytearray)) or (isinstance(v, dict) and type(v) is not FrozenDict)]


def test_a_suspension_read_back_from_json_is_frozen_all_through() -> None:
    s = suspended()
    original = Suspension(s, s.phase.pending)  # type: ignore[union-attr]
    assert unfrozen(original) == []
    for back in (from_json(to_json(original)), loads(dumps(original))):
        assert back == original
        assert unfrozen(back) == []
        hash(back)  # frozen all through: no dict or list anywhere in it
        phase = back.state.phase
        assert type(back.pending[0].arguments) is FrozenDict and back.pending[0].arguments == FROZEN_ARGS
        assert type(phase.pending[0].arguments) is FrozenDict
        done, waiting = phase.batch.slots
        assert type(waiting.args) is FrozenDict and type(waiting.call.arguments) is FrozenDict
        assert type(done.result.details) is FrozenDict and done.result.details == FROZEN_DETAILS
        assert type(done.message.details) is FrozenDict
        assert type(done.args["opts"]["modes"]) is tuple


def test_a_run_resumed_from_the_json_runs_the_call_with_the_frozen_arguments_it_showed() -> None:
    s = suspended()
    back = loads(dumps(Suspension(s, s.phase.pending)))  # type: ignore[union-attr]
    resumed, effects = step(back.state, Resumed((("g", Approve()),), 5)).unwrap()
    (execute,) = [e for e in effects if isinstance(e, ExecuteTool)]
    assert type(execute.args) is FrozenDict and execute.args == back.pending[0].arguments == FROZEN_ARGS
    assert (resumed, effects) == step(s, Resumed((("g", Approve()),), 5)).unwrap()


def test_a_suspension_is_at_its_own_state_and_no_other() -> None:
    s = suspended()
    suspension = Suspension(s, s.phase.pending)  # type: ignore[union-attr]
    assert suspension.is_at(s) and suspension.is_at(loads(dumps(s)))
    phase = s.phase
    assert isinstance(phase, Suspended)
    # the same new messages, but not suspended, or suspended on other calls
    assert not suspension.is_at(replace(s, phase=Finished()))
    assert not suspension.is_at(replace(s, phase=replace(phase, pending=phase.pending[:0])))
    # suspended on the same calls, after other new messages
    other = replace(s, run=replace(s.run, new_messages=s.run.new_messages.append(UserMessage("more"))))
    assert not suspension.is_at(other)
