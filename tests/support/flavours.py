"""The sync and the asyncio interpreter behind one set of calls.

A test that holds for both takes the ``flavour`` fixture (tests/conftest.py): it runs once with
:data:`SYNC`, once with :data:`ASYNCIO` (ids ``sync`` and ``asyncio``). A test that compares the
two iterates over :data:`FLAVOURS`. Each call below runs to its end and returns plain values, so
the test reads the same under both; under asyncio it runs in a fresh event loop
(``asyncio.run``), and whatever it starts is built inside that loop.

    events, messages = flavour.run("go", context, config, ScriptedModel(["hi"]))
    events, messages = flavour.record(path, "go", context, config, stream_fn)   # a transcript too
    messages = flavour.call(flavour.run_agent_loop, "go", context, config, emit)
    result = flavour.call(flavour.replay_llm, path, config, tools)
    events = flavour.stream_http(model, llm_context, options, max_retries=0)   # one HTTP call

``http=`` (a dict of streamer options) gives a run this flavour's HTTP streamer as its
``stream_fn``, opened inside the run's event loop and closed after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import interpreters
from interpreters import aio
from interpreters.replay import areplay_llm, replay_llm
from interpreters.signal import AbortSignal
from interpreters.streams.http import AsyncHttpStreamer, HttpStreamer
from interpreters.transcript import TranscriptRecorder

__all__ = ["ASYNCIO", "FLAVOURS", "SYNC", "Flavour"]


@dataclass(frozen=True, repr=False)
class Flavour:
    """One interpreter: its entry points as they are (``agent_loop`` returns its stream, an
    asyncio ``run_agent_loop`` a coroutine), and calls that run them to their end."""

    name: str  # "sync" or "asyncio"
    agent_loop: Callable[..., Any]
    agent_loop_continue: Callable[..., Any]
    run_agent_loop: Callable[..., Any]
    run_agent_loop_continue: Callable[..., Any]
    replay_llm: Callable[..., Any]
    resume_suspended: Callable[..., Any]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name.upper()

    @property
    def is_async(self) -> bool:
        return self.name == "asyncio"

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``; under asyncio called in a new event loop, and what it returns
        awaited there when it is awaitable."""
        if not self.is_async:
            return fn(*args, **kwargs)

        async def main() -> Any:
            value = fn(*args, **kwargs)
            return await value if inspect.isawaitable(value) else value

        return asyncio.run(main())

    def collect(self, start: Callable[[], Any], on_event: Callable[[Any], None] | None = None
                ) -> tuple[list[Any], Any]:
        """Iterate the stream ``start()`` returns to its end: ``(events, stream.result())``.
        ``on_event`` sees each event as it comes (it may abort, steer...)."""
        return self._drive(lambda _streamer: start(), on_event, None)

    def _drive(self, start: Callable[[Any], Any], on_event: Callable[[Any], None] | None,
               http: Mapping[str, Any] | None) -> tuple[list[Any], Any]:
        """:meth:`collect`, ``start`` given the streamer ``http`` asks for (or None)."""
        events: list[Any] = []

        def seen(event: Any) -> None:
            events.append(event)
            if on_event is not None:
                on_event(event)

        if not self.is_async:
            with HttpStreamer(**http) if http is not None else contextlib.nullcontext() as streamer:
                stream = start(streamer)
                for event in stream:
                    seen(event)
                return events, stream.result()

        async def main() -> Any:
            async with AsyncHttpStreamer(**http) if http is not None else contextlib.nullcontext() as streamer:
                astream = start(streamer)
                async for event in astream:
                    seen(event)
                return await astream.result()

        return events, asyncio.run(main())

    def suspending(self, start: Callable[[], Any], on_event: Callable[[Any], None] | None = None
                   ) -> tuple[list[Any], list[Any], Any]:
        """Iterate the stream ``start()`` returns to its end: ``(events, stream.result(),
        stream.suspension)`` (the suspension is ``None`` when the run ended)."""
        events: list[Any] = []

        def seen(event: Any) -> None:
            events.append(event)
            if on_event is not None:
                on_event(event)

        if not self.is_async:
            stream = start()
            for event in stream:
                seen(event)
            return events, stream.result(), stream.suspension

        async def main() -> tuple[Any, Any]:
            astream = start()
            async for event in astream:
                seen(event)
            return await astream.result(), astream.suspension

        messages, suspension = asyncio.run(main())
        return events, messages, suspension

    def start_suspending(self, prompt: Any, context: Any, config: Any, stream_fn: Any,
                         **options: Any) -> tuple[list[Any], list[Any], Any]:
        """``agent_loop`` to its end or its suspension: ``(events, messages, suspension)``."""
        return self.suspending(lambda: self.agent_loop(prompt, context, config, None, stream_fn, **options))

    def resume(self, suspension: Any, decisions: Any, context: Any, config: Any, stream_fn: Any,
               **options: Any) -> tuple[list[Any], list[Any], Any]:
        """``resume_suspended`` to its end or its next suspension: ``(events, messages,
        suspension)``."""
        return self.suspending(lambda: self.resume_suspended(suspension, decisions, context=context, config=config,
                                                             stream_fn=stream_fn, **options))

    def collect_catching(self, start: Callable[[], Any]) -> tuple[list[Any], BaseException | None]:
        """Iterate the stream ``start()`` returns: ``(events, what the iteration raised)``. The
        exception is caught around the ``for`` loop (sync) or inside the coroutine around the
        ``async for`` (asyncio)."""
        events: list[Any] = []
        if not self.is_async:
            try:
                for event in start():
                    events.append(event)
            except BaseException as exc:  # noqa: BLE001 - what the caller looks at
                return events, exc
            return events, None

        async def main() -> BaseException | None:
            try:
                async for event in start():
                    events.append(event)
            except BaseException as exc:  # noqa: BLE001 - what the caller looks at
                return exc
            return None

        return events, asyncio.run(main())

    def run(self, prompt: Any, context: Any, config: Any, stream_fn: Any, signal: AbortSignal | None = None,
            on_event: Callable[[Any], None] | None = None, *, http: Mapping[str, Any] | None = None,
            **options: Any) -> tuple[list[Any], list[Any]]:
        """``agent_loop`` to its end: ``(events, messages)``; ``options`` go to ``agent_loop``
        (``journal=``, ``clock=``). With ``http``, ``stream_fn`` is None: the run streams through
        a streamer of this flavour opened with those options."""
        if http is not None and stream_fn is not None:
            raise ValueError("http= opens the run's stream function: stream_fn must be None")
        return self._drive(lambda streamer: self.agent_loop(prompt, context, config, signal,
                                                            stream_fn if http is None else streamer, **options),
                           on_event, http)

    def record(self, path: Path, prompt: Any, context: Any, config: Any, stream_fn: Any,
               signal: AbortSignal | None = None, on_event: Callable[[Any], None] | None = None, *,
               secrets: Sequence[str] = (), **options: Any) -> tuple[list[Any], list[Any]]:
        """:meth:`run`, recorded to the transcript ``path`` (``secrets`` go to the recorder)."""
        journal = TranscriptRecorder(path, context, config, secrets=secrets)
        return self.run(prompt, context, config, stream_fn, signal, on_event, journal=journal, **options)

    def stream_http(self, model: Any, context: Any, options: Any, on_event: Callable[[Any], None] | None = None,
                    **streamer_options: Any) -> list[Any]:
        """One call through this flavour's HTTP streamer, opened for it with ``streamer_options``
        and closed after: the stream events."""
        events: list[Any] = []

        def seen(event: Any) -> None:
            events.append(event)
            if on_event is not None:
                on_event(event)

        if not self.is_async:
            with HttpStreamer(**streamer_options) as streamer:
                for event in streamer.stream(model, context, options):
                    seen(event)
            return events

        async def main() -> None:
            async with AsyncHttpStreamer(**streamer_options) as streamer:
                async for event in streamer.stream(model, context, options):
                    seen(event)

        asyncio.run(main())
        return events

    def sleep_into(self, waits: list[float]) -> Callable[[float], Any]:
        """A ``sleep=`` for this flavour's streamer that does not sleep: it appends the delay to
        ``waits`` (an ``async def`` under asyncio)."""
        if not self.is_async:
            return waits.append

        async def sleep(delay: float) -> None:
            waits.append(delay)

        return sleep


SYNC = Flavour("sync", interpreters.agent_loop, interpreters.agent_loop_continue, interpreters.run_agent_loop,
               interpreters.run_agent_loop_continue, replay_llm, interpreters.resume_suspended)
ASYNCIO = Flavour("asyncio", aio.agent_loop, aio.agent_loop_continue, aio.run_agent_loop,
                  aio.run_agent_loop_continue, areplay_llm, aio.resume_suspended)
FLAVOURS = (SYNC, ASYNCIO)
