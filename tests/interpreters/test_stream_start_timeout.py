"""``stream_start_timeout_ms``: a model call whose stream gives no first event in time ends as an
error, instead of hanging the run until a read timeout (or forever).

pi's equivalent is pi-ai's ``timeoutMs`` stream option (the SDKs' request timeout, up to the
response headers). Here the interpreter measures it, for every stream function: from the call of
the stream function to the first item its stream gives. Past it the stream's own signal is
aborted (the HTTP streamer closes its connection), the stream is left, and the reply ends with
``stop_reason="error"`` and an ``error_message`` naming the timeout. Later events may take as
long as they take.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, AssistantMessage, Model, PartialAssistantMessage, StartEvent
from interpreters import AbortSignal, ScriptedModel
from interpreters.agent import SyncAgent
from interpreters.replay import replay
from tests.support.clocks import StoppedClock
from tests.support.events import each_type
from tests.support.flavours import ASYNCIO, SYNC, Flavour
from tests.support.http_script_server import chat_model

MODEL = Model(id="m", api="faux", provider="faux")
CLOCK = StoppedClock(1000)
ERROR_RUN = ["agent_start", "turn_start", "message_start", "message_end",  # the prompt
             "message_start", "message_end", "turn_end", "agent_end"]


def timed_out(ms: int) -> str:
    return f"Model call timed out: the stream gave no event within {ms} ms (stream_start_timeout_ms={ms})"


def error_reply(ms: int, model: Model = MODEL) -> AssistantMessage:
    return AssistantMessage((), api=model.api, provider=model.provider, model=model.id, stop_reason="error",
                            error_message=timed_out(ms), timestamp=CLOCK.at)


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts connections, reads what comes, and never sends a
    byte. ``closed`` is set when a client closes its connection."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        self.closed = threading.Event()
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        conn.settimeout(0.05)
        with conn:
            while not self.stop.is_set():
                try:
                    if conn.recv(65536) == b"":
                        self.closed.set()
                        return
                except TimeoutError:
                    continue
                except OSError:
                    self.closed.set()
                    return

    def __enter__(self) -> SilentServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.sock.close()


def test_a_provider_that_accepts_and_never_sends_a_byte(flavour: Flavour) -> None:
    with SilentServer() as server:
        model = chat_model(server.url)
        config = AgentLoopConfig(model=model, api_key="test-key", stream_start_timeout_ms=300)
        t0 = time.monotonic()
        events, messages = flavour.run("go", AgentContext(), config, None, http={"read_timeout": 30},
                                       clock=CLOCK)
        elapsed = time.monotonic() - t0
        assert messages[-1] == error_reply(300, model)
        assert each_type(events) == ERROR_RUN
        assert 0.3 <= elapsed < 2.5, elapsed
        assert server.accepted == 1  # not retried
        assert server.closed.wait(2)  # the streamer let its connection go


class Silent:
    """A stream function whose stream never gives its first event (it gives up after 10 s). It
    notes the signal it was given. ``kind``: a sync generator or an async one."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.signal: Any = None
        self.stopped = threading.Event()

    def __call__(self, model: Any, context: Any, options: Any) -> Any:
        self.signal = options.signal
        return self.sync() if self.kind == "sync" else self.async_()

    def sync(self) -> Iterator[Any]:
        if self.signal.wait(10):
            self.stopped.set()
        return
        yield  # a generator

    async def async_(self) -> AsyncIterator[Any]:
        try:
            await asyncio.sleep(10)
        finally:
            self.stopped.set()
        return
        yield  # an async generator


@pytest.mark.parametrize(("flavour", "kind"), [(SYNC, "sync"), (ASYNCIO, "sync"), (ASYNCIO, "async")],
                         ids=["sync", "asyncio-sync-stream", "asyncio-async-stream"])
def test_a_stream_function_whose_stream_never_starts(flavour: Flavour, kind: str) -> None:
    stream = Silent(kind)
    run_signal = AbortSignal()
    config = AgentLoopConfig(model=MODEL, stream_start_timeout_ms=200)
    t0 = time.monotonic()
    events, messages = flavour.run("go", AgentContext(), config, stream, run_signal, clock=CLOCK)
    assert time.monotonic() - t0 < 2
    assert messages[-1] == error_reply(200)
    assert each_type(events) == ERROR_RUN
    assert stream.signal.aborted and stream.signal is not run_signal and not run_signal.aborted
    assert stream.stopped.wait(2)  # it was told to stop, and did


