"""decode_error_response on every recorded HTTP error, plus decoder robustness."""

from __future__ import annotations

import pytest

from agentcore.providers import anthropic, google, openai_chat, openai_responses
from agentcore.providers.base import format_http_error
from agentcore.stream import ErrorEvent
from tests.support.corpus import load, requires_corpus

from .helpers import check_shape, decode

MODULES = {
    "openai_chat": openai_chat,
    "openai_compatible": openai_chat,
    "openai_responses": openai_responses,
    "anthropic": anthropic,
    "gemini": google,
}

ERRORS: dict[tuple[str, int], tuple[int, list[str]]] = {
    ("openai_chat/dd-trace-py__completion_stream_wrong_api_key.yaml", 0):
        (401, ["Incorrect API key provided", "invalid_api_key", "check the API key"]),
    ("openai_chat/pydantic-ai__test_model_name_suggestion[openai-chat].yaml", 0):
        (404, ["The model `gpt-5.2-proo` does not exist", "model_not_found"]),
    ("openai_chat/pydantic-ai__test_openai_o1_mini_system_role[system].yaml", 0):
        (400, ["does not support 'system' with this model", "unsupported_value",
               "messages[0].role"]),
    ("openai_responses/dd-trace-py__response_error.yaml", 0):
        (401, ["Incorrect API key provided", "invalid_api_key"]),
    ("openai_responses/pydantic-ai__test_openai_responses_model_http_error.yaml", 0):
        (400, ["Invalid 'temperature'", "decimal_below_min_value", "param: temperature"]),
    ("anthropic/dd-trace-py__anthropic_completion_invalid_api_key.yaml", 0):
        (401, ["invalid x-api-key", "authentication_error"]),
    ("anthropic/dd-trace-py__anthropic_completion_error.yaml", 0):
        (400, ["messages.0: Input does not match the expected shape.", "invalid_request_error"]),
    ("anthropic/pydantic-ai__test_anthropic_explicit_effort_xhigh_unsupported_model_errors.yaml", 0):
        (400, ["does not support effort level 'xhigh'", "req_011Ca7jT9AHpgXgdv8igm4z9"]),
    ("anthropic/pydantic-ai__test_model_name_suggestion[anthropic].yaml", 0):
        (404, ["model: claude-sonet-4-5", "not_found_error"]),
    ("gemini/langchaingo__TestGoogleAIErrorHandling.httprr", 0):
        (403, ["Method doesn't allow unregistered callers", "PERMISSION_DENIED"]),
    ("gemini/pydantic-ai__test_model_name_suggestion[google].yaml", 0):
        (404, ["models/gemini-3.6-flahs is not found", "NOT_FOUND"]),
    ("openai_compatible/pydantic-ai__test_openrouter_errors_raised.yaml", 0):
        (429, ["Provider returned error", "temporarily rate-limited upstream", "retry later"]),
    ("openai_compatible/pydantic-ai__test_openrouter_errors_raised.yaml", 2):
        (429, ["Provider returned error"]),
    ("openai_compatible/langchaingo__TestOpenRouterStreaming.httprr", 1):
        (429, ["Rate limit exceeded: limit_rpm/meta-llama/llama-3.2-3b-instruct"]),
}


@requires_corpus
@pytest.mark.parametrize("key", sorted(ERRORS), ids=lambda k: f"{k[0].split('/')[-1]}[{k[1]}]")
def test_recorded_http_error(key: tuple[str, int]) -> None:
    path, index = key
    status, needles = ERRORS[key]
    it = load(path)[index]
    assert it.status == status
    msg = MODULES[path.split("/")[0]].decode_error_response(it.status, it.response_headers, it.body)
    assert f"HTTP {status}" in msg
    for needle in needles:
        assert needle in msg, msg


