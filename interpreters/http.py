"""HTTP for the provider codecs: the interpreter that moves the bytes.

The wire formats live in :mod:`agentcore.providers` as sans-IO codecs: a codec builds the request
as data and folds the response body, chunk by chunk, into stream events. This module is the other
half, and the only one that touches the network. It is what ``stream_fn=None`` means: the sync
interpreter uses :func:`stream_http`, the asyncio interpreter :func:`astream_http`.

Theory of operation
-------------------

One call is a small conversation between three parties:

* a **pump** (a daemon thread for :class:`HttpStreamer`, a task for :class:`AsyncHttpStreamer`)
  sends one request with httpx and puts what happens into a queue: ``("response", r)``, then
  ``("chunk", bytes)`` items as the body arrives, then ``("end", None)`` or ``("error", exc)``;
* the **abort callback**, registered on ``options.signal``, puts ``("abort", None)`` into the same
  queue and tears the exchange down at once (sync: shuts the socket down and closes the httpx
  response from the aborting thread; async: cancels the pump task);
* the **stream generator** takes the queue items one by one and hands each to :class:`_Session`,
  a sans-IO state machine shared by both flavours, which answers with the stream events to yield
  and what to do next: read on, stop, or retry after a delay.

Because every wait is a wait on that queue, an abort ends the stream immediately whatever the
socket is doing (connecting, waiting for headers, mid-body), and because the retry and error
decisions live in :class:`_Session`, the sync and async twins differ only in how they wait.

Guarantees of a stream returned here: it never raises; it ends with exactly one
:class:`~agentcore.stream.DoneEvent` or :class:`~agentcore.stream.ErrorEvent`; failures before
the first body byte are a lone ``ErrorEvent`` (the interpreters still emit ``message_start`` /
``message_end`` for it); failures after it keep the content received so far. The API key never
appears in an error message or a log line.

Retries: on HTTP 429, 500, 502, 503, 504 and 529, and on connection errors before the first byte
of the body (refused, reset, closed without a response). Waits are exponential with full jitter
(``random() * min(max_delay, base_delay * factor ** (retry - 1))``, 1 s, 2 s, 4 s... capped at
30 s), except that a ``retry-after-ms`` or ``retry-after`` header (seconds or an HTTP date) is
honoured as given. A wait longer than ``options.max_retry_delay_ms`` (default 60 000) is not
waited: the call ends with the provider's error and how long it asked to wait. Read timeouts are
not retried (a provider that said nothing for two minutes will not do better on a retry).
"""

from __future__ import annotations

import asyncio
import ssl
import sys
import email.utils
import inspect
import logging
import os
import queue
import random as _random
import socket
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias

import httpx

from agentcore.frozen import JSON
from agentcore.llm import LlmContext, StreamOptions
from agentcore.messages import Model
from agentcore.providers.base import HttpRequest, StreamDecoder
from agentcore.providers.catalog import ENV_KEYS
from agentcore.providers.registry import Codec, codec_for
from agentcore.stream import ErrorEvent, PartialAssistantMessage, StreamEvent

from .clock import now_ms
from .secrets import redact_key, redact_key_bytes

__all__ = [
    "ABORTED_MESSAGE",
    "AsyncHttpStreamer",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    "HttpStreamer",
    "RETRY_STATUSES",
    "RetryPolicy",
    "astream_http",
    "default_async_streamer",
    "default_streamer",
    "retry_after_seconds",
    "stream_http",
]

_log = logging.getLogger("agentcore.http")

#: HTTP statuses that are retried (rate limits, overloaded or failing upstreams).
RETRY_STATUSES: Final = frozenset({429, 500, 502, 503, 504, 529})
#: The longest wait the provider may ask for when ``options.max_retry_delay_ms`` is not set.
DEFAULT_MAX_RETRY_DELAY_MS: Final = 60_000
#: The ``error_message`` of an aborted call.
ABORTED_MESSAGE: Final = "Request was aborted"

_RETRYABLE_ERRORS: Final = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
)
_MAX_ERROR_BODY: Final = 1 << 20  # keep at most 1 MiB of an error response
#: After the final event, how long to wait for the end of the body before leaving the drain to
#: the pump in the background. Waiting lets the connection go back to the pool before the next
#: request (the end of the body almost always follows the final event at once).
_DRAIN_GRACE: Final = 0.05


