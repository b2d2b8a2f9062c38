"""The fault matrix: every way a provider call can go wrong, against a real local server.

Each case runs through both flavours (``HttpStreamer`` in a thread, ``AsyncHttpStreamer`` in
asyncio) and checks the stop reason, the exact error text and how many requests the server saw.
Sleeps are injected (recorded, not slept) and the jitter is fixed at 0.5, so the backoff waits
are exact: 0.5 s, 1 s, 2 s.
"""

from __future__ import annotations

import re
import socket
import time

import pytest

from agentcore import replace
from agentcore.llm import StreamOptions
from agentcore.providers import codec_for
from interpreters.signal import AbortSignal
from tests.support.corpus import load, requires_corpus, sse_from_chunks
from tests.support.flavours import Flavour
from tests.support.http_script_server import Reply, ScriptServer, chat_model, model_for, reply_from

from .harness import one_call

pytestmark = requires_corpus

CHAT = "openai_chat/llm__test_tool_use_basic.yaml"


def chat_answer() -> Reply:
    """The recorded final answer of the multiply conversation (text, then [DONE])."""
    return reply_from(load(CHAT)[1])


ANSWER = "The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\)."
UPSTREAM = b'{"error": {"message": "upstream exploded", "type": "server_error"}}'


def half(body: bytes) -> int:
    """An event boundary in the middle of ``body``."""
    return body.index(b"data: ", len(body) // 2)


def text_of(api: str, body: bytes) -> str:
    """The text the codec has decoded from ``body`` (a prefix of a stream)."""
    d = codec_for(api).new_decoder(model_for(api, "http://x"))
    d.feed(body)
    return str(d.partial.text)


def decoded_alone(api: str, body: bytes) -> str | None:
    """The error message the codec gives for ``body`` fed in one piece, without any HTTP."""
    d = codec_for(api).new_decoder(model_for(api, "http://x"))
    events = d.feed(body) + d.finish()
    final = events[-1]
    return final.error.error_message if final.type == "error" else None


# --------------------------------------------------------------------------- retried statuses


def test_429_with_retry_after_then_success(flavour: Flavour, server: ScriptServer) -> None:
    limited = reply_from(load("openai_compatible/pydantic-ai__test_openrouter_errors_raised.yaml")[0],
                         headers={"retry-after": "2"})
    server.add(limited, chat_answer())
    out = one_call(flavour, chat_model(server.url))
    assert out.reason == "stop" and out.message.text == ANSWER
    assert server.attempts == 2
    assert out.waits == [2.0]
    assert out.types[0] == "start"  # nothing of the 429 leaked into the stream


def test_retry_after_ms_wins_and_http_dates_count(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(503, UPSTREAM, "application/json", {"retry-after-ms": "1500", "retry-after": "9"}),
               Reply(429, UPSTREAM, "application/json",
                     {"retry-after": time.strftime("%a, %d %b %Y %H:%M:%S GMT",
                                                   time.gmtime(time.time() + 5))}),
               chat_answer())
    out = one_call(flavour, chat_model(server.url))
    assert out.reason == "stop" and server.attempts == 3
    assert out.waits[0] == 1.5
    assert 3.0 <= out.waits[1] <= 5.0


@pytest.mark.parametrize("status,reason,hint", [
    (500, "Internal Server Error", "provider-side error; retry later"),
    (502, "Bad Gateway", "provider-side error; retry later"),
    (503, "Service Unavailable", "provider-side error; retry later"),
    (504, "Gateway Timeout", "provider-side error; retry later"),
    (529, "Overloaded", "the provider is overloaded; retry later"),
])
def test_5xx_retried_then_given_up(flavour: Flavour, server: ScriptServer, status: int, reason: str,
                                   hint: str) -> None:
    server.add(*[Reply(status, UPSTREAM, "application/json")] * 4)
    out = one_call(flavour, chat_model(server.url))
    assert out.reason == "error"
    assert out.error == (f"OpenAI-compatible API HTTP {status} {reason}: upstream exploded "
                         f"(type: server_error; {hint}) (gave up after 4 attempts)")
    assert server.attempts == 4
    assert out.waits == [0.5, 1.0, 2.0]
    assert out.types == ["error"]


def test_max_retries_is_configurable(flavour: Flavour, server: ScriptServer) -> None:
    server.add(*[Reply(500, UPSTREAM, "application/json")] * 2)
    out = one_call(flavour, chat_model(server.url), max_retries=1)
    assert out.error is not None and out.error.endswith("(gave up after 2 attempts)")
    assert server.attempts == 2 and out.waits == [0.5]


def test_retry_after_longer_than_max_retry_delay_is_not_waited(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(429, b'{"error": {"message": "Rate limit reached for gpt-4o-mini"}}',
                     "application/json", {"retry-after": "120"}))
    out = one_call(flavour, chat_model(server.url))
    assert out.reason == "error"
    assert out.error == (
        "OpenAI-compatible API HTTP 429 Too Many Requests: Rate limit reached for gpt-4o-mini "
        "(retry after 120s; rate limited or out of quota; retry later) (the provider asked to "
        "wait 120 s before retrying, more than max_retry_delay_ms=60000; not retried)")
    assert server.attempts == 1 and out.waits == []


def test_max_retry_delay_ms_from_options(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(503, UPSTREAM, "application/json", {"retry-after": "2"}))
    out = one_call(flavour, chat_model(server.url),
                   StreamOptions(api_key="test-key", max_retry_delay_ms=1500))
    assert out.error is not None and out.error.endswith(
        "(the provider asked to wait 2 s before retrying, more than max_retry_delay_ms=1500; "
        "not retried)")
    assert server.attempts == 1 and out.waits == []


# --------------------------------------------------------------------------- HTTP errors that are final

ERRORS = [
    ("openai-completions", "openai_chat/dd-trace-py__completion_stream_wrong_api_key.yaml",
     "OpenAI-compatible API HTTP 401 Unauthorized: Incorrect API key provided: sk-wrong****-key. "
     "You can find your API key at https://platform.openai.com/account/api-keys. (type: "
     "invalid_request_error, code: invalid_api_key, request_id: req_c45bfc7515dca54ef87c667f8210af23; "
     "check the API key)"),
    ("openai-completions", "openai_chat/pydantic-ai__test_model_name_suggestion[openai-chat].yaml",
     "OpenAI-compatible API HTTP 404 Not Found: The model `gpt-5.2-proo` does not exist or you do "
     "not have access to it. (type: invalid_request_error, code: model_not_found; check the model "
     "id and the base URL)"),
    ("openai-responses", "openai_responses/pydantic-ai__test_openai_responses_model_http_error.yaml",
     None),
    ("anthropic-messages", "anthropic/dd-trace-py__anthropic_completion_invalid_api_key.yaml",
     "Anthropic HTTP 401 Unauthorized: invalid x-api-key (type: authentication_error, "
     "request_id: req_013JyjhVcnhy8mfJkvBTqMNB; check the API key)"),
    ("anthropic-messages", "anthropic/dd-trace-py__anthropic_completion_error.yaml", None),
    ("google-generative-ai", "gemini/pydantic-ai__test_model_name_suggestion[google].yaml", None),
    ("google-generative-ai", "gemini/langchaingo__TestGoogleAIErrorHandling.httprr", None),
]


@pytest.mark.parametrize("api,file,expected", ERRORS, ids=[f.split("/")[1][:40] for _, f, _ in ERRORS])
def test_http_error_passes_provider_message_and_is_not_retried(
        flavour: Flavour, server: ScriptServer, api: str, file: str, expected: str | None) -> None:
    recorded = load(file)[0]
    server.add(reply_from(recorded))
    out = one_call(flavour, model_for(api, server.url))
    assert out.reason == "error"
    assert server.attempts == 1 and out.waits == []
    assert out.types == ["error"]
    # The codec's message for the recorded response, exactly, whatever the transport did.
    assert out.error == codec_for(api).decode_error_response(
        recorded.status, {k: v for k, v in recorded.response_headers.items()
                          if k in ("request-id", "x-request-id", "retry-after")}, recorded.body)
    assert f"HTTP {recorded.status}" in out.error
    if expected is not None:
        assert out.error == expected


# --------------------------------------------------------------------------- broken streams


def test_connection_reset_mid_stream(flavour: Flavour, server: ScriptServer) -> None:
    answer = chat_answer()
    cut = half(answer.body)
    server.add(replace(answer, cut_after=cut, then="reset"))
    out = one_call(flavour, chat_model(server.url))
    assert out.reason == "error"
    assert re.fullmatch(r"Connection lost mid-stream: (ReadError|RemoteProtocolError): .+",
                        out.error or ""), out.error
    assert out.message.text == text_of("openai-completions", answer.body[:cut])  # kept
    assert out.message.text.startswith("The result of")
    assert out.types[0] == "start" and "text_delta" in out.types
    assert server.attempts == 1 and out.waits == []


def test_connection_reset_before_the_first_byte_is_retried(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(reset_at_once=True), chat_answer())
    out = one_call(flavour, chat_model(server.url))
    assert out.reason == "stop" and out.message.text == ANSWER
    assert server.attempts == 2 and out.waits == [0.5]


def test_connection_refused_gives_up(flavour: Flavour) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = one_call(flavour, chat_model(f"http://127.0.0.1:{port}"))
    assert out.reason == "error"
    assert re.fullmatch(rf"Could not connect to 127\.0\.0\.1:{port}: .+ \(gave up after 4 attempts\)",
                        out.error or ""), out.error
    assert out.waits == [0.5, 1.0, 2.0]


def test_a_request_retried_after_another_failure_keeps_the_first_cause(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(503, UPSTREAM, "application/json"), *[Reply(500, UPSTREAM, "application/json")] * 3)
    out = one_call(flavour, chat_model(server.url))
    assert out.error == (
        "OpenAI-compatible API HTTP 500 Internal Server Error: upstream exploded (type: server_error; "
        "provider-side error; retry later) (gave up after 4 attempts; the first attempt failed with: "
        "OpenAI-compatible API HTTP 503 Service Unavailable: upstream exploded (type: server_error; "
        "provider-side error; retry later))")
    assert server.attempts == 4


@pytest.mark.parametrize("file,expected", [
    ("openai_compatible/pydantic-ai__test_openrouter_stream_error.yaml", "Token limit reached"),
    ("openai_compatible/pydantic-ai__test_tool_use_failed_error_streaming.yaml",
     "Tool call validation failed"),
])
def test_error_event_mid_stream(flavour: Flavour, server: ScriptServer, file: str, expected: str) -> None:
    recorded = load(file)[0]
    server.add(reply_from(recorded))
    out = one_call(flavour, chat_model(server.url))
    assert out.reason == "error"
    assert out.error == decoded_alone("openai-completions", recorded.body)
    assert expected in (out.error or "")
    assert out.message.content  # the thinking received before the error is kept
    assert server.attempts == 1


def test_error_event_mid_stream_responses(flavour: Flavour, server: ScriptServer) -> None:
    lines = load("openai_responses/vercel-ai__openai-error.1.chunks.txt")[0].extra["lines"]
    body = sse_from_chunks(lines, named=True)
    server.add(Reply(200, body))
    out = one_call(flavour, model_for("openai-responses", server.url))
    assert out.reason == "error"
    assert out.error == decoded_alone("openai-responses", body)
    assert "You exceeded your current quota" in (out.error or "")
    assert server.attempts == 1


def test_malformed_json_in_an_event(flavour: Flavour, server: ScriptServer) -> None:
    body = chat_answer().body
    at = body.index(b"data: ", 200)
    broken = body[:at] + b'data: {"choices": [tru\n\n' + body[at:]
    server.add(Reply(200, broken))
    out = one_call(flavour, chat_model(server.url))
    assert out.reason == "error"
    assert out.error == (
        "Invalid JSON in openai-completions stream event 'message': Expecting value at position "
        "13; data starts with '{\"choices\": [tru'")
    assert out.error == decoded_alone("openai-completions", broken)
    assert server.attempts == 1


def test_empty_200_body(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(200, b""))
    out = one_call(flavour, chat_model(server.url))
    assert out.reason == "error"
    assert out.error == decoded_alone("openai-completions", b"")
    assert out.error == ("Stream ended before the provider's final event (data: [DONE]); the body "
                         "was empty")
    assert server.attempts == 1 and out.waits == []


def test_stream_stops_without_its_final_event(flavour: Flavour, server: ScriptServer) -> None:
    body = chat_answer().body
    cut = half(body)
    server.add(Reply(200, body[:cut]))
    out = one_call(flavour, chat_model(server.url))
    assert out.reason == "error"
    assert out.error == decoded_alone("openai-completions", body[:cut])
    assert out.error is not None and out.error.startswith(
        "Stream ended before the provider's final event (data: [DONE]); received ")
    assert out.message.text.startswith("The result of")
    assert server.attempts == 1


@pytest.mark.parametrize("api,file", [
    ("anthropic-messages", "anthropic/llm-anthropic__test_stream_events_tool_calls.yaml"),
    ("google-generative-ai", "gemini/llm-gemini__test_tools.yaml"),
])
def test_gzip_bodies_are_decompressed(flavour: Flavour, server: ScriptServer, api: str, file: str) -> None:
    recorded = load(file)[0]
    reply = reply_from(recorded)
    assert reply.gzip
    server.add(reply)
    out = one_call(flavour, model_for(api, server.url))
    assert out.reason == "toolUse", out.error
    assert out.message.tool_calls


# --------------------------------------------------------------------------- timeouts


def test_read_timeout_before_headers(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(200, chat_answer().body, stall_before_headers=5))
    out = one_call(flavour, chat_model(server.url), read_timeout=0.2)
    assert out.reason == "error"
    assert out.error == "The provider did not respond within 0.2 s"
    assert server.attempts == 1 and out.waits == []
    assert out.elapsed < 2


def test_read_timeout_mid_stream_keeps_content(flavour: Flavour, server: ScriptServer) -> None:
    answer = chat_answer()
    server.add(replace(answer, cut_after=half(answer.body), then="stall"))
    out = one_call(flavour, chat_model(server.url), read_timeout=0.2)
    assert out.reason == "error"
    assert out.error == "The provider did not respond within 0.2 s"
    assert out.message.text.startswith("The result of")
    assert server.attempts == 1 and out.elapsed < 2


# --------------------------------------------------------------------------- abort


def test_abort_mid_stream(flavour: Flavour, server: ScriptServer) -> None:
    answer = chat_answer()
    server.add(replace(answer, cut_after=half(answer.body), then="stall"))
    out = one_call(flavour, chat_model(server.url), abort_on="text_delta")
    assert out.reason == "aborted"
    assert out.error == "Request was aborted"
    assert out.message.text.startswith("The result of")  # content so far is kept
    assert out.abort_latency is not None and out.abort_latency < 0.2, out.abort_latency
    assert server.attempts == 1


def test_abort_while_waiting_for_headers(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(200, chat_answer().body, stall_before_headers=5))
    out = one_call(flavour, chat_model(server.url), abort_on="start-now", abort_delay=0.05)
    assert out.reason == "aborted" and out.error == "Request was aborted"
    assert out.types == ["error"]
    assert out.abort_latency is not None and out.abort_latency < 0.2, out.abort_latency


def test_abort_during_retry_wait(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(503, UPSTREAM, "application/json", {"retry-after": "5"}))
    out = one_call(flavour, chat_model(server.url), abort_on="start-now", abort_delay=0.1,
                   real_sleep=True)
    assert out.reason == "aborted" and out.error == "Request was aborted"
    assert server.attempts == 1
    assert out.abort_latency is not None and out.abort_latency < 0.2, out.abort_latency


def test_already_aborted_sends_nothing(flavour: Flavour, server: ScriptServer) -> None:
    signal = AbortSignal()
    signal.abort()
    out = one_call(flavour, chat_model(server.url), StreamOptions(api_key="test-key", signal=signal))
    assert out.reason == "aborted" and out.error == "Request was aborted"
    assert out.types == ["error"]
    assert server.attempts == 0
