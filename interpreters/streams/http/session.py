"""What the sync and asyncio HTTP streamers share: one call decided as data, no I/O.

:func:`prepare` turns a model call into a :class:`Call` (the codec, the API key, the request as
data) or the error event that ends it at once. :class:`Session` is the sans-IO state machine of
one call: it takes the pump's reports (``("response", r)``, ``("chunk", bytes)``, ``("end",
None)``, ``("error", exc)``, ``("abort", None)``) one by one and answers with the stream events
to yield and what to do next: read on, stop, or retry after a delay (:class:`RetryPolicy`,
``retry-after`` headers, ``max_retry_delay_ms``). :class:`Plan` is the whole call as steps
(prepare, the hooks, each attempt, the abort's checks, the backoff), and :class:`BaseStreamer`
the settings both streamers have. The streamers in :mod:`interpreters.streams.http.sync` and
:mod:`interpreters.streams.http.aio` only carry out the steps: move bytes and wait.
"""

from __future__ import annotations

import email.utils
import logging
import os
import random as _random
import ssl
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

import httpx

from agentcore.frozen import JSON
from agentcore.llm import LlmContext, StreamOptions
from agentcore.messages import Model
from agentcore.providers.base import HttpRequest, StreamDecoder
from agentcore.providers.catalog import ENV_KEYS
from agentcore.providers.registry import Codec, codec_for
from agentcore.records import replace
from agentcore.stream import ErrorEvent, PartialAssistantMessage, StreamEvent

from ...runtime.clock import now_ms
from ...secrets import redact_key, redact_key_bytes

