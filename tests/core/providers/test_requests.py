"""Request builders, checked against requests recorded in the corpus: the second request of a
tool loop is rebuilt from the decoded first response plus the tool results, and the fields that
matter are compared."""

from __future__ import annotations

import json
from typing import Any

from agentcore.llm import LlmContext, StreamOptions
from agentcore.messages import (
    AssistantMessage,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentcore.providers import anthropic, google, openai_chat, openai_responses
from agentcore.tools import ToolSpec
from tests.support.corpus import load, requires_corpus

from .helpers import check_shape, decode

MULTIPLY = ToolSpec("multiply", "Multiply two numbers.", {
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"], "type": "object"})


def _num_tool(name: str, desc: str) -> ToolSpec:
    return ToolSpec(name, desc, {
        "properties": {"a": {"description": "first number", "type": "integer"},
                       "b": {"description": "second number", "type": "integer"}},
        "required": ["a", "b"], "type": "object"})


ADD_MUL = (_num_tool("add", "Add two numbers"), _num_tool("multiply", "Multiply two numbers"))
SYSTEM = "You are a helpful assistant. Always use both add and multiply at the same time."


def _assistant(folder: str, path: str, model: Model) -> AssistantMessage:
    msg = check_shape(decode(folder, load(path)[0].body))
    # as the loop would keep it: the api/provider/model of the model that produced it
    from agentcore import replace
    return replace(msg, api=model.api, provider=model.provider, model=model.id)


@requires_corpus
def test_openai_chat_request_matches_recording() -> None:
    path = "openai_chat/llm__test_tool_use_basic.yaml"
    recorded = load(path)[1]
    model = Model(id="gpt-4o-mini", api="openai-completions", provider="openai")
    assistant = _assistant("openai_chat", path, model)
    ctx = LlmContext("", [
        UserMessage("What is 1231 * 2331?"),
        assistant,
        ToolResultMessage(assistant.tool_calls[0].id, "multiply", (TextContent("2869461"),)),
    ], (MULTIPLY,))
    req = openai_chat.build_request(model, ctx, StreamOptions())
    want = recorded.request_json
    assert req.method == "POST" and req.url == recorded.url
    body = req.body
    for key in ("model", "stream", "stream_options", "tools"):
        assert body[key] == want[key], key
    assert body["messages"][0] == want["messages"][0]
    assert body["messages"][-1] == want["messages"][-1]  # role tool, tool_call_id, content
    got_call = body["messages"][1]["tool_calls"][0]
    want_call = want["messages"][2]["tool_calls"][0]
    assert got_call["id"] == want_call["id"] and got_call["type"] == "function"
    assert got_call["function"]["name"] == want_call["function"]["name"]
    assert json.loads(got_call["function"]["arguments"]) == json.loads(
        want_call["function"]["arguments"])
    assert "authorization" not in req.headers
    json.loads(req.body_bytes())


@requires_corpus
def test_anthropic_request_matches_recording() -> None:
    path = "anthropic/fantasy__TestAnthropicCommon_claude-sonnet-4_multi_tool_streaming.yaml"
    recorded = load(path)[1]
    model = Model(id="claude-sonnet-4-20250514", api="anthropic-messages", provider="anthropic",
                  max_tokens=4000)
    assistant = _assistant("anthropic", path, model)
    calls = assistant.tool_calls
    ctx = LlmContext(SYSTEM, [
        UserMessage((TextContent("Add and multiply the number 2 and 3"),)),
        assistant,
        ToolResultMessage(calls[0].id, "add", (TextContent("5"),)),
        ToolResultMessage(calls[1].id, "multiply", (TextContent("6"),)),
    ], ADD_MUL)
    req = anthropic.build_request(model, ctx, StreamOptions(api_key="sk-test"))
    want = recorded.request_json
    assert req.url == recorded.url
    for key in ("model", "max_tokens", "stream", "system", "messages"):
        assert req.body[key] == want[key], key
    assert [t["name"] for t in req.body["tools"]] == ["add", "multiply"]
    assert req.body["tools"][0]["input_schema"] == want["tools"][0]["input_schema"]
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert req.headers["x-api-key"] == "sk-test"


@requires_corpus
def test_openai_responses_request_matches_recording() -> None:
    path = "openai_responses/llm__test_responses_tool_use_streaming.yaml"
    recorded = load(path)[1]
    model = Model(id="gpt-5.5", api="openai-responses", provider="openai", reasoning=True)
    assistant = _assistant("openai_responses", path, model)
    ctx = LlmContext("", [
        UserMessage("What is 1231 * 2331? Use the multiply tool."),
        assistant,
        ToolResultMessage(assistant.tool_calls[0].id, "multiply", (TextContent("2869461"),)),
    ], (MULTIPLY,))
    req = openai_responses.build_request(model, ctx, StreamOptions(thinking_level="low"))
    want = recorded.request_json
    assert req.url == recorded.url
    for key in ("model", "store", "stream", "include"):
        assert req.body[key] == want[key], key
    assert req.body["reasoning"]["effort"] == want["reasoning"]["effort"]
    got_items, want_items = req.body["input"], want["input"]
    assert got_items[0]["role"] == "user"
    assert got_items[0]["content"][0]["text"] == want_items[0]["content"]
    assert got_items[1:] == [
        {**want_items[1], "arguments": got_items[1]["arguments"]}, want_items[2]]
    assert json.loads(got_items[1]["arguments"]) == json.loads(want_items[1]["arguments"])
    tool = req.body["tools"][0]
    assert {k: tool[k] for k in ("type", "name", "description", "parameters")} == want["tools"][0]


@requires_corpus
def test_google_request_matches_recording() -> None:
    path = "gemini/fantasy__TestGoogleCommon_gemini-2.5-flash_multi_tool_streaming.yaml"
    recorded = load(path)[1]
    model = Model(id="gemini-2.5-flash", api="google-generative-ai", provider="google",
                  reasoning=True)
    assistant = _assistant("gemini", path, model)
    calls = assistant.tool_calls
    ctx = LlmContext(SYSTEM, [
        UserMessage("Add and multiply the number 2 and 3"),
        assistant,
        ToolResultMessage(calls[0].id, "add", (TextContent("5"),)),
        ToolResultMessage(calls[1].id, "multiply", (TextContent("6"),)),
    ], ADD_MUL)
    req = google.build_request(model, ctx, StreamOptions(max_tokens=4000, api_key="g-key"))
    want = recorded.request_json
    assert req.url == recorded.url
    assert req.headers["x-goog-api-key"] == "g-key"
    assert req.body["generationConfig"] == want["generationConfig"]
    assert req.body["systemInstruction"]["parts"] == want["systemInstruction"]["parts"]
    got, exp = req.body["contents"], want["contents"]
    assert [c["role"] for c in got] == [c["role"] for c in exp]
    assert got[0] == exp[0]

    def strip_ids(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for p in parts:
            p = json.loads(json.dumps(p))
            for k in ("functionCall", "functionResponse"):
                if k in p:
                    p[k].pop("id", None)
                    p[k].pop("response", None)
            out.append(p)
        return out

    # function calls with their args and thought signature, echoed back
    assert strip_ids(got[1]["parts"]) == strip_ids(exp[1]["parts"])
    assert [p["functionResponse"]["name"] for p in got[2]["parts"]] == ["add", "multiply"]
    assert got[2]["parts"][0]["functionResponse"]["response"] == {"output": "5"}
    assert [d["name"] for d in req.body["tools"][0]["functionDeclarations"]] == ["add", "multiply"]


# --------------------------------------------------------------------------- unit checks


def _full_context() -> LlmContext:
    return LlmContext("Be brief.", [
        UserMessage((TextContent("Look:"), ImageContent("AAAA", "image/png"))),
        AssistantMessage((ThinkingContent("hmm", "sig-1"), TextContent("Calling."),
                          ToolCall("c1", "multiply", {"a": 1, "b": 2})),
                         api="anthropic-messages", provider="anthropic", model="m",
                         stop_reason="toolUse"),
        ToolResultMessage("c1", "multiply", (TextContent("2"),), is_error=True),
        AssistantMessage((TextContent("partial"),), stop_reason="error"),
        UserMessage("thanks"),
    ], (MULTIPLY,))


def test_openai_chat_request_details() -> None:
    model = Model(id="o4-mini", api="openai-completions", provider="openai", reasoning=True,
                  input=("text", "image"))
    req = openai_chat.build_request(model, _full_context(), StreamOptions(
        api_key="sk", max_tokens=100, thinking_level="high", temperature=0.5,
        headers={"x-extra": "1"}))
    b = req.body
    assert req.headers["authorization"] == "Bearer sk" and req.headers["x-extra"] == "1"
    assert b["messages"][0] == {"role": "developer", "content": "Be brief."}
    assert b["messages"][1]["content"][1] == {
        "type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    assert b["messages"][2]["role"] == "assistant" and b["messages"][2]["content"] == "Calling."
    assert b["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "2"}
    assert b["messages"][4] == {"role": "user", "content": "thanks"}  # errored turn dropped
    assert b["max_completion_tokens"] == 100 and b["reasoning_effort"] == "high"
    assert b["stream_options"] == {"include_usage": True}
    plain = Model(id="llama", api="openai-completions", provider="ollama",
                  base_url="http://localhost:11434/v1")
    req2 = openai_chat.build_request(plain, _full_context(), StreamOptions(max_tokens=10))
    assert req2.url == "http://localhost:11434/v1/chat/completions"
    assert req2.body["messages"][0]["role"] == "system" and req2.body["max_tokens"] == 10
    assert "authorization" not in req2.headers and "reasoning_effort" not in req2.body


def test_anthropic_request_details() -> None:
    model = Model(id="claude-sonnet-4-5", api="anthropic-messages", provider="anthropic",
                  reasoning=True, input=("text", "image"), max_tokens=64000)
    req = anthropic.build_request(model, _full_context(), StreamOptions(
        thinking_level="medium", cache_retention="long", temperature=0.3))
    b = req.body
    assert b["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert "temperature" not in b  # not allowed with thinking
    assert b["system"] == [{"type": "text", "text": "Be brief.",
                            "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    assert b["messages"][0]["content"][1]["source"] == {
        "type": "base64", "media_type": "image/png", "data": "AAAA"}
    assert b["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig-1"},
        {"type": "text", "text": "Calling."},
        {"type": "tool_use", "id": "c1", "name": "multiply", "input": {"a": 1, "b": 2}}]
    assert b["messages"][2]["content"][0]["is_error"] is True
    assert b["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "x-api-key" not in req.headers
    budgets = anthropic.build_request(model, _full_context(), StreamOptions(
        thinking_level="low", thinking_budgets={"low": 3000}, max_tokens=2000)).body
    assert budgets["thinking"]["budget_tokens"] == 3000 and budgets["max_tokens"] > 3000
    for level, budget in (("minimal", 1024), ("low", 2048), ("high", 16384), ("xhigh", 32768)):
        got = anthropic.build_request(model, _full_context(), StreamOptions(thinking_level=level))
        assert got.body["thinking"]["budget_tokens"] == budget


def test_responses_and_google_request_details() -> None:
    model = Model(id="o4-mini", api="openai-responses", provider="openai", reasoning=True)
    b = openai_responses.build_request(model, _full_context(), StreamOptions(
        thinking_level="medium", max_tokens=50)).body
    assert b["instructions"] == "Be brief." and b["store"] is False
    assert b["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert b["max_output_tokens"] == 50
    assert b["input"][2] == {"type": "function_call", "call_id": "c1", "name": "multiply",
                             "arguments": '{"a": 1, "b": 2}'}
    gm = Model(id="gemini-2.5-flash", api="google-generative-ai", provider="google",
               reasoning=True, input=("text", "image"))
    g = google.build_request(gm, _full_context(), StreamOptions(thinking_level="low",
                                                                temperature=0.2)).body
    assert g["generationConfig"] == {"temperature": 0.2, "thinkingConfig": {
        "includeThoughts": True, "thinkingBudget": 2048}}
    assert g["contents"][0]["parts"][1] == {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}
    assert g["contents"][1]["role"] == "model"
    assert g["contents"][2]["parts"][0]["functionResponse"]["response"] == {"error": "2"}


def test_openai_chat_sends_an_empty_content_with_tool_calls_and_no_text() -> None:
    """Not null: llama-cpp-python's server (and others) answer HTTP 500 to a null content."""
    from agentcore.messages import ToolCall, UserMessage

    model = Model(id="llama", api="openai-completions", provider="llama.cpp", base_url="http://localhost:8080/v1")
    calls = AssistantMessage((ToolCall("c1", "multiply", {"a": 2, "b": 3}),), stop_reason="toolUse")
    req = openai_chat.build_request(model, LlmContext("", [UserMessage("go"), calls], [MULTIPLY]), StreamOptions())
    assert req.body["messages"][1] == {
        "role": "assistant", "content": "",
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "multiply", "arguments": '{"a": 2, "b": 3}'}}]}