def test_error_response_fallbacks() -> None:
    assert format_http_error("X", 502, {}, b"<html>bad gateway</html>") == (
        "X HTTP 502 Bad Gateway: <html>bad gateway</html> (provider-side error; retry later)")
    assert "(empty body)" in format_http_error("X", 500, None, b"")
    msg = format_http_error("Anthropic", 529, {"retry-after": "7"},
                            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')
    assert "Overloaded" in msg and "retry after 7s" in msg and "overloaded_error" in msg
    gem = format_http_error("Google Gemini", 429, {}, b'[{"error": {"code": 429, "message": '
                            b'"Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}]')
    assert "Resource exhausted" in gem and "RESOURCE_EXHAUSTED" in gem


# --------------------------------------------------------------------------- malformed streams


@pytest.mark.parametrize("folder", ["openai_chat", "openai_responses", "anthropic", "gemini"])
def test_invalid_json_names_the_problem(folder: str) -> None:
    events = decode(folder, b"data: {not json at all\n\n")
    msg = check_shape(events)
    assert isinstance(events[-1], ErrorEvent) and msg.stop_reason == "error"
    assert msg.error_message and "Invalid JSON" in msg.error_message
    assert "{not json at all" in msg.error_message


@pytest.mark.parametrize("folder", ["openai_chat", "openai_responses", "anthropic", "gemini"])
def test_empty_and_truncated_bodies(folder: str) -> None:
    msg = check_shape(decode(folder, b""))
    assert msg.stop_reason == "error"
    assert msg.error_message and msg.error_message.startswith(
        "Stream ended before the provider's final event")
    assert "body was empty" in msg.error_message
    html = check_shape(decode(folder, b"<html>502 Bad Gateway</html>"))
    assert html.error_message and ("<html>502 Bad Gateway</html>" in html.error_message
                                   or "Malformed" in html.error_message)


def test_truncated_openai_stream_keeps_partial_content() -> None:
    body = (b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
            b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"lo"}}]}\n\n')
    msg = check_shape(decode("openai_chat", body))
    assert msg.stop_reason == "error" and msg.text == "Hello"
    assert msg.error_message and "[DONE]" in msg.error_message


def test_anthropic_midstream_overloaded_error() -> None:
    # SYNTHETIC: modelled on the real payload quoted in anthropics/anthropic-sdk-go#200 (no
    # recording of a mid-stream Anthropic error exists in the corpus).
    body = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
            b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
            b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
            b'"content_block":{"type":"text","text":""}}\n\n'
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"Hi"}}\n\n'
            b'event: error\ndata: {"type":"error","error":{"details":null,"type":"overloaded_error",'
            b'"message":"Overloaded"},"request_id":"req_123"}              \n\n')
    msg = check_shape(decode("anthropic", body))
    assert msg.stop_reason == "error" and msg.text == "Hi"
    assert msg.error_message == ("Anthropic stream error: Overloaded "
                                 "(overloaded_error, request_id: req_123)")


def test_stop_reason_mappings() -> None:
    def anth(reason: str) -> str:
        body = ('data: {"type":"message_start","message":{"id":"m","usage":{}}}\n\n'
                f'data: {{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},'
                '"usage":{"output_tokens":3}}\n\n'
                'data: {"type":"message_stop"}\n\n').encode()
        return check_shape(decode("anthropic", body)).stop_reason

    assert [anth(r) for r in ("end_turn", "stop_sequence", "pause_turn", "max_tokens",
                              "tool_use", "refusal")] == [
        "stop", "stop", "stop", "length", "toolUse", "error"]

    def chat(reason: str) -> str:
        body = (f'data: {{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}\n\n'
                'data: [DONE]\n\n').encode()
        return check_shape(decode("openai_chat", body)).stop_reason

    assert [chat(r) for r in ("stop", "length", "tool_calls", "function_call",
                              "content_filter")] == ["stop", "length", "toolUse", "toolUse",
                                                     "error"]

    def gem(reason: str) -> str:
        body = (f'data: {{"candidates":[{{"content":{{"parts":[{{"text":"x"}}]}},'
                f'"finishReason":"{reason}"}}]}}\n\n').encode()
        return check_shape(decode("gemini", body)).stop_reason

    assert [gem(r) for r in ("STOP", "MAX_TOKENS", "SAFETY", "RECITATION")] == [
        "stop", "length", "error", "error"]


def test_gemini_json_array_truncated_and_error_element() -> None:
    body = b'[{"candidates":[{"content":{"parts":[{"text":"a}"}]}}]},\r\n{"candidates":[{"conte'
    msg = check_shape(decode("gemini", body))
    assert msg.stop_reason == "error" and msg.text == "a}"
    assert msg.error_message and "inside a JSON value" in msg.error_message
    err = b'[{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}]'
    msg = check_shape(decode("gemini", err))
    assert msg.error_message == "Gemini stream error: Resource exhausted (RESOURCE_EXHAUSTED)"
