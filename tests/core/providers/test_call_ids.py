"""The ids the decoders make up for tool calls that came without one, on the recorded corpus.

Several OpenAI-compatible servers (llama.cpp's, some local models') stream tool calls without an
``id``. The recordings here are the corpus's real responses with the providers' tool call ids
taken out, as such a server would send them. A made-up id is ``call_<response>_<block>``: the
same every time the response is decoded (however its body is cut), different for responses with
ids of their own. Gemini never sends ids: its calls get ``gemini-synth-<responseId>-<n>-<name>``.
"""

from __future__ import annotations

import json
import re

import pytest

from agentcore.messages import ToolCall
from agentcore.providers.base import made_up_call_id
from tests.support.corpus import all_files, load, requires_corpus, without_call_ids

from .helpers import check_shape, decode

pytestmark = requires_corpus

ID_FREE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")  # what every provider takes back (Anthropic, OpenAI: 40)


def _streams_with_calls() -> list[tuple[str, int]]:
    out = []
    for f in all_files():
        if f.startswith(("openai_chat/", "openai_compatible/", "anthropic/", "openai_responses/")):
            for i, it in enumerate(load(f)):
                if it.status == 200 and without_call_ids(it.body)[1]:
                    out.append((f, i))
    return out


STREAMS = _streams_with_calls()


def test_the_corpus_has_such_streams_for_every_api() -> None:
    assert {f.split("/")[0] for f, _ in STREAMS} == {"openai_chat", "openai_compatible", "anthropic",
                                                     "openai_responses"}
    assert len(STREAMS) >= 15


@pytest.mark.parametrize("key", STREAMS, ids=lambda k: f"{k[0].split('/')[-1]}[{k[1]}]")
def test_a_call_without_id_gets_one_made_from_the_response(key: tuple[str, int]) -> None:
    path, index = key
    folder = path.split("/")[0]
    body, _ = without_call_ids(load(path)[index].body)
    message = check_shape(decode(folder, body))
    calls = [(i, b) for i, b in enumerate(message.content) if isinstance(b, ToolCall)]
    assert calls and message.response_id
    assert [b.id for _, b in calls] == [made_up_call_id(message.response_id, i) for i, _ in calls]
    assert all(ID_FREE.match(b.id) for _, b in calls), [b.id for _, b in calls]
    # the same however the body arrives
    again = check_shape(decode(folder, body, chunks=[7] * (len(body) // 7)))
    assert [b.id for b in again.tool_calls] == [b.id for _, b in calls]


def test_made_up_ids_of_recorded_responses() -> None:
    """Exact ids for known recordings (the response id's tail and the call's block)."""
    path = "openai_chat/pydantic-ai__test_complex_agent_run.yaml"
    first = check_shape(decode("openai_chat", without_call_ids(load(path)[0].body)[0]))
    assert first.response_id == "chatcmpl-C2QD1kGWsTW5OWiqAtOSFEAOfPfQH"
    assert [c.id for c in first.tool_calls] == ["call_kGWsTW5OWiqAtOSFEAOfPfQH_0",
                                                "call_kGWsTW5OWiqAtOSFEAOfPfQH_1"]
    second = check_shape(decode("openai_chat", without_call_ids(load(path)[1].body)[0]))
    assert [c.id for c in second.tool_calls] == ["call_NQfRbWW5ww5we2oDjS1mgHtK_0"]
    anthropic = "anthropic/fantasy__TestAnthropicCommon_claude-sonnet-4_multi_tool_streaming.yaml"
    msg = check_shape(decode("anthropic", without_call_ids(load(anthropic)[0].body)[0]))
    assert msg.response_id == "msg_01PSvJdjd5keNSD63VHjYzex"
    assert [c.id for c in msg.tool_calls] == ["call_01PSvJdjd5keNSD63VHjYzex_1",
                                              "call_01PSvJdjd5keNSD63VHjYzex_2"]


def test_without_a_response_id_the_block_index_is_the_id() -> None:
    """What the core then makes unique in the conversation (tests/core/test_call_ids.py)."""
    body = b"".join(
        b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in [
            {"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"index": 1, "type": "function", "function": {"name": "g", "arguments": "{}"}}]}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]) + b"data: [DONE]\n\n"
    message = check_shape(decode("openai_chat", body))
    assert [c.id for c in message.tool_calls] == ["call_0", "call_1"]


@pytest.mark.parametrize("path", [f for f in all_files() if f.startswith("gemini/")])
def test_gemini_calls_get_ids_of_their_response(path: str) -> None:
    for it in load(path):
        if it.status != 200:
            continue
        message = check_shape(decode("gemini", it.body))
        ids = [c.id for c in message.tool_calls]
        assert len(set(ids)) == len(ids)
        for n, call in enumerate(message.tool_calls, 1):
            if call.id.startswith("gemini-synth-"):
                assert call.id == f"gemini-synth-{message.response_id}-{n}-{call.name}"
