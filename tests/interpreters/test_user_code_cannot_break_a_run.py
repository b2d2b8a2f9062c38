"""User code cannot break a run: adversarial tests through the public API, on both interpreters.

Whatever a stream function, a tool, a hook or a listener does (raise anything, hang, yield
objects that are not stream events, break the stream's block order), a run ends with one
``agent_end`` as its last event, failures become an assistant message with ``stop_reason``
``error`` (or ``aborted``) and a clear ``error_message``, an abort always wins, and
``KeyboardInterrupt`` / ``SystemExit`` reach the caller only after ``agent_end``. Bad arguments
are refused at once with a ``TypeError`` naming what was wrong.

Expected texts come from :mod:`agentcore.texts` where a function there builds them; each
category also has one literal text, so a change of wording is noticed.

Every scenario runs in a thread joined with a timeout (:func:`guarded`): a hang fails the test
instead of blocking the suite. Where the library does not keep its promise the test stays, marked
``xfail(strict=True)`` with a reason starting ``BUG:``.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import interpreters
from agentcore import (
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    Model,
    NextTurn,
    PartialAssistantMessage,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCallStartEvent,
    UserMessage,
)
from agentcore.texts import (
    ABORTED_TEXT,
    NO_ERROR_MESSAGE_TEXT,
    REQUEST_ABORTED_TEXT,
    STREAM_ENDED_TEXT,
    hook_failed_text,
    not_a_stream_event_text,
    stream_field_text,
    stream_order_text,
    stream_payload_text,
)
from interpreters import AbortSignal, Agent, ScriptedModel, SyncAgent, tool
from interpreters.runtime.run import Run
from interpreters.runtime.thread_waits import ASYNC_STREAM_FN
from interpreters.streams.scripted import tool_call
from tests.support.events import types
from tests.support.flavours import ASYNCIO, SYNC, Flavour

MODEL = Model(id="m")
GUARD_S = 30.0
"""How long one scenario may take before it counts as a hang."""


# --------------------------------------------------------------------------- running safely


def guarded(fn: Callable[[], Any], timeout: float = GUARD_S) -> Any:
    """``fn()`` in a daemon thread, joined with a timeout: its value, or what it raised.

    A hang fails the test. ``KeyboardInterrupt`` / ``SystemExit`` / other ``BaseException`` s that
    escape are turned into an ``AssertionError`` so they cannot stop the test session."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - reported below
            box["error"] = exc

    thread = threading.Thread(target=target, name="guarded-scenario", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        pytest.fail(f"the run hung: still going after {timeout:g} s")
    if "error" in box:
        error = box["error"]
        if isinstance(error, Exception):
            raise error
        raise AssertionError(f"{type(error).__name__} escaped the run: {error!r}") from error
    return box["value"]


def play(flavour: Flavour, prompt: Any, context: AgentContext, config: AgentLoopConfig, stream_fn: Any,
         signal: AbortSignal | None = None, on_event: Callable[[Any], None] | None = None,
         timeout: float = GUARD_S) -> tuple[list[Any], list[Any]]:
    """:meth:`Flavour.run` under :func:`guarded`."""
    return guarded(lambda: flavour.run(prompt, context, config, stream_fn, signal, on_event), timeout)


def play_catching(flavour: Flavour, prompt: Any, context: AgentContext, config: AgentLoopConfig,
                  stream_fn: Any) -> tuple[list[Any], BaseException | None]:
    """Run to the end; ``(events, what the iteration raised)`` (:meth:`Flavour.collect_catching`
    under :func:`guarded`)."""
    return guarded(lambda: flavour.collect_catching(lambda: flavour.agent_loop(prompt, context, config, None,
                                                                               stream_fn)))


def known_bug(request: pytest.FixtureRequest, reason: str) -> None:
    """Mark the running test as a known bug (strict: it must fail)."""
    request.applymarker(pytest.mark.xfail(strict=True, reason=f"BUG: {reason}"))


# --------------------------------------------------------------------------- expected sequences

START = ["agent_start", "turn_start", "message_start", "message_end"]  # the prompt
REPLY = ["message_start", "message_update", "message_end"]  # a streamed reply
FAILED = ["message_start", "message_end", "turn_end", "agent_end"]  # a reply that ends the run
TOOL_ROUND = ["tool_execution_start", "tool_execution_end", "message_start", "message_end"]

TEXT_RUN = START + REPLY + ["turn_end", "agent_end"]
FAILED_RUN = START + FAILED
TOOL_THEN_DONE = START + REPLY + TOOL_ROUND + ["turn_end", "turn_start"] + REPLY + ["turn_end", "agent_end"]
TOOL_THEN_END = START + REPLY + TOOL_ROUND + ["turn_end", "agent_end"]


def assistant(messages: list[Any]) -> AssistantMessage:
    last = messages[-1]
    assert isinstance(last, AssistantMessage), last
    return last


def tool_result_text(messages: list[Any]) -> str:
    results = [m for m in messages if m.role == "toolResult"]
    assert len(results) == 1, results
    assert results[0].is_error
    return "".join(c.text for c in results[0].content)


def ends_once(events: list[Any]) -> None:
    assert [e.type for e in events].count("agent_end") == 1
    assert events[-1].type == "agent_end"


# --------------------------------------------------------------------------- stream helpers


def pi(text: str | None = None, **fields: Any) -> AssistantMessage:
    """A pi-ai style partial: a plain AssistantMessage holding the text so far."""
    content = () if text is None else (TextContent(text),)
    return AssistantMessage(content, api="pi-test", provider="pi-test", model="m", **fields)


def pi_events(chunks: list[str], finish: bool = True) -> list[Any]:
    events: list[Any] = [StartEvent(pi()), TextStartEvent(0, pi(""))]
    so_far = ""
    for chunk in chunks:
        so_far += chunk
        events.append(TextDeltaEvent(0, chunk, pi(so_far)))
    if finish:
        events += [TextEndEvent(0, TextContent(so_far), pi(so_far)), DoneEvent("stop", pi(so_far))]
    return events


def library_events(chunks: list[str], finish: bool = True) -> list[Any]:
    events: list[Any] = [StartEvent(PartialAssistantMessage.begin(model="m"))]
    events.append(events[-1].partial.text_start())
    for chunk in chunks:
        events.append(events[-1].partial.text_delta(0, chunk))
    if finish:
        events.append(events[-1].partial.text_end(0))
        events.append(events[-1].partial.done("stop"))
    return events


EVENT_MAKERS = {"pi-ai partials": pi_events, "library partials": library_events}


class Raise:
    """A step of a :class:`Stream`: raise this exception where the stream stands."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Stream:
    """A stream function playing ``items`` (anything: stream events or not; a :class:`Raise`
    raises), noting how many items were pulled and whether its generator was closed."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.pulled = 0
        self.closed = False
        self.calls = 0

    def __call__(self, model: Any, context: Any, options: Any) -> Iterator[Any]:
        self.calls += 1
        return self.generate()

    def generate(self) -> Iterator[Any]:
        try:
            for item in self.items:
                self.pulled += 1
                if isinstance(item, Raise):
                    raise item.error
                yield item
        finally:
            self.closed = True


class Opaque:
    """Something a stream function should never yield."""

    def __repr__(self) -> str:
        return "<Opaque>"


def abort_on_first_delta(signal: AbortSignal) -> Callable[[Any], None]:
    def on_event(event: Any) -> None:
        if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
            signal.abort()

    return on_event


# --------------------------------------------------------------------------- tools

ran: list[str] = []


@tool
def echo(x: str) -> str:
    """Echo x back (cannot report progress: a lone call may run inline)."""
    ran.append(x)
    return x


def raising_tools(make_error: Callable[[], BaseException]) -> dict[str, AgentTool]:
    """A tool of each kind that raises ``make_error()``: sync or async, inline-capable (no
    progress parameter) or run on a worker thread / task (takes ``on_update``)."""

    @tool
    def sync_inline(x: str) -> str:
        """Fails."""
        raise make_error()

    @tool
    def sync_worker(x: str, on_update: Any) -> str:
        """Fails."""
        raise make_error()

    @tool
    async def async_inline(x: str) -> str:
        """Fails."""
        raise make_error()

    @tool
    async def async_worker(x: str, on_update: Any) -> str:
        """Fails."""
        raise make_error()

    return {t.name: t for t in (sync_inline, sync_worker, async_inline, async_worker)}


# =========================================================================== 1. stream functions
# --------------------------------------------------------------------------- (a) either partial


@pytest.mark.parametrize("partials", sorted(EVENT_MAKERS))
def test_a_normal_stream_ends_with_stop(flavour: Flavour, partials: str) -> None:
    stream = Stream(EVENT_MAKERS[partials](["Hel", "lo"]))
    events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream)
    assert types(events) == TEXT_RUN
    ends_once(events)
    final = assistant(messages)
    assert (final.stop_reason, final.error_message, final.text) == ("stop", None, "Hello")
    assert events[-2].message == final  # turn_end carries the final message
    assert stream.closed


