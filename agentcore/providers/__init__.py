"""Provider wire formats as sans-IO codecs.

Nothing in this package performs I/O, reads a clock or the environment. Each supported wire API
(OpenAI Chat Completions and its many compatible servers, OpenAI Responses, Anthropic Messages,
Google Gemini) is three pure pieces, in the manner of h11 or wsproto:

* ``build_request(model, context, options) -> HttpRequest``: the HTTP request as data (method,
  URL, headers, JSON body). The API key is put in a header only when ``options.api_key`` is set.
* a decoder class (``OpenAIChatDecoder``, ``OpenAIResponsesDecoder``, ``AnthropicDecoder``,
  ``GoogleDecoder``): an incremental fold over the response body. ``feed(bytes)`` accepts any
  split of the body and returns the unified stream events it completed; ``finish()`` is called at
  the end of the body. The events are exactly one ``StartEvent``, then text/thinking/tool-call
  start, delta and end events, then exactly one ``DoneEvent`` or ``ErrorEvent``. Decoders never
  raise: malformed bytes, bad JSON, provider error events and truncated streams all become an
  ``ErrorEvent`` with an ``error_message`` that says what happened.
* ``decode_error_response(status, headers, body) -> str``: a message a person can act on for a
  non-2xx response.

An interpreter owns the socket: it sends the request, feeds the body chunks it receives, and
handles retries, timeouts and aborts. :data:`CODECS` / :func:`codec_for` find the codec of a
``Model.api``. :mod:`.catalog` lists well-known models with their prices; :mod:`.sse` is the
incremental Server-Sent Events decoder the stream decoders are built on.

>>> from agentcore.messages import Model
>>> d = OpenAIChatDecoder(Model(id="gpt-4o-mini", api="openai-completions", provider="openai"))
>>> events = d.feed(b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\\n\\n')
>>> events += d.feed(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\\n\\n')
>>> events += d.feed(b"data: [DONE]\\n\\n") + d.finish()
>>> [e.type for e in events]
['start', 'text_start', 'text_delta', 'text_end', 'done']
>>> events[-1].message.text
'Hi'
"""

from __future__ import annotations

from .anthropic import AnthropicDecoder
from .anthropic import build_request as build_anthropic_request
from .base import HttpRequest, SSEStreamDecoder, StreamDecoder, format_http_error
from .catalog import ENV_KEYS, MODELS, PROVIDER_BASE_URLS, custom_openai_model, get_model, list_models
from .cost import usage_with_cost
from .google import GoogleDecoder, JsonArrayScanner
from .google import build_request as build_google_request
from .openai_chat import OpenAIChatDecoder
from .openai_chat import build_request as build_openai_chat_request
from .openai_responses import OpenAIResponsesDecoder
from .openai_responses import build_request as build_openai_responses_request
from .registry import CODECS, Codec, codec_for
from .sse import SSEDecoder, SSEEvent

__all__ = [
    "AnthropicDecoder",
    "CODECS",
    "Codec",
    "ENV_KEYS",
    "GoogleDecoder",
    "HttpRequest",
    "JsonArrayScanner",
    "MODELS",
    "OpenAIChatDecoder",
    "OpenAIResponsesDecoder",
    "PROVIDER_BASE_URLS",
    "SSEDecoder",
    "SSEEvent",
    "SSEStreamDecoder",
    "StreamDecoder",
    "build_anthropic_request",
    "build_google_request",
    "build_openai_chat_request",
    "build_openai_responses_request",
    "codec_for",
    "custom_openai_model",
    "format_http_error",
    "get_model",
    "list_models",
    "usage_with_cost",
]
