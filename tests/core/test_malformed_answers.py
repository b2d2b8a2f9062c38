"""``step`` is total: an answer whose fields hold what they cannot (a hook's result of the wrong
type, messages that are not a sequence, a tool result that is not one) is refused with a
rejection that names the field, and the state is left as it was; it never raises, and never takes
what would make a later step raise.

The interpreters check what the user's hooks and tools return before they feed it; these answers
reach the core from a driver of one's own or from a damaged transcript being replayed."""

from __future__ import annotations

import random
from typing import Any

import msgspec
import pytest

from agentcore import (
    AfterToolCallDecided,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentToolResult,
    Approve,
    BeforeToolCallDecided,
    BeforeToolCallResult,
    ContextConverted,
    ContextTransformed,
    Continued,
    Deny,
    Emit,
    FollowUpsPolled,
    Model,
    NextTurn,
    NextTurnPrepared,
    Rejection,
    RunEnded,
    RunSuspended,
    Started,
    SteeringPolled,
    StreamEventReceived,
    TextContent,
    ToolFinished,
    ToolOutput,
    Usage,
    awaits,
    initial_state,
    replace,
    step,
)
from agentcore.effects import AfterToolCall, BeforeToolCall, ExecuteTool, PrepareNextTurn
from agentcore.state import Finished, LoopState, Suspended

from .test_every_phase_and_input import HOOKS, TOOLS, USER, answers, decisions, every_input
from .world import call, reply, stream_events


def first(hooks: frozenset[str], *kinds: type) -> tuple[LoopState, Any]:
    """A run with ``hooks`` answered validly until it asks for an effect of one of ``kinds``."""
    s = initial_state(AgentContext("", (), TOOLS), model=Model(id="m"), hooks=hooks)
    s, effects = step(s, Started((USER,), 1)).unwrap()
    todo = [e for e in effects if not isinstance(e, Emit)]
    while todo:
        effect = todo.pop(0)
        if isinstance(effect, kinds):
            return s, effect
        for inp in answers(effect, 1):
            s, effects = step(s, inp).unwrap()
            todo += [e for e in effects if not isinstance(e, Emit)]
    raise AssertionError(f"no {kinds} asked")


def refused(s: LoopState, inp: Any) -> str:
    rejection = step(s, inp).failure()
    assert isinstance(rejection, Rejection) and rejection.phase == s.phase.name and rejection.input == inp.type
    return rejection.reason


# --------------------------------------------------------------------------- the exact rejections


@pytest.mark.parametrize(("prompts", "shown"), [(None, "None (None)"), ("hi", "a str ('hi')"), (3, "an int (3)")])
def test_started_with_prompts_that_are_not_a_sequence_is_refused(prompts: Any, shown: str) -> None:
    s = initial_state(AgentContext(), model=Model(id="m"))
    assert refused(s, Started(prompts, 1)) == f"the prompts of started is {shown}, not a tuple of messages"


@pytest.mark.parametrize(("hook", "effect", "answer", "name"), [
    ("get_steering_messages", "PollSteering", SteeringPolled, "steering_polled"),
    ("transform_context", "TransformContext", ContextTransformed, "context_transformed"),
    ("convert_to_llm", "ConvertToLlm", ContextConverted, "context_converted"),
])
def test_messages_that_are_not_a_sequence_are_refused(hook: str, effect: str, answer: type, name: str) -> None:
    s = initial_state(AgentContext("", (USER,)), model=Model(id="m"), hooks=frozenset({hook}))
    s, effects = step(s, Continued(1)).unwrap()
    assert type(effects[-1]).__name__ == effect
    for value, shown in ((None, "None (None)"), (7, "an int (7)"), ("text", "a str ('text')")):
        assert refused(s, answer(effects[-1].id, value, 2)) == (
            f"the messages of {name} is {shown}, not a tuple of messages")
    s, effects = step(s, answer(effects[-1].id, [USER], 2)).unwrap()  # a list is a sequence
    assert effects[-1].type == "call_llm"


def test_follow_ups_that_are_not_a_sequence_are_refused() -> None:
    s = initial_state(AgentContext(), model=Model(id="m"), hooks=frozenset({"get_follow_up_messages"}))
    s, effects = step(s, Started((USER,), 1)).unwrap()
    llm = effects[-1]
    for ev in stream_events(reply("done")):
        s, effects = step(s, StreamEventReceived(llm.id, ev, 2)).unwrap()
    assert effects[-1].type == "poll_follow_ups"
    assert refused(s, FollowUpsPolled(effects[-1].id, None, 3)) == (  # type: ignore[arg-type]
        "the messages of follow_ups_polled is None (None), not a tuple of messages")


