"""One call through :class:`HttpStreamer` or :class:`AsyncHttpStreamer` (the ``flavour``'s),
collected with the sleeps it asked for and, on request, an abort at a chosen event."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agentcore import replace
from agentcore.llm import LlmContext, StreamOptions
from agentcore.messages import Model, UserMessage
from agentcore.stream import DoneEvent, ErrorEvent
from interpreters.signal import AbortSignal
from tests.support.events import each_type
from tests.support.flavours import Flavour

CONTEXT = LlmContext("", (UserMessage("What is 1231 * 2331?", timestamp=0),))


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
        return each_type(self.events)


def one_call(flavour: Flavour, model: Model, options: StreamOptions | None = None, *,
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

    if not real_sleep:
        kw.setdefault("sleep", flavour.sleep_into(waits))
    start = time.perf_counter()
    if abort_on == "start-now":
        armed[0] = True
        abort_later()
    events = flavour.stream_http(model, CONTEXT, options, seen, **kw)
    end = time.perf_counter()
    assert events, "no events"
    assert isinstance(events[-1], (DoneEvent, ErrorEvent))
    assert sum(isinstance(e, (DoneEvent, ErrorEvent)) for e in events) == 1
    latency = end - aborted_at[0] if aborted_at else None
    return Outcome(events, waits, end - start, latency)
