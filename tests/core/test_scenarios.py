"""Scenario tests: drive the pure core through whole runs and assert exact events and messages."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import (
    AfterToolCallResult,
    AgentContext,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallResult,
    CallLlm,
    CancelLlm,
    Continued,
    Model,
    NextTurn,
    PollFollowUps,
    Started,
    TextContent,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
    initial_state,
    step,
)
from agentcore.state import LoopState
from tests.support.events import types

from .world import World, call, reply

ECHO = ToolSpec("echo", "Echo text", {"type": "object", "properties": {"text": {"type": "string"}},
                                      "required": ["text"]})
SLOW = ToolSpec("slow", "Sequential tool", {"type": "object"}, execution_mode="sequential")
PREP = ToolSpec("prep", "Has prepare_arguments", {"type": "object", "properties": {"n": {"type": "integer"}},
                                                  "required": ["n"]}, has_prepare_arguments=True)
MODEL = Model(id="m", api="test", provider="test")
USER = UserMessage("hi", timestamp=1)


def state(*, hooks: tuple[str, ...] = (), mode: str = "parallel", messages: tuple[Any, ...] = (),
          tools: tuple[ToolSpec, ...] = (ECHO, SLOW, PREP)) -> LoopState:
    return initial_state(AgentContext("You are a test.", messages, tools), model=MODEL,
                         tool_execution=mode, hooks=frozenset(hooks))  # type: ignore[arg-type]


def echo(args: Any) -> str:
    return f"echo: {args['text']}"


def texts(messages: Any) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m, (UserMessage, AssistantMessage, ToolResultMessage)):
            out.append(f"{m.role}:{m.text}")
        else:
            out.append(m.role)
    return out


def drive(world: World, s: LoopState | None = None, first: Any = None) -> World:
    world.run(s if s is not None else state(), first if first is not None else Started((USER,), 0))
    return world


# --------------------------------------------------------------------------- basic


def test_text_only_reply() -> None:
    w = drive(World([reply("Hello there")]))
    assert types(w.events) == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_update", "message_end", "turn_end", "agent_end",
    ]
    assert texts(w.messages) == ["user:hi", "assistant:Hello there"]
    assert w.events[-1].messages == w.messages
    # message_start of the reply carries the (empty) partial, message_end the final message
    assert w.events[4].message.content == ()
    assert w.events[-3].message == w.messages[-1]


def test_one_tool_round_trip() -> None:
    w = drive(World([reply(call("c1", "echo", text="x")), reply("done")], tools={"echo": echo}))
    assert types(w.events) == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_update", "message_end",
        "tool_execution_start", "tool_execution_end", "message_start", "message_end", "turn_end",
        "turn_start", "message_start", "message_update", "message_end", "turn_end", "agent_end",
    ]
    assert texts(w.messages) == ["user:hi", "assistant:", "toolResult:echo: x", "assistant:done"]
    start = next(e for e in w.events if e.type == "tool_execution_start")
    assert (start.tool_call_id, start.tool_name, dict(start.args)) == ("c1", "echo", {"text": "x"})
    # the second model call saw the tool result
    assert [m.role for m in w.llm_calls[1].messages] == ["user", "assistant", "toolResult"]


def test_parallel_tools_end_in_completion_order_results_in_source_order() -> None:
    w = drive(World(
        [reply(call("a", "echo", text="1"), call("b", "echo", text="2")), reply("ok")],
        tools={"echo": echo}, finish_order=["b", "a"],
    ))
    tool_events = [(e.type, e.tool_call_id) for e in w.events if e.type.startswith("tool_execution")]
    assert tool_events == [
        ("tool_execution_start", "a"), ("tool_execution_start", "b"),
        ("tool_execution_end", "b"), ("tool_execution_end", "a"),
    ]
    results = [e.message.tool_call_id for e in w.events
               if e.type == "message_end" and isinstance(e.message, ToolResultMessage)]
    assert results == ["a", "b"]
    assert w.executed == ["b", "a"]
    assert texts(w.messages)[2:4] == ["toolResult:echo: 1", "toolResult:echo: 2"]


def test_sequential_mode_runs_one_call_after_the_other() -> None:
    w = drive(World([reply(call("a", "echo", text="1"), call("b", "echo", text="2")), reply("ok")],
                    tools={"echo": echo}, finish_order=["b", "a"]), state(mode="sequential"))
    seq = [(e.type, getattr(e, "tool_call_id", getattr(getattr(e, "message", None), "tool_call_id", None)))
           for e in w.events if e.type.startswith("tool_execution") or
           (e.type.startswith("message_") and isinstance(getattr(e, "message", None), ToolResultMessage))]
    assert seq == [
        ("tool_execution_start", "a"), ("tool_execution_end", "a"), ("message_start", "a"), ("message_end", "a"),
        ("tool_execution_start", "b"), ("tool_execution_end", "b"), ("message_start", "b"), ("message_end", "b"),
    ]


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_a_result_message_is_built_once_and_shared(mode: str) -> None:
    """The message emitted for a tool result is the very object the turn and the history hold."""
    w = drive(World([reply(call("a", "echo", text="1"), call("b", "echo", text="2")), reply("ok")],
                    tools={"echo": echo}), state(mode=mode))
    ended = [e.message for e in w.events if e.type == "message_end" and isinstance(e.message, ToolResultMessage)]
    (turn,) = [e for e in w.events if e.type == "turn_end" and e.tool_results]
    assert len(ended) == 2 and all(a is b for a, b in zip(ended, turn.tool_results))
    assert all(a is b for a, b in zip(ended, w.messages[2:4]))


def test_a_sequential_tool_makes_the_whole_batch_sequential() -> None:
    w = drive(World([reply(call("a", "echo", text="1"), call("b", "slow")), reply("ok")],
                    tools={"echo": echo, "slow": lambda a: "slow done"}, finish_order=["b", "a"]))
    assert w.executed == ["a", "b"]


# --------------------------------------------------------------------------- tool error paths


def tool_results(w: World) -> list[tuple[str, bool]]:
    return [(m.text, m.is_error) for m in w.messages or () if isinstance(m, ToolResultMessage)]


def test_unknown_tool() -> None:
    w = drive(World([reply(call("c", "nope")), reply("sorry")]))
    assert tool_results(w) == [("Tool nope not found", True)]
    end = next(e for e in w.events if e.type == "tool_execution_end")
    assert end.is_error and end.result.content == (TextContent("Tool nope not found"),)


def test_invalid_arguments_name_tool_path_and_received_args() -> None:
    w = drive(World([reply(call("c", "echo", text=5)), reply("sorry")], tools={"echo": echo}))
    assert tool_results(w) == [(
        'Validation failed for tool "echo":\n'
        "  - text: 5 is not of type 'string'\n\n"
        'Received arguments:\n{\n  "text": 5\n}',
        True,
    )]
    assert w.executed == []


def test_missing_required_argument() -> None:
    w = drive(World([reply(call("c", "echo")), reply("sorry")], tools={"echo": echo}))
    assert tool_results(w)[0][0].splitlines()[:2] == [
        'Validation failed for tool "echo":', "  - root: 'text' is a required property"]


def test_before_tool_call_blocks_with_reason_and_default() -> None:
    decisions = iter([BeforeToolCallResult(block=True, reason="not allowed"), BeforeToolCallResult(block=True)])
    w = drive(World([reply(call("a", "echo", text="1"), call("b", "echo", text="2")), reply("ok")],
                    tools={"echo": echo}, hooks={"before_tool_call": lambda ctx: next(decisions)}),
              state(hooks=("before_tool_call",)))
    assert tool_results(w) == [("not allowed", True), ("Tool execution was blocked", True)]
    assert w.executed == []


def test_before_tool_call_sees_validated_args_and_context() -> None:
    seen: list[Any] = []

    def before(ctx: Any) -> None:
        seen.append((ctx.tool_call.id, dict(ctx.args), len(ctx.context.messages), ctx.assistant_message.stop_reason))

    drive(World([reply(call("a", "echo", text="1")), reply("ok")], tools={"echo": echo},
                hooks={"before_tool_call": before}), state(hooks=("before_tool_call",)))
    assert seen == [("a", {"text": "1"}, 2, "toolUse")]


def test_tool_that_raises_gives_error_result_with_its_text() -> None:
    def boom(args: Any) -> str:
        raise RuntimeError("disk full")

    w = drive(World([reply(call("a", "echo", text="1")), reply("ok")], tools={"echo": boom}))
    assert tool_results(w) == [("disk full", True)]


def test_after_tool_call_patches_field_by_field() -> None:
    usage = Usage(input=1, output=2, total_tokens=3)

    def after(ctx: Any) -> AfterToolCallResult:
        assert ctx.result.content == (TextContent("echo: 1"),) and ctx.is_error is False
        return AfterToolCallResult(content=(TextContent("patched"),), is_error=True, usage=usage)

    w = drive(World([reply(call("a", "echo", text="1")), reply("ok")], tools={"echo": echo},
                    hooks={"after_tool_call": after}), state(hooks=("after_tool_call",)))
    result = [m for m in w.messages or () if isinstance(m, ToolResultMessage)][0]
    assert (result.text, result.is_error, result.usage, result.details) == ("patched", True, usage, None)


def test_after_tool_call_that_raises_gives_error_result() -> None:
    def after(ctx: Any) -> None:
        raise ValueError("audit failed")

    w = drive(World([reply(call("a", "echo", text="1")), reply("ok")], tools={"echo": echo},
                    hooks={"after_tool_call": after}), state(hooks=("after_tool_call",)))
    assert tool_results(w) == [("audit failed", True)]


def test_prepare_arguments_rewrites_raw_arguments_before_validation() -> None:
    seen: list[Any] = []
    w = drive(World([reply(call("a", "prep", n="7")), reply("ok")],
                    tools={"prep": lambda a: seen.append(dict(a)) or "ok"},
                    hooks={"prepare_arguments": lambda tc: {"n": int(tc.arguments["n"])}}))
    assert seen == [{"n": 7}]
    assert tool_results(w) == [("ok", False)]


def test_prepare_arguments_that_raises() -> None:
    def bad(tc: Any) -> Any:
        raise KeyError("n")

    w = drive(World([reply(call("a", "prep", n="x")), reply("ok")], hooks={"prepare_arguments": bad}))
    assert tool_results(w) == [("'n'", True)]


def test_length_stop_fails_every_call_without_running_it() -> None:
    w = drive(World([reply(call("a", "echo", text="1"), call("b", "echo", text="2"), stop="length"), reply("ok")],
                    tools={"echo": echo}))
    expected = ('Tool call "echo" was not executed: the reply was cut off by the output token limit, '
                "so its arguments may be incomplete. Re-issue the call with complete arguments.")
    assert tool_results(w) == [(expected, True), (expected, True)]
    assert w.executed == []
    assert len(w.llm_calls) == 2  # the model is asked again


# --------------------------------------------------------------------------- terminate


def terminating(args: Any) -> AgentToolResult:
    return AgentToolResult((TextContent("final"),), terminate=True)


def test_terminate_when_every_result_asks_for_it() -> None:
    w = drive(World([reply(call("a", "echo", text="1"), call("b", "echo", text="2")), reply("never")],
                    tools={"echo": terminating}))
    assert len(w.llm_calls) == 1
    assert types(w.events)[-2:] == ["turn_end", "agent_end"]


def test_no_terminate_when_only_some_results_ask_for_it() -> None:
    results = iter([AgentToolResult((TextContent("final"),), terminate=True), AgentToolResult((TextContent("go"),))])
    w = drive(World([reply(call("a", "echo", text="1"), call("b", "echo", text="2")), reply("next")],
                    tools={"echo": lambda a: next(results)}))
    assert len(w.llm_calls) == 2
    assert texts(w.messages)[-1] == "assistant:next"


def test_after_tool_call_can_set_terminate() -> None:
    w = drive(World([reply(call("a", "echo", text="1")), reply("never")], tools={"echo": echo},
                    hooks={"after_tool_call": lambda ctx: AfterToolCallResult(terminate=True)}),
              state(hooks=("after_tool_call",)))
    assert len(w.llm_calls) == 1


# --------------------------------------------------------------------------- stop reasons


@pytest.mark.parametrize("stop", ["error", "aborted"])
def test_error_or_aborted_reply_ends_the_run_without_follow_up_poll(stop: str) -> None:
    w = drive(World([reply("partial", stop=stop, error="rate limited")],
                    hooks={"get_follow_up_messages": lambda: [UserMessage("more")]}),
              state(hooks=("get_follow_up_messages",)))
    assert types(w.events)[-4:] == ["message_update", "message_end", "turn_end", "agent_end"]
    turn_end = w.events[-2]
    assert turn_end.tool_results == () and turn_end.message.error_message == "rate limited"
    assert not any(isinstance(e, PollFollowUps) for _, effects in w.trace for e in effects)


def test_stream_failure_becomes_error_message() -> None:
    w = drive(World([RuntimeError("connection reset")]))
    last = w.messages[-1]
    assert (last.stop_reason, last.error_message, last.content) == ("error", "connection reset", ())
    assert types(w.events)[-4:] == ["message_start", "message_end", "turn_end", "agent_end"]


# --------------------------------------------------------------------------- steering and follow-ups


def test_steering_at_start_is_injected_before_the_first_call() -> None:
    polls = iter([[UserMessage("also this")], [], []])
    w = drive(World([reply("ok")], hooks={"get_steering_messages": lambda: next(polls)}),
              state(hooks=("get_steering_messages",)))
    assert texts(w.messages) == ["user:hi", "user:also this", "assistant:ok"]
    assert [m.text for m in w.llm_calls[0].messages] == ["hi", "also this"]


def test_steering_after_a_turn_starts_another_turn() -> None:
    polls = iter([[], [UserMessage("wait, one more thing")], [], []])
    w = drive(World([reply("first"), reply("second")], hooks={"get_steering_messages": lambda: next(polls)}),
              state(hooks=("get_steering_messages",)))
    assert texts(w.messages) == ["user:hi", "assistant:first", "user:wait, one more thing", "assistant:second"]
    assert types(w.events).count("turn_start") == 2


def test_follow_up_starts_a_new_turn_when_the_agent_would_stop() -> None:
    follow = iter([[UserMessage("next task")], []])
    w = drive(World([reply("first"), reply("second")], hooks={"get_follow_up_messages": lambda: next(follow)}),
              state(hooks=("get_follow_up_messages",)))
    assert texts(w.messages) == ["user:hi", "assistant:first", "user:next task", "assistant:second"]


# --------------------------------------------------------------------------- turn hooks


def test_prepare_next_turn_switches_model_and_thinking_level() -> None:
    big = Model(id="big", api="test", provider="test", reasoning=True)
    w = drive(World([reply(call("a", "echo", text="1")), reply("ok")], tools={"echo": echo},
                    hooks={"prepare_next_turn": lambda ctx: NextTurn(model=big, thinking_level="high")}),
              state(hooks=("prepare_next_turn",)))
    assert [(c.model.id, c.thinking_level) for c in w.llm_calls] == [("m", "off"), ("big", "high")]


def test_a_model_that_does_not_reason_is_asked_with_thinking_off() -> None:
    plain = Model(id="plain", api="test", provider="test")
    w = drive(World([reply(call("a", "echo", text="1")), reply("ok")], tools={"echo": echo},
                    hooks={"prepare_next_turn": lambda ctx: NextTurn(model=plain, thinking_level="high")}),
              state(hooks=("prepare_next_turn",)))
    assert [(c.model.id, c.thinking_level) for c in w.llm_calls] == [("m", "off"), ("plain", "off")]


def test_prepare_next_turn_replaces_context() -> None:
    def compact(ctx: Any) -> NextTurn:
        return NextTurn(context=AgentContext("New prompt", [UserMessage("summary")], [ECHO]))

    w = drive(World([reply(call("a", "echo", text="1")), reply("ok")], tools={"echo": echo},
                    hooks={"prepare_next_turn": compact}), state(hooks=("prepare_next_turn",)))
    second = w.llm_calls[1]
    assert second.system_prompt == "New prompt"
    assert [m.text for m in second.messages] == ["summary"]


def test_should_stop_after_turn() -> None:
    w = drive(World([reply(call("a", "echo", text="1")), reply("never")], tools={"echo": echo},
                    hooks={"should_stop_after_turn": lambda ctx: True}), state(hooks=("should_stop_after_turn",)))
    assert len(w.llm_calls) == 1
    assert types(w.events)[-2:] == ["turn_end", "agent_end"]


def test_transform_and_convert_hooks_shape_the_request() -> None:
    w = drive(World([reply("ok")], hooks={
        "transform_context": lambda msgs: list(msgs) + [UserMessage("injected")],
        "convert_to_llm": lambda msgs: [m for m in msgs if m.text != "hi"],
    }), state(hooks=("transform_context", "convert_to_llm")))
    assert [m.text for m in w.llm_calls[0].messages] == ["injected"]
    assert texts(w.messages) == ["user:hi", "assistant:ok"]  # the history itself is unchanged


@pytest.mark.parametrize("hook", ["transform_context", "get_steering_messages", "should_stop_after_turn"])
def test_failing_loop_hook_ends_the_run_with_an_error_message(hook: str) -> None:
    def boom(*args: Any) -> Any:
        raise RuntimeError("boom")

    w = drive(World([reply("first")], hooks={hook: boom}), state(hooks=(hook,)))
    last = w.messages[-1]
    assert (last.stop_reason, last.error_message) == ("error", f"{hook} failed: boom")
    assert types(w.events)[-4:] == ["message_start", "message_end", "turn_end", "agent_end"]
    assert types(w.events).count("turn_start") == types(w.events).count("turn_end")


# --------------------------------------------------------------------------- abort


def test_abort_while_streaming_keeps_partial_text() -> None:
    w = drive(World([reply("Hello world, this is long")], abort_when=lambda e: e.type == "message_update"
                    and e.assistant_message_event.type == "text_delta"), )
    last = w.messages[-1]
    assert (last.stop_reason, last.error_message, last.text) == ("aborted", "Request was aborted", "Hell")
    assert types(w.events)[-4:] == ["message_update", "message_end", "turn_end", "agent_end"]
    assert any(isinstance(e, CancelLlm) for _, effects in w.trace for e in effects)


def test_abort_while_a_sequential_tool_runs() -> None:
    w = drive(World([reply(call("a", "echo", text="1"), call("b", "echo", text="2")), reply("never")],
                    tools={"echo": echo}, abort_when=lambda e: e.type == "tool_execution_start"),
              state(mode="sequential"))
    assert tool_results(w) == [("echo: 1", False), ("Operation aborted", True)]
    assert w.executed == ["a"]
    assert len(w.llm_calls) == 1
    assert types(w.events)[-2:] == ["turn_end", "agent_end"]


def test_abort_while_parallel_tools_run() -> None:
    w = drive(World([reply(call("a", "echo", text="1"), call("b", "echo", text="2")), reply("never")],
                    tools={"echo": echo}, abort_when=lambda e: e.type == "tool_execution_end"))
    # both were already running: both finish; no further model call
    assert tool_results(w) == [("echo: 1", False), ("echo: 2", False)]
    assert len(w.llm_calls) == 1
    assert types(w.events)[-2:] == ["turn_end", "agent_end"]


def test_abort_before_the_first_call() -> None:
    w = World([reply("never")], abort_when=lambda e: e.type == "agent_start")
    w.run(state(), Started((USER,), 0))
    assert w.llm_calls == []
    last = w.messages[-1]
    assert (last.stop_reason, last.error_message) == ("aborted", "Request was aborted")


# --------------------------------------------------------------------------- continue


def test_continue_rejections() -> None:
    empty = step(state(), Continued(0))
    assert empty.failure().reason == "Cannot continue: no messages in context"
    tail = step(state(messages=(USER, reply("x"))), Continued(0))
    assert tail.failure().reason == "Cannot continue from message role: assistant"


def test_continue_from_a_user_message() -> None:
    w = World([reply("resumed")])
    w.run(state(messages=(USER,)), Continued(0))
    assert types(w.events)[:3] == ["agent_start", "turn_start", "message_start"]
    assert texts(w.messages) == ["assistant:resumed"]


def test_every_call_effect_carries_a_fresh_id() -> None:
    w = drive(World([reply(call("a", "echo", text="1"), call("b", "echo", text="2")), reply("ok")],
                    tools={"echo": echo}))
    ids = [e.id for _, effects in w.trace for e in effects if hasattr(e, "id") and not isinstance(e, CancelLlm)]
    assert len(ids) == len(set(ids))
    assert all(isinstance(c, CallLlm) for c in w.llm_calls)


def test_arguments_that_are_not_valid_json_are_not_run() -> None:
    from agentcore import PartialAssistantMessage, StreamEventReceived

    p = PartialAssistantMessage.begin(model="m")
    ev = p.toolcall_start("c1", "echo")
    ev = ev.partial.toolcall_delta(0, '{"text": "hi",, }')
    end = ev.partial.toolcall_end(0)
    assert end.tool_call.invalid_json == '{"text": "hi",, }'
    assert dict(end.tool_call.arguments) == {"text": "hi"}  # what could be salvaged
    s = state()
    s, effects = step(s, Started((USER,), 0)).unwrap()
    s, effects = step(s, StreamEventReceived(effects[-1].id, end.partial.done("toolUse"), 1)).unwrap()
    result = [e.event for e in effects if e.type == "emit" and e.event.type == "tool_execution_end"][0]
    assert result.is_error
    assert result.result.content[0].text == (
        'Tool call "echo" was not executed: its arguments are not valid JSON (Expecting property name '
        'enclosed in double quotes: line 1 column 15 (char 14)). Received: {"text": "hi",, }')
    assert not any(e.type == "execute_tool" for e in effects)