@pytest.mark.parametrize(("value", "shown"), [
    ("junk", "a str ('junk')"), (3, "an int (3)"),
    (AfterToolCallResult(), "an AfterToolCallResult (AfterToolCallResult("),
])
def test_before_tool_call_answering_what_is_not_its_result_is_refused(value: Any, shown: str) -> None:
    s, before = first(frozenset({"before_tool_call"}), BeforeToolCall)
    reason = refused(s, BeforeToolCallDecided(before.id, value, 3))
    assert reason.startswith(f"the result of before_tool_call_decided is {shown}")
    assert reason.endswith(", not a BeforeToolCallResult or None")


@pytest.mark.parametrize(("value", "text"), [
    ("junk", "the result of after_tool_call_decided is a str ('junk'), not an AfterToolCallResult or None"),
    (AfterToolCallResult(content=3),  # type: ignore[arg-type]
     "the content of after_tool_call_decided's result is an int (3), not a tuple of content blocks, a str or None"),
])
def test_after_tool_call_answering_what_is_not_its_result_is_refused(value: Any, text: str) -> None:
    s, after = first(frozenset({"after_tool_call"}), AfterToolCall)
    assert refused(s, AfterToolCallDecided(after.id, value, 3)) == text


@pytest.mark.parametrize(("value", "shown"), [
    (None, "None (None)"), ("done", "a str ('done')"), ({"content": "x"}, "a dict ({'content': 'x'})"),
])
def test_a_tool_finished_whose_result_is_not_a_tool_result_is_refused(value: Any, shown: str) -> None:
    s, execute = first(frozenset(), ExecuteTool)
    assert refused(s, ToolFinished(execute.id, value, 3)) == (
        f"the result of tool_finished is {shown}, not an AgentToolResult")


@pytest.mark.parametrize(("value", "text"), [
    (3, "the next_turn of next_turn_prepared is an int (3), not a NextTurn or None"),
    (NextTurn(context=3), "the context of next_turn_prepared's next_turn is an int (3), not an AgentContext or None"),  # type: ignore[arg-type]
    (NextTurn(model="big"), "the model of next_turn_prepared's next_turn is a str ('big'), not a Model or None"),  # type: ignore[arg-type]
    (NextTurn(thinking_level="max"),  # type: ignore[arg-type]
     "the thinking_level of next_turn_prepared's next_turn is a str ('max'), not one of off, minimal, low, medium, "
     "high, xhigh, or None"),
])
def test_prepare_next_turn_answering_what_is_not_a_next_turn_is_refused(value: Any, text: str) -> None:
    s, prepare = first(frozenset({"prepare_next_turn"}), PrepareNextTurn)
    assert refused(s, NextTurnPrepared(prepare.id, value, 3)) == text


@pytest.mark.parametrize("usage", ["lots", 3, Usage(total_tokens=None, cost=None)])  # type: ignore[arg-type]
def test_usage_that_is_not_a_usage_adds_nothing_to_the_budgets(usage: Any) -> None:
    s = initial_state(AgentContext("", (), TOOLS), AgentLoopConfig(model=Model(id="m"), max_total_tokens=5))
    s, effects = step(s, Started((USER,), 1)).unwrap()
    llm = effects[-1]
    for ev in stream_events(replace(reply(call("c", "echo")), usage=usage)):
        s, effects = step(s, StreamEventReceived(llm.id, ev, 2)).unwrap()
    execute = effects[-1]
    s, effects = step(s, ToolFinished(execute.id, AgentToolResult((TextContent("ok"),), usage=usage), 3)).unwrap()
    assert effects[-1].type == "call_llm" and (s.run.total_tokens, s.run.cost_usd) == (0, 0.0)


# --------------------------------------------------------------------------- every field, every phase

BAD: tuple[Any, ...] = (None, 3, "x", object(), (3,), {"k": 1}, -1.5, True)
RECORDS: dict[str, tuple[Any, ...]] = {
    "result": (AgentToolResult(), BeforeToolCallResult(), AfterToolCallResult()),
    "next_turn": (NextTurn(),),
    "decision": (ToolOutput("x"), Approve(), Deny()),
}


