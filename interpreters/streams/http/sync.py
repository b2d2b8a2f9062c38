"""The sync HTTP streamer: one daemon thread pumps each exchange into a queue.

:class:`HttpStreamer` (one :class:`httpx.Client`, connections reused) is a sync ``stream_fn``;
:func:`stream_http`, what ``stream_fn=None`` means under the sync interpreter, uses the
process-wide :func:`default_streamer`. An abort shuts the socket down from the aborting thread,
which wakes a blocked read at once. The decisions are :class:`~interpreters.streams.http.session.Session`'s.
"""

from __future__ import annotations

import queue
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
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
    "HttpStreamer",
    "close_default_streamer",
    "default_streamer",
    "stream_http",
]


class _SyncExchange:
    """One HTTP exchange, pumped by a daemon thread into ``queue``."""

    def __init__(self, client: httpx.Client, request: httpx.Request) -> None:
        self.client = client
        self.request = request
        self.queue: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self.response: httpx.Response | None = None
        self.network_stream: Any = None
        self._lock = threading.Lock()
        self._cancelled = False
        self._finished = False
        self._detached = False
        self.exited = threading.Event()
        request.extensions["trace"] = self._trace

    def _trace(self, name: str, info: dict[str, Any]) -> None:
        if name == "connection.connect_tcp.complete":
            self.network_stream = info.get("return_value")

    def start(self) -> None:
        threading.Thread(target=self._pump, name="agentcore-http", daemon=True).start()

    def _pump(self) -> None:
        put = self.queue.put
        try:
            response = self.client.send(self.request, stream=True)
        except BaseException as exc:  # noqa: BLE001 - reported, never raised
            put(("error", exc))
            self.exited.set()
            return
        self.response = response
        self.network_stream = response.extensions.get("network_stream", self.network_stream)
        try:
            if self._cancelled:
                return
            put(("response", response))
            for chunk in response.iter_bytes():
                if self._cancelled:
                    return
                if chunk and not self._detached:
                    put(("chunk", chunk))
            with self._lock:
                self._finished = not self._cancelled
            put(("end", None))
        except BaseException as exc:  # noqa: BLE001
            put(("error", exc))
        finally:
            try:
                response.close()
            except Exception:  # noqa: BLE001
                pass
            self.exited.set()

    def detach(self) -> None:
        """The caller has what it needs: let the pump drain the rest of the body, so that the
        connection goes back to the pool (waiting a moment for it, see ``DRAIN_GRACE``)."""
        self._detached = True
        self.exited.wait(DRAIN_GRACE)

    def cancel(self) -> None:
        """Tear the exchange down now (from any thread): shut the socket down, which wakes a
        blocked read, and close the response."""
        with self._lock:
            if self._finished or self._cancelled:
                return
            self._cancelled = True
        stream = self.network_stream
        if stream is not None:
            try:
                sock = stream.get_extra_info("socket")
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
            except Exception:  # noqa: BLE001
                pass
        response = self.response
        if response is not None:
            try:
                response.close()
            except Exception:  # noqa: BLE001
                pass


class HttpStreamer(BaseStreamer):
    """Streams model replies over HTTP with one :class:`httpx.Client` (connections reused).

    An instance is a sync ``stream_fn``: pass it to ``agent_loop(..., stream_fn=streamer)`` or
    let ``stream_fn=None`` use the module's default instance. ``transport``, ``sleep`` and
    ``random`` exist for tests (an :class:`httpx.MockTransport`, a recorded sleep, a fixed
    jitter); ``environ`` is where API keys are looked up (default ``os.environ``).
    """

    def __init__(
        self,
        *,
        client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: httpx.Timeout | float | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        retry: RetryPolicy | None = None,
        max_retries: int | None = None,
        sleep: Callable[[float], None] | None = None,
        random: Callable[[], float] | None = None,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        super().__init__(client.timeout if client is not None
                         else build_timeout(timeout, connect_timeout, read_timeout),
                         retry, max_retries, random, environ, clock)
        self.client = client if client is not None else httpx.Client(
            transport=transport, timeout=self.timeout, follow_redirects=True, verify=ssl_context())
        self._sleep = sleep

    def __call__(self, model: Model, context: LlmContext, options: StreamOptions) -> Iterator[StreamEvent]:
        return self.stream(model, context, options)

    def stream(self, model: Model, context: LlmContext, options: StreamOptions) -> Iterator[StreamEvent]:
        """The stream events of one reply; never raises, ends with a final event. Carries out
        the steps of the call's :class:`~interpreters.streams.http.session.Plan`."""
        plan = Plan(self, self.client, model, context, options)
        signal = options.signal
        woken = threading.Event()
        current: list[_SyncExchange] = []

        def on_abort() -> None:  # in the aborting thread
            woken.set()
            if current:
                current[-1].queue.put(ABORT)
                current[-1].cancel()

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
                    reply = current[-1].queue.get()
                elif isinstance(step, Give):
                    yield from step.events
                elif isinstance(step, CallHook):
                    reply = _called(step)
                elif isinstance(step, Open):
                    current.append(_SyncExchange(self.client, step.request))
                elif step is START:
                    current[-1].start()
                elif isinstance(step, Backoff):
                    current[-1].cancel()
                    if self._sleep is not None:
                        self._sleep(step.delay)
                    else:
                        woken.wait(step.delay)
        finally:
            if remove is not None:
                remove()
            if current:
                if plan.graceful:
                    current[-1].detach()
                else:
                    current[-1].cancel()

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> HttpStreamer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _called(step: CallHook) -> tuple[bool, Any]:
    """Call a user's hook: ``(True, value)``, or ``(False, exception)``."""
    try:
        return True, step.fn(*step.args)
    except Exception as exc:  # noqa: BLE001 - the plan ends the call with its text
        return False, exc


# --------------------------------------------------------------------------- the default instance

_default_lock = threading.Lock()
_default: HttpStreamer | None = None


def default_streamer() -> HttpStreamer:
    """The process-wide :class:`HttpStreamer` behind :func:`stream_http` (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = HttpStreamer()
        return _default


def close_default_streamer() -> None:
    """Close the process-wide :class:`HttpStreamer` (the next :func:`default_streamer` makes a
    new one): its connections are released now, not at interpreter exit."""
    global _default
    with _default_lock:
        if _default is not None:
            _default.close()
            _default = None


def stream_http(model: Model, context: LlmContext, options: StreamOptions) -> Iterator[StreamEvent]:
    """The default sync ``stream_fn``: one reply from ``model``'s provider over HTTP."""
    return default_streamer().stream(model, context, options)
