"""Run one call through :class:`HttpStreamer` or :class:`AsyncHttpStreamer` and collect it."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agentcore import replace
from agentcore.llm import LlmContext, StreamOptions
from agentcore.messages import Model, UserMessage
from agentcore.providers import get_model
from agentcore.stream import DoneEvent, ErrorEvent
from interpreters.http import AsyncHttpStreamer, HttpStreamer
from interpreters.signal import AbortSignal

FLAVOURS = ["sync", "async"]
CONTEXT = LlmContext("", (UserMessage("What is 1231 * 2331?", timestamp=0),))


def chat_model(url: str) -> Model:
    return replace(get_model("openai", "gpt-4o-mini"), api="openai-completions", base_url=url + "/v1")


def model_for(api: str, url: str) -> Model:
    if api == "openai-completions":
        return chat_model(url)
    if api == "openai-responses":
        return replace(get_model("openai", "gpt-4o"), base_url=url + "/v1")
    if api == "anthropic-messages":
        return replace(get_model("anthropic", "claude-sonnet-4-5"), base_url=url)
    return replace(get_model("google", "gemini-2.5-flash"), base_url=url + "/v1beta")


@dataclass
class Outcome:
    events: list[Any]
    waits: list[float]
    elapsed: float
    abort_latency: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def final(self) -> Any:
        return self.events[-1]

    @property
    def message(self) -> Any:
        final = self.final
        return final.message if isinstance(final, DoneEvent) else final.error

    @property
    def error(self) -> str | None:
        return self.message.error_message

    @property
    def reason(self) -> str:
        return str(self.message.stop_reason)

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]


def run(flavour: str, model: Model, options: StreamOptions | None = None, *,
        abort_on: str | None = None, abort_delay: float = 0.02, real_sleep: bool = False,
        **kw: Any) -> Outcome:
    """One call. ``abort_on``: abort (from another thread, ``abort_delay`` s later) when an
    event of that type arrives; ``abort_on="start-now"`` aborts right after the call starts."""
    options = options if options is not None else StreamOptions(api_key="test-key")
    signal = options.signal
    if abort_on is not None and signal is None:
        signal = AbortSignal()
        options = replace(options, signal=signal)
    waits: list[float] = []
    kw.setdefault("random", lambda: 0.5)
    kw.setdefault("read_timeout", 5.0)
    kw.setdefault("connect_timeout", 1.0)
    aborted_at: list[float] = []

    def abort_later() -> None:
        def fire() -> None:
            aborted_at.append(time.perf_counter())
            signal.abort()
        threading.Timer(abort_delay, fire).start()

    armed = [False]

    def seen(event: Any) -> None:
        if abort_on is not None and not armed[0] and event.type == abort_on:
            armed[0] = True
            abort_later()

    start = time.perf_counter()
    if abort_on == "start-now":
        armed[0] = True
        abort_later()
    events: list[Any] = []
    if flavour == "sync":
        if not real_sleep:
            kw.setdefault("sleep", waits.append)
        with HttpStreamer(**kw) as streamer:
            for event in streamer.stream(model, CONTEXT, options):
                events.append(event)
                seen(event)
    else:
        async def sleep(delay: float) -> None:
            waits.append(delay)

        if not real_sleep:
            kw.setdefault("sleep", sleep)

        async def go() -> None:
            async with AsyncHttpStreamer(**kw) as streamer:
                async for event in streamer.stream(model, CONTEXT, options):
                    events.append(event)
                    seen(event)

        asyncio.run(go())
    end = time.perf_counter()
    assert events, "no events"
    assert isinstance(events[-1], (DoneEvent, ErrorEvent))
    assert sum(isinstance(e, (DoneEvent, ErrorEvent)) for e in events) == 1
    latency = end - aborted_at[0] if aborted_at else None
    return Outcome(events, waits, end - start, latency)