def spoiled(inp: Any) -> list[Any]:
    """``inp`` with each field (but its id) set to each bad value, and with each field of a record
    it may hold set to each bad value."""
    def spoil(record: Any, name: str, value: Any) -> list[Any]:
        try:
            return [msgspec.structs.replace(record, **{name: value})]
        except (TypeError, ValueError):  # its constructor refuses it: it never reaches step
            return []

    out = []
    for name in inp.__struct_fields__:
        if name == "id":
            continue
        held = getattr(inp, name)
        values = list(BAD)
        for record in RECORDS.get(name, ()) + ((held,) if isinstance(held, msgspec.Struct) else ()):
            values += [v for field in record.__struct_fields__ for bad in BAD for v in spoil(record, field, bad)]
        out += [v for value in values for v in spoil(inp, name, value)]
    return out


def outstanding_of(effects: tuple[Any, ...], into: dict[int, Any]) -> None:
    for e in effects:
        if not isinstance(e, (Emit, RunEnded, RunSuspended)) and e.type != "cancel_llm":
            into[e.id] = e


def closing_stream(s: LoopState, inp: Any) -> bool:
    """``inp`` is a stream event other than the final one, and the run, aborted while the reply
    streamed, waits for that final event only."""
    return (s.phase.name == "streaming" and s.run.aborted and isinstance(inp, StreamEventReceived)
            and inp.event.type not in ("done", "error"))


def finish(s: LoopState, outstanding: dict[int, Any]) -> LoopState:
    """Answer what the run waits on, validly, until it ends (every step must be taken)."""
    outstanding = dict(outstanding)
    for _ in range(300):
        if s.phase.name in ("finished", "idle"):  # idle: an abort before the start
            return s
        if isinstance(s.phase, Suspended):
            s, effects = step(s, decisions(s.phase, 1)).unwrap()
            outstanding_of(effects, outstanding)
            continue
        ids = [i for i in sorted(outstanding) if awaits(s, i)]
        assert ids, f"the run waits in {s.phase.name} on nothing it asked for"
        for inp in answers(outstanding.pop(ids[0]), 0):
            if isinstance(s.phase, Finished):
                break
            if closing_stream(s, inp):
                continue  # aborted while the reply streams: only its final event is taken
            s, effects = step(s, inp).unwrap()
            outstanding_of(effects, outstanding)
    raise AssertionError("the run did not end")


def probe(s: LoopState, outstanding: dict[int, Any]) -> int:
    """Feed every spoiled answer to ``s``: each is refused or taken, never raises, and a run that
    took one still ends. Returns how many were taken."""
    ids = [i for i in sorted(outstanding) if awaits(s, i)] or [1]
    taken = 0
    for inp in every_input(ids[0]):
        for bad in spoiled(inp):
            result = step(s, bad)
            if type(result).__name__ == "Success":
                taken += 1
                after, effects = result.unwrap()
                more = dict(outstanding)
                outstanding_of(effects, more)
                finish(after, more)
    return taken


def test_whatever_an_answers_fields_hold_step_refuses_or_takes_it_and_the_run_still_ends() -> None:
    rng = random.Random(23)
    probed: set[str] = set()
    for _ in range(10):
        mode = rng.choice(["parallel", "sequential"])
        s = initial_state(AgentContext("sys", rng.choice([(), (USER,)]), TOOLS), model=Model(id="m"), hooks=HOOKS,
                          tool_execution=mode)  # type: ignore[arg-type]
        probe(s, {})
        s, effects = step(s, Started((USER,), 1)).unwrap()
        outstanding: dict[int, Any] = {}
        outstanding_of(effects, outstanding)
        for pick in [rng.randrange(10) for _ in range(rng.randrange(10, 30))]:
            if isinstance(s.phase, Finished):
                break
            probe(s, outstanding)
            probed.add(s.phase.name)
            ids = [i for i in sorted(outstanding) if awaits(s, i)]
            if isinstance(s.phase, Suspended):
                inputs = [decisions(s.phase, pick)]
            else:
                inputs = answers(outstanding[ids[pick % len(ids)]], pick)
            for inp in inputs:
                if not isinstance(s.phase, Finished):
                    s, effects = step(s, inp).unwrap()
                    outstanding_of(effects, outstanding)
    assert probed == {"awaiting_steering", "awaiting_follow_ups", "awaiting_transform", "awaiting_convert",
                      "streaming", "running_tools", "suspended", "awaiting_next_turn", "awaiting_stop_decision"}
