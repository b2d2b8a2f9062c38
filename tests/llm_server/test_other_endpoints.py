"""llama-server's Anthropic Messages (``/v1/messages``) and OpenAI Responses (``/v1/responses``)
endpoints through ``api="anthropic-messages"`` and ``api="openai-responses"``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .helpers import TOOL_CALL_END, TOOLS, assert_replays, model_for, run_recorded, seeded

APIS = ["anthropic-messages", "openai-responses"]


@pytest.mark.parametrize("api", APIS)
def test_streamed_text(api: Any, chat_server: Any, tmp_path: Path) -> None:
    for seed in range(1, 40):
        run = run_recorded(tmp_path, "Say something.", model_for(chat_server, api),
                           on_payload=seeded(seed), name=f"{seed}.jsonl")
        reply = run.assistants[-1]
        assert reply.stop_reason in ("stop", "length"), reply.error_message  # a seed may run to max_tokens
        if reply.stop_reason == "stop" and len(run.deltas()) >= 2:
            break
    else:
        pytest.fail("no seed gave a finished reply of 2 tokens or more")
    assert reply.api == api
    assert "".join(run.deltas()) == reply.text
    assert reply.usage.output > 0
    assert reply.usage.input + reply.usage.cache_read > 10
    assert_replays(run)


@pytest.mark.parametrize("api", APIS)
def test_forced_tool_calls_through_two_turns(api: Any, forcing_server: Any, tmp_path: Path) -> None:
    # The server lifts <tool_call> on every reply: each turn calls a tool; stop after two.
    turns = [0]

    def stop_after_two(ctx: Any) -> bool:
        turns[0] += 1
        return turns[0] >= 2

    # The model would open call after call until max_tokens: a stop at the first closing tag.
    stop = {"anthropic-messages": "stop_sequences", "openai-responses": "stop"}[api]
    run = run_recorded(tmp_path, "Pick a color.", model_for(forcing_server, api), tools=TOOLS,
                       should_stop_after_turn=stop_after_two, on_payload=seeded(1, {stop: [TOOL_CALL_END]}))
    assert len(run.assistants) == 2
    calls = [c for reply in run.assistants for c in reply.tool_calls]
    for reply in run.assistants:
        assert reply.stop_reason == "toolUse", reply.error_message
        # Mostly one call (the stop); /v1/messages sometimes lets a second one through.
        assert 1 <= len(reply.tool_calls) <= 2
        assert all(c.name in ("pick", "ping") for c in reply.tool_calls)
    assert sorted(r.tool_call_id for r in run.tool_results) == sorted(c.id for c in calls)
    assert not any(r.is_error for r in run.tool_results), [r.text for r in run.tool_results]
    # The second request carried the first call and its result, and the server took it.
    first, second = (r.usage.input + r.usage.cache_read for r in run.assistants)
    assert second > first
    assert_replays(run)
