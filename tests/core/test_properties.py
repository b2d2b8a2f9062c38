"""Hypothesis properties of the core: totality, determinism, one result per tool call, event
nesting, chunking independence, codec round trips."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import (
    AbortRequested,
    AgentContext,
    AgentToolResult,
    AssistantMessage,
    Model,
    Started,
    SteeringPolled,
    StreamEventReceived,
    StreamFailed,
    TextContent,
    ToolFailed,
    ToolFinished,
    ToolResultMessage,
    ToolSpec,
    ToolUpdated,
    UserMessage,
    initial_state,
    step,
)
from agentcore.codec import from_json, to_json
from tests.support.scripts import script_env

from .world import World, call, reply

ECHO = ToolSpec("echo", parameters={"type": "object", "properties": {"text": {"type": "string"}}})
SEQ = ToolSpec("seq", parameters={"type": "object"}, execution_mode="sequential")

# --------------------------------------------------------------------------- strategies

texts = st.text(alphabet="abc xyz", min_size=0, max_size=12)


@st.composite
def tool_calls(draw: Any, turn: int) -> Any:
    n = draw(st.integers(1, 3))
    calls = []
    for i in range(n):
        name = draw(st.sampled_from(["echo", "echo", "seq", "missing"]))
        args = draw(st.sampled_from([{"text": "a"}, {"text": 1}, {}]))
        calls.append(call(f"t{turn}_{i}", name, **args))
    return calls


@st.composite
def replies(draw: Any) -> list[Any]:
    out: list[Any] = []
    for turn in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["text", "tools", "tools", "error", "length", "fail"]))
        if kind == "text":
            out.append(reply(draw(texts) or "t"))
        elif kind == "tools":
            out.append(reply(draw(texts), *draw(tool_calls(turn))))
        elif kind == "length":
            out.append(reply(*draw(tool_calls(turn)), stop="length"))
        elif kind == "error":
            out.append(reply("", stop="error", error="overloaded"))
        else:
            out.append(RuntimeError("reset"))
    out.append(reply("the end"))
    out.extend(reply("extra") for _ in range(8))  # follow-ups and steering may ask for more turns
    return out


@st.composite
def worlds(draw: Any) -> tuple[World, Any]:
    script = draw(replies())
    mode = draw(st.sampled_from(["parallel", "sequential"]))
    steering = draw(st.lists(st.lists(texts, max_size=2), max_size=3))
    follow = draw(st.lists(st.lists(texts, max_size=1), max_size=2))
    terminate = draw(st.booleans())
    raises = draw(st.booleans())
    abort_at = draw(st.one_of(st.none(), st.integers(0, 40)))
    hooks = ("get_steering_messages", "get_follow_up_messages")

    def echo(args: Any) -> Any:
        if raises and args.get("text") == "a":
            raise ValueError("tool broke")
        return AgentToolResult((TextContent(f"echo {args}"),), terminate=terminate or None)

    steer = iter([[UserMessage(t) for t in batch] for batch in steering])
    fol = iter([[UserMessage(t) for t in batch] for batch in follow])
    counter = {"n": 0}

    def abort_when(event: Any) -> bool:
        counter["n"] += 1
        return abort_at is not None and counter["n"] == abort_at

    world = World(
        list(script),
        tools={"echo": echo, "seq": lambda a: "seq ok"},
        hooks={"get_steering_messages": lambda: next(steer, []), "get_follow_up_messages": lambda: next(fol, [])},
        finish_order=draw(st.permutations([f"t{t}_{i}" for t in range(4) for i in range(3)])),
        chunk=draw(st.integers(0, 5)),
        abort_when=abort_when,
    )
    state = initial_state(AgentContext("sys", (), [ECHO, SEQ]), model=Model(id="m"),
                          tool_execution=mode, hooks=frozenset(hooks))
    return world, state


def run_world(pair: tuple[World, Any]) -> World:
    world, state = pair
    world.run(state, Started((UserMessage("go", timestamp=0),), 0))
    return world


# --------------------------------------------------------------------------- invariants


def check_nesting(events: list[Any]) -> None:
    assert events[0].type == "agent_start"
    assert events[-1].type == "agent_end"
    assert [e.type for e in events].count("agent_end") == 1
    in_turn = False
    open_message = None
    open_tools: set[str] = set()
    ended_tools: set[str] = set()
    for e in events[1:-1]:
        if e.type == "turn_start":
            assert not in_turn and open_message is None
            in_turn = True
        elif e.type == "turn_end":
            assert in_turn and open_message is None and not open_tools
            in_turn = False
        elif e.type == "message_start":
            assert in_turn and open_message is None
            open_message = e.message
        elif e.type == "message_update":
            assert open_message is not None
        elif e.type == "message_end":
            assert open_message is not None
            open_message = None
        elif e.type == "tool_execution_start":
            assert in_turn and e.tool_call_id not in open_tools | ended_tools
            open_tools.add(e.tool_call_id)
        elif e.type == "tool_execution_update":
            assert e.tool_call_id in open_tools
        elif e.type == "tool_execution_end":
            assert e.tool_call_id in open_tools
            open_tools.remove(e.tool_call_id)
            ended_tools.add(e.tool_call_id)
    assert not in_turn and open_message is None and not open_tools


def check_one_result_per_call(messages: tuple[Any, ...]) -> None:
    results = [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)]
    assert len(results) == len(set(results))
    for i, m in enumerate(messages):
        if isinstance(m, AssistantMessage) and m.stop_reason not in ("error", "aborted"):
            ids = [c.id for c in m.tool_calls]
            following = [r.tool_call_id for r in messages[i + 1:i + 1 + len(ids)] if isinstance(r, ToolResultMessage)]
            assert following == ids


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_random_runs_are_well_formed(pair: tuple[World, Any]) -> None:
    world = run_world(pair)
    check_nesting(world.events)
    assert world.messages is not None
    check_one_result_per_call(world.messages)
    assert world.events[-1].messages == world.messages


@settings(max_examples=100, deadline=None)
@given(worlds())
def test_replaying_recorded_inputs_reproduces_every_effect(pair: tuple[World, Any]) -> None:
    world, state = pair
    initial = state
    run_world(pair)
    s = initial
    for inp, effects in world.trace:
        s, again = step(s, inp).unwrap()
        assert again == effects


INPUT_KINDS = st.sampled_from(["abort", "steer", "stream_done", "stream_fail", "tool_ok", "tool_fail", "update",
                               "start"])


def random_input(kind: str, id_: int) -> Any:
    if kind == "abort":
        return AbortRequested(1)
    if kind == "steer":
        return SteeringPolled(id_, (), 1)
    if kind == "stream_done":
        from .world import stream_events
        return StreamEventReceived(id_, stream_events(reply("x"))[-1], 1)
    if kind == "stream_fail":
        return StreamFailed(id_, "x", 1)
    if kind == "tool_ok":
        return ToolFinished(id_, AgentToolResult(), 1)
    if kind == "tool_fail":
        return ToolFailed(id_, "x", 1)
    if kind == "update":
        return ToolUpdated(id_, None, 1)
    return Started((UserMessage("x"),), 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(INPUT_KINDS, st.integers(0, 6)), max_size=30), st.booleans())
def test_step_is_total(inputs: list[tuple[str, int]], steering: bool) -> None:
    hooks = frozenset({"get_steering_messages"}) if steering else frozenset()
    s = initial_state(AgentContext("", (), [ECHO]), model=Model(id="m"), hooks=hooks)
    for kind, id_ in inputs:
        before = s
        result = step(s, random_input(kind, id_))
        if result.__class__.__name__ == "Success":
            s = result.unwrap()[0]
        else:
            assert s is before and result.failure().phase == s.phase.name


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1, max_size=200), st.integers(1, 50))
def test_reply_in_n_chunks_ends_in_the_same_state(text: str, chunk: int) -> None:
    def final_state(c: int) -> Any:
        w = World([reply(text)], chunk=c)
        return w.run(initial_state(AgentContext(), model=Model(id="m")), Started((UserMessage("q"),), 0)), w

    (one, w1), (many, wn) = final_state(0), final_state(chunk)
    assert one == many
    assert w1.messages == wn.messages


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_codec_round_trips_every_input_effect_and_state(pair: tuple[World, Any]) -> None:
    world, state = pair
    final = world.run(state, Started((UserMessage("go", timestamp=0),), 0))
    for inp, effects in world.trace:
        for value in (inp, *effects):
            assert from_json(json.loads(json.dumps(to_json(value)))) == value
    assert from_json(json.loads(json.dumps(to_json(final)))) == final
    assert from_json(json.loads(json.dumps(to_json(state)))) == state


SCRIPT = textwrap.dedent(
    """
    import json
    from tests.core.world import World, reply, call
    from agentcore import AgentContext, Model, Started, ToolSpec, UserMessage, initial_state, thaw
    from agentcore.codec import dumps
    spec = ToolSpec("echo", parameters={"type": "object"})
    w = World([reply(call("a", "echo", x=1), call("b", "echo", y={"k": [1, 2]})), reply("done")],
              tools={"echo": lambda a: "ok " + json.dumps(thaw(a), sort_keys=True)}, finish_order=["b", "a"])
    w.run(initial_state(AgentContext("s", (), [spec]), model=Model(id="m"), hooks=frozenset({"x", "y", "z"})),
          Started((UserMessage("go"),), 0))
    for inp, effects in w.trace:
        print(dumps(inp), dumps(list(effects)))
    """
)


def test_determinism_across_hash_seeds() -> None:
    outputs = []
    for seed in ("0", "1", "4242"):
        done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                              env=script_env(PYTHONHASHSEED=seed), check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0].count("\n") > 20