class Slow:
    """A stream that starts at once, then takes ``gap`` seconds before each later event (it can
    be iterated and async-iterated)."""

    def __init__(self, gap: float) -> None:
        self.gap = gap

    def __call__(self, model: Any, context: Any, options: Any) -> Slow:
        return self

    def events(self) -> list[Any]:
        p = PartialAssistantMessage.begin(api="faux", provider="faux", model="m", timestamp=5)
        ts = p.text_start()
        d = ts.partial.text_delta(0, "slow")
        return [StartEvent(p), ts, d, d.partial.done("stop")]

    def __iter__(self) -> Iterator[Any]:
        for i, event in enumerate(self.events()):
            if i:
                time.sleep(self.gap)
            yield event

    async def _aiter(self) -> AsyncIterator[Any]:
        for i, event in enumerate(self.events()):
            if i:
                await asyncio.sleep(self.gap)
            yield event

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._aiter()


def test_only_the_first_event_is_timed(flavour: Flavour) -> None:
    config = AgentLoopConfig(model=MODEL, stream_start_timeout_ms=100)
    events, messages = flavour.run("go", AgentContext(), config, Slow(0.25), clock=CLOCK)
    assert (messages[-1].stop_reason, messages[-1].text) == ("stop", "slow")


def test_a_stream_that_starts_in_time_is_not_touched(flavour: Flavour) -> None:
    model = ScriptedModel(["fine", "again"], clock=CLOCK)
    signals: list[Any] = []
    original = model.__call__

    def stream_fn(m: Any, context: Any, options: Any) -> Any:
        signals.append(options.signal)
        return original(m, context, options)

    config = AgentLoopConfig(model=MODEL, stream_start_timeout_ms=5000)
    events, messages = flavour.run("go", AgentContext(), config, stream_fn, clock=CLOCK)
    assert messages[-1].text == "fine" and messages[-1].stop_reason == "stop"
    assert not signals[0].aborted  # its signal was not fired after the stream started


def test_an_abort_before_the_first_event_is_an_abort_not_a_timeout(flavour: Flavour) -> None:
    run_signal = AbortSignal()

    def stream_fn(model: Any, context: Any, options: Any) -> Iterator[Any]:
        options.signal.wait(10)
        p = PartialAssistantMessage.begin(api="faux", provider="faux", model="m", timestamp=5)
        yield p.error("aborted", "provider: cancelled before the first token")

    async def astream_fn(model: Any, context: Any, options: Any) -> AsyncIterator[Any]:
        while not options.signal.aborted:
            await asyncio.sleep(0.01)
        p = PartialAssistantMessage.begin(api="faux", provider="faux", model="m", timestamp=5)
        yield p.error("aborted", "provider: cancelled before the first token")

    threading.Timer(0.1, run_signal.abort).start()
    config = AgentLoopConfig(model=MODEL, stream_start_timeout_ms=5000)
    fn = astream_fn if flavour.is_async else stream_fn
    t0 = time.monotonic()
    events, messages = flavour.run("go", AgentContext(), config, fn, run_signal, clock=CLOCK)
    assert time.monotonic() - t0 < 2
    final = messages[-1]
    assert (final.stop_reason, final.error_message) == ("aborted", "provider: cancelled before the first token")


def test_a_recorded_timeout_replays_identically(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    config = AgentLoopConfig(model=MODEL, stream_start_timeout_ms=100)
    silent = Silent("async" if flavour.is_async else "sync")
    events, messages = flavour.record(path, "go", AgentContext(), config, silent,
                                      clock=CLOCK)
    assert messages[-1] == error_reply(100)
    strict = replay(path)
    assert strict.events == events and strict.messages == messages


def test_the_agent_passes_it_through() -> None:
    with SyncAgent(model=MODEL, stream_fn=Silent("async"), stream_start_timeout_ms=150, clock=CLOCK) as agent:
        agent.prompt("go")
        assert agent.state.error == timed_out(150)


@pytest.mark.parametrize("bad", [-1, 1.5, "100", True])
def test_a_bad_value_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError) as info:
        AgentLoopConfig(model=MODEL, stream_start_timeout_ms=bad)
    assert str(info.value) == (
        f"stream_start_timeout_ms must be None or an integer >= 0 (milliseconds), not {bad!r}")


@pytest.mark.parametrize("ms", [None, 0])
def test_none_and_zero_mean_no_limit(ms: Any) -> None:
    assert AgentLoopConfig(model=MODEL, stream_start_timeout_ms=ms).stream_start_timeout_ms == ms
