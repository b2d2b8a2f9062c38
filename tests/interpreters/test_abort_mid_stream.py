"""An abort while the provider streams keeps the stream's own final message (pi-agent-core).

pi-agent-core hands its abort signal to the stream function and takes the message the stream
ends with: a provider that sees the abort ends with ``stop_reason="aborted"``, its own error
text and the usage consumed so far (tokens already paid for). The interpreters here do the same
within the stream's grace period after the abort (``Run.stream_grace``): the core waits for the
stream's ``done`` or ``error`` event, reads nothing else of it, and closes the reply with that
message, marked aborted. A stream that does not end within the grace period gets the library's
own aborted reply (the reply so far, ``Request was aborted``).

Each case runs on both interpreters; a recorded run replays identically (strict and LLM-only);
the HTTP case streams from a real loopback server whose usage arrives after the last content.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    Cost,
    Model,
    PartialAssistantMessage,
    StartEvent,
    TextContent,
    Usage,
    replace,
)
from agentcore.providers import codec_for
from agentcore.stream import StreamEvent
from interpreters import AbortSignal, tool
from interpreters.replay import replay
from interpreters.runtime.run import Run
from interpreters.transcript import read_transcript
from tests.support.clocks import StoppedClock
from tests.support.events import each_type
from tests.support.flavours import ASYNCIO, Flavour
from tests.support.http_script_server import Reply, ScriptServer, model_for

MODEL = Model(id="m", api="faux", provider="faux")
CLOCK = StoppedClock(1000)
STREAM_TS = 5
USAGE = Usage(input=11, output=2, total_tokens=13, cost=Cost(input=0.011, output=0.004, total=0.015))
FULL = Usage(input=11, output=9, total_tokens=20, cost=Cost(input=0.011, output=0.018, total=0.029))
OWN_TEXT = "upstream: generation cancelled after 2 tokens"
ABORTED_TEXT = "Request was aborted"

RUN_EVENTS = ["agent_start", "turn_start", "message_start", "message_end",  # the prompt
              "message_start", "message_update", "message_update",  # start, text_start, "Hel"
              "message_end", "turn_end", "agent_end"]


@tool
def echo(text: str = "") -> str:
    """Echo the text."""
    raise AssertionError("no tool runs after an abort")


class Provider:
    """A stream function whose stream is ``start``, a text block ("Hel", ...) and then, once the
    run's signal has fired, ``after_abort``:

    - ``"own"``: its own aborted message (its error text, the usage so far), as pi-ai's
      providers end an aborted request;
    - ``"done"``: it ignores the signal and finishes the reply (more text, a tool call, ``done``);
    - ``"stream_on"``: it ignores the signal and streams deltas for 5 s without ending;
    - ``"block"``: it waits 5 s without giving anything.

    It can be iterated (sync interpreter) and async-iterated (asyncio)."""

    def __init__(self, after_abort: str) -> None:
        self.after_abort = after_abort
        self.signal: Any = None
        self.calls = 0
        begin = PartialAssistantMessage.begin(api="faux", provider="faux", model="m", timestamp=STREAM_TS)
        start = begin.text_start()
        hel = start.partial.text_delta(0, "Hel")
        self.head: list[StreamEvent] = [StartEvent(begin), start, hel]
        p = hel.partial
        self.own = p.error("aborted", OWN_TEXT, usage=USAGE)
        lo = p.text_delta(0, "lo")
        end = lo.partial.text_end(0)
        call_start = end.partial.toolcall_start("call_9", "echo")
        call_delta = call_start.partial.toolcall_delta(1, "{}")
        call_end = call_delta.partial.toolcall_end(1, {})
        self.done = call_end.partial.done("toolUse", usage=FULL)
        self.finish: list[StreamEvent] = [lo, end, call_start, call_delta, call_end, self.done]
        self.more = p

    def __call__(self, model: Any, context: Any, options: Any) -> Provider:
        self.calls += 1
        self.signal = options.signal
        return self

    def _aborted(self) -> bool:
        return bool(self.signal is not None and self.signal.aborted)

    def __iter__(self) -> Iterator[StreamEvent]:
        yield from self.head
        if not self._aborted():
            yield from self.finish
            return
        if self.after_abort == "own":
            yield self.own
        elif self.after_abort == "done":
            yield from self.finish
        elif self.after_abort == "stream_on":
            p = self.more
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                time.sleep(0.01)
                ev = p.text_delta(0, ".")
                p = ev.partial
                yield ev
            yield p.error("aborted", OWN_TEXT)
        else:
            threading.Event().wait(5)
            yield self.own

    async def _aiter(self) -> AsyncIterator[StreamEvent]:
        for event in self.head:
            await asyncio.sleep(0)
            yield event
        if not self._aborted():
            for event in self.finish:
                yield event
            return
        if self.after_abort == "own":
            yield self.own
        elif self.after_abort == "done":
            for event in self.finish:
                yield event
        elif self.after_abort == "stream_on":
            p = self.more
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                await asyncio.sleep(0.01)
                ev = p.text_delta(0, ".")
                p = ev.partial
                yield ev
            yield p.error("aborted", OWN_TEXT)
        else:
            await asyncio.sleep(5)
            yield self.own

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self._aiter()


def abort_on_hel(signal: AbortSignal, fired: list[float]) -> Any:
    """A listener that aborts the run when the reply's "Hel" arrives."""

    def on_event(event: Any) -> None:
        e = getattr(event, "assistant_message_event", None)
        if e is not None and e.type == "text_delta" and not fired:
            fired.append(time.monotonic())
            signal.abort()

    return on_event


