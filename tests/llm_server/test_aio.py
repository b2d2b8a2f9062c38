"""The asyncio interpreter against llama-server: text, a forced tool call, abort, server down."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agentcore.messages import AssistantMessage, Model, ToolResultMessage
from interpreters import AbortSignal
from tests.support.flavours import ASYNCIO

from .helpers import TOOLS, Run, assert_replays, bias_payload, free_port, model_for, run_recorded, seeded


def test_aio_streamed_text(chat_server: Any, tmp_path: Path) -> None:
    run = run_recorded(tmp_path, "Say something.", model_for(chat_server), flavour=ASYNCIO, name="aio.jsonl",
                       on_payload=seeded(3))
    reply = run.assistants[-1]
    assert reply.stop_reason == "stop", reply.error_message
    assert "".join(run.deltas()) == reply.text
    assert reply.usage.input > 0 and reply.usage.output > 0
    assert_replays(run)


def test_aio_forced_tool_call_then_next_turn(chat_server: Any, models: Any, tmp_path: Path) -> None:
    on_payload, bodies = bias_payload(models.vocab.tool_call)
    run = run_recorded(tmp_path, "Pick a color.", model_for(chat_server), flavour=ASYNCIO, name="aio.jsonl",
                       tools=TOOLS, on_payload=on_payload)
    assistants = [m for m in run.messages if isinstance(m, AssistantMessage)]
    results = [m for m in run.messages if isinstance(m, ToolResultMessage)]
    assert assistants[0].stop_reason == "toolUse", assistants[0].error_message
    assert len(results) == 1 and not results[0].is_error
    assert assistants[-1].stop_reason == "stop", assistants[-1].error_message
    assert len(bodies) == 2
    assert_replays(run)


@pytest.fixture(scope="module")
def aio_aborted(never_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("aio-abort")
    signal, marks, seen = AbortSignal(), {}, [0]

    def on_event(event: Any) -> None:
        if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
            seen[0] += 1
            if seen[0] == 20:
                marks["abort"] = time.perf_counter()
                signal.abort()
        elif event.type == "agent_end":
            marks["end"] = time.perf_counter()

    run = run_recorded(tmp, "Talk forever.", model_for(never_server, max_tokens=3500), flavour=ASYNCIO,
                       name="aio.jsonl", signal=signal, on_event=on_event)
    run.abort_at, run.ended_at = marks["abort"], marks["end"]
    run.extra["idle_after"] = never_server.wait_idle(5.0)
    return run


def test_aio_abort_mid_stream(aio_aborted: Run) -> None:
    assert aio_aborted.assistants[-1].stop_reason == "aborted"
    latency_ms = (aio_aborted.ended_at - aio_aborted.abort_at) * 1000
    assert latency_ms < 100, f"abort() to agent_end took {latency_ms:.1f} ms"
    assert aio_aborted.extra["idle_after"] < 2.0


def test_aio_aborted_run_replays_strictly(aio_aborted: Run) -> None:
    assert_replays(aio_aborted)


def test_aio_server_down(tmp_path: Path) -> None:
    port = free_port()
    model = Model(id="tiny", api="openai-completions", provider="llama.cpp",
                  base_url=f"http://localhost:{port}/v1")
    run = run_recorded(tmp_path, "hi", model, flavour=ASYNCIO, name="aio.jsonl")
    reply = run.assistants[-1]
    assert reply.stop_reason == "error"
    assert f"Could not connect to localhost:{port}" in (reply.error_message or "")
    assert_replays(run)
