"""HTTP for the provider codecs: the interpreter that moves the bytes.

The wire formats live in :mod:`agentcore.providers` as sans-IO codecs: a codec builds the request
as data and folds the response body, chunk by chunk, into stream events. This package is the
other half, and the only one that touches the network. It is what ``stream_fn=None`` means: the
sync interpreter uses :func:`stream_http`, the asyncio interpreter :func:`astream_http`.

- :mod:`interpreters.streams.http.session`: one call as data, the decisions of a call (retries,
  errors, aborts) and the call as steps (:class:`~interpreters.streams.http.session.Plan`), with no
  I/O, shared by both streamers;
- :mod:`interpreters.streams.http.sync`: :class:`HttpStreamer` (httpx, a pump thread);
- :mod:`interpreters.streams.http.aio`: :class:`AsyncHttpStreamer` (httpx async, a pump task).

Theory of operation
-------------------

One call is a small conversation between three parties:

* a **pump** (a daemon thread for :class:`HttpStreamer`, a task for :class:`AsyncHttpStreamer`)
  sends one request with httpx and puts what happens into a queue: ``("response", r)``, then
  ``("chunk", bytes)`` items as the body arrives, then ``("end", None)`` or ``("error", exc)``;
* the **abort callback**, registered on ``options.signal``, puts ``("abort", None)`` into the same
  queue and tears the exchange down at once (sync: shuts the socket down and closes the httpx
  response from the aborting thread; async: cancels the pump task);
* the **stream generator** carries out the steps of a :class:`~interpreters.streams.http.session.Plan`,
  the call written once for both flavours: open an exchange, start its pump, receive its next
  queue item, call a hook, give stream events, back off before a retry. The plan hands each
  queue item to :class:`~interpreters.streams.http.session.Session`, a sans-IO state machine, which
  answers with the stream events to yield and what to do next: read on, stop, or retry after
  a delay.

Because every wait is a wait on that queue, an abort ends the stream immediately whatever the
socket is doing (connecting, waiting for headers, mid-body), and because the steps and the
decisions live in the plan and the session, the sync and async twins differ only in the I/O:
the pump, the waits, awaiting a hook.

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

from .aio import AsyncHttpStreamer, astream_http, default_async_streamer, forget_default_async_streamers
from .session import ABORTED_MESSAGE, DEFAULT_MAX_RETRY_DELAY_MS, RETRY_STATUSES, RetryPolicy, retry_after_seconds
from .sync import HttpStreamer, close_default_streamer, default_streamer, stream_http

__all__ = [
    "ABORTED_MESSAGE",
    "AsyncHttpStreamer",
    "DEFAULT_MAX_RETRY_DELAY_MS",
    "HttpStreamer",
    "RETRY_STATUSES",
    "RetryPolicy",
    "astream_http",
    "close_default_streamer",
    "default_async_streamer",
    "default_streamer",
    "forget_default_async_streamers",
    "retry_after_seconds",
    "stream_http",
]
