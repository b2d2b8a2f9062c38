"""The full agent loop against a real HTTP server replaying recorded provider conversations.

``stream_fn`` is left to ``None``, so the interpreters use their default HTTP stream functions
(:func:`interpreters.streams.http.stream_http` / :func:`~interpreters.streams.http.astream_http`); the model comes
from the catalog with its ``base_url`` pointed at the local server. The tools are real ``@tool``
functions, so the second request carries results computed here, not recorded ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, replace
from agentcore.messages import AssistantMessage, Model, ToolResultMessage, UserMessage
from agentcore.providers import get_model
from tests.support.corpus import load, requires_corpus
from tests.support.flavours import Flavour
from tests.support.http_script_server import ScriptServer, reply_from
from tests.support.sample_tools import add, multiply

pytestmark = requires_corpus


@dataclass
class Conversation:
    file: str
    model: Model
    prefix: str  # path of the API under the server URL
    system: str
    prompt: str
    tools: tuple[Any, ...]
    calls: list[tuple[str, dict[str, int]]]
    results: list[str]
    text: str
    usage: list[tuple[int, int]]
    path: str


CONVERSATIONS = {
    "openai-completions": Conversation(
        "openai_chat/llm__test_tool_use_basic.yaml",
        replace(get_model("openai", "gpt-4o-mini"), api="openai-completions"), "/v1", "",
        "What is 1231 * 2331?", (multiply,), [("multiply", {"a": 1231, "b": 2331})],
        ["2869461"], "The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\).",
        [(54, 20), (87, 26)], "/v1/chat/completions"),
    "openai-responses": Conversation(
        "openai_responses/fantasy__TestOpenAIResponsesCommon_openai-gpt-4o_multi_tool_streaming.yaml",
        get_model("openai", "gpt-4o"), "/v1",
        "You are a helpful assistant. Always use both add and multiply at the same time.",
        "Add and multiply the number 2 and 3", (add, multiply),
        [("add", {"a": 2, "b": 3}), ("multiply", {"a": 2, "b": 3})], ["5", "6"],
        "The sum of 2 and 3 is 5, and their product is 6.", [(104, 51), (150, 21)],
        "/v1/responses"),
    "anthropic-messages": Conversation(
        "anthropic/fantasy__TestAnthropicCommon_claude-sonnet-4_multi_tool_streaming.yaml",
        get_model("anthropic", "claude-sonnet-4-5"), "", "",
        "Add and multiply the number 2 and 3", (add, multiply),
        [("add", {"a": 2, "b": 3}), ("multiply", {"a": 2, "b": 3})], ["5", "6"],
        "The results are:\n- 2 + 3 = 5\n- 2 × 3 = 6", [(502, 137), (700, 31)], "/v1/messages"),
    "google-generative-ai": Conversation(
        "gemini/fantasy__TestGoogleCommon_gemini-2.5-flash_multi_tool_streaming.yaml",
        get_model("google", "gemini-2.5-flash"), "/v1beta", "",
        "Add and multiply the number 2 and 3", (add, multiply),
        [("add", {"a": 2, "b": 3}), ("multiply", {"a": 2, "b": 3})], ["5", "6"],
        "The sum of 2 and 3 is 5. The product of 2 and 3 is 6.", [(121, 74), (218, 22)],
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
}


def run_over_http(flavour: Flavour, conv: Conversation, server: ScriptServer) -> list[Any]:
    """The conversation's run, with the default HTTP stream function (``stream_fn=None``)."""
    model = replace(conv.model, base_url=server.url + conv.prefix)
    context = AgentContext(system_prompt=conv.system, tools=conv.tools)
    config = AgentLoopConfig(model=model, api_key="test-key")
    events, messages = flavour.run(conv.prompt, context, config, None)
    assert events[0].type == "agent_start" and events[-1].type == "agent_end"
    return messages


@pytest.mark.parametrize("api", sorted(CONVERSATIONS))
def test_full_loop_over_http(api: str, flavour: Flavour, server: ScriptServer) -> None:
    conv = CONVERSATIONS[api]
    recorded = load(conv.file)
    server.add(*(reply_from(it) for it in recorded))

    messages = run_over_http(flavour, conv, server)

    user, first, *results, final = messages
    assert isinstance(user, UserMessage)
    assert isinstance(first, AssistantMessage) and isinstance(final, AssistantMessage)
    assert first.stop_reason == "toolUse", first.error_message
    assert [(c.name, dict(c.arguments)) for c in first.tool_calls] == conv.calls
    assert [r.tool_name for r in results] == [n for n, _ in conv.calls]
    assert all(isinstance(r, ToolResultMessage) and not r.is_error for r in results)
    assert [r.content[0].text for r in results] == conv.results
    assert [r.tool_call_id for r in results] == [c.id for c in first.tool_calls]
    assert final.stop_reason == "stop", final.error_message
    assert final.text == conv.text
    assert [(m.usage.input, m.usage.output) for m in (first, final)] == conv.usage
    assert first.usage.cost.total > 0 and first.api == api

    # What the server saw: two requests to the API's endpoint, with the key, the second one
    # carrying the results our tools computed.
    assert server.attempts == 2 and server.unused == 0
    reqs = server.requests
    assert [r.path for r in reqs] == [conv.path, conv.path]
    key_headers = {"authorization": "Bearer test-key", "x-api-key": "test-key",
                   "x-goog-api-key": "test-key"}
    assert any(reqs[0].headers.get(h) == v for h, v in key_headers.items())
    second = reqs[1].body.decode()
    assert conv.prompt in reqs[0].body.decode()
    for call in first.tool_calls:
        assert call.id in second or api == "google-generative-ai"
    for value in conv.results:
        assert value in second
    # One keep-alive connection served both turns.
    assert server.connections == 1