def run(flavour: Flavour, provider: Provider, path: Path | None = None) -> tuple[list[Any], list[Any], float]:
    """The run aborted at "Hel": (events, messages, seconds from the abort to the end)."""
    signal, fired = AbortSignal(), []  # type: ignore[var-annotated]
    context = AgentContext("", [], [echo])
    config = AgentLoopConfig(model=MODEL)
    if path is None:
        events, messages = flavour.run("go", context, config, provider, signal, abort_on_hel(signal, fired),
                                       clock=CLOCK)
    else:
        events, messages = flavour.record(path, "go", context, config, provider, signal,
                                          abort_on_hel(signal, fired), clock=CLOCK)
    return events, messages, time.monotonic() - fired[0]


def so_far() -> AssistantMessage:
    """The library's own aborted reply: the reply as the last event fed had it."""
    return AssistantMessage((TextContent("Hel"),), api="faux", provider="faux", model="m",
                            stop_reason="aborted", error_message=ABORTED_TEXT, timestamp=STREAM_TS)


# --------------------------------------------------------------------------- the stream's own message


def test_the_streams_own_aborted_message_is_kept(flavour: Flavour) -> None:
    provider = Provider("own")
    events, messages, waited = run(flavour, provider)
    assert messages[-1] == AssistantMessage(
        (TextContent("Hel"),), api="faux", provider="faux", model="m", usage=USAGE,
        stop_reason="aborted", error_message=OWN_TEXT, timestamp=STREAM_TS)
    assert each_type(events) == RUN_EVENTS
    assert [e.assistant_message_event.type for e in events if e.type == "message_update"] == [
        "text_start", "text_delta"]
    assert events[-3].message is messages[-1] and events[-2].message is messages[-1]
    assert events[-1].messages[-1] is messages[-1]
    assert provider.calls == 1
    assert waited < 0.5


def test_a_done_after_the_abort_is_kept_as_aborted_and_its_tool_calls_never_run(flavour: Flavour) -> None:
    provider = Provider("done")
    events, messages, waited = run(flavour, provider)
    # Its content and usage (what the provider billed), closed as aborted; the deltas that came
    # after the abort are not events of the run.
    assert messages[-1] == replace(provider.done.message, stop_reason="aborted", error_message=ABORTED_TEXT)
    assert messages[-1].usage == FULL and messages[-1].text == "Hello"
    assert [c.name for c in messages[-1].tool_calls] == ["echo"]
    assert each_type(events) == RUN_EVENTS
    assert waited < 0.5


# --------------------------------------------------------------------------- the fallback


def test_a_stream_that_does_not_end_within_the_grace_period_gets_the_librarys_reply(
        flavour: Flavour, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Run, "stream_grace", 0.3)
    events, messages, waited = run(flavour, Provider("stream_on"))
    assert messages[-1] == so_far()
    assert each_type(events) == RUN_EVENTS  # its deltas after the abort were not fed
    assert 0.3 <= waited < 1.5


