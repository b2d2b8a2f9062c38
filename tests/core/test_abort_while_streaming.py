"""The core's side of an abort while a reply streams: it waits for the stream's final message.

``AbortRequested(wait_for_stream=True)`` says the interpreter keeps reading the stream for its
grace period: the core then emits nothing, takes only the stream's ``done``/``error`` (the
reply it ends with is that message, marked aborted), or ``StreamFailed`` (the stream did not
end in time, or broke: the library's own aborted reply). ``wait_for_stream=False`` (what a
transcript recorded before this existed holds) closes the reply at once, as it always did.
"""

from __future__ import annotations

from typing import Any

from returns.result import Failure

from agentcore import (
    AbortRequested,
    AgentContext,
    AssistantMessage,
    CancelLlm,
    Cost,
    LoopState,
    Model,
    PartialAssistantMessage,
    Started,
    StartEvent,
    StreamEventReceived,
    StreamFailed,
    TextContent,
    Usage,
    UserMessage,
    initial_state,
    replace,
    step,
)
from agentcore.codec import from_json, to_json

USER = UserMessage("hi", timestamp=1)
P0 = PartialAssistantMessage.begin(api="faux", provider="faux", model="m", timestamp=7)
START = StartEvent(P0)
TEXT_START = P0.text_start()
HEL = TEXT_START.partial.text_delta(0, "Hel")
USAGE = Usage(input=3, output=2, total_tokens=5, cost=Cost(total=0.5))


def streamed(*events: Any) -> LoopState:
    s = step(initial_state(AgentContext("sys", ()), model=Model(id="m")), Started((USER,), 1)).unwrap()[0]
    for i, event in enumerate(events):
        s = step(s, StreamEventReceived(1, event, 2 + i)).unwrap()[0]
    return s


def summary(effects: Any) -> list[str]:
    return [f"emit:{e.event.type}" if e.type == "emit" else e.type for e in effects]


def waiting() -> LoopState:
    s, effects = step(streamed(START, TEXT_START, HEL), AbortRequested(9, wait_for_stream=True)).unwrap()
    assert effects == ()
    return s


def test_an_abort_that_waits_for_the_stream_emits_nothing_and_keeps_streaming() -> None:
    s = waiting()
    assert s.phase.name == "streaming" and s.aborted
    assert step(s, AbortRequested(10, wait_for_stream=True)).unwrap() == (s, ())  # a second abort: nothing


def test_the_streams_error_event_is_the_reply() -> None:
    own = HEL.partial.error("aborted", "provider: cancelled", usage=USAGE)
    s, effects = step(waiting(), StreamEventReceived(1, own, 10)).unwrap()
    assert summary(effects) == ["emit:message_end", "emit:turn_end", "emit:agent_end", "run_ended"]
    assert effects[0].event.message == AssistantMessage(
        (TextContent("Hel"),), api="faux", provider="faux", model="m", usage=USAGE, stop_reason="aborted",
        error_message="provider: cancelled", timestamp=7)
    assert s.phase.name == "finished"


def test_an_error_event_that_says_error_is_aborted_with_its_text() -> None:
    failed = HEL.partial.error("error", "Connection reset", usage=USAGE)
    _, effects = step(waiting(), StreamEventReceived(1, failed, 10)).unwrap()
    final = effects[0].event.message
    assert (final.stop_reason, final.error_message, final.usage) == ("aborted", "Connection reset", USAGE)


def test_a_done_event_is_the_reply_closed_as_aborted() -> None:
    done = HEL.partial.text_delta(0, "lo").partial.done("stop", usage=USAGE)
    _, effects = step(waiting(), StreamEventReceived(1, done, 10)).unwrap()
    assert effects[0].event.message == replace(done.message, stop_reason="aborted",
                                               error_message="Request was aborted")


def test_a_final_event_before_the_streams_start_gives_message_start_too() -> None:
    s, effects = step(streamed(), AbortRequested(9, wait_for_stream=True)).unwrap()
    assert effects == ()
    own = P0.error("aborted", "provider: cancelled")
    _, effects = step(s, StreamEventReceived(1, own, 10)).unwrap()
    assert summary(effects) == ["emit:message_start", "emit:message_end", "emit:turn_end", "emit:agent_end",
                                "run_ended"]


def test_anything_but_the_final_event_is_refused() -> None:
    s = waiting()
    for event in (HEL.partial.text_delta(0, "lo"), HEL.partial.text_end(0)):
        result = step(s, StreamEventReceived(1, event, 10))
        assert isinstance(result, Failure)
        assert result.failure().reason == (
            f"the run was aborted while the reply streamed: only the stream's final event (done or error) "
            f"is taken now, not {event.type}")


def test_stream_failed_gives_the_librarys_own_aborted_reply() -> None:
    s, effects = step(waiting(), StreamFailed(1, "the stream did not end within 1 s of the abort", 10)).unwrap()
    assert summary(effects) == ["cancel_llm", "emit:message_end", "emit:turn_end", "emit:agent_end", "run_ended"]
    assert effects[0] == CancelLlm(1)
    assert effects[1].event.message == AssistantMessage(
        (TextContent("Hel"),), api="faux", provider="faux", model="m", stop_reason="aborted",
        error_message="Request was aborted", timestamp=7)


def test_without_waiting_the_reply_is_closed_at_once_as_before() -> None:
    s, effects = step(streamed(START, TEXT_START, HEL), AbortRequested(9)).unwrap()
    assert summary(effects) == ["cancel_llm", "emit:message_end", "emit:turn_end", "emit:agent_end", "run_ended"]
    assert effects[1].event.message.error_message == "Request was aborted"


def test_the_input_round_trips_and_an_old_one_reads_as_not_waiting() -> None:
    assert from_json(to_json(AbortRequested(9, wait_for_stream=True))) == AbortRequested(9, wait_for_stream=True)
    assert from_json({"type": "abort_requested", "at": 9}) == AbortRequested(9, wait_for_stream=False)
