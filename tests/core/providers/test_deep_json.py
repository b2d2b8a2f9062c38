"""Deeply nested JSON in provider responses: invalid tool arguments or an error reply, never a
``RecursionError``.

Tool-call argument text (OpenAI chat and responses, Anthropic) nested past ``MAX_JSON_DEPTH``
(100) levels becomes a call with ``invalid_json``; a JSON payload nested past
``MAX_PAYLOAD_DEPTH`` (128) levels, wherever the nesting is, is a malformed response: an error
reply saying so. Driven as the decoders are in production: raw SSE bytes, cut into chunks, and
through the agent loop, both with the bytes fed straight to a decoder and over loopback HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig
from agentcore.frozen import MAX_JSON_DEPTH, FrozenDict
from agentcore.llm import LlmContext, StreamOptions
from agentcore.messages import AssistantMessage, Model, TextContent, ToolResultMessage
from agentcore.providers import anthropic, google, openai_chat, openai_responses
from agentcore.providers.base import MAX_PAYLOAD_DEPTH, format_http_error, load_json
from agentcore.stream import ErrorEvent, StreamEvent
from agentcore.tools import AgentTool, AgentToolResult
from tests.support.flavours import SYNC, Flavour
from tests.support.http_script_server import Reply, ScriptServer
from tests.support.http_script_server import model_for as http_model

from .helpers import DECODERS, check_shape, decode, model_for

TEXT_APIS = ["anthropic", "openai_chat", "openai_responses"]  # arguments streamed as text
ALL = TEXT_APIS + ["gemini"]
LIMIT = MAX_JSON_DEPTH


def objects(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


AT_LIMIT = '{"a":' * (LIMIT - 1) + "{}" + "}" * (LIMIT - 1)
TOO_DEEP = {
    "brackets_3000": "[" * 3000 + "]" * 3000,
    "objects_3000": objects(3000),
    "one_past_the_limit": objects(LIMIT + 1),
    "truncated_3000": '{"a":' * 3000,
}


def depth_of(value: Any) -> int:
    best, todo = 0, [(value, 0)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (dict, FrozenDict)):
            todo += [(x, d + 1) for x in v.values()]
            best = max(best, d + 1)
        elif isinstance(v, (list, tuple)):
            todo += [(x, d + 1) for x in v]
            best = max(best, d + 1)
    return best


# --------------------------------------------------------------------------- raw bodies


def _sse(events: list[dict[str, Any]], named: bool = False) -> bytes:
    out = []
    for e in events:
        if named:
            out.append(f"event: {e['type']}\n")
        out.append("data: " + json.dumps(e, separators=(",", ":")) + "\n\n")
    return "".join(out).encode()


def _pieces(text: str, n: int = 450) -> list[str]:
    return [text[i:i + n] for i in range(0, len(text), n)]


def tool_call_body(api: str, args: str) -> bytes:
    """A reply that calls ``probe`` with argument text ``args`` (for Gemini: a JSON value)."""
    if api == "openai_chat":
        events: list[dict[str, Any]] = [{"id": "c1", "choices": [{"index": 0, "delta": {
            "role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                 "function": {"name": "probe", "arguments": ""}}]}}]}]
        events += [{"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": c}}]}}]} for c in _pieces(args)]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        return _sse(events) + b"data: [DONE]\n\n"
    if api == "openai_responses":
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "probe"}
        events = [{"type": "response.created", "response": {"id": "resp_1"}},
                  {"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": ""}}]
        events += [{"type": "response.function_call_arguments.delta", "output_index": 0, "delta": c}
                   for c in _pieces(args)]
        events += [{"type": "response.output_item.done", "output_index": 0, "item": {**item, "arguments": args}},
                   {"type": "response.completed", "response": {"id": "resp_1", "usage": {
                       "input_tokens": 3, "output_tokens": 4}}}]
        return _sse(events, named=True)
    if api == "anthropic":
        events = [{"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 3}}},
                  {"type": "content_block_start", "index": 0, "content_block": {
                      "type": "tool_use", "id": "toolu_1", "name": "probe", "input": {}}}]
        events += [{"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": c}} for c in _pieces(args)]
        events += [{"type": "content_block_stop", "index": 0},
                   {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 4}},
                   {"type": "message_stop"}]
        return _sse(events, named=True)
    assert api == "gemini"
    payload = ('{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"probe","args":'
               + args + '}}]},"finishReason":"STOP","index":0}],"responseId":"r1"}')
    return b"data: " + payload.encode() + b"\n\n"


def text_body(api: str, text: str = "done") -> bytes:
    if api == "openai_chat":
        return _sse([{"choices": [{"index": 0, "delta": {"content": text}}]},
                     {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]) + b"data: [DONE]\n\n"
    if api == "openai_responses":
        item = {"type": "message", "id": "m_1", "content": []}
        return _sse([{"type": "response.created", "response": {"id": "resp_2"}},
                     {"type": "response.output_item.added", "output_index": 0, "item": item},
                     {"type": "response.output_text.delta", "output_index": 0, "delta": text},
                     {"type": "response.output_item.done", "output_index": 0, "item": item},
                     {"type": "response.completed", "response": {"id": "resp_2"}}], named=True)
    if api == "anthropic":
        return _sse([{"type": "message_start", "message": {"id": "msg_2", "usage": {"input_tokens": 3}}},
                     {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                     {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                     {"type": "content_block_stop", "index": 0},
                     {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
                     {"type": "message_stop"}], named=True)
    return _sse([{"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                  "finishReason": "STOP", "index": 0}]}])


def deep_payload(api: str) -> bytes:
    """A stream whose first event is otherwise fine but carries a 3,000-deep field."""
    deep = "[" * 3000 + "]" * 3000
    if api == "openai_chat":
        return b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}],"x":' + deep.encode() + b"}\n\n"
    if api == "openai_responses":
        return b'event: response.created\ndata: {"type":"response.created","x":' + deep.encode() + b"}\n\n"
    if api == "anthropic":
        return b'event: message_start\ndata: {"type":"message_start","x":' + deep.encode() + b"}\n\n"
    return b'data: {"candidates":[],"x":' + deep.encode() + b"}\n\n"


CHUNKS = [977] * 40 + [13] * 40


def call_of(events: list[StreamEvent]) -> Any:
    message = check_shape(events)
    assert message.stop_reason == "toolUse", message.error_message
    (call,) = message.tool_calls
    assert call.name == "probe"
    return call


# --------------------------------------------------------------------------- the decoders


@pytest.mark.parametrize("case", sorted(TOO_DEEP))
@pytest.mark.parametrize("api", TEXT_APIS)
def test_deep_argument_text_is_an_invalid_call(api: str, case: str) -> None:
    raw = TOO_DEEP[case]
    call = call_of(decode(api, tool_call_body(api, raw), CHUNKS))
    assert call.invalid_json == raw and call.arguments == {}


@pytest.mark.parametrize("api", ALL)
def test_arguments_at_the_limit_parse(api: str) -> None:
    call = call_of(decode(api, tool_call_body(api, AT_LIMIT), CHUNKS))
    assert call.invalid_json is None and depth_of(call.arguments) == LIMIT


def test_gemini_arguments_one_past_the_limit_are_an_invalid_call() -> None:
    raw = objects(LIMIT + 1)
    call = call_of(decode("gemini", tool_call_body("gemini", raw)))
    assert call.invalid_json == raw and call.arguments == {}


@pytest.mark.parametrize("case", ["brackets_3000", "objects_3000", "truncated_3000"])
def test_gemini_arguments_too_deep_for_a_payload_are_an_error_reply(case: str) -> None:
    body = tool_call_body("gemini", TOO_DEEP[case])
    message = check_shape(decode("gemini", body, CHUNKS))
    assert message.stop_reason == "error" and message.tool_calls == ()
    assert message.error_message is not None
    assert message.error_message.startswith(
        f"Invalid JSON in Gemini stream: nested more than {MAX_PAYLOAD_DEPTH} levels deep at position ")


def test_gemini_streamed_partial_args_past_the_limit_are_an_invalid_call() -> None:
    parts = [{"functionCall": {"name": "probe", "willContinue": True}},
             {"functionCall": {"partialArgs": [{"jsonPath": "$" + ".a" * 3000, "stringValue": "x"}],
                               "willContinue": True}},
             {"functionCall": {}}]
    body = _sse([{"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}]} for p in parts]
                + [{"candidates": [{"content": {"parts": []}, "finishReason": "STOP", "index": 0}]}])
    call = call_of(decode("gemini", body))
    assert call.invalid_json == '{"a":' * 3000 + '"x"' + "}" * 3000 and call.arguments == {}


def test_openai_responses_deep_arguments_only_in_the_done_item() -> None:
    raw = TOO_DEEP["objects_3000"]
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "probe"}
    body = _sse([{"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": ""}},
                 {"type": "response.output_item.done", "output_index": 0, "item": {**item, "arguments": raw}},
                 {"type": "response.completed", "response": {}}], named=True)
    call = call_of(decode("openai_responses", body))
    assert call.invalid_json == raw and call.arguments == {}


@pytest.mark.parametrize("api", ALL)
def test_a_deep_payload_is_an_error_reply(api: str) -> None:
    message = check_shape(decode(api, deep_payload(api), CHUNKS))
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert f"nested more than {MAX_PAYLOAD_DEPTH} levels deep at position " in message.error_message
    assert message.error_message.startswith("Invalid JSON in ")
    assert "Internal error" not in message.error_message


@pytest.mark.parametrize("api", ALL)
def test_a_payload_that_is_only_brackets_is_an_error_reply(api: str) -> None:
    body = b"data: " + b"[" * 3000 + b"]" * 3000 + b"\n\n"
    message = check_shape(decode(api, body, CHUNKS))
    assert message.stop_reason == "error"
    assert f"nested more than {MAX_PAYLOAD_DEPTH} levels deep at position {MAX_PAYLOAD_DEPTH}" in (
        message.error_message or "")


@pytest.mark.parametrize("body", [b"[" + b'{"candidates":' + b"[" * 3000, b'{"x":' + b"[" * 3000 + b"]" * 3000 + b"}"])
def test_gemini_array_and_object_framings(body: bytes) -> None:
    events = decode("gemini", body, CHUNKS)
    message = check_shape(events)
    assert isinstance(events[-1], ErrorEvent) and message.stop_reason == "error"
    assert message.error_message


def test_payload_depth_at_its_limit_is_decoded() -> None:
    assert load_json("[" * MAX_PAYLOAD_DEPTH + "]" * MAX_PAYLOAD_DEPTH) is not None
    with pytest.raises(json.JSONDecodeError, match="nested more than 128 levels deep"):
        load_json("[" * (MAX_PAYLOAD_DEPTH + 1) + "]" * (MAX_PAYLOAD_DEPTH + 1))
    with pytest.raises(json.JSONDecodeError, match="Expecting value"):
        load_json("[1,")  # other errors are json's own


@pytest.mark.parametrize("module", [anthropic, google, openai_chat, openai_responses])
def test_a_deep_http_error_body_is_shown_as_text(module: Any) -> None:
    body = b'{"error": {"message": ' + b"[" * 3000 + b"}"
    message = module.decode_error_response(400, {}, body)
    assert "HTTP 400 Bad Request: " in message and "[[[[" in message
    assert format_http_error("X", 500, {}, b"[" * 3000).startswith("X HTTP 500 Internal Server Error: [[[")


def test_the_request_after_a_deep_call_is_built() -> None:
    """The invalid call goes back to the model with empty arguments."""
    for api, module in [("openai_chat", openai_chat), ("openai_responses", openai_responses),
                        ("anthropic", anthropic), ("gemini", google)]:
        raw = TOO_DEEP["objects_3000"] if api != "gemini" else objects(LIMIT + 1)
        events = decode(api, tool_call_body(api, raw))
        message = check_shape(events)
        context = LlmContext("", [message])
        request = module.build_request(model_for(api), context, StreamOptions(api_key="k"))
        assert len(request.body_bytes()) < 1000


# --------------------------------------------------------------------------- through the agent loop


def _probe(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult((TextContent(f"depth {depth_of(args)}"),))


PROBE = AgentTool("probe", "Probe", "Reports how deep its arguments are", {"type": "object"}, _probe)


def decoder_stream(api: str, bodies: list[bytes]) -> Any:
    """A stream function that feeds the next body, in chunks, to a fresh decoder of ``api``."""
    queue = list(bodies)

    def stream_fn(model: Model, context: LlmContext, options: Any) -> Iterator[StreamEvent]:
        body = queue.pop(0)
        d = DECODERS[api](model)
        for i in range(0, len(body), 701):
            yield from d.feed(body[i:i + 701])
        yield from d.finish()

    return stream_fn


def loop_messages(api: str, bodies: list[bytes]) -> tuple[list[Any], list[Any]]:
    config = AgentLoopConfig(model=model_for(api))
    return SYNC.run("go", AgentContext(tools=[PROBE]), config, decoder_stream(api, bodies))


def invalid_prefix(raw: str) -> tuple[str, str]:
    shown = raw if len(raw) <= 2000 else raw[:2000] + f"... ({len(raw)} characters)"
    return ('Tool call "probe" was not executed: its arguments are not valid JSON (',
            f"). Received: {shown}")


def check_two_turns(events: list[Any], messages: list[Any]) -> tuple[Any, str]:
    assert events[-1].type == "agent_end"
    assert [e.type for e in events].count("turn_start") == 2
    _, first, result, final = messages
    assert isinstance(first, AssistantMessage) and first.stop_reason == "toolUse"
    assert isinstance(result, ToolResultMessage)
    assert isinstance(final, AssistantMessage) and final.text == "done", final.error_message
    return first.tool_calls[0], result.text


@pytest.mark.parametrize("case", sorted(TOO_DEEP))
@pytest.mark.parametrize("api", TEXT_APIS)
def test_loop_over_a_decoder_answers_deep_arguments(api: str, case: str) -> None:
    raw = TOO_DEEP[case]
    call, text = check_two_turns(*loop_messages(api, [tool_call_body(api, raw), text_body(api)]))
    assert call.invalid_json == raw
    head, tail = invalid_prefix(raw)
    assert text.startswith(head) and text.endswith(tail), text[:200]


@pytest.mark.parametrize("api", ALL)
def test_loop_over_a_decoder_runs_a_call_at_the_limit(api: str) -> None:
    call, text = check_two_turns(*loop_messages(api, [tool_call_body(api, AT_LIMIT), text_body(api)]))
    assert call.invalid_json is None and text == f"depth {LIMIT}"


def test_loop_over_gemini_answers_arguments_one_past_the_limit() -> None:
    raw = objects(LIMIT + 1)
    call, text = check_two_turns(*loop_messages("gemini", [tool_call_body("gemini", raw), text_body("gemini")]))
    head, tail = invalid_prefix(raw)
    assert call.invalid_json == raw and text.startswith(head) and text.endswith(tail)


@pytest.mark.parametrize("api", ALL)
def test_loop_over_a_decoder_ends_on_a_deep_payload(api: str) -> None:
    events, messages = loop_messages(api, [deep_payload(api)])
    assert events[-1].type == "agent_end"
    final = messages[-1]
    assert isinstance(final, AssistantMessage) and final.stop_reason == "error"
    assert f"nested more than {MAX_PAYLOAD_DEPTH} levels deep" in (final.error_message or "")


# --------------------------------------------------------------------------- over loopback HTTP

HTTP_APIS = {"openai_chat": "openai-completions", "openai_responses": "openai-responses",
             "anthropic": "anthropic-messages", "gemini": "google-generative-ai"}


@pytest.fixture
def server() -> Iterator[ScriptServer]:
    with ScriptServer(seed=7) as srv:
        yield srv


def http_run(flavour: Flavour, api: str, server: ScriptServer) -> tuple[list[Any], list[Any]]:
    """The probe run with the default HTTP stream function against ``server``."""
    model: Model = http_model(HTTP_APIS[api], server.url)
    config = AgentLoopConfig(model=model, api_key="test-key")
    context = AgentContext(tools=[PROBE])
    return flavour.run("go", context, config, None)


@pytest.mark.parametrize("api", TEXT_APIS)
def test_loop_over_http_answers_deep_arguments(api: str, server: ScriptServer) -> None:
    raw = TOO_DEEP["brackets_3000"]
    server.add(Reply(body=tool_call_body(api, raw)), Reply(body=text_body(api)))
    call, text = check_two_turns(*http_run(SYNC, api, server))
    assert call.invalid_json == raw
    head, tail = invalid_prefix(raw)
    assert text.startswith(head) and text.endswith(tail)
    assert server.attempts == 2


def test_loop_over_http_ends_on_a_deep_gemini_payload(flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(body=tool_call_body("gemini", TOO_DEEP["objects_3000"])))
    events, messages = http_run(flavour, "gemini", server)
    assert events[-1].type == "agent_end"
    final = messages[-1]
    assert isinstance(final, AssistantMessage) and final.stop_reason == "error"
    assert (final.error_message or "").startswith(
        f"Invalid JSON in Gemini stream: nested more than {MAX_PAYLOAD_DEPTH} levels deep")