def _secs(value: float) -> str:
    """``120.0`` → ``'120'``, ``0.25`` → ``'0.25'``."""
    return f"{round(value, 3):g}"


# --------------------------------------------------------------------------- retry policy


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how long to retry. ``max_retries`` counts retries, not attempts."""

    max_retries: int = 3
    base_delay: float = 1.0
    factor: float = 2.0
    max_delay: float = 30.0

    def backoff(self, retry: int, random: Callable[[], float]) -> float:
        """The wait before retry number ``retry`` (1-based): exponential with full jitter.

        >>> RetryPolicy().backoff(1, lambda: 1.0), RetryPolicy().backoff(3, lambda: 0.5)
        (1.0, 2.0)
        >>> RetryPolicy().backoff(10, lambda: 1.0)
        30.0
        """
        return random() * min(self.max_delay, self.base_delay * self.factor ** (retry - 1))


def retry_after_seconds(headers: Mapping[str, str] | httpx.Headers | None, now: float) -> float | None:
    """How long the provider asked to wait: ``retry-after-ms``, else ``retry-after`` (seconds or
    an HTTP date, relative to the epoch time ``now``); ``None`` when it did not say.

    >>> retry_after_seconds({"retry-after": "7"}, 0.0), retry_after_seconds({"retry-after-ms": "250"}, 0.0)
    (7.0, 0.25)
    >>> retry_after_seconds({"retry-after": "Thu, 01 Jan 1970 00:01:00 GMT"}, 30.0)
    30.0
    >>> retry_after_seconds({"retry-after": "soon"}, 0.0) is None
    True
    """
    if headers is None:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


# --------------------------------------------------------------------------- one call, as data


@dataclass(frozen=True, slots=True)
class _Call:
    """Everything decided before the first byte is sent."""

    codec: Codec
    model: Model
    request: HttpRequest
    api_key: str | None
    timestamp: int
    max_retry_delay_ms: int

    def partial(self) -> PartialAssistantMessage:
        m = self.model
        return PartialAssistantMessage.begin(api=m.api, provider=m.provider, model=m.id,
                                             timestamp=self.timestamp)


def _fail(model: Model, timestamp: int, message: str, api_key: str | None = None,
          partial: PartialAssistantMessage | None = None,
          reason: Literal["error", "aborted"] = "error") -> ErrorEvent:
    if partial is None:
        partial = PartialAssistantMessage.begin(api=model.api, provider=model.provider,
                                                model=model.id, timestamp=timestamp)
    return partial.error(reason, redact_key(message, api_key))


def _build(client: httpx.Client | httpx.AsyncClient, req: HttpRequest) -> httpx.Request | str:
    """The httpx request of ``req``, or the error text when it cannot be built (e.g. a body that
    ``on_payload`` made unencodable, a header httpx refuses)."""
    try:
        return client.build_request(req.method, req.url, headers=req.headers, content=req.body_bytes())
    except Exception as exc:  # noqa: BLE001
        return f"Could not build the HTTP request: {type(exc).__name__}: {exc}"


def _prepare(model: Model, context: LlmContext, options: StreamOptions,
             environ: Mapping[str, str], timestamp: int) -> _Call | ErrorEvent:
    """Codec, API key and request of one call (``on_payload`` is applied by the caller)."""
    try:
        codec = codec_for(model.api)
    except KeyError as exc:
        return _fail(model, timestamp, str(exc.args[0]) if exc.args else str(exc))
    api_key = options.api_key
    if not api_key:
        env = ENV_KEYS.get(model.provider)
        if env is not None:
            api_key = environ.get(env) or None
            if api_key is None:
                return _fail(model, timestamp,
                             f"No API key for provider {model.provider}: set the {env} environment "
                             f"variable or pass api_key / get_api_key")
        # Providers without a known variable (ollama, vllm, llama.cpp, custom servers) often
        # need no key: the request is sent without one.
        if api_key is not None:
            options = replace(options, api_key=api_key)
    if api_key is not None:
        cleaned = api_key.strip()
        if not cleaned.isascii() or not cleaned.isprintable():
            return _fail(model, timestamp, f"The API key for provider {model.provider} contains characters an "
                         "HTTP header cannot carry (a line break, a control or non-ASCII character): check "
                         "where it is read from")
        if cleaned != options.api_key:
            options = replace(options, api_key=cleaned)
    try:
        request = codec.build_request(model, context, options)
    except Exception as exc:  # noqa: BLE001 - a codec bug must not escape
        return _fail(model, timestamp, f"Could not build the {model.api} request: "
                     f"{type(exc).__name__}: {exc}", api_key)
    max_delay = options.max_retry_delay_ms
    return _Call(codec, model, request, api_key, timestamp,
                 DEFAULT_MAX_RETRY_DELAY_MS if max_delay is None else max_delay)


def _with_payload(call: _Call, replacement: Any) -> _Call:
    if replacement is None:
        return call
    body: JSON = replacement
    return replace(call, request=replace(call.request, body=body))


def _response_info(response: httpx.Response) -> dict[str, Any]:
    return {"status": response.status_code, "headers": dict(response.headers)}


# --------------------------------------------------------------------------- the shared state machine

_Item: TypeAlias = tuple[str, Any]
"""A pump report: ``("response", httpx.Response)``, ``("chunk", bytes)``, ``("end", None)``,
``("error", exception)`` or ``("abort", None)``."""

_READ: Final = "read"
_DONE: Final = "done"  # final event given; the rest of the body may be drained in the background
_STOP: Final = "stop"  # final event given; tear the exchange down


@dataclass(frozen=True, slots=True)
class _Retry:
    delay: float


_Next: TypeAlias = Literal["read", "done", "stop"] | _Retry


class _Session:
    """The decisions of one call, shared by the sync and async twins (no I/O, no waiting).

    ``handle(item)`` takes one pump report and returns the events to yield and what to do next:
    ``"read"`` (take the next item), ``"done"``/``"stop"`` (the last event was final), or
    ``_Retry(delay)`` (start a new attempt after ``delay`` seconds).
    """

    def __init__(self, call: _Call, policy: RetryPolicy, random: Callable[[], float],
                 timeout: httpx.Timeout) -> None:
        self.call = call
        self.policy = policy
        self.random = random
        self.timeout = timeout
        self.attempt = 0
        self.waits: list[float] = []
        self.first_failure: str | None = None
        """What went wrong the first time, when the request was retried."""
        self._reset()

    def _reset(self) -> None:
        self.response: httpx.Response | None = None
        self.decoder: StreamDecoder | None = None
        self.body = bytearray()
        self.received = 0

    def begin_attempt(self) -> None:
        self.attempt += 1
        self._reset()

    @property
    def host(self) -> str:
        """``host:port`` of the request (the port the scheme implies when the URL has none)."""
        try:
            url = httpx.URL(self.call.request.url)
        except Exception:  # noqa: BLE001
            return self.call.request.url
        if not url.host:
            return self.call.request.url
        port = url.port or {"https": 443, "http": 80}.get(url.scheme)
        return f"{url.host}:{port}" if port else url.host

    def gave_up(self, message: str) -> str:
        """The text of a request that was retried and finally failed: its last failure, and the
        first one when that was another."""
        text = f"{message} (gave up after {self.attempt} attempts"
        if self.first_failure is not None and self.first_failure != message:
            text += f"; the first attempt failed with: {self.first_failure}"
        return text + ")"

    def retrying(self, message: str) -> None:
        if self.first_failure is None:
            self.first_failure = message

    def fail(self, message: str, reason: Literal["error", "aborted"] = "error") -> ErrorEvent:
        partial = self.decoder.partial if self.decoder is not None else None
        return _fail(self.call.model, self.call.timestamp, message, self.call.api_key, partial,
                     reason)

    def aborted(self) -> ErrorEvent:
        return self.fail(ABORTED_MESSAGE, "aborted")

    def handle(self, item: _Item) -> tuple[list[StreamEvent], _Next]:
        kind, value = item
        if kind == "chunk":
            if self.decoder is not None:
                self.received += len(value)
                events = self.decoder.feed(value)
                return events, (_DONE if self.decoder.finished else _READ)
            if len(self.body) < _MAX_ERROR_BODY:
                self.body += value
            return [], _READ
        if kind == "response":
            self.response = value
            if 200 <= value.status_code < 300:
                self.decoder = self.call.codec.new_decoder(self.call.model,
                                                           timestamp=self.call.timestamp)
            return [], _READ
        if kind == "end":
            if self.decoder is not None:
                return self.decoder.finish(), _STOP
            return self._http_error()
        if kind == "abort":
            return [self.aborted()], _STOP
        return self._transport_error(value)

    # -- failures

    def _give_up(self, message: str) -> tuple[list[StreamEvent], _Next]:
        return [self.fail(message)], _STOP

    def _http_error(self) -> tuple[list[StreamEvent], _Next]:
        response = self.response
        assert response is not None
        status, headers = response.status_code, response.headers
        body = bytes(self.body)
        body = redact_key_bytes(body, self.call.api_key)
        try:
            message = self.call.codec.decode_error_response(status, headers, body)
        except Exception as exc:  # noqa: BLE001
            message = f"HTTP {status} (the error body could not be decoded: {exc})"
        if status not in RETRY_STATUSES:
            return self._give_up(message)
        if self.attempt > self.policy.max_retries:
            return self._give_up(self.gave_up(message))
        self.retrying(message)
        limit_ms = self.call.max_retry_delay_ms
        asked = retry_after_seconds(headers, time.time())
        if asked is not None:
            if asked * 1000 > limit_ms:
                return self._give_up(
                    f"{message} (the provider asked to wait {_secs(asked)} s before retrying, "
                    f"more than max_retry_delay_ms={limit_ms}; not retried)")
            delay = asked
        else:
            delay = min(self.policy.backoff(self.attempt, self.random), limit_ms / 1000)
        _log.info("%s answered HTTP %d (attempt %d); retrying in %.3f s", self.host, status,
                  self.attempt, delay)
        return [], _Retry(delay)

    def _transport_error(self, exc: BaseException) -> tuple[list[StreamEvent], _Next]:
        if self.response is not None and self.decoder is None:
            return self._http_error()  # the error body was cut short: report what we have
        text = self.describe(exc)
        if self.received > 0:
            if isinstance(exc, httpx.TimeoutException):
                return self._give_up(text)
            return self._give_up(f"Connection lost mid-stream: {text}")
        if not isinstance(exc, _RETRYABLE_ERRORS):
            return self._give_up(text)
        if self.attempt > self.policy.max_retries:
            return self._give_up(self.gave_up(text))
        self.retrying(text)
        delay = min(self.policy.backoff(self.attempt, self.random),
                    self.call.max_retry_delay_ms / 1000)
        _log.info("%s (attempt %d); retrying in %.3f s", text, self.attempt, delay)
        return [], _Retry(delay)

    def describe(self, exc: BaseException) -> str:
        detail = str(exc) or type(exc).__name__
        t = self.timeout
        if isinstance(exc, httpx.ReadTimeout):
            return f"The provider did not respond within {_secs(t.read or 0)} s"
        if isinstance(exc, httpx.ConnectTimeout):
            return f"Could not connect to {self.host} within {_secs(t.connect or 0)} s"
        if isinstance(exc, httpx.WriteTimeout):
            return f"Sending the request to {self.host} timed out after {_secs(t.write or 0)} s"
        if isinstance(exc, httpx.PoolTimeout):
            return f"No free connection to {self.host} within {_secs(t.pool or 0)} s"
        if isinstance(exc, httpx.ConnectError):
            return f"Could not connect to {self.host}: {detail}"
        if self.received > 0:
            return f"{type(exc).__name__}: {detail}"
        if isinstance(exc, httpx.TransportError):
            return f"Connection to {self.host} failed: {type(exc).__name__}: {detail}"
        return f"HTTP request failed: {type(exc).__name__}: {detail}"


def _build_timeout(timeout: httpx.Timeout | float | None, connect: float, read: float) -> httpx.Timeout:
    if isinstance(timeout, httpx.Timeout):
        return timeout
    if timeout is not None:
        return httpx.Timeout(timeout)
    return httpx.Timeout(connect=connect, read=read, write=30.0, pool=10.0)


def _hook_error(name: str, exc: BaseException) -> str:
    return f"The {name} hook raised {type(exc).__name__}: {exc}"


# --------------------------------------------------------------------------- sync


class _SyncExchange:
    """One HTTP exchange, pumped by a daemon thread into ``queue``."""

    def __init__(self, client: httpx.Client, request: httpx.Request) -> None:
        self.client = client
        self.request = request
        self.queue: queue.SimpleQueue[_Item] = queue.SimpleQueue()
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
        connection goes back to the pool (waiting a moment for it, see ``_DRAIN_GRACE``)."""
        self._detached = True
        self.exited.wait(_DRAIN_GRACE)

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


