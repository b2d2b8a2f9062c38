"""Tool call ids are unique in the conversation: the id a tool is handed is its idempotency key.

A provider may send a call without an id (several OpenAI-compatible servers do), or with an id
an earlier call already had (``"0"`` on every turn). The core gives such a call an id of its own
before the reply's ``message_end``: ``<id>_<n>`` (``call_<n>`` for a call without one), ``n`` the
call's number among the tool calls of the conversation (the next free one). The id is a fact of
the state, so a replay, a resumed run and a stored state give the same ids.
"""

from __future__ import annotations

from typing import Any

from agentcore import (
    AgentContext,
    AssistantMessage,
    ExecuteTool,
    Model,
    NextTurn,
    Started,
    TextContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
    initial_state,
    step,
)
from agentcore.codec import from_json, to_json
from agentcore.state import LoopState

from .world import World, call, reply

ECHO = ToolSpec("echo", "Echo text", {"type": "object", "properties": {"text": {"type": "string"}}})
MODEL = Model(id="m", api="test", provider="test")
USER = UserMessage("hi", timestamp=1)


def state(messages: tuple[Any, ...] = (), hooks: tuple[str, ...] = ()) -> LoopState:
    return initial_state(AgentContext("", messages, (ECHO,)), model=MODEL, hooks=frozenset(hooks))


def echo(args: Any) -> str:
    return f"echo: {args.get('text', '')}"


def run(*replies: Any, s: LoopState | None = None, **world: Any) -> tuple[World, LoopState]:
    w = World(list(replies), tools={"echo": echo}, **world)
    final = w.run(s if s is not None else state(), Started((USER,), 0))
    return w, final


def reply_ids(w: World) -> list[list[str]]:
    """The tool call ids of each reply, as the conversation holds them."""
    return [[c.id for c in m.tool_calls] for m in w.messages or () if isinstance(m, AssistantMessage)
            and m.tool_calls]


def executed_ids(w: World) -> list[str]:
    """The ids the tools were handed (``ExecuteTool``), in order."""
    return [e.tool_call.id for inp, effects in w.trace for e in effects if isinstance(e, ExecuteTool)]


def result_ids(w: World) -> list[str]:
    return [m.tool_call_id for m in w.messages or () if isinstance(m, ToolResultMessage)]


def test_an_id_repeated_on_a_later_turn_gets_the_calls_number() -> None:
    w, _ = run(reply(call("0", "echo", text="a")), reply(call("0", "echo", text="b")), reply("done"))
    assert reply_ids(w) == [["0"], ["0_2"]]
    assert executed_ids(w) == ["0", "0_2"] == w.executed
    assert result_ids(w) == ["0", "0_2"]
    starts = [(e.tool_call_id, dict(e.args)) for e in w.events if e.type == "tool_execution_start"]
    assert starts == [("0", {"text": "a"}), ("0_2", {"text": "b"})]
    ends = [e.tool_call_id for e in w.events if e.type == "tool_execution_end"]
    assert ends == ["0", "0_2"]
    # message_end has the id the call runs with; the stream's updates show the provider's
    second = [e for e in w.events if e.type in ("message_update", "message_end")
              and getattr(e.message, "role", "") == "assistant"]
    updates = [e for e in second if e.type == "message_update" and e.message.tool_calls
               and e.assistant_message_event.type == "toolcall_end"]
    assert [u.message.tool_calls[0].id for u in updates] == ["0", "0"]
    ends_of_replies = [[c.id for c in e.message.tool_calls] for e in second if e.type == "message_end"]
    assert ends_of_replies == [["0"], ["0_2"], []]
    # the model's next request carries the new id with its result
    sent = w.llm_calls[2].messages
    assert [c.id for m in sent if isinstance(m, AssistantMessage) for c in m.tool_calls] == ["0", "0_2"]
    assert [m.tool_call_id for m in sent if isinstance(m, ToolResultMessage)] == ["0", "0_2"]


def test_the_same_id_twice_in_one_reply() -> None:
    w, _ = run(reply(call("c1", "echo", text="a"), call("c1", "echo", text="b"), call("c1", "echo")),
               reply("done"))
    assert reply_ids(w) == [["c1", "c1_2", "c1_3"]]
    assert sorted(w.executed) == ["c1", "c1_2", "c1_3"]
    assert result_ids(w) == ["c1", "c1_2", "c1_3"]
    assert [m.text for m in w.messages or () if isinstance(m, ToolResultMessage)] == [
        "echo: a", "echo: b", "echo: "]


def test_calls_without_an_id_are_numbered() -> None:
    w, _ = run(reply(call("", "echo"), call("", "echo")), reply(call("", "echo")), reply("done"))
    assert reply_ids(w) == [["call_1", "call_2"], ["call_3"]]
    assert result_ids(w) == ["call_1", "call_2", "call_3"]


def test_a_number_already_taken_is_skipped() -> None:
    w, _ = run(reply(call("call_2", "echo"), call("", "echo")), reply(call("call_2", "echo")), reply("done"))
    # the second call is the conversation's second, and call_2 is taken: call_3; the third
    # call repeats call_2
    assert reply_ids(w) == [["call_2", "call_3"], ["call_2_3"]]


def test_ids_of_the_conversation_before_the_run_count() -> None:
    history = (UserMessage("before"), AssistantMessage((ToolCall("c1", "echo", {}),), stop_reason="toolUse"),
               ToolResultMessage("c1", "echo", (TextContent("echo: "),)))
    w, _ = run(reply(call("c1", "echo")), reply(call("c2", "echo")), reply("done"), s=state(history))
    assert reply_ids(w) == [["c1_2"], ["c2"]]  # the run's replies: c1 is the earlier call's


def test_ids_are_unique_in_the_run_after_the_context_is_replaced() -> None:
    """``prepare_next_turn`` may compact the conversation: an id the run already handed a tool
    stays taken, and so do the ids of the new context."""
    old = AssistantMessage((ToolCall("k", "echo", {}),), stop_reason="toolUse")
    compacted = AgentContext("", [UserMessage("summary"), old, ToolResultMessage("k", "echo", ())], [ECHO])
    turns = iter([NextTurn(context=compacted), None, None])
    w, _ = run(reply(call("a", "echo")), reply(call("a", "echo"), call("k", "echo")), reply("done"),
               s=state(hooks=("prepare_next_turn",)), hooks={"prepare_next_turn": lambda ctx: next(turns)})
    assert [[c.id for c in m.tool_calls] for m in w.messages or () if isinstance(m, AssistantMessage)
            and m.tool_calls] == [["a"], ["a_3", "k_4"]]


def test_a_state_read_back_goes_on_with_the_same_ids() -> None:
    """Which ids are taken is not written with a state (it is the conversation's): every state
    of a run, written and read back, is the state it was, and takes the next input alike."""
    w, end = run(reply(call("0", "echo"), call("", "echo")), reply(call("0", "echo")), reply("done"))
    assert end.phase.name == "finished"
    s = state()
    for inp, effects in w.trace:
        back = from_json(to_json(s))
        assert back == s
        s, again = step(s, inp).unwrap()
        assert step(back, inp).unwrap() == (s, again) and again == effects
        assert "call_ids" not in to_json(s)
    assert [c.id for m in s.messages if isinstance(m, AssistantMessage) for c in m.tool_calls] == [
        "0", "call_2", "0_3"]
