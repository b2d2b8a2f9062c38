"""``api="openai-completions"`` against llama-server's ``/v1/chat/completions``, sync interpreter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcore.texts import length_cutoff_text
from interpreters.streams.http import HttpStreamer

from .helpers import TOOLS, assert_replays, bias_payload, model_for, run_recorded, seeded


class TeeTransport(httpx.HTTPTransport):
    """Keeps the raw bytes of every response body (what the server really sent)."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[bytearray] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        buf = bytearray()
        self.bodies.append(buf)
        inner = response.stream

        class Tee(httpx.SyncByteStream):
            def __iter__(self) -> Any:
                for chunk in inner:  # type: ignore[union-attr]
                    buf.extend(chunk)
                    yield chunk

            def close(self) -> None:
                inner.close()  # type: ignore[union-attr]

        return httpx.Response(response.status_code, headers=response.headers, stream=Tee(),
                              extensions=response.extensions)


def sse_payloads(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for line in raw.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def test_streamed_text_ends_with_stop(chat_server: Any, tmp_path: Path) -> None:
    model = model_for(chat_server)
    for seed in range(1, 60):
        run = run_recorded(tmp_path, "Say something.", model, on_payload=seeded(seed),
                           name=f"seed{seed}.jsonl")
        reply = run.assistants[-1]
        assert reply.stop_reason == "stop", reply.error_message
        if len(run.deltas()) >= 3:
            break
    else:
        pytest.fail("no seed in 1..59 gave a reply of 3 tokens or more")
    assert "".join(run.deltas()) == reply.text
    assert reply.text.isascii() and reply.text.isprintable() or "\n" in reply.text
    assert reply.api == "openai-completions" and reply.provider == "llama.cpp"
    assert reply.usage.output >= len(run.deltas())
    assert reply.usage.input + reply.usage.cache_read > 10  # the server caches the prompt across seeds
    assert_replays(run)


def test_forced_tool_call_runs_and_the_loop_goes_on(chat_server: Any, models: Any, tmp_path: Path) -> None:
    on_payload, bodies = bias_payload(models.vocab.tool_call)
    run = run_recorded(tmp_path, "Pick a color.", model_for(chat_server), tools=TOOLS,
                       on_payload=on_payload)
    first, *rest = run.assistants
    assert first.stop_reason == "toolUse", first.error_message
    assert len(first.tool_calls) == 1
    call = first.tool_calls[0]
    assert call.name in ("pick", "ping")
    if call.name == "pick":
        assert call.arguments["color"] in ("red", "green", "blue")
    [result] = run.tool_results
    assert result.tool_call_id == call.id and not result.is_error
    assert result.text in ("pong", f"picked {call.arguments.get('color')}")
    # The next turn was sent the call and its result, and the server took them.
    assert rest and rest[-1].stop_reason == "stop", rest[-1].error_message if rest else None
    second = bodies[1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    assert assistant["content"] == ""  # not null: the interop fix
    assert assistant["tool_calls"][0]["id"] == call.id
    assert any(m["role"] == "tool" and m["tool_call_id"] == call.id for m in second)
    assert_replays(run)


def test_parallel_calls_cut_by_max_tokens(chat_server: Any, models: Any, tmp_path: Path) -> None:
    # The server's tool grammar lets the model open call after call and never end the reply
    # after one (measured: with <tool_call> lifted, every reply holds 4 calls at 256 tokens,
    # whatever the bias or seed), so a reply with parallel calls ends at the run's max_tokens:
    # several complete calls with their own ids, then the cut one, each answered once with the
    # length error.
    on_payload, _ = bias_payload(models.vocab.tool_call, parallel=True)
    run = run_recorded(tmp_path, "Pick colors.", model_for(chat_server), max_tokens=200,
                       tools=TOOLS, on_payload=on_payload)
    first = run.assistants[0]
    assert first.stop_reason == "length" and first.usage.output == 200, first
    assert len(first.tool_calls) >= 3, first.tool_calls
    ids = [c.id for c in first.tool_calls]
    assert len(set(ids)) == len(ids) and all(ids)
    for call in first.tool_calls[:-1]:  # the last one is the call the limit cut
        assert call.name in ("pick", "ping")
        assert call.name == "ping" or call.arguments["color"] in ("red", "green", "blue")
    assert [r.tool_call_id for r in run.tool_results[: len(ids)]] == ids
    for call, result in zip(first.tool_calls, run.tool_results):
        assert result.is_error and result.text == length_cutoff_text(call.name)
    assert_replays(run)


def test_usage_matches_the_servers_own_counts(chat_server: Any, tmp_path: Path) -> None:
    tee = TeeTransport()
    streamer = HttpStreamer(client=httpx.Client(transport=tee, timeout=30.0), max_retries=0)
    before = chat_server.metrics()
    run = run_recorded(tmp_path, "Count with me: one two three.", model_for(chat_server),
                       streamer=streamer, on_payload=seeded(7))
    after = chat_server.metrics()
    streamer.close()
    reply = run.assistants[-1]
    [raw] = tee.bodies
    chunks = sse_payloads(bytes(raw))
    usage = next(c["usage"] for c in reversed(chunks) if c.get("usage"))
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    assert reply.usage.output == usage["completion_tokens"]
    assert reply.usage.input + reply.usage.cache_read == usage["prompt_tokens"]
    assert reply.usage.cache_read == cached
    assert reply.usage.total_tokens == usage["total_tokens"]
    predicted = after["llamacpp:tokens_predicted_total"] - before["llamacpp:tokens_predicted_total"]
    assert predicted == usage["completion_tokens"]
    timings = next(c["timings"] for c in reversed(chunks) if c.get("timings"))
    assert timings["predicted_n"] == usage["completion_tokens"]
    assert timings["prompt_n"] + cached == usage["prompt_tokens"]
    assert_replays(run)