class HttpStreamer:
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
        self.timeout = client.timeout if client is not None else _build_timeout(
            timeout, connect_timeout, read_timeout)
        self.client = client if client is not None else httpx.Client(
            transport=transport, timeout=self.timeout, follow_redirects=True, verify=_ssl_context())
        policy = retry or RetryPolicy()
        self.retry = policy if max_retries is None else replace(policy, max_retries=max_retries)
        self._sleep = sleep
        self._random = random or _random.random
        self._environ = environ
        self._clock = clock or now_ms

    def __call__(self, model: Model, context: LlmContext, options: StreamOptions) -> Iterator[StreamEvent]:
        return self.stream(model, context, options)

    def stream(self, model: Model, context: LlmContext, options: StreamOptions) -> Iterator[StreamEvent]:
        """The stream events of one reply; never raises, ends with a final event."""
        timestamp = self._clock()
        signal = options.signal
        if signal is not None and signal.aborted:
            yield _fail(model, timestamp, ABORTED_MESSAGE, reason="aborted")
            return
        prepared = _prepare(model, context, options,
                            os.environ if self._environ is None else self._environ, timestamp)
        if isinstance(prepared, ErrorEvent):
            yield prepared
            return
        call = prepared
        if options.on_payload is not None:
            try:
                call = _with_payload(call, options.on_payload(call.request.body, model))
            except Exception as exc:  # noqa: BLE001
                yield _fail(model, timestamp, _hook_error("on_payload", exc), call.api_key)
                return
        session = _Session(call, self.retry, self._random, self.timeout)
        woken = threading.Event()
        current: list[_SyncExchange] = []

        def on_abort() -> None:  # in the aborting thread
            woken.set()
            if current:
                current[-1].queue.put(("abort", None))
                current[-1].cancel()

        remove = signal.add_callback(on_abort) if signal is not None else None
        exchange: _SyncExchange | None = None
        graceful = False
        try:
            while True:
                session.begin_attempt()
                req = call.request
                built = _build(self.client, req)
                if isinstance(built, str):
                    yield session.fail(built)
                    return
                exchange = _SyncExchange(self.client, built)
                current.append(exchange)
                if signal is not None and signal.aborted:
                    yield session.aborted()
                    return
                exchange.start()
                while True:
                    item = exchange.queue.get()
                    if item[0] != "abort" and signal is not None and signal.aborted:
                        item = ("abort", None)
                    if item[0] == "response" and options.on_response is not None:
                        try:
                            options.on_response(_response_info(item[1]), model)
                        except Exception as exc:  # noqa: BLE001
                            yield session.fail(_hook_error("on_response", exc))
                            return
                    events, next_ = session.handle(item)
                    graceful = next_ == _DONE  # set before yielding: the consumer may stop here
                    if events:
                        yield from events
                    if next_ != _READ:
                        break
                if not isinstance(next_, _Retry):
                    return
                exchange.cancel()
                session.waits.append(next_.delay)
                if self._sleep is not None:
                    self._sleep(next_.delay)
                else:
                    woken.wait(next_.delay)
                if signal is not None and signal.aborted:
                    yield session.aborted()
                    return
        finally:
            if remove is not None:
                remove()
            if exchange is not None:
                if graceful:
                    exchange.detach()
                else:
                    exchange.cancel()

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> HttpStreamer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# --------------------------------------------------------------------------- async

