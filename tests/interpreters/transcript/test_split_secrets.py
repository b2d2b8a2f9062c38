"""A secret streamed back in pieces is found even when every chunk changes the reply's header.

The recorder scrubs a run of deltas of one block as one text. A provider that sends usage with
every chunk (Gemini's ``usageMetadata``) changes the partial message's header on every delta;
the deltas of the block are still one run, scrubbed as one text, and the transcript still
replays strictly (each header change is written with the delta that brought it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model, Usage, replace
from agentcore.providers import get_model
from agentcore.stream import DoneEvent, PartialAssistantMessage, StartEvent
from interpreters.replay import replay
from interpreters.transcript import TranscriptRecorder, read_transcript
from tests.support.clocks import clock
from tests.support.flavours import Flavour
from tests.support.http_script_server import Reply as HttpReply
from tests.support.http_script_server import ScriptServer

KEY = "AQ.Ab8RN6-my-gemini-key-0123456789"  # the config's key; no well-known shape
PIECES = [KEY[:12], KEY[12:24], KEY[24:]]


def assert_no_piece(path: Path) -> None:
    text = path.read_text()
    assert KEY not in text
    assert [p for p in PIECES if p in text] == []


def streamed(pieces: list[str], changes: set[int], kind: str = "text") -> Any:
    """A stream function whose reply streams ``pieces`` as deltas of one block; the deltas
    whose index is in ``changes`` come with a new usage in the partial's header."""

    def stream_fn(model: Any, context: Any, options: Any) -> Iterator[Any]:
        partial = PartialAssistantMessage.begin(model=model.id, api=model.api, provider=model.provider,
                                                timestamp=clock())
        yield StartEvent(partial)
        if kind == "text":
            ev: Any = partial.text_start()
        else:
            ev = partial.toolcall_start("c1", "say")
        yield ev
        partial = ev.partial
        for i, piece in enumerate(pieces):
            if i in changes:
                partial = partial.with_header(usage=Usage(input=10, output=i + 1, total_tokens=11 + i))
            delta = json.dumps(piece)[1:-1] if kind == "toolcall" else piece
            ev = partial.text_delta(0, delta) if kind == "text" else partial.toolcall_delta(0, delta)
            yield ev
            partial = ev.partial
        ev = partial.text_end(0) if kind == "text" else partial.toolcall_end(0)
        yield ev
        yield ev.partial.done("stop" if kind == "text" else "toolUse")

    return stream_fn


def ok_after(first: Any) -> Any:
    calls = [0]

    def stream_fn(model: Any, context: Any, options: Any) -> Iterator[Any]:
        calls[0] += 1
        if calls[0] == 1:
            yield from first(model, context, options)
            return
        partial = PartialAssistantMessage.begin(model=model.id, api=model.api, provider=model.provider,
                                                timestamp=clock())
        yield StartEvent(partial)
        yield DoneEvent("stop", replace(partial.to_message(), content=(), stop_reason="stop"))

    return stream_fn


SPLITS = {
    "every delta": {0, 1, 2},
    "the second delta": {1},
    "the last delta": {2},
    "none": set(),
}


@pytest.mark.parametrize("changes", list(SPLITS.values()), ids=list(SPLITS))
def test_a_key_split_over_deltas_whose_header_changes_is_never_written(flavour: Flavour, tmp_path: Path,
                                                                      changes: set[int]) -> None:
    path = tmp_path / "run.jsonl"
    context, config = AgentContext(), AgentLoopConfig(model=Model(id="m"), api_key=KEY)
    events, messages = flavour.run("Repeat the key", context, config, streamed(PIECES, changes), clock=clock,
                                   journal=TranscriptRecorder(path, context, config))
    assert messages[-1].text == KEY  # the run itself has it
    assert_no_piece(path)
    assert read_transcript(path).entries[-1].effects[-1].messages[-1].text == "[REDACTED]"
    result = replay(path)
    assert result.finished and result.messages[-1].text == "[REDACTED]"
    assert flavour.call(flavour.replay_llm, path, config, []).finished


def test_header_changes_are_written_with_their_deltas(flavour: Flavour, tmp_path: Path) -> None:
    """The usage each delta brought is in the transcript: a reply cut by an abort is rebuilt
    with the header the core read."""
    path = tmp_path / "run.jsonl"
    context, config = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    pieces = ["Hel", "lo, ", "wor", "ld", "!"]
    flavour.run("hi", context, config, streamed(pieces, {0, 2, 3}), clock=clock,
                journal=TranscriptRecorder(path, context, config))
    deltas = [e.input.event for e in read_transcript(path).entries if e.input.type == "stream_event_received"
              and e.input.event.type == "text_delta"]
    assert [d.delta for d in deltas] == pieces
    assert [d.partial.usage.output for d in deltas] == [1, 1, 3, 4, 4]
    assert replay(path).messages[-1].text == "Hello, world!"


def test_a_key_split_over_tool_call_argument_deltas_whose_header_changes_is_never_written(
        flavour: Flavour, tmp_path: Path) -> None:
    from interpreters import tool

    @tool
    def say(text: str) -> str:
        """Say it."""
        return "said"

    path = tmp_path / "run.jsonl"
    arguments = json.dumps({"text": KEY})
    pieces = [arguments[:20], arguments[20:32], arguments[32:]]
    context, config = AgentContext(tools=[say]), AgentLoopConfig(model=Model(id="m"), api_key=KEY)
    flavour.run("Say the key", context, config, ok_after(streamed(pieces, {0, 1, 2}, kind="toolcall")), clock=clock,
                journal=TranscriptRecorder(path, context, config))
    assert_no_piece(path)
    assert replay(path).finished


def gemini_chunk(text: str, n: int, finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "responseId": "r1", "modelVersion": "gemini-2.5-flash",
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": n, "totalTokenCount": 10 + n}}


def test_a_key_gemini_streams_back_in_pieces_is_never_written(flavour: Flavour, tmp_path: Path) -> None:
    """Over real HTTP: Gemini sends usage with every chunk."""
    body = b"".join(b"data: " + json.dumps(gemini_chunk(p, i + 1, "STOP" if i == len(PIECES) - 1 else None)).encode()
                    + b"\r\n\r\n" for i, p in enumerate(PIECES))
    path = tmp_path / "run.jsonl"
    with ScriptServer(seed=2) as server:
        server.add(HttpReply(body=body))
        model = replace(get_model("google", "gemini-2.5-flash"), base_url=server.url + "/v1beta")
        context, config = AgentContext(), AgentLoopConfig(model=model, api_key=KEY)
        _, messages = flavour.run("Repeat the key", context, config, None, clock=clock, http={"max_retries": 0},
                                  journal=TranscriptRecorder(path, context, config))
    assert messages[-1].text == KEY and messages[-1].usage.output == 3
    assert_no_piece(path)
    result = replay(path)
    assert result.finished and result.messages[-1].text == "[REDACTED]" and result.messages[-1].usage.output == 3