@pytest.mark.parametrize("partials", sorted(EVENT_MAKERS))
@pytest.mark.parametrize("grace", [0.0, 1.0])
def test_an_abort_mid_stream_keeps_the_text_so_far_or_the_streams_final_message(
        flavour: Flavour, partials: str, grace: float, monkeypatch: pytest.MonkeyPatch) -> None:
    # The stream ignores the abort. With a grace period for it (the default), its final message,
    # which comes at once, is the reply (closed as aborted); without, the text so far.
    monkeypatch.setattr(Run, "stream_grace", grace)
    signal = AbortSignal()
    stream = Stream(EVENT_MAKERS[partials](["Hel", "lo", " world"]))
    events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream,
                            signal=signal, on_event=abort_on_first_delta(signal))
    assert types(events) == TEXT_RUN
    ends_once(events)
    final = assistant(messages)
    text = "Hello world" if grace else "Hel"
    assert (final.stop_reason, final.error_message, final.text) == ("aborted", REQUEST_ABORTED_TEXT, text)
    assert REQUEST_ABORTED_TEXT == "Request was aborted"
    assert stream.closed


@pytest.mark.parametrize("partials", sorted(EVENT_MAKERS))
def test_an_exception_mid_stream_is_an_error_with_its_text(flavour: Flavour, partials: str) -> None:
    items = EVENT_MAKERS[partials](["Hel", "lo"], finish=False) + [Raise(ConnectionError("connection reset"))]
    stream = Stream(items)
    events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream)
    assert types(events) == TEXT_RUN
    ends_once(events)
    final = assistant(messages)
    assert (final.stop_reason, final.error_message, final.text) == ("error", "connection reset", "Hello")


@pytest.mark.parametrize("partials", sorted(EVENT_MAKERS))
def test_a_stream_without_done_is_an_error(flavour: Flavour, partials: str) -> None:
    stream = Stream(EVENT_MAKERS[partials](["Hel", "lo"], finish=False))
    events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream)
    assert types(events) == TEXT_RUN
    ends_once(events)
    final = assistant(messages)
    assert (final.stop_reason, final.error_message, final.text) == ("error", STREAM_ENDED_TEXT, "Hello")
    assert STREAM_ENDED_TEXT == "The stream ended without a done or error event"


# --------------------------------------------------------------------------- (b) protocol breaks

_P = PartialAssistantMessage.begin(model="m")
_START = StartEvent(_P)
_TEXT_START = _P.text_start()
_DELTA = _TEXT_START.partial.text_delta(0, "ab")
_TEXT_END = _DELTA.partial.text_end(0)
_AFTER = [TextDeltaEvent(0, "never", _P), DoneEvent("stop", pi("never"))]  # must never be pulled

# name -> (items up to and including the bad one, expected error_message, updates seen, text kept)
PROTOCOL_BREAKS: dict[str, tuple[list[Any], str, bool, str]] = {
    "a dict": ([_START, {"type": "text_delta", "delta": "x"}],
               not_a_stream_event_text({"type": "text_delta", "delta": "x"}), False, ""),
    "None": ([_START, None], not_a_stream_event_text(None), False, ""),
    "a str first": (["start"], not_a_stream_event_text("start"), False, ""),
    "an int": ([_START, _TEXT_START, 42], not_a_stream_event_text(42), True, ""),
    "an arbitrary object": ([_START, Opaque()], not_a_stream_event_text(Opaque()), False, ""),
    "done with a str message": ([_START, _TEXT_START, _DELTA, DoneEvent("stop", "Hello")],  # type: ignore[arg-type]
                                stream_payload_text("done", "message", "Hello"), True, "ab"),
    "done with a dict message": ([DoneEvent("stop", {"role": "assistant"})],  # type: ignore[arg-type]
                                 stream_payload_text("done", "message", {"role": "assistant"}), False, ""),
    "error with a str error": ([_START, ErrorEvent("error", "rate limited")],  # type: ignore[arg-type]
                               stream_payload_text("error", "error", "rate limited"), False, ""),
    "error with no error at all": ([_START, ErrorEvent("error", None)],  # type: ignore[arg-type]
                                   stream_payload_text("error", "error", None), False, ""),
    "a block event whose partial is a dict": ([_START, TextStartEvent(0, {"x": 1})],  # type: ignore[arg-type]
                                              stream_payload_text("text_start", "partial", {"x": 1}), False, ""),
    "an end event whose block is a str": ([_START, _TEXT_START, _DELTA, TextEndEvent(0, "ab", _DELTA.partial)],  # type: ignore[arg-type]
                                          stream_field_text("text_end", "content", "ab", "TextContent"), True, "ab"),
    "a delta before start": ([TextDeltaEvent(0, "x", _P)],
                             stream_order_text("text_delta", "before the stream's start event"), False, ""),
    "a pi-ai delta before start": ([TextDeltaEvent(0, "x", pi("x"))],
                                   stream_order_text("text_delta", "before the stream's start event"), False, ""),
    "a delta for a block never started": (
        [_START, _TEXT_START, _DELTA, TextDeltaEvent(1, "x", _DELTA.partial)],
        stream_order_text("text_delta", "for content block 1, which was never started"), True, "ab"),
    "a text_delta on a toolCall block": (
        [_START, ToolCallStartEvent(0, _P, id="c1", name="echo"), TextDeltaEvent(0, "x", _P)],
        stream_order_text("text_delta", "for content block 0, which is a toolCall block"), True, ""),
    "an end of a block that already ended": (
        [_START, _TEXT_START, _DELTA, _TEXT_END, _TEXT_END],
        stream_order_text("text_end", "for content block 0, which had already ended"), True, "ab"),
    "a second start": ([_START, _TEXT_START, _DELTA, _START],
                       stream_order_text("start", "a second time"), True, "ab"),
    "a start that is not the next block": (
        [_START, TextStartEvent(1, _P)],
        stream_order_text("text_start", "for content block 1, but the next new block is 0"), False, ""),
    "a pi-ai start that skips a block": (
        [StartEvent(pi()), TextStartEvent(0, pi("")), TextDeltaEvent(0, "ab", pi("ab")),
         TextStartEvent(2, pi("ab"))],
        stream_order_text("text_start", "for content block 2, but the next new block is 1"), True, "ab"),
}


