"""The asyncio HTTP streamer: one task pumps each exchange into an ``asyncio.Queue``.

:class:`AsyncHttpStreamer` (one :class:`httpx.AsyncClient`) is an async ``stream_fn``;
:func:`astream_http`, what ``stream_fn=None`` means under ``interpreters.aio``, uses
:func:`default_async_streamer`, one per running event loop (closed when the loop shuts down).
An abort cancels the pump task. The decisions are :class:`~interpreters.streams.http.session.Session`'s,
as for the sync twin in :mod:`interpreters.streams.http.sync`.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx

from agentcore.llm import LlmContext, StreamOptions
from agentcore.messages import Model
from agentcore.stream import StreamEvent

from .session import (
    ABORT,
    DRAIN_GRACE,
    RECEIVE,
    START,
    Backoff,
    BaseStreamer,
    CallHook,
    Give,
    Item,
    Open,
    Plan,
    RetryPolicy,
    build_timeout,
    ssl_context,
)

__all__ = [
    "AsyncHttpStreamer",
    "astream_http",
    "default_async_streamer",
    "forget_default_async_streamers",
]


_BACKGROUND: set[asyncio.Task[None]] = set()


class _AsyncExchange:
    """One HTTP exchange, pumped by a task into ``queue``."""

    def __init__(self, client: httpx.AsyncClient, request: httpx.Request) -> None:
        self.client = client
        self.request = request
        self.queue: asyncio.Queue[Item] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self._finished = False
        self._detached = False

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        put = self.queue.put_nowait
        try:
            response = await self.client.send(self.request, stream=True)
        except Exception as exc:  # noqa: BLE001 - reported, never raised
            put(("error", exc))
            return
        try:
            put(("response", response))
            async for chunk in response.aiter_bytes():
                if chunk and not self._detached:
                    put(("chunk", chunk))
            self._finished = True
            put(("end", None))
        except Exception as exc:  # noqa: BLE001
            put(("error", exc))
        finally:
            await response.aclose()

    async def detach(self) -> None:
        """Let the pump drain the rest of the body (connection reuse): wait a moment for it,
        then leave it to run in the background."""
        self._detached = True
        task = self.task
        if task is not None and not task.done():
            await asyncio.wait((task,), timeout=DRAIN_GRACE)
            if not task.done():
                _BACKGROUND.add(task)
                task.add_done_callback(_BACKGROUND.discard)

    def cancel(self) -> None:
        """Tear the exchange down now (in the event loop's thread)."""
        task = self.task
        if task is not None and not task.done() and not self._finished:
            task.cancel()


class AsyncHttpStreamer(BaseStreamer):
    """The asyncio twin of :class:`HttpStreamer`, with one :class:`httpx.AsyncClient`.

    An httpx async client belongs to the event loop it first ran in: use one instance per loop
    (:func:`astream_http` keeps one per running loop). ``sleep`` is an ``async`` function.
    """

    def __init__(
        self,
        *,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: httpx.Timeout | float | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        max_retries: int | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        random: Callable[[], float] | None = None,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(client.timeout if client is not None
                         else build_timeout(timeout, connect_timeout, read_timeout),
                         retry, max_retries, random, environ, clock)
        self.client = client if client is not None else httpx.AsyncClient(
            transport=transport, timeout=self.timeout, follow_redirects=True, verify=ssl_context())
        self._sleep = sleep

    def __call__(self, model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[StreamEvent]:
        return self.stream(model, context, options)

    async def stream(self, model: Model, context: LlmContext,
                     options: StreamOptions) -> AsyncGenerator[StreamEvent, None]:
        """The stream events of one reply; never raises, ends with a final event. Carries out
        the steps of the call's :class:`~interpreters.streams.http.session.Plan`."""
        plan = Plan(self, self.client, model, context, options)
        signal = options.signal
        woken = asyncio.Event()
        current: list[_AsyncExchange] = []
        loop = asyncio.get_running_loop()

        def abort_in_loop() -> None:
            woken.set()
            if current:
                current[-1].queue.put_nowait(ABORT)
                current[-1].cancel()

        def on_abort() -> None:  # in the aborting thread
            try:
                loop.call_soon_threadsafe(abort_in_loop)
            except RuntimeError:  # the loop is closed: nothing left to wake
                pass

        remove = signal.add_callback(on_abort) if signal is not None else None
        steps = plan.steps()
        reply: Any = None
        try:
            while True:
                try:
                    step = steps.send(reply)
                except StopIteration:
                    return
                reply = None
                if step is RECEIVE:
                    reply = await current[-1].queue.get()
                elif isinstance(step, Give):
                    for event in step.events:
                        yield event
                elif isinstance(step, CallHook):
                    reply = await _called(step)
                elif isinstance(step, Open):
                    current.append(_AsyncExchange(self.client, step.request))
                elif step is START:
                    current[-1].start()
                elif isinstance(step, Backoff):
                    current[-1].cancel()
                    if self._sleep is not None:
                        await self._sleep(step.delay)
                    else:
                        try:
                            await asyncio.wait_for(woken.wait(), step.delay)
                        except TimeoutError:
                            pass
        finally:
            if remove is not None:
                remove()
            if current:
                if plan.graceful:
                    await current[-1].detach()
                else:
                    current[-1].cancel()

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> AsyncHttpStreamer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _called(step: CallHook) -> tuple[bool, Any]:
    """Call a user's hook, awaiting what it returns when that is awaitable: ``(True, value)``,
    or ``(False, exception)``."""
    try:
        value = step.fn(*step.args)
        if inspect.isawaitable(value):
            value = await value
        return True, value
    except Exception as exc:  # noqa: BLE001 - the plan ends the call with its text
        return False, exc


# --------------------------------------------------------------------------- the default instances

_default_lock = threading.Lock()
# Strong references, purged of closed loops on every lookup (a weak-keyed mapping would never
# let go: the client's connections refer back to their loop). Each streamer comes with the
# async generator that closes it when its loop shuts down.
_default_async: dict[asyncio.AbstractEventLoop, tuple[AsyncHttpStreamer, AsyncIterator[None] | None]] = {}


async def _closed_at_shutdown(streamer: AsyncHttpStreamer) -> AsyncIterator[None]:
    """Closes ``streamer`` when its event loop finalizes its async generators (``asyncio.run``
    does, through ``loop.shutdown_asyncgens()``, while the loop still runs)."""
    try:
        yield
    finally:
        await streamer.aclose()


def default_async_streamer() -> AsyncHttpStreamer:
    """The :class:`AsyncHttpStreamer` of the running event loop (created on first use)."""
    loop = asyncio.get_running_loop()
    with _default_lock:
        for dead in [lp for lp in _default_async if lp.is_closed()]:
            del _default_async[dead]
        held = _default_async.get(loop)
        if held is not None and not held[0].client.is_closed:
            return held[0]
        streamer = AsyncHttpStreamer()
        closer: AsyncIterator[None] | None = None
        # A loop that finalizes async generators (asyncio's, while it runs) gets one that closes
        # the streamer at its shutdown. Not for a streamer that replaces one the shutdown already
        # closed (another generator's cleanup wants to send a request): it goes with the loop.
        if held is None and sys.get_asyncgen_hooks().finalizer is not None:
            closer = _closed_at_shutdown(streamer)
            # Its first step registers it with the running loop (the asyncgen "firstiter" hook)
            # and runs it to its ``yield``; the loop's shutdown then runs its ``finally``.
            try:
                closer.asend(None).send(None)  # type: ignore[attr-defined]
            except StopIteration:
                pass
        _default_async[loop] = (streamer, closer)
        return streamer


def forget_default_async_streamers() -> None:
    """Drop the per-loop :class:`AsyncHttpStreamer` instances. Their clients belong to event
    loops that may be closed (``asyncio.run`` returned) and can no longer be awaited: the
    garbage collector releases their sockets."""
    with _default_lock:
        _default_async.clear()


async def astream_http(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[StreamEvent]:
    """The default async ``stream_fn``: one reply from ``model``'s provider over HTTP."""
    inner = default_async_streamer().stream(model, context, options)
    try:
        async for event in inner:
            yield event
    finally:
        await inner.aclose()
