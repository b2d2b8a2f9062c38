"""A tool call's id is its idempotency key (docs/approvals.md): unique in the conversation, the
same in a replay. Through real HTTP, with recorded provider responses.

Three ways a provider breaks it, each served twice by a loopback server (two calls of the tool,
with different arguments' effects), then the recorded final answer:

- an OpenAI-compatible server that streams tool calls without an ``id`` (llama.cpp's, some
  local models'): the recorded OpenAI response with its call ids taken out. The decoder makes
  one up from the response id, and the same response twice gives the same one: the core gives
  the second call its own;
- a server that sends the id ``"0"`` on every turn (recorded through OpenRouter);
- Gemini, which sends no ids, without a ``responseId``: the decoder's ``gemini-synth-1-<name>``
  repeats; the core's renamed id is not sent back to Gemini either.

A tool that does what the docs advise (keep the ids it carried out, do nothing for one it has
seen) runs both calls; the transcript replays strictly to the same events.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig
from agentcore.messages import AssistantMessage, ToolResultMessage
from interpreters import ToolContext, tool
from interpreters.replay import replay
from tests.support.corpus import edit_payloads, load, requires_corpus, without_call_ids
from tests.support.flavours import Flavour
from tests.support.http_script_server import Reply, ScriptServer, model_for

pytestmark = requires_corpus


class Ledger:
    """What an idempotent tool keeps: the call ids it carried out, and what it did."""

    def __init__(self) -> None:
        self.done: set[str] = set()
        self.effects: list[tuple[str, Any]] = []
        self.skipped: list[str] = []

    def clear(self) -> None:
        self.done.clear()
        self.effects.clear()
        self.skipped.clear()

    def once(self, call_id: str, effect: Any) -> str:
        if call_id in self.done:
            self.skipped.append(call_id)
            return f"already done ({call_id})"
        self.done.add(call_id)
        self.effects.append((call_id, effect))
        return f"done {effect}"


LEDGER = Ledger()


@tool
def multiply(a: int, b: int, ctx: ToolContext) -> str:
    """Multiply two integers."""
    return LEDGER.once(ctx.tool_call_id, a * b)


@tool
def llm_version(ctx: ToolContext) -> str:
    """The installed version of llm."""
    return LEDGER.once(ctx.tool_call_id, "0.fixed-version")


@tool
def get_capital(country: str, ctx: ToolContext) -> str:
    """The capital of a country."""
    return LEDGER.once(ctx.tool_call_id, f"capital of {country}")


def _without_response_id(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.pop("responseId", None) is not None


@dataclass
class Case:
    api: str
    tool: Any
    prompt: str
    call: bytes  # the recorded tool call response, as the provider under test sends it
    final: bytes
    ids: list[str]


def _case(name: str) -> Case:
    if name == "no-ids":
        recorded = load("openai_chat/llm__test_tool_use_basic.yaml")
        body, found = without_call_ids(recorded[0].body)
        assert found
        # the response id is chatcmpl-BWlJBDk2xe66hjff60joVYpXi1hh4: its last 24 characters, and
        # the call's content block
        return Case("openai-completions", multiply, "What is 1231 * 2331?", body, recorded[1].body,
                    ["call_Dk2xe66hjff60joVYpXi1hh4_0", "call_Dk2xe66hjff60joVYpXi1hh4_0_2"])
    if name == "same-id":
        recorded = load("openai_compatible/llm__test_tools_streaming_variant_a.yaml")
        return Case("openai-completions", llm_version, "What version of llm?", recorded[0].body,
                    recorded[1].body, ["0", "0_2"])
    recorded = load("gemini/pydantic-ai__test_google_model_iter_stream.yaml")
    body, found = edit_payloads(recorded[0].body, _without_response_id)
    assert found
    return Case("google-generative-ai", get_capital, "What is the capital of France?", body,
                recorded[2].body, ["gemini-synth-1-get_capital", "gemini-synth-1-get_capital_2"])


@pytest.mark.parametrize("name", ["no-ids", "same-id", "gemini-no-response-id"])
def test_two_calls_get_two_keys_and_replay_with_them(name: str, flavour: Flavour, server: ScriptServer,
                                                     tmp_path: Path) -> None:
    case = _case(name)
    LEDGER.clear()
    content_type = "text/event-stream"
    server.add(Reply(body=case.call, content_type=content_type), Reply(body=case.call, content_type=content_type),
               Reply(body=case.final, content_type=content_type))
    context = AgentContext(tools=(case.tool,))
    config = AgentLoopConfig(model=model_for(case.api, server.url), api_key="test-key")
    path = tmp_path / "run.jsonl"
    events, messages = flavour.record(path, case.prompt, context, config, None)

    calls = [c for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert [c.id for c in calls] == case.ids
    assert [call_id for call_id, _ in LEDGER.effects] == case.ids and LEDGER.skipped == []
    assert [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)] == case.ids
    assert [e.tool_call_id for e in events if e.type == "tool_execution_start"] == case.ids
    assert messages[-1].stop_reason == "stop"
    # What the provider was sent back: the ids as the conversation holds them (Gemini: none of
    # the made-up ones)
    assert server.attempts == 3
    third = server.requests[2].body.decode()
    for call_id in case.ids:
        if case.api == "google-generative-ai":
            assert call_id not in third
        else:
            assert third.count(f'"{call_id}"') == 2  # the call, and its result
    # The same ids in a strict replay of the transcript
    result = replay(path)
    assert result.finished and result.events == events and result.messages == messages