@pytest.mark.parametrize("case", sorted(PROTOCOL_BREAKS))
def test_a_protocol_break_ends_the_reply_and_closes_the_stream(flavour: Flavour, case: str) -> None:
    items, expected, updates, kept = PROTOCOL_BREAKS[case]
    stream = Stream(items + _AFTER)
    events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream)
    assert types(events) == (TEXT_RUN if updates else FAILED_RUN)
    ends_once(events)
    final = assistant(messages)
    assert (final.stop_reason, final.error_message, final.text) == ("error", expected, kept)
    assert events[-2].type == "turn_end" and events[-2].message == final
    assert stream.pulled == len(items), "items were pulled after the bad one"
    assert stream.closed, "the stream function's generator was not closed"


def test_protocol_error_texts_literally() -> None:
    assert not_a_stream_event_text({"type": "text_delta"}) == (
        "Stream protocol error: the stream function yielded a dict ({'type': 'text_delta'}), not a stream "
        "event (expected StartEvent, a text/thinking/toolcall start, delta or end event, DoneEvent or "
        "ErrorEvent from agentcore)")
    assert stream_payload_text("done", "message", "Hello") == (
        "Stream protocol error: the done event's message was a str ('Hello'); expected an "
        "AssistantMessage (or a PartialAssistantMessage)")
    assert stream_payload_text("error", "error", "rate limited") == (
        "rate limited (Stream protocol error: the error event's error was a str; expected an "
        "AssistantMessage with stop_reason 'error' or 'aborted' and an error_message)")
    assert stream_field_text("toolcall_end", "tool_call", {"id": "c1"}, "ToolCall") == (
        "Stream protocol error: the toolcall_end event's tool_call was a dict ({'id': 'c1'}); expected a ToolCall")
    assert stream_order_text("text_end", "for content block 0, which had already ended") == (
        "Stream protocol error: text_end arrived for content block 0, which had already ended "
        "(expected start first, then content block events, then done or error)")


def test_an_exception_while_the_stream_is_closed_is_ignored(flavour: Flavour) -> None:
    def stream_fn(model: Any, context: Any, options: Any) -> Iterator[Any]:
        try:
            yield _START
            yield "junk"
            yield DoneEvent("stop", pi("never"))
        finally:
            raise ValueError("failed while closing")

    events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn)
    assert types(events) == FAILED_RUN
    assert assistant(messages).error_message == not_a_stream_event_text("junk")


@pytest.mark.parametrize("returned", [None, 5], ids=["None", "an int"])
def test_a_stream_function_returning_no_iterable_is_an_error(flavour: Flavour, returned: Any) -> None:
    events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL),
                            lambda model, context, options: returned)
    assert types(events) == FAILED_RUN
    final = assistant(messages)
    assert final.stop_reason == "error"
    assert type(returned).__name__ in (final.error_message or "")


# --------------------------------------------------------------------------- (c) error event, "stop"


@pytest.mark.parametrize("error_message", [None, "overloaded"])
def test_an_error_event_ends_the_run_whatever_its_message_says(flavour: Flavour, error_message: str | None) -> None:
    polls: list[str] = []
    stream = Stream([StartEvent(pi()),
                     ErrorEvent("error", pi("partial", stop_reason="stop", error_message=error_message))])

    def stream_fn(model: Any, context: Any, options: Any) -> Iterator[Any]:
        polls.append("model called")
        return stream(model, context, options)

    config = AgentLoopConfig(model=MODEL,
                             get_steering_messages=lambda: polls.append("steering") or [],
                             get_follow_up_messages=lambda: polls.append("follow-up") or [])
    events, messages = play(flavour, "hi", AgentContext(), config, stream_fn)
    assert types(events) == FAILED_RUN
    ends_once(events)
    final = assistant(messages)
    expected = error_message if error_message is not None else NO_ERROR_MESSAGE_TEXT
    assert (final.stop_reason, final.error_message, final.text) == ("error", expected, "partial")
    assert NO_ERROR_MESSAGE_TEXT == "The stream ended with an error event that gave no error_message"
    assert polls == ["steering", "model called"], "a queue was polled after the error"


# --------------------------------------------------------------------------- (d) async under sync


async def _async_def_stream(model: Any, context: Any, options: Any) -> list[Any]:
    return library_events(["never"])


async def _async_generator_stream(model: Any, context: Any, options: Any) -> Any:
    for event in library_events(["never"]):
        yield event


def _returns_async_generator(model: Any, context: Any, options: Any) -> Any:
    return _async_generator_stream(model, context, options)


class _AsyncCallable:
    async def __call__(self, model: Any, context: Any, options: Any) -> list[Any]:
        return library_events(["never"])


ASYNC_STREAM_FNS: dict[str, tuple[Any, bool]] = {
    "async def": (_async_def_stream, True),
    "async generator function": (_async_generator_stream, False),
    "function returning an async generator": (_returns_async_generator, False),
    "object with an async __call__": (_AsyncCallable(), True),
}


@pytest.mark.parametrize("kind", sorted(ASYNC_STREAM_FNS))
def test_an_async_stream_function_under_sync_points_to_aio(kind: str) -> None:
    stream_fn, is_coroutine = ASYNC_STREAM_FNS[kind]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        events, messages = play(SYNC, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn)
        gc.collect()
    assert types(events) == FAILED_RUN
    final = assistant(messages)
    assert final.stop_reason == "error"
    if is_coroutine:
        assert final.error_message == ASYNC_STREAM_FN.format(what="a coroutine")
    else:
        before, after = ASYNC_STREAM_FN.split("{what}")
        match = re.fullmatch(re.escape(before) + "(.+)" + re.escape(after), final.error_message or "")
        assert match is not None, final.error_message
        assert "async" in match.group(1)
    assert "interpreters.aio.agent_loop" in (final.error_message or "")
    never_awaited = [w for w in caught if "never awaited" in str(w.message)]
    assert never_awaited == []


# --------------------------------------------------------------------------- (e) asyncio sources


@pytest.mark.parametrize("container", [list, tuple])
def test_aio_a_stream_function_may_return_a_list_or_tuple(container: type) -> None:
    events, messages = play(ASYNCIO, "hi", AgentContext(), AgentLoopConfig(model=MODEL),
                            lambda model, context, options: container(library_events(["Hel", "lo"])))
    assert types(events) == TEXT_RUN
    assert (assistant(messages).stop_reason, assistant(messages).text) == ("stop", "Hello")


def test_aio_a_blocking_sync_generator_is_still_abortable() -> None:
    signal = AbortSignal()
    finish = threading.Event()
    times: dict[str, float] = {}

    def slow(model: Any, context: Any, options: Any) -> Iterator[Any]:
        events = library_events(["slow"], finish=False)
        yield from events
        deadline = time.monotonic() + 30  # blocks its thread for 30 s unless the test is over
        while time.monotonic() < deadline and not finish.is_set():
            time.sleep(0.01)
        yield events[-1].partial.text_end(0)

    def abort_soon() -> None:
        times["abort"] = time.monotonic()
        signal.abort()

    def on_event(event: Any) -> None:
        if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
            threading.Timer(0.2, abort_soon).start()
        if event.type == "agent_end":
            times["end"] = time.monotonic()
            finish.set()

    try:
        events, messages = play(ASYNCIO, "hi", AgentContext(), AgentLoopConfig(model=MODEL), slow,
                                signal=signal, on_event=on_event, timeout=45)
    finally:
        finish.set()
    assert types(events) == TEXT_RUN
    assert times["end"] - times["abort"] < 2.0
    final = assistant(messages)
    assert (final.stop_reason, final.error_message, final.text) == ("aborted", REQUEST_ABORTED_TEXT, "slow")


