"""API keys, hooks, secrets, connection reuse and the default instances."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

import interpreters.streams.http.aio as http_aio  # the default instances' cache, looked into
from agentcore import replace
from agentcore.llm import StreamOptions
from agentcore.messages import Model
from agentcore.providers import custom_openai_model, get_model
from interpreters.streams.http import (
    AsyncHttpStreamer,
    HttpStreamer,
    astream_http,
    default_async_streamer,
    default_streamer,
    stream_http,
)
from tests.support.corpus import load, requires_corpus
from tests.support.flavours import Flavour
from tests.support.http_script_server import Reply, ScriptServer, chat_model, reply_from

from .harness import CONTEXT, one_call

pytestmark = requires_corpus

CHAT = "openai_chat/llm__test_tool_use_basic.yaml"


def answer() -> Reply:
    return reply_from(load(CHAT)[1])


def test_api_key_from_the_provider_environment_variable(flavour: Flavour, server: ScriptServer) -> None:
    server.add(answer())
    out = one_call(flavour, chat_model(server.url), StreamOptions(), environ={"OPENAI_API_KEY": "sk-env"})
    assert out.reason == "stop"
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"


def test_missing_api_key(flavour: Flavour, server: ScriptServer) -> None:
    out = one_call(flavour, replace(get_model("anthropic", "claude-haiku-4-5"), base_url=server.url),
                   StreamOptions(), environ={})
    assert out.reason == "error"
    assert out.error == ("No API key for provider anthropic: set the ANTHROPIC_API_KEY environment "
                         "variable or pass api_key / get_api_key")
    assert out.types == ["error"] and server.attempts == 0


def test_local_servers_need_no_key(flavour: Flavour, server: ScriptServer) -> None:
    server.add(answer())
    model = custom_openai_model("llama3.2", server.url + "/v1", provider="ollama")
    out = one_call(flavour, model, StreamOptions(), environ={})
    assert out.reason == "stop"
    assert "authorization" not in server.requests[0].headers
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].json["model"] == "llama3.2"


def test_unknown_api(flavour: Flavour) -> None:
    out = one_call(flavour, Model(id="m", api="carrier-pigeon", provider="x"))
    assert out.reason == "error"
    assert out.error == ("No codec for api 'carrier-pigeon'; known: openai-completions, "
                         "openai-responses, anthropic-messages, google-generative-ai")


def test_on_payload_replaces_the_body_and_on_response_sees_each_attempt(
        flavour: Flavour, server: ScriptServer) -> None:
    server.add(Reply(503, b"{}", "application/json", {"x-request-id": "r1"}), answer())
    seen: list[tuple[int, str | None]] = []

    def on_payload(body: Any, model: Model) -> Any:
        assert model.id == "gpt-4o-mini"
        return {**body, "temperature": 0.25}

    def on_response(info: dict[str, Any], model: Model) -> None:
        seen.append((info["status"], info["headers"].get("x-request-id")))

    out = one_call(flavour, chat_model(server.url),
                   StreamOptions(api_key="test-key", on_payload=on_payload, on_response=on_response))
    assert out.reason == "stop"
    assert seen == [(503, "r1"), (200, "req_51f3397f64a0302e34a4d78ea85e0585")]
    assert [r.json["temperature"] for r in server.requests] == [0.25, 0.25]


def test_async_hooks_are_awaited(flavour: Flavour, server: ScriptServer) -> None:
    if flavour.name == "sync":
        pytest.skip("async hooks are for the asyncio flavour")
    server.add(answer())
    statuses: list[int] = []

    async def on_payload(body: Any, model: Model) -> Any:
        return {**body, "seed": 7}

    async def on_response(info: dict[str, Any], model: Model) -> None:
        statuses.append(info["status"])

    out = one_call(flavour, chat_model(server.url),
                   StreamOptions(api_key="test-key", on_payload=on_payload, on_response=on_response))
    assert out.reason == "stop" and statuses == [200]
    assert server.requests[0].json["seed"] == 7


def test_a_failing_hook_is_an_error_not_an_exception(flavour: Flavour, server: ScriptServer) -> None:
    def on_payload(body: Any, model: Model) -> Any:
        raise ValueError("bad payload")

    out = one_call(flavour, chat_model(server.url), StreamOptions(api_key="k", on_payload=on_payload))
    assert out.error == "The on_payload hook raised ValueError: bad payload"
    assert server.attempts == 0


def test_the_api_key_never_appears_in_an_error(flavour: Flavour, server: ScriptServer) -> None:
    key = "sk-live-0123456789abcdef"
    server.add(Reply(401, json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}})
                     .encode(), "application/json"))
    out = one_call(flavour, chat_model(server.url), StreamOptions(api_key=key))
    assert out.error is not None and key not in out.error
    assert "Incorrect API key provided: [REDACTED]" in out.error


def test_the_api_key_never_appears_in_logs(flavour: Flavour, server: ScriptServer,
                                           caplog: pytest.LogCaptureFixture) -> None:
    key = "sk-live-0123456789abcdef"
    server.add(Reply(503, b"{}", "application/json"), answer())
    with caplog.at_level("DEBUG"):
        out = one_call(flavour, chat_model(server.url), StreamOptions(api_key=key))
    assert out.reason == "stop"
    assert "retrying" in caplog.text and key not in caplog.text


def test_connections_are_reused(server: ScriptServer) -> None:
    server.add(answer(), answer(), answer())
    model = chat_model(server.url)
    with HttpStreamer() as streamer:
        for _ in range(3):
            events = list(streamer.stream(model, CONTEXT, StreamOptions(api_key="k")))
            assert events[-1].type == "done"
    assert server.connections == 1


def test_a_mock_transport_can_be_injected() -> None:
    body = load(CHAT)[1].body

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer k"
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    model = chat_model("http://mock")
    with HttpStreamer(transport=httpx.MockTransport(handler)) as s:
        events = list(s.stream(model, CONTEXT, StreamOptions(api_key="k")))
    assert events[-1].type == "done"

    async def go() -> str:
        async with AsyncHttpStreamer(transport=httpx.MockTransport(handler)) as s:
            return [e async for e in s.stream(model, CONTEXT, StreamOptions(api_key="k"))][-1].type

    assert asyncio.run(go()) == "done"


def test_default_instances(server: ScriptServer) -> None:
    server.add(answer(), answer(), answer())
    model = chat_model(server.url)
    assert default_streamer() is default_streamer()
    assert default_streamer().timeout.read == 120 and default_streamer().timeout.connect == 10
    assert list(stream_http(model, CONTEXT, StreamOptions(api_key="k")))[-1].type == "done"

    streamers: list[Any] = []

    async def go() -> tuple[str, bool, int]:
        events = [e async for e in astream_http(model, CONTEXT, StreamOptions(api_key="k"))]
        streamers.append(default_async_streamer())
        return (events[-1].type, default_async_streamer() is default_async_streamer(),
                len(http_aio._default_async))

    # One async client per event loop: two asyncio.run() calls do not share a dead loop's pool,
    # and the streamers of closed loops are dropped, their clients closed as the loop shut down.
    assert asyncio.run(go()) == ("done", True, 1)
    assert streamers[0].client.is_closed
    assert asyncio.run(go()) == ("done", True, 1)
    assert streamers[1] is not streamers[0] and streamers[1].client.is_closed


def test_abort_from_inside_the_event_loop(server: ScriptServer) -> None:
    from interpreters.signal import AbortSignal
    a = answer()
    server.add(replace(a, cut_after=a.body.index(b"data: ", 2000), then="stall"))
    signal = AbortSignal()

    async def go() -> Any:
        async with AsyncHttpStreamer() as s:
            events = []
            async for e in s.stream(chat_model(server.url), CONTEXT,
                                    StreamOptions(api_key="k", signal=signal)):
                events.append(e)
                if e.type == "text_delta":
                    asyncio.get_running_loop().call_later(0.01, signal.abort)
            return events

    events = asyncio.run(asyncio.wait_for(go(), 2))
    assert events[-1].type == "error" and events[-1].error.stop_reason == "aborted"


def test_a_closed_default_async_streamer_is_replaced_and_loops_without_hooks_get_no_closer() -> None:
    import sys

    async def replaced() -> bool:
        first = default_async_streamer()
        await first.aclose()  # as the loop's shutdown does, before another generator's cleanup
        second = default_async_streamer()
        return second is not first and not second.client.is_closed and second is default_async_streamer()

    assert asyncio.run(replaced())

    async def without_hooks() -> Any:
        hooks = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(None, None)  # a loop that does not finalize async generators
        try:
            http_aio.forget_default_async_streamers()
            default_async_streamer()
            return http_aio._default_async[asyncio.get_running_loop()][1]
        finally:
            sys.set_asyncgen_hooks(*hooks)

    assert asyncio.run(without_hooks()) is None
