"""Under asyncio a sync stream function is called on a worker thread: one that blocks before it
returns its stream (it connects to a server that accepts and stays silent, say) does not stop
the event loop, and the run's start timeout and abort end the wait for it.

Stream functions known not to block are called on the loop, as before: ``async def`` ones, and
sync ones marked ``blocking = False`` (an attribute of the function or of its class), as
``ScriptedModel`` is.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import AbortSignal, ScriptedModel, aio
from tests.support.clocks import StoppedClock
from tests.support.events import each_type
from tests.support.flavours import Flavour

MODEL = Model(id="m", api="faux", provider="faux")
CLOCK = StoppedClock(1000)
ERROR_RUN = ["agent_start", "turn_start", "message_start", "message_end",  # the prompt
             "message_start", "message_end", "turn_end", "agent_end"]


class Blocking:
    """A sync stream function that blocks ``seconds`` before it returns a scripted stream (it
    ignores its signal); ``release`` ends the wait early. Notes the thread it was called on."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.released = threading.Event()
        self.threads: list[int] = []
        self.signals: list[Any] = []

    def __call__(self, model: Any, context: Any, options: Any) -> Any:
        self.threads.append(threading.get_ident())
        self.signals.append(options.signal)
        self.released.wait(self.seconds)
        return ScriptedModel(["hi"], clock=CLOCK)(model, context, options)


async def run_ticking(stream_fn: Any, config: AgentLoopConfig, signal: AbortSignal | None = None
                      ) -> tuple[list[Any], list[Any], int, float, int]:
    """The run, while another task ticks every 10 ms: ``(events, messages, ticks, seconds, the
    loop's thread)``. A :class:`Blocking` stream function is released when the run has ended
    (``asyncio.run`` waits for its worker threads when it closes)."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    events: list[Any] = []
    t0 = time.monotonic()
    stream = aio.agent_loop("go", AgentContext(), config, signal, stream_fn, clock=CLOCK)
    async for event in stream:
        events.append(event)
    messages = await stream.result()
    took = time.monotonic() - t0
    task.cancel()
    if isinstance(stream_fn, Blocking):
        stream_fn.released.set()
    return events, messages, ticks, took, threading.get_ident()


def test_a_sync_stream_function_that_blocks_does_not_stop_the_loop() -> None:
    stream_fn = Blocking(0.4)
    events, messages, ticks, took, loop_thread = asyncio.run(asyncio.wait_for(
        run_ticking(stream_fn, AgentLoopConfig(model=MODEL)), 10))
    assert (messages[-1].stop_reason, messages[-1].text) == ("stop", "hi")
    assert took >= 0.4
    assert ticks >= 10, ticks  # about 40 while it blocked (on a loaded machine fewer)
    assert stream_fn.threads != [loop_thread]


def test_the_start_timeout_ends_the_wait_for_a_blocked_stream_function() -> None:
    stream_fn = Blocking(5)
    config = AgentLoopConfig(model=MODEL, stream_start_timeout_ms=300)
    events, messages, ticks, took, _ = asyncio.run(asyncio.wait_for(run_ticking(stream_fn, config), 10))
    assert each_type(events) == ERROR_RUN
    assert messages[-1].error_message == ("Model call timed out: the stream gave no event within 300 ms "
                                          "(stream_start_timeout_ms=300)")
    assert 0.3 <= took < 2, took
    assert ticks >= 5, ticks
    assert stream_fn.signals[0].aborted  # it was told to stop


def test_an_abort_ends_the_wait_for_a_blocked_stream_function() -> None:
    stream_fn = Blocking(5)
    signal = AbortSignal()

    async def main() -> tuple[list[Any], list[Any], int, float, int]:
        asyncio.get_running_loop().call_later(0.2, signal.abort)
        return await run_ticking(stream_fn, AgentLoopConfig(model=MODEL), signal)

    events, messages, ticks, took, _ = asyncio.run(asyncio.wait_for(main(), 10))
    assert events[-1].type == "agent_end" and messages[-1].stop_reason == "aborted"
    assert 0.2 <= took < 2, took
    assert ticks >= 5, ticks


def test_what_a_sync_stream_function_raises_on_its_thread_is_the_reply() -> None:
    def broken(model: Any, context: Any, options: Any) -> Any:
        raise StopIteration("no stream today")

    events, messages, _, _, _ = asyncio.run(run_ticking(broken, AgentLoopConfig(model=MODEL)))
    assert each_type(events) == ERROR_RUN
    assert messages[-1].stop_reason == "error" and "no stream today" in (messages[-1].error_message or "")


def noting(seen: list[int], blocking: bool | None = None) -> Callable[..., Any]:
    """A scripted sync stream function that notes the thread it is called on (marked
    ``blocking`` when given)."""

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        seen.append(threading.get_ident())
        return ScriptedModel(["hi"], clock=CLOCK)(model, context, options)

    if blocking is not None:
        stream_fn.blocking = blocking  # type: ignore[attr-defined]
    return stream_fn


class QuickModel:
    """A callable object whose class says it does not block."""

    blocking = False

    def __init__(self) -> None:
        self.seen: list[int] = []

    def __call__(self, model: Any, context: Any, options: Any) -> Any:
        self.seen.append(threading.get_ident())
        return ScriptedModel(["hi"], clock=CLOCK)(model, context, options)


def called_on(stream_fn: Any, seen: list[int]) -> tuple[list[int], int]:
    _, messages, _, _, loop = asyncio.run(run_ticking(stream_fn, AgentLoopConfig(model=MODEL)))
    assert messages[-1].text == "hi"
    return seen, loop


def test_which_stream_functions_are_called_on_the_loop() -> None:
    seen: list[int] = []
    threads, loop = called_on(noting(seen), seen)
    assert len(threads) == 1 and threads[0] != loop  # a sync function: on a worker thread
    seen = []
    assert called_on(noting(seen, blocking=True), seen)[0] != [loop]
    seen = []
    threads, loop = called_on(noting(seen, blocking=False), seen)
    assert threads == [loop]
    quick = QuickModel()
    threads, loop = called_on(quick, quick.seen)
    assert threads == [loop]
    # ScriptedModel is marked: its reply function runs on the loop
    replied: list[int] = []

    def reply(context: Any, index: int) -> str:
        replied.append(threading.get_ident())
        return "hi"

    threads, loop = called_on(ScriptedModel(reply), replied)
    assert threads == [loop] and ScriptedModel.blocking is False


def test_both_interpreters_time_out_a_blocked_stream_function(flavour: Flavour) -> None:
    stream_fn = Blocking(5)
    config = AgentLoopConfig(model=MODEL, stream_start_timeout_ms=300)
    ended: list[float] = []

    def seen(event: Any) -> None:
        if event.type == "agent_end":
            ended.append(time.monotonic())
            stream_fn.released.set()  # (asyncio.run waits for its worker threads when it closes)

    t0 = time.monotonic()
    try:
        events, messages = flavour.run("go", AgentContext(), config, stream_fn, on_event=seen, clock=CLOCK)
    finally:
        stream_fn.released.set()
    assert 0.3 <= ended[0] - t0 < 2, ended[0] - t0
    assert each_type(events) == ERROR_RUN and messages[-1].stop_reason == "error"