# =========================================================================== 2. failures of user code
# --------------------------------------------------------------------------- (a) any exception


class AppBaseError(BaseException):
    """An application's own BaseException subclass."""


def make_error(kind: str) -> BaseException:
    if kind == "StopIteration":
        try:
            next(x for x in [])  # the way it happens in real code
        except StopIteration as exc:
            return exc
    return {
        "ValueError": ValueError("bad value"),
        "AppBaseError": AppBaseError("application failure"),
        "GeneratorExit": GeneratorExit(),
        "StopAsyncIteration": StopAsyncIteration(),
        "CancelledError": asyncio.CancelledError(),
    }[kind]


ERROR_TEXT = {
    "StopIteration": "StopIteration",
    "ValueError": "bad value",
    "AppBaseError": "application failure",
    "GeneratorExit": "GeneratorExit",
    "StopAsyncIteration": "StopAsyncIteration",
    "CancelledError": "CancelledError",
}
KINDS = sorted(ERROR_TEXT)
ASYNC_KINDS = [k for k in KINDS if k != "StopIteration"]  # an async def turns it into RuntimeError


def failing(kind: str, mode: str) -> Callable[..., Any]:
    """A user callable (sync or ``async def``) raising ``kind``, whatever it is given."""
    if mode == "sync":
        def fail(*args: Any) -> Any:
            raise make_error(kind)

        return fail

    async def afail(*args: Any) -> Any:
        raise make_error(kind)

    return afail


def modes_and_kinds() -> list[Any]:
    return [pytest.param(mode, kind, id=f"{mode}-{kind}")
            for mode in ("sync", "async") for kind in (KINDS if mode == "sync" else ASYNC_KINDS)]


def tool_scenario() -> ScriptedModel:
    """One tool call, then a final text reply."""
    return ScriptedModel([tool_call("echo", {"x": "y"}), "done"])


# loop hook -> (expected event types, model calls)
LOOP_HOOKS: dict[str, tuple[list[str], int]] = {
    "convert_to_llm": (FAILED_RUN, 0),
    "transform_context": (FAILED_RUN, 0),
    "get_steering_messages": (FAILED_RUN, 0),
    "get_follow_up_messages": (
        START + REPLY + TOOL_ROUND + ["turn_end", "turn_start"] + REPLY + ["turn_end", "turn_start"] + FAILED, 2),
    "prepare_next_turn": (START + REPLY + TOOL_ROUND + ["turn_end", "turn_start"] + FAILED, 1),
    "should_stop_after_turn": (START + REPLY + TOOL_ROUND + ["turn_end", "turn_start"] + FAILED, 1),
}


@pytest.mark.parametrize("hook", sorted(LOOP_HOOKS))
@pytest.mark.parametrize(("mode", "kind"), modes_and_kinds())
def test_a_loop_hook_that_raises_ends_the_run_naming_the_hook(flavour: Flavour, hook: str, mode: str,
                                                              kind: str) -> None:
    expected_types, model_calls = LOOP_HOOKS[hook]
    model = tool_scenario()
    config = AgentLoopConfig(model=MODEL, **{hook: failing(kind, mode)})
    events, messages = play(flavour, "hi", AgentContext(tools=[echo]), config, model)
    assert types(events) == expected_types
    ends_once(events)
    final = assistant(messages)
    assert (final.stop_reason, final.error_message) == ("error", hook_failed_text(hook, ERROR_TEXT[kind]))
    assert model.calls == model_calls


def test_hook_failed_text_literally() -> None:
    assert hook_failed_text("convert_to_llm", "StopIteration") == "convert_to_llm failed: StopIteration"


TOOL_HOOKS = ("before_tool_call", "after_tool_call", "prepare_arguments")


@pytest.mark.parametrize("hook", TOOL_HOOKS)
@pytest.mark.parametrize(("mode", "kind"), modes_and_kinds())
def test_a_tool_hook_that_raises_gives_an_error_result(flavour: Flavour, hook: str, mode: str, kind: str) -> None:
    ran.clear()
    fail = failing(kind, mode)
    if hook == "prepare_arguments":
        context = AgentContext(tools=[tool(prepare_arguments=fail)(echo.execute.__wrapped__)])
        config = AgentLoopConfig(model=MODEL)
    else:
        context = AgentContext(tools=[echo])
        config = AgentLoopConfig(model=MODEL, **{hook: fail})
    model = tool_scenario()
    events, messages = play(flavour, "hi", context, config, model)
    assert types(events) == TOOL_THEN_DONE
    ends_once(events)
    assert tool_result_text(messages) == ERROR_TEXT[kind]
    assert ran == (["y"] if hook == "after_tool_call" else [])
    assert (assistant(messages).stop_reason, assistant(messages).text, model.calls) == ("stop", "done", 2)


TOOL_KINDS = ("sync_inline", "sync_worker", "async_inline", "async_worker")


@pytest.mark.parametrize("tool_kind", TOOL_KINDS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_that_raises_gives_an_error_result(request: pytest.FixtureRequest, flavour: Flavour,
                                                  tool_kind: str, kind: str) -> None:
    if tool_kind.startswith("async") and kind == "StopIteration":
        pytest.skip("Python turns StopIteration raised in an async def into RuntimeError")
    the_tool = raising_tools(lambda: make_error(kind))[tool_kind]
    model = ScriptedModel([tool_call(tool_kind, {"x": "y"}), "done"])
    events, messages = play(flavour, "hi", AgentContext(tools=[the_tool]), AgentLoopConfig(model=MODEL), model)
    assert types(events) == TOOL_THEN_DONE
    ends_once(events)
    assert tool_result_text(messages) == ERROR_TEXT[kind]
    assert model.calls == 2


def test_a_tool_returning_something_else_gives_an_error_result(flavour: Flavour) -> None:
    raw = AgentTool(name="raw", label="raw", description="Returns an int.",
                    parameters={"type": "object", "properties": {}},
                    execute=lambda call_id, args, signal, on_update: 5)
    events, messages = play(flavour, "hi", AgentContext(tools=[raw]), AgentLoopConfig(model=MODEL),
                            ScriptedModel([tool_call("raw", {}), "done"]))
    assert types(events) == TOOL_THEN_DONE
    assert tool_result_text(messages) == "tool raw returned int, expected AgentToolResult"


@pytest.mark.parametrize(("mode", "kind"), modes_and_kinds())
def test_get_api_key_that_raises_fails_the_model_call(request: pytest.FixtureRequest, flavour: Flavour,
                                                      mode: str, kind: str) -> None:
    """Documented: like the stream function raising, an error reply with the exception text."""
    model = ScriptedModel(["never"])
    config = AgentLoopConfig(model=MODEL, get_api_key=failing(kind, mode))
    events, messages = play(flavour, "hi", AgentContext(), config, model)
    assert types(events) == FAILED_RUN
    ends_once(events)
    final = assistant(messages)
    assert (final.stop_reason, final.error_message) == ("error", ERROR_TEXT[kind])
    assert model.calls == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_function_that_raises_when_called(request: pytest.FixtureRequest, flavour: Flavour, kind: str) -> None:

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        raise make_error(kind)

    events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn)
    assert types(events) == FAILED_RUN
    ends_once(events)
    assert (assistant(messages).stop_reason, assistant(messages).error_message) == ("error", ERROR_TEXT[kind])