def test_an_async_stream_that_blocks_after_the_abort_is_given_up_after_the_grace_period(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Only under asyncio: the sync interpreter reads a sync stream inline and cannot leave a
    # read that blocks (docs/interpreters.md).
    monkeypatch.setattr(Run, "stream_grace", 0.3)
    events, messages, waited = run(ASYNCIO, Provider("block"))
    assert messages[-1] == so_far()
    assert each_type(events) == RUN_EVENTS
    assert 0.3 <= waited < 1.5


def test_no_grace_period_closes_the_reply_at_once(flavour: Flavour, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Run, "stream_grace", 0.0)
    events, messages, waited = run(flavour, Provider("own"))
    assert messages[-1] == so_far()
    assert each_type(events) == RUN_EVENTS
    assert waited < 0.5


# --------------------------------------------------------------------------- transcripts


def _inputs(path: Path) -> list[Any]:
    return [entry.input for entry in read_transcript(path).entries]


def test_a_recorded_run_replays_identically(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    events, messages, _ = run(flavour, Provider("own"), path)
    inputs = _inputs(path)
    aborts = [i for i, inp in enumerate(inputs) if inp.type == "abort_requested"]
    assert len(aborts) == 1
    abort = inputs[aborts[0]]
    assert abort.wait_for_stream is True
    after = inputs[aborts[0] + 1:]
    assert [(inp.type, inp.event.type) for inp in after] == [("stream_event_received", "error")]
    assert after[0].event == Provider("own").own

    strict = replay(path)
    assert strict.events == events and strict.messages == messages and strict.finished
    live = flavour.call(flavour.replay_llm, path, AgentLoopConfig(model=MODEL), [echo])
    assert live.messages == messages


def test_a_recorded_fallback_replays_identically(flavour: Flavour, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Run, "stream_grace", 0.2)
    path = tmp_path / "run.jsonl"
    events, messages, _ = run(flavour, Provider("stream_on"), path)
    inputs = _inputs(path)
    assert [inp.type for inp in inputs[-2:]] == ["abort_requested", "stream_failed"]
    assert inputs[-1].error == "the stream did not end within 0.2 s of the abort"
    strict = replay(path)
    assert strict.events == events and strict.messages == messages == [*messages[:-1], so_far()]


# --------------------------------------------------------------------------- over HTTP


def _sse(*events: tuple[str, str]) -> bytes:
    return b"".join(f"event: {name}\ndata: {data}\n\n".encode() for name, data in events)


USAGE_AFTER_CONTENT = _sse(
    ("message_start", '{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
                      '"model":"claude-sonnet-4-5","content":[],"stop_reason":null,'
                      '"usage":{"input_tokens":25,"output_tokens":1}}}'),
    ("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'),
    ("content_block_delta", '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}'),
    ("content_block_stop", '{"type":"content_block_stop","index":0}'),
    ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":40}}'),
)  # ... and message_stop never comes: the server stalls


def test_over_http_the_usage_the_provider_sent_before_the_abort_is_kept(flavour: Flavour) -> None:
    with ScriptServer(seed=23) as server:
        server.add(Reply(200, USAGE_AFTER_CONTENT, cut_after=len(USAGE_AFTER_CONTENT), then="stall", stall=10))
        model = model_for("anthropic-messages", server.url)
        decoder = codec_for(model.api).new_decoder(model)
        decoder.feed(USAGE_AFTER_CONTENT)
        billed = decoder.partial.usage  # what the provider reported: 25 in, 40 out, priced
        assert (billed.input, billed.output) == (25, 40) and billed.cost.total > 0

        signal, fired = AbortSignal(), []  # type: ignore[var-annotated]
        last_event_usage: list[Usage] = []

        def on_event(event: Any) -> None:
            e = getattr(event, "assistant_message_event", None)
            if e is not None and e.type == "text_end" and not fired:
                last_event_usage.append(event.message.usage)
                fired.append(time.monotonic())
                threading.Timer(0.3, signal.abort).start()  # the message_delta has arrived by then

        t0 = time.monotonic()
        events, messages = flavour.run("go", AgentContext(), AgentLoopConfig(model=model, api_key="test-key"),
                                       None, signal, on_event, http={})
        final = messages[-1]
        assert final.stop_reason == "aborted" and final.error_message == "Request was aborted"
        assert final.text == "Hello"
        assert final.usage == billed
        assert last_event_usage[0] != billed  # the last stream event did not carry it: the core could not know
        assert each_type(events)[-3:] == ["message_end", "turn_end", "agent_end"]
        assert time.monotonic() - t0 < 3
        assert server.attempts == 1


def test_a_run_recorded_without_a_grace_period_replays_as_it_was_recorded(
        flavour: Flavour, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transcript recorded before the grace period existed holds the abort as one that does not
    wait (its step drops the stream): strict and LLM-only replays follow the recording."""
    path = tmp_path / "run.jsonl"
    monkeypatch.setattr(Run, "stream_grace", 0.0)
    events, messages, _ = run(flavour, Provider("own"), path)
    monkeypatch.undo()
    assert Run.stream_grace > 0
    abort = next(e for e in read_transcript(path).entries if e.input.type == "abort_requested")
    assert abort.input.wait_for_stream is False
    assert [e["type"] for e in abort.effects_json][:2] == ["cancel_llm", "emit"]
    assert messages[-1] == so_far()
    assert replay(path).messages == messages
    live = flavour.call(flavour.replay_llm, path, AgentLoopConfig(model=MODEL), [echo])
    assert live.messages == messages and live.events == events