_BACKGROUND: set[asyncio.Task[None]] = set()


class _AsyncExchange:
    """One HTTP exchange, pumped by a task into ``queue``."""

    def __init__(self, client: httpx.AsyncClient, request: httpx.Request) -> None:
        self.client = client
        self.request = request
        self.queue: asyncio.Queue[_Item] = asyncio.Queue()
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
            await asyncio.wait((task,), timeout=_DRAIN_GRACE)
            if not task.done():
                _BACKGROUND.add(task)
                task.add_done_callback(_BACKGROUND.discard)

    def cancel(self) -> None:
        """Tear the exchange down now (in the event loop's thread)."""
        task = self.task
        if task is not None and not task.done() and not self._finished:
            task.cancel()


class AsyncHttpStreamer:
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
        self.timeout = client.timeout if client is not None else _build_timeout(
            timeout, connect_timeout, read_timeout)
        self.client = client if client is not None else httpx.AsyncClient(
            transport=transport, timeout=self.timeout, follow_redirects=True, verify=_ssl_context())
        policy = retry or RetryPolicy()
        self.retry = policy if max_retries is None else replace(policy, max_retries=max_retries)
        self._sleep = sleep
        self._random = random or _random.random
        self._environ = environ
        self._clock = clock or now_ms

    def __call__(self, model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[StreamEvent]:
        return self.stream(model, context, options)

    async def stream(self, model: Model, context: LlmContext,
                     options: StreamOptions) -> AsyncGenerator[StreamEvent, None]:
        """The stream events of one reply; never raises, ends with a final event."""
        timestamp = self._clock()
        signal = options.signal
        if signal is not None and signal.aborted:
            yield _fail(model, timestamp, ABORTED_MESSAGE, reason="aborted")
            return
        prepared = _prepare(model, context, options,
                            os.environ if self._environ is None else self._environ, timestamp)
        if isinstance(prepared, ErrorEvent):
            yield prepared
            return
        call = prepared
        if options.on_payload is not None:
            try:
                replacement = options.on_payload(call.request.body, model)
                if inspect.isawaitable(replacement):
                    replacement = await replacement
                call = _with_payload(call, replacement)
            except Exception as exc:  # noqa: BLE001
                yield _fail(model, timestamp, _hook_error("on_payload", exc), call.api_key)
                return
        session = _Session(call, self.retry, self._random, self.timeout)
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        current: list[_AsyncExchange] = []

        def abort_in_loop() -> None:
            woken.set()
            if current:
                current[-1].queue.put_nowait(("abort", None))
                current[-1].cancel()

        def on_abort() -> None:  # in the aborting thread
            try:
                loop.call_soon_threadsafe(abort_in_loop)
            except RuntimeError:  # the loop is closed: nothing left to wake
                pass

        remove = signal.add_callback(on_abort) if signal is not None else None
        exchange: _AsyncExchange | None = None
        graceful = False
        try:
            while True:
                session.begin_attempt()
                req = call.request
                built = _build(self.client, req)
                if isinstance(built, str):
                    yield session.fail(built)
                    return
                exchange = _AsyncExchange(self.client, built)
                current.append(exchange)
                if signal is not None and signal.aborted:
                    yield session.aborted()
                    return
                exchange.start()
                while True:
                    item = await exchange.queue.get()
                    if item[0] != "abort" and signal is not None and signal.aborted:
                        item = ("abort", None)
                    if item[0] == "response" and options.on_response is not None:
                        try:
                            result = options.on_response(_response_info(item[1]), model)
                            if inspect.isawaitable(result):
                                await result
                        except Exception as exc:  # noqa: BLE001
                            yield session.fail(_hook_error("on_response", exc))
                            return
                    events, next_ = session.handle(item)
                    graceful = next_ == _DONE  # set before yielding: the consumer may stop here
                    for event in events:
                        yield event
                    if next_ != _READ:
                        break
                if not isinstance(next_, _Retry):
                    return
                exchange.cancel()
                session.waits.append(next_.delay)
                if self._sleep is not None:
                    await self._sleep(next_.delay)
                else:
                    try:
                        await asyncio.wait_for(woken.wait(), next_.delay)
                    except TimeoutError:
                        pass
                if signal is not None and signal.aborted:
                    yield session.aborted()
                    return
        finally:
            if remove is not None:
                remove()
            if exchange is not None:
                if graceful:
                    await exchange.detach()
                else:
                    exchange.cancel()

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> AsyncHttpStreamer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


# --------------------------------------------------------------------------- default instances

_ssl: ssl.SSLContext | None = None


def _ssl_context() -> ssl.SSLContext:
    """One verifying SSL context for every client of the process: loading the CA bundle costs
    about 17 ms, which a new client (one per event loop) would otherwise pay each time."""
    global _ssl
    if _ssl is None:
        _ssl = ssl.create_default_context()
    return _ssl


_default_lock = threading.Lock()
_default: HttpStreamer | None = None
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


def default_streamer() -> HttpStreamer:
    """The process-wide :class:`HttpStreamer` behind :func:`stream_http` (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = HttpStreamer()
        return _default


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


def stream_http(model: Model, context: LlmContext, options: StreamOptions) -> Iterator[StreamEvent]:
    """The default sync ``stream_fn``: one reply from ``model``'s provider over HTTP."""
    return default_streamer().stream(model, context, options)


async def astream_http(model: Model, context: LlmContext, options: StreamOptions) -> AsyncIterator[StreamEvent]:
    """The default async ``stream_fn``: one reply from ``model``'s provider over HTTP."""
    inner = default_async_streamer().stream(model, context, options)
    try:
        async for event in inner:
            yield event
    finally:
        await inner.aclose()