@pytest.mark.parametrize("kind", KINDS)
def test_a_sync_generator_that_raises_mid_stream(request: pytest.FixtureRequest, flavour: Flavour, kind: str) -> None:
    stream = Stream(library_events(["par"], finish=False) + [Raise(make_error(kind))])
    events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream)
    assert types(events) == TEXT_RUN
    ends_once(events)
    final = assistant(messages)
    # PEP 479 turns a StopIteration the generator raises into a RuntimeError; the text is the user's.
    expected = ERROR_TEXT[kind]
    assert (final.stop_reason, final.error_message, final.text) == ("error", expected, "par")


@pytest.mark.parametrize("kind", ASYNC_KINDS)
def test_aio_an_async_generator_that_raises_mid_stream(request: pytest.FixtureRequest, kind: str) -> None:

    async def stream_fn(model: Any, context: Any, options: Any) -> Any:
        for event in library_events(["par"], finish=False):
            yield event
        raise make_error(kind)

    events, messages = play(ASYNCIO, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn)
    assert types(events) == TEXT_RUN
    ends_once(events)
    final = assistant(messages)
    # PEP 479 turns the StopAsyncIteration an async generator raises into a RuntimeError; the text is the user's.
    expected = ERROR_TEXT[kind]
    assert (final.stop_reason, final.error_message, final.text) == ("error", expected, "par")


@pytest.mark.parametrize("hook", ["get_steering_messages", "convert_to_llm"])
def test_a_sync_hook_returning_a_failing_coroutine(request: pytest.FixtureRequest, flavour: Flavour, hook: str) -> None:
    """A plain callable (a lambda, a partial) may return a coroutine: it is awaited like an
    ``async def`` hook, and what it raises fails the hook like anything else."""

    async def broken(*args: Any) -> Any:
        raise ValueError("awaited failure")

    config = AgentLoopConfig(model=MODEL, **{hook: lambda *args: broken(*args)})
    events, messages = play(flavour, "hi", AgentContext(), config, ScriptedModel(["never"]))
    assert types(events) == FAILED_RUN
    assert assistant(messages).error_message == hook_failed_text(hook, "awaited failure")


@pytest.mark.parametrize(("hook", "missing"), [
    ("get_steering_messages", "3 required positional arguments: 'b', 'c', and 'd'"),
    ("convert_to_llm", "2 required positional arguments: 'c' and 'd'"),
])
def test_an_async_hook_whose_call_raises_fails_the_hook(flavour: Flavour, hook: str, missing: str) -> None:
    """An ``async def`` hook called with arguments it does not take raises before any coroutine
    exists: the hook fails like one that raised inside, on both interpreters."""

    async def takes_too_many(a: Any, b: Any, c: Any, d: Any) -> Any:
        return []

    config = AgentLoopConfig(model=MODEL, **{hook: takes_too_many})
    events, messages = play(flavour, "hi", AgentContext(), config, ScriptedModel(["never"]))
    assert types(events) == FAILED_RUN
    ends_once(events)
    assert assistant(messages).error_message == hook_failed_text(
        hook, f"{takes_too_many.__qualname__}() missing {missing}")


@pytest.mark.parametrize("hook", ["transform_context", "convert_to_llm"])
def test_a_context_hook_returning_what_is_not_messages_ends_the_run(request: pytest.FixtureRequest,
                                                                    flavour: Flavour, hook: str) -> None:
    """Like a queue hook's, what a context hook returns is checked: a list holding a str and an
    int is a failure of the hook, not a context for the model."""
    contexts: list[Any] = []

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        contexts.append(list(context.messages))
        return library_events(["Hello"])

    config = AgentLoopConfig(model=MODEL, **{hook: lambda messages: ["hi", 5]})
    events, messages = play(flavour, "hi", AgentContext(), config, stream_fn)
    assert types(events) == FAILED_RUN
    final = assistant(messages)
    assert final.stop_reason == "error"
    assert (final.error_message or "").startswith(f"{hook} failed: ")
    assert "str" in (final.error_message or "")
    assert contexts == []


# --------------------------------------------------------------------------- (b) abort beats a hook

ALL_HOOKS = ("convert_to_llm", "transform_context", "get_api_key", "get_steering_messages",
             "get_follow_up_messages", "before_tool_call", "after_tool_call", "prepare_next_turn",
             "should_stop_after_turn", "prepare_arguments")
LATE = "LATE ANSWER"
OTHER_MODEL = Model(id="late-model")

# hook -> (expected event types, model calls, the tool ran, the tool result text or None, last role)
ABORTED_IN_HOOK: dict[str, tuple[list[str], int, bool, str | None]] = {
    "convert_to_llm": (FAILED_RUN, 0, False, None),
    "transform_context": (FAILED_RUN, 0, False, None),
    "get_api_key": (FAILED_RUN, 0, False, None),
    "get_steering_messages": (FAILED_RUN, 0, False, None),
    "get_follow_up_messages": (TOOL_THEN_DONE, 2, True, "y"),
    "before_tool_call": (TOOL_THEN_END, 1, False, ABORTED_TEXT),
    "after_tool_call": (TOOL_THEN_END, 1, True, ABORTED_TEXT),
    "prepare_arguments": (TOOL_THEN_END, 1, False, ABORTED_TEXT),
    "prepare_next_turn": (TOOL_THEN_END, 1, True, "y"),
    "should_stop_after_turn": (TOOL_THEN_END, 1, True, "y"),
}


def abort_once_entered(signal: AbortSignal, times: dict[str, float], delay: float = 0.2) -> Callable[[], None]:
    """A function for user code to call when it starts waiting: the first call aborts ``signal``
    ``delay`` seconds later (noting the time in ``times["abort"]``), so the abort surely lands
    while the run waits on that code."""
    started = threading.Event()

    def abort() -> None:
        times["abort"] = time.monotonic()
        signal.abort()

    def entered() -> None:
        if not started.is_set():
            started.set()
            threading.Timer(delay, abort).start()

    return entered


def late_answer(hook: str, args: tuple[Any, ...]) -> Any:
    """What the hook would answer if it were still listened to."""
    if hook in ("get_steering_messages", "get_follow_up_messages"):
        return [UserMessage(LATE)]
    if hook in ("convert_to_llm", "transform_context"):
        return [*args[0], UserMessage(LATE)]
    if hook == "get_api_key":
        return LATE
    if hook == "prepare_arguments":
        return {"x": LATE}
    if hook == "prepare_next_turn":
        return NextTurn(model=OTHER_MODEL)
    if hook == "should_stop_after_turn":
        return False
    return None  # before_tool_call: allow; after_tool_call: keep the result


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("hook", ALL_HOOKS)
def test_abort_ends_a_run_that_waits_on_a_hook(flavour: Flavour, hook: str, mode: str) -> None:
    expected_types, model_calls, tool_ran, result_text = ABORTED_IN_HOOK[hook]
    ran.clear()
    signal = AbortSignal()
    release = threading.Event()
    times: dict[str, float] = {}

    entered = abort_once_entered(signal, times)

    if mode == "sync":
        def slow_hook(*args: Any) -> Any:
            entered()
            release.wait(10)  # a sync hook stuck for 10 s (released when the test is over)
            return late_answer(hook, args)
    else:
        async def slow_hook(*args: Any) -> Any:  # type: ignore[misc]
            entered()
            await asyncio.sleep(10)
            return late_answer(hook, args)

    if hook == "prepare_arguments":
        context = AgentContext(tools=[tool(prepare_arguments=slow_hook)(echo.execute.__wrapped__)])
        config = AgentLoopConfig(model=MODEL)
    else:
        context = AgentContext(tools=[echo])
        config = AgentLoopConfig(model=MODEL, **{hook: slow_hook})
    model = tool_scenario()

    def on_event(event: Any) -> None:
        if event.type == "agent_end":
            times["end"] = time.monotonic()
            release.set()

    try:
        events, messages = play(flavour, "hi", context, config, model, signal=signal, on_event=on_event)
    finally:
        release.set()
    assert "abort" in times, "the run ended before the abort"
    assert times["end"] - times["abort"] < 1.0
    assert types(events) == expected_types
    ends_once(events)
    assert LATE not in repr(events), "the hook's late answer was used"
    assert all(getattr(m, "model", "m") != OTHER_MODEL.id for m in messages)
    assert model.calls == model_calls
    assert ran == (["y"] if tool_ran else [])
    if result_text is None:
        final = assistant(messages)
        assert (final.stop_reason, final.error_message) == ("aborted", REQUEST_ABORTED_TEXT)
    else:
        results = [m for m in messages if m.role == "toolResult"]
        assert ["".join(c.text for c in r.content) for r in results] == [result_text]
    assert ABORTED_TEXT == "Operation aborted"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_before_tool_call_allowing_as_the_abort_lands_does_not_run_the_tool(flavour: Flavour, mode: str) -> None:
    ran.clear()
    signal = AbortSignal()
    if mode == "sync":
        def before(ctx: Any) -> None:
            signal.abort()
            return None
    else:
        async def before(ctx: Any) -> None:  # type: ignore[misc]
            signal.abort()
            return None

    events, messages = play(flavour, "hi", AgentContext(tools=[echo]),
                            AgentLoopConfig(model=MODEL, before_tool_call=before), tool_scenario(), signal=signal)
    assert types(events) == TOOL_THEN_END
    assert ran == []
    assert tool_result_text(messages) == ABORTED_TEXT