__all__ = [
    "ABORT",
    "ABORTED_MESSAGE",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    "DONE",
    "DRAIN_GRACE",
    "READ",
    "RECEIVE",
    "RETRY_STATUSES",
    "START",
    "STOP",
    "Backoff",
    "BaseStreamer",
    "Call",
    "CallHook",
    "Give",
    "Item",
    "Next",
    "Open",
    "Plan",
    "Retry",
    "RetryPolicy",
    "Session",
    "Step",
    "build",
    "build_timeout",
    "failed",
    "hook_error",
    "prepare",
    "response_info",
    "retry_after_seconds",
    "ssl_context",
    "with_payload",
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
DRAIN_GRACE: Final = 0.05


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
class Call:
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


def failed(model: Model, timestamp: int, message: str, api_key: str | None = None,
          partial: PartialAssistantMessage | None = None,
          reason: Literal["error", "aborted"] = "error") -> ErrorEvent:
    if partial is None:
        partial = PartialAssistantMessage.begin(api=model.api, provider=model.provider,
                                                model=model.id, timestamp=timestamp)
    return partial.error(reason, redact_key(message, api_key))


def build(client: httpx.Client | httpx.AsyncClient, req: HttpRequest) -> httpx.Request | str:
    """The httpx request of ``req``, or the error text when it cannot be built (e.g. a body that
    ``on_payload`` made unencodable, a header httpx refuses)."""
    try:
        return client.build_request(req.method, req.url, headers=req.headers, content=req.body_bytes())
    except Exception as exc:  # noqa: BLE001
        return f"Could not build the HTTP request: {type(exc).__name__}: {exc}"


def prepare(model: Model, context: LlmContext, options: StreamOptions,
             environ: Mapping[str, str], timestamp: int) -> Call | ErrorEvent:
    """Codec, API key and request of one call (``on_payload`` is applied by the caller)."""
    try:
        codec = codec_for(model.api)
    except KeyError as exc:
        return failed(model, timestamp, str(exc.args[0]) if exc.args else str(exc))
    api_key = options.api_key
    if not api_key:
        env = ENV_KEYS.get(model.provider)
        if env is not None:
            api_key = environ.get(env) or None
            if api_key is None:
                return failed(model, timestamp,
                             f"No API key for provider {model.provider}: set the {env} environment "
                             f"variable or pass api_key / get_api_key")
        # Providers without a known variable (ollama, vllm, llama.cpp, custom servers) often
        # need no key: the request is sent without one.
        if api_key is not None:
            options = replace(options, api_key=api_key)
    if api_key is not None:
        cleaned = api_key.strip()
        if not cleaned.isascii() or not cleaned.isprintable():
            return failed(model, timestamp, f"The API key for provider {model.provider} contains characters an "
                         "HTTP header cannot carry (a line break, a control or non-ASCII character): check "
                         "where it is read from")
        if cleaned != options.api_key:
            options = replace(options, api_key=cleaned)
    try:
        request = codec.build_request(model, context, options)
    except Exception as exc:  # noqa: BLE001 - a codec bug must not escape
        return failed(model, timestamp, f"Could not build the {model.api} request: "
                     f"{type(exc).__name__}: {exc}", api_key)
    max_delay = options.max_retry_delay_ms
    return Call(codec, model, request, api_key, timestamp,
                 DEFAULT_MAX_RETRY_DELAY_MS if max_delay is None else max_delay)


def with_payload(call: Call, replacement: Any) -> Call:
    if replacement is None:
        return call
    body: JSON = replacement
    return replace(call, request=replace(call.request, body=body))


def response_info(response: httpx.Response) -> dict[str, Any]:
    return {"status": response.status_code, "headers": dict(response.headers)}


# --------------------------------------------------------------------------- the shared state machine

Item: TypeAlias = tuple[str, Any]
"""A pump report: ``("response", httpx.Response)``, ``("chunk", bytes)``, ``("end", None)``,
``("error", exception)`` or ``("abort", None)``."""

READ: Final = "read"
DONE: Final = "done"  # final event given; the rest of the body may be drained in the background
STOP: Final = "stop"  # final event given; tear the exchange down


@dataclass(frozen=True, slots=True)
class Retry:
    delay: float


Next: TypeAlias = Literal["read", "done", "stop"] | Retry


class Session:
    """The decisions of one call, shared by the sync and async twins (no I/O, no waiting).

    ``handle(item)`` takes one pump report and returns the events to yield and what to do next:
    ``"read"`` (take the next item), ``"done"``/``"stop"`` (the last event was final), or
    ``Retry(delay)`` (start a new attempt after ``delay`` seconds).
    """

    def __init__(self, call: Call, policy: RetryPolicy, random: Callable[[], float],
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
        return failed(self.call.model, self.call.timestamp, message, self.call.api_key, partial,
                     reason)

    def aborted(self) -> ErrorEvent:
        return self.fail(ABORTED_MESSAGE, "aborted")

    def handle(self, item: Item) -> tuple[list[StreamEvent], Next]:
        kind, value = item
        if kind == "chunk":
            if self.decoder is not None:
                self.received += len(value)
                events = self.decoder.feed(value)
                return events, (DONE if self.decoder.finished else READ)
            if len(self.body) < _MAX_ERROR_BODY:
                self.body += value
            return [], READ
        if kind == "response":
            self.response = value
            if 200 <= value.status_code < 300:
                self.decoder = self.call.codec.new_decoder(self.call.model,
                                                           timestamp=self.call.timestamp)
            return [], READ
        if kind == "end":
            if self.decoder is not None:
                return self.decoder.finish(), STOP
            return self._http_error()
        if kind == "abort":
            return [self.aborted()], STOP
        return self._transport_error(value)

    # -- failures

    def _give_up(self, message: str) -> tuple[list[StreamEvent], Next]:
        return [self.fail(message)], STOP

    def _http_error(self) -> tuple[list[StreamEvent], Next]:
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
        return [], Retry(delay)

    def _transport_error(self, exc: BaseException) -> tuple[list[StreamEvent], Next]:
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
        return [], Retry(delay)

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


def build_timeout(timeout: httpx.Timeout | float | None, connect: float, read: float) -> httpx.Timeout:
    if isinstance(timeout, httpx.Timeout):
        return timeout
    if timeout is not None:
        return httpx.Timeout(timeout)
    return httpx.Timeout(connect=connect, read=read, write=30.0, pool=10.0)


def hook_error(name: str, exc: BaseException) -> str:
    return f"The {name} hook raised {type(exc).__name__}: {exc}"


_ssl: ssl.SSLContext | None = None


def ssl_context() -> ssl.SSLContext:
    """One verifying SSL context for every client of the process: loading the CA bundle costs
    about 17 ms, which a new client (one per event loop) would otherwise pay each time."""
    global _ssl
    if _ssl is None:
        _ssl = ssl.create_default_context()
    return _ssl


# --------------------------------------------------------------------------- one call, as steps

ABORT: Final[Item] = ("abort", None)
"""The report the abort callback puts into an exchange's queue."""


@dataclass(frozen=True, slots=True)
class Give:
    """Give these stream events to the consumer."""

    events: Sequence[StreamEvent]


@dataclass(frozen=True, slots=True)
class CallHook:
    """Call the user's hook ``fn(*args)`` (``on_payload``, ``on_response``; under asyncio an
    awaitable it returns is awaited) and send back ``(True, value)``, or ``(False, exception)``
    for an ``Exception`` it raised."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Open:
    """Make the exchange of ``request``, its pump not started yet: from now on the abort
    reaches it (a report in its queue, the exchange torn down)."""

    request: httpx.Request


START: Final = "start"
"""Start the exchange's pump."""

RECEIVE: Final = "receive"
"""Wait for the next report in the exchange's queue and send it back."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Tear the exchange down, then wait ``delay`` seconds before the next attempt (the abort
    ends the wait early)."""

    delay: float


Step: TypeAlias = "Give | CallHook | Open | Backoff | str"


class BaseStreamer:
    """What :class:`~interpreters.streams.http.sync.HttpStreamer` and
    :class:`~interpreters.streams.http.aio.AsyncHttpStreamer` share, as httpx's ``BaseClient`` is to
    ``Client`` and ``AsyncClient``: the settings, and :class:`Plan`, one call as the steps a
    twin carries out. The twins keep only the I/O: the client, the pump, the waits."""

    def __init__(self, timeout: httpx.Timeout, retry: RetryPolicy | None, max_retries: int | None,
                 random: Callable[[], float] | None, environ: Mapping[str, str] | None,
                 clock: Callable[[], int] | None) -> None:
        self.timeout = timeout
        policy = retry or RetryPolicy()
        self.retry = policy if max_retries is None else replace(policy, max_retries=max_retries)
        self._random = random or _random.random
        self._environ = environ
        self._clock = clock or now_ms


class Plan:
    """One call of a streamer as the steps its twin carries out, everything but the I/O.

    :meth:`steps` is a generator: it yields a step (:class:`Give` events, call a hook,
    :class:`Open` an exchange, :data:`START` it, :data:`RECEIVE` its next report,
    :class:`Backoff`), the twin carries it out and sends back what it got (a report, a hook's
    outcome, else ``None``). It checks the abort between steps and leaves every decision to
    :class:`Session`. :attr:`graceful` says, when the twin stops, whether the last exchange
    may drain in the background (its final event is given) or is to be torn down."""

    __slots__ = ("streamer", "client", "model", "context", "options", "graceful")

    def __init__(self, streamer: BaseStreamer, client: httpx.Client | httpx.AsyncClient, model: Model,
                 context: LlmContext, options: StreamOptions) -> None:
        self.streamer = streamer
        self.client = client
        self.model = model
        self.context = context
        self.options = options
        self.graceful = False

    def steps(self) -> Generator[Step, Any, None]:
        streamer, model, options = self.streamer, self.model, self.options
        signal = options.signal
        timestamp = streamer._clock()
        if signal is not None and signal.aborted:
            yield Give((failed(model, timestamp, ABORTED_MESSAGE, reason="aborted"),))
            return
        environ = os.environ if streamer._environ is None else streamer._environ
        prepared = prepare(model, self.context, options, environ, timestamp)
        if isinstance(prepared, ErrorEvent):
            yield Give((prepared,))
            return
        call = prepared
        if options.on_payload is not None:
            ok, value = yield CallHook(options.on_payload, (call.request.body, model))
            try:
                if not ok:
                    raise value
                call = with_payload(call, value)
            except Exception as exc:  # noqa: BLE001
                yield Give((failed(model, timestamp, hook_error("on_payload", exc), call.api_key),))
                return
        session = Session(call, streamer.retry, streamer._random, streamer.timeout)
        while True:
            session.begin_attempt()
            built = build(self.client, call.request)
            if isinstance(built, str):
                yield Give((session.fail(built),))
                return
            yield Open(built)
            if signal is not None and signal.aborted:
                yield Give((session.aborted(),))
                return
            yield START
            while True:
                item = yield RECEIVE
                if item[0] != "abort" and signal is not None and signal.aborted:
                    item = ABORT
                if item[0] == "response" and options.on_response is not None:
                    ok, value = yield CallHook(options.on_response, (response_info(item[1]), model))
                    if not ok:
                        yield Give((session.fail(hook_error("on_response", value)),))
                        return
                events, next_ = session.handle(item)
                self.graceful = next_ == DONE  # set before the events are given: the consumer may stop here
                if events:
                    yield Give(events)
                if next_ != READ:
                    break
            if not isinstance(next_, Retry):
                return
            session.waits.append(next_.delay)
            yield Backoff(next_.delay)
            if signal is not None and signal.aborted:
                yield Give((session.aborted(),))
                return