def test_abort_while_awaiting_the_coroutine_a_sync_hook_returned(request: pytest.FixtureRequest,
                                                                 flavour: Flavour) -> None:
    signal = AbortSignal()
    entered = abort_once_entered(signal, {})

    async def slow() -> list[Any]:
        await asyncio.sleep(10)
        return [UserMessage(LATE)]

    def hook() -> Any:
        entered()
        return slow()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL, get_steering_messages=hook),
                                ScriptedModel(["never"]), signal=signal)
    assert types(events) == FAILED_RUN
    final = assistant(messages)
    assert (final.stop_reason, final.error_message) == ("aborted", REQUEST_ABORTED_TEXT)


# --------------------------------------------------------------------------- abort beats a tool


@pytest.mark.slow
@pytest.mark.parametrize("tool_kind", TOOL_KINDS)
def test_abort_stops_waiting_for_a_tool_that_ignores_it(request: pytest.FixtureRequest, flavour: Flavour,
                                                        tool_kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """After an abort, running tools have ``abort_grace`` seconds; then the run stops waiting."""
    if (flavour.name, tool_kind) == ("sync", "sync_inline"):
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "documented limit (docs/interpreters.md): a lone sync tool that cannot report progress and "
            "has no time limit runs inline in the caller's thread and cannot be abandoned")))
    monkeypatch.setattr(Run, "abort_grace", 0.5)
    release = threading.Event()
    signal = AbortSignal()
    times: dict[str, float] = {}
    entered = abort_once_entered(signal, times)

    @tool
    def sync_inline(x: str) -> str:
        """Ignores the abort."""
        entered()
        release.wait(3)
        return "late"

    @tool
    def sync_worker(x: str, on_update: Any) -> str:
        """Ignores the abort."""
        entered()
        release.wait(3)
        return "late"

    @tool
    async def async_inline(x: str) -> str:
        """Ignores the abort."""
        entered()
        await asyncio.sleep(3)
        return "late"

    @tool
    async def async_worker(x: str, on_update: Any) -> str:
        """Ignores the abort."""
        entered()
        await asyncio.sleep(3)
        return "late"

    the_tool = {t.name: t for t in (sync_inline, sync_worker, async_inline, async_worker)}[tool_kind]

    def on_event(event: Any) -> None:
        if event.type == "agent_end":
            times["end"] = time.monotonic()
            release.set()

    try:
        events, messages = play(flavour, "hi", AgentContext(tools=[the_tool]), AgentLoopConfig(model=MODEL),
                                ScriptedModel([tool_call(tool_kind, {"x": "y"}), "never"]),
                                signal=signal, on_event=on_event)
    finally:
        release.set()
    assert types(events) == TOOL_THEN_END
    assert times["end"] - times["abort"] < 0.5 + 1.0
    assert tool_result_text(messages).startswith(ABORTED_TEXT)


@pytest.mark.parametrize("tool_kind", ["sync_inline", "sync_worker", "async_inline"])
def test_an_abort_during_a_tool_starts_no_new_turn(request: pytest.FixtureRequest, flavour: Flavour,
                                                   tool_kind: str) -> None:
    """Both interpreters give the same events: the abort lands while the tool runs, so the run
    ends after this turn (no ``turn_start``, no made-up aborted reply)."""
    signal = AbortSignal()

    @tool
    def sync_inline(x: str) -> str:
        """Aborts the run, then returns."""
        signal.abort()
        return "ok"

    @tool
    def sync_worker(x: str, on_update: Any) -> str:
        """Aborts the run, then returns."""
        signal.abort()
        return "ok"

    @tool
    async def async_inline(x: str) -> str:
        """Aborts the run, then returns."""
        signal.abort()
        return "ok"

    the_tool = {t.name: t for t in (sync_inline, sync_worker, async_inline)}[tool_kind]
    model = ScriptedModel([tool_call(tool_kind, {"x": "y"}), "never"])
    events, messages = play(flavour, "hi", AgentContext(tools=[the_tool]), AgentLoopConfig(model=MODEL),
                            model, signal=signal)
    assert types(events) == TOOL_THEN_END
    assert [m.role for m in messages] == ["user", "assistant", "toolResult"]
    assert model.calls == 1


# --------------------------------------------------------------------------- (c) fatal exceptions

FATAL_KINDS = {"KeyboardInterrupt": KeyboardInterrupt, "SystemExit": lambda: SystemExit(3)}


@pytest.mark.parametrize("fatal", sorted(FATAL_KINDS))
@pytest.mark.parametrize("tool_kind", ["sync_inline", "sync_worker", "async_inline"])
def test_a_fatal_exception_in_a_tool_ends_the_run_then_reaches_the_caller(
        request: pytest.FixtureRequest, flavour: Flavour, tool_kind: str, fatal: str) -> None:
    error = FATAL_KINDS[fatal]()
    the_tool = raising_tools(lambda: error)[tool_kind]
    model = ScriptedModel([tool_call(tool_kind, {"x": "y"}), "never"])
    events, raised = play_catching(flavour, "hi", AgentContext(tools=[the_tool]), AgentLoopConfig(model=MODEL), model)
    assert raised is error
    assert types(events) == TOOL_THEN_END
    ends_once(events)
    assert model.calls == 1


@pytest.mark.parametrize("fatal", sorted(FATAL_KINDS))
@pytest.mark.parametrize("tool_kind", ["sync_inline", "sync_worker", "async_inline"])
def test_a_fatal_exception_in_a_tool_is_not_swallowed(flavour: Flavour, tool_kind: str, fatal: str) -> None:
    """The weaker promise, on both interpreters: agent_end last, then the same exception."""
    error = FATAL_KINDS[fatal]()
    the_tool = raising_tools(lambda: error)[tool_kind]
    model = ScriptedModel([tool_call(tool_kind, {"x": "y"}), "never"])
    events, raised = play_catching(flavour, "hi", AgentContext(tools=[the_tool]), AgentLoopConfig(model=MODEL), model)
    assert raised is error
    ends_once(events)
    assert model.calls == 1
    results = [m for m in events[-1].messages if m.role == "toolResult"]
    assert ["".join(c.text for c in r.content) for r in results] == [str(error) or type(error).__name__]


FATAL_HOOKS: dict[str, int] = {  # hook -> model calls
    "convert_to_llm": 0, "get_steering_messages": 0, "get_api_key": 0,
    "before_tool_call": 1, "after_tool_call": 1, "should_stop_after_turn": 1,
}


@pytest.mark.parametrize("fatal", sorted(FATAL_KINDS))
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("hook", sorted(FATAL_HOOKS))
def test_a_fatal_exception_in_a_hook_ends_the_run_then_reaches_the_caller(
        flavour: Flavour, hook: str, mode: str, fatal: str) -> None:
    error = FATAL_KINDS[fatal]()

    if mode == "sync":
        def hook_fn(*args: Any) -> Any:
            raise error
    else:
        async def hook_fn(*args: Any) -> Any:  # type: ignore[misc]
            raise error

    model = tool_scenario()
    events, raised = play_catching(flavour, "hi", AgentContext(tools=[echo]),
                                   AgentLoopConfig(model=MODEL, **{hook: hook_fn}), model)
    assert raised is error
    ends_once(events)
    assert model.calls == FATAL_HOOKS[hook], "the run went on after the interruption"
    # The run ends as an abort at that point ends it: a loop hook's turn closes with an aborted
    # reply, a tool hook's call gets "Operation aborted", after should_stop_after_turn the run ends.
    last = events[-1].messages[-1]
    if hook in ("before_tool_call", "after_tool_call", "prepare_arguments"):
        assert (last.role, last.content[0].text) == ("toolResult", ABORTED_TEXT)
    elif hook == "should_stop_after_turn":
        assert [e.type for e in events[-2:]] == ["turn_end", "agent_end"]
    else:
        assert (last.role, last.stop_reason) == ("assistant", "aborted")


@pytest.mark.parametrize("fatal", sorted(FATAL_KINDS))
@pytest.mark.parametrize("where", ["when called", "mid-stream", "async generator mid-stream"])
def test_a_fatal_exception_in_the_stream_function(flavour: Flavour, where: str, fatal: str) -> None:
    if where.startswith("async") and flavour.name == "sync":
        pytest.skip("the sync interpreter refuses async stream functions")
    error = FATAL_KINDS[fatal]()
    calls: list[int] = []

    def when_called(model: Any, context: Any, options: Any) -> Any:
        calls.append(1)
        raise error

    def mid_stream(model: Any, context: Any, options: Any) -> Iterator[Any]:
        calls.append(1)
        yield from library_events(["par"], finish=False)
        raise error

    async def async_mid_stream(model: Any, context: Any, options: Any) -> Any:
        calls.append(1)
        for event in library_events(["par"], finish=False):
            yield event
        raise error

    stream_fn = {"when called": when_called, "mid-stream": mid_stream,
                 "async generator mid-stream": async_mid_stream}[where]
    events, raised = play_catching(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn)
    assert raised is error
    assert types(events) == (FAILED_RUN if where == "when called" else TEXT_RUN)
    ends_once(events)
    final = events[-1].messages[-1]
    assert (final.stop_reason, final.error_message) == ("aborted", REQUEST_ABORTED_TEXT)
    assert final.text == ("" if where == "when called" else "par")
    assert calls == [1]


def test_a_fatal_exception_while_the_stream_is_closed(request: pytest.FixtureRequest, flavour: Flavour) -> None:
    error = KeyboardInterrupt()

    def stream_fn(model: Any, context: Any, options: Any) -> Iterator[Any]:
        try:
            yield _START
            yield "junk"
        finally:
            raise error

    events, raised = play_catching(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn)
    assert raised is error
    assert types(events) == FAILED_RUN
    ends_once(events)


# --------------------------------------------------------------------------- (d) listeners


def test_a_raising_emit_is_logged_and_the_run_goes_on(flavour: Flavour, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def emit(event: Any) -> None:
        seen.append(event.type)
        raise ValueError("listener failure")

    context, config = AgentContext(), AgentLoopConfig(model=MODEL)

    def go() -> list[Any]:
        return flavour.call(flavour.run_agent_loop, "hi", context, config, emit, stream_fn=ScriptedModel(["Hello"]))

    with caplog.at_level(logging.ERROR, logger="agentcore"):
        messages = guarded(go)
    assert types([_Typed(t) for t in seen]) == TEXT_RUN
    assert assistant(messages).text == "Hello"
    failures = [r for r in caplog.records if r.name == "agentcore" and r.exc_info]
    assert len(failures) == len(seen)
    assert all("listener failure" in str(r.exc_info[1]) for r in failures)


class _Typed:
    def __init__(self, type_: str) -> None:
        self.type = type_


@pytest.mark.parametrize("agent_kind", ["Agent", "SyncAgent"])
def test_a_raising_subscriber_is_logged_and_the_others_go_on(agent_kind: str, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def bad(event: Any) -> None:
        raise RuntimeError("subscriber failure")

    def go() -> Any:
        if agent_kind == "Agent":
            agent = Agent(model=MODEL, stream_fn=ScriptedModel(["Hello"]))
            agent.subscribe(bad)
            agent.subscribe(lambda event: seen.append(event.type))
            asyncio.run(agent.prompt("hi"))
            return agent.state
        with SyncAgent(model=MODEL, stream_fn=ScriptedModel(["Hello"])) as sync_agent:
            sync_agent.subscribe(bad)
            sync_agent.subscribe(lambda event: seen.append(event.type))
            sync_agent.prompt("hi")
            return sync_agent.state

    with caplog.at_level(logging.ERROR, logger="agentcore"):
        state = guarded(go)
    assert types([_Typed(t) for t in seen]) == TEXT_RUN
    assert [m.role for m in state.messages] == ["user", "assistant"]
    assert state.error is None
    assert any("subscriber failure" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_sync_run_agent_loop_with_an_async_emit(request: pytest.FixtureRequest) -> None:
    """An ``async def`` emit under the sync interpreter is either run (as ``async def`` hooks
    are) or refused at the call; its events are never silently dropped."""
    seen: list[str] = []

    async def emit(event: Any) -> None:
        seen.append(event.type)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            guarded(lambda: interpreters.run_agent_loop("hi", AgentContext(), AgentLoopConfig(model=MODEL), emit,
                                                        stream_fn=ScriptedModel(["Hello"])))
        except TypeError:
            refused = True
        else:
            refused = False
        gc.collect()
    assert refused or types([_Typed(t) for t in seen]) == TEXT_RUN
    assert [w for w in caught if "never awaited" in str(w.message)] == []


# =========================================================================== 3. bad arguments

MESSAGE_HINT = ("a message (UserMessage, AssistantMessage, ToolResultMessage, ... or an application's "
                "own record with a role)")

BAD_PROMPTS: dict[str, tuple[Any, str]] = {
    "None": (None, "{where} must be a str, a message or a list of messages, not a NoneType (None)"),
    "an int": (123, "{where} must be a str, a message or a list of messages, not an int (123)"),
    "a dict shaped like a message": (
        {"role": "user", "content": "hi"},
        "{where} must be a str, a message or a list of messages, not a dict ({{'role': 'user', 'content': "
        "'hi'}}); build the message instead, e.g. UserMessage(\"hi\")"),
    "a list holding a dict": (
        [UserMessage("a"), {"role": "user", "content": "b"}],
        "{where}[1] must be " + MESSAGE_HINT + ", not a dict ({{'role': 'user', 'content': 'b'}})"),
    "a list of str": (["a", "b"], "{where}[0] must be " + MESSAGE_HINT + ", not a str ('a'); pass one str, "
                                  "or UserMessage(...) items"),
}


@pytest.mark.parametrize("case", sorted(BAD_PROMPTS))
def test_a_bad_prompt_is_refused_at_the_call(flavour: Flavour, case: str) -> None:
    prompt, text = BAD_PROMPTS[case]
    model = ScriptedModel(["never"])
    with pytest.raises(TypeError) as caught:
        flavour.agent_loop(prompt, AgentContext(), AgentLoopConfig(model=MODEL), None, model)
    assert str(caught.value) == text.format(where="agent_loop() argument 'prompts'")
    assert model.calls == 0


@pytest.mark.parametrize("case", sorted(BAD_PROMPTS))
def test_a_bad_prompt_is_refused_by_run_agent_loop_before_any_event(flavour: Flavour, case: str) -> None:
    prompt, text = BAD_PROMPTS[case]
    seen: list[Any] = []
    context, config = AgentContext(), AgentLoopConfig(model=MODEL)
    with pytest.raises(TypeError) as caught:
        flavour.call(flavour.run_agent_loop, prompt, context, config, seen.append, stream_fn=ScriptedModel(["x"]))
    assert str(caught.value) == text.format(where="agent_loop() argument 'prompts'")
    assert seen == []


BAD_ARGUMENTS: dict[str, tuple[dict[str, Any], str]] = {
    "context": ({"context": {"messages": []}}, "agent_loop() argument 'context' must be an AgentContext, not a dict"),
    "context None": ({"context": None}, "agent_loop() argument 'context' must be an AgentContext, not a NoneType"),
    "config": ({"config": {"model": MODEL}}, "agent_loop() argument 'config' must be an AgentLoopConfig, not a dict"),
    "config a model": ({"config": MODEL}, "agent_loop() argument 'config' must be an AgentLoopConfig, not a Model"),
    "signal": ({"signal": True}, "agent_loop() argument 'signal' must be an AbortSignal or None, not a bool"),
    "signal an Event": ({"signal": threading.Event()},
                        "agent_loop() argument 'signal' must be an AbortSignal or None, not an Event"),
    "stream_fn": ({"stream_fn": "gpt-4"}, "agent_loop() argument 'stream_fn' must be callable or None, not a str"),
    "stream_fn a list": ({"stream_fn": library_events(["x"])},
                         "agent_loop() argument 'stream_fn' must be callable or None, not a list"),
}


@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_a_bad_argument_is_refused_at_the_call(flavour: Flavour, case: str) -> None:
    changes, text = BAD_ARGUMENTS[case]
    arguments: dict[str, Any] = {"prompts": "hi", "context": AgentContext(),
                                 "config": AgentLoopConfig(model=MODEL), "signal": None,
                                 "stream_fn": ScriptedModel(["never"]), **changes}
    with pytest.raises(TypeError) as caught:
        flavour.agent_loop(**arguments)
    assert str(caught.value) == text


def test_a_bad_context_is_refused_by_agent_loop_continue(flavour: Flavour) -> None:
    with pytest.raises(TypeError) as caught:
        flavour.agent_loop_continue([UserMessage("hi")], AgentLoopConfig(model=MODEL))
    assert str(caught.value) == "agent_loop_continue() argument 'context' must be an AgentContext, not a list"


@pytest.mark.parametrize("case", sorted(BAD_PROMPTS))
def test_agent_prompt_refuses_a_bad_input(case: str) -> None:
    prompt, text = BAD_PROMPTS[case]
    model = ScriptedModel(["never"])
    agent = Agent(model=MODEL, stream_fn=model)
    with pytest.raises(TypeError) as caught:
        asyncio.run(agent.prompt(prompt))
    assert str(caught.value) == text.format(where="Agent.prompt() argument 'input'")
    assert (agent.state.messages, model.calls, agent.is_running) == ([], 0, False)


@pytest.mark.parametrize("method", ["steer", "follow_up"])
@pytest.mark.parametrize("value", [None, 123, {"role": "user", "content": "hi"}, ["hi"]],
                         ids=["None", "an int", "a dict", "a list"])
def test_agent_queues_refuse_what_is_not_a_message(method: str, value: Any) -> None:
    agent = Agent(model=MODEL, stream_fn=ScriptedModel(["never"]))
    with pytest.raises(TypeError) as caught:
        getattr(agent, method)(value)
    assert str(caught.value) == (f"Agent.{method}() takes a str or a message (UserMessage, ...), "
                                 f"not a {type(value).__name__}")
    assert not agent.has_queued_messages()


def lookup(key: str) -> str:
    return key


PLAIN_FUNCTION = ("{where}[0] is the plain function 'lookup', not an AgentTool: decorate it with @tool "
                  "(from interpreters import tool)")


def test_a_plain_function_as_a_tool_is_refused() -> None:
    with pytest.raises(TypeError) as caught:
        AgentContext(tools=[lookup])  # type: ignore[list-item]
    assert str(caught.value) == PLAIN_FUNCTION.format(where="AgentContext tools")
    with pytest.raises(TypeError) as caught:
        Agent(model=MODEL, tools=[lookup])  # type: ignore[list-item]
    assert str(caught.value) == PLAIN_FUNCTION.format(where="Agent tools")
    agent = Agent(model=MODEL, tools=[echo])
    with pytest.raises(TypeError) as caught:
        agent.set_tools([lookup])  # type: ignore[list-item]
    assert str(caught.value) == PLAIN_FUNCTION.format(where="Agent tools")
    assert agent.state.tools == [echo]


QUEUE_RETURNS: dict[str, tuple[Any, str]] = {
    "a list of str": (["hi"], "{hook} returned a list whose item 0 is a str ('hi'); expected " + MESSAGE_HINT),
    "a dict": ({"role": "user", "content": "hi"},
               "{hook} returned a dict ({{'role': 'user', 'content': 'hi'}}); expected a list of messages"),
    "a str": ("hi", "{hook} returned a str ('hi'); expected a list of messages"),
    "one message": (UserMessage("hi"), "{hook} returned a single UserMessage; expected a list of messages"),
    "a list holding a dict": ([{"role": "user", "content": "hi"}],
                              "{hook} returned a list whose item 0 is a dict ({{'role': 'user', 'content': "
                              "'hi'}}); expected " + MESSAGE_HINT),
}


@pytest.mark.parametrize("hook", ["get_steering_messages", "get_follow_up_messages"])
@pytest.mark.parametrize("case", sorted(QUEUE_RETURNS))
def test_a_queue_hook_returning_what_is_not_messages_ends_the_run(flavour: Flavour, hook: str, case: str) -> None:
    value, text = QUEUE_RETURNS[case]
    events, messages = play(flavour, "hi", AgentContext(), AgentLoopConfig(model=MODEL, **{hook: lambda: value}),
                            ScriptedModel(["Hello"]))
    expected_types = FAILED_RUN if hook == "get_steering_messages" else TEXT_RUN[:-1] + ["turn_start"] + FAILED
    assert types(events) == expected_types
    ends_once(events)
    final = assistant(messages)
    assert (final.stop_reason, final.error_message) == ("error", hook_failed_text(hook, text.format(hook=hook)))
    assert "hi" not in [getattr(m, "content", None) for m in messages[1:]]


def test_queue_hook_text_literally(flavour: Flavour) -> None:
    events, messages = play(flavour, "hi", AgentContext(),
                            AgentLoopConfig(model=MODEL, get_steering_messages=lambda: ["hi"]),
                            ScriptedModel(["Hello"]))
    assert assistant(messages).error_message == (
        "get_steering_messages failed: get_steering_messages returned a list whose item 0 is a str ('hi'); "
        "expected a message (UserMessage, AssistantMessage, ToolResultMessage, ... or an application's own "
        "record with a role)")
