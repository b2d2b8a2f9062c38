"""A resumed run sends the config's secrets and writes none.

- A suspension recovered from its transcript carries the recorded model, whose secret headers
  the recorder wrote as ``[REDACTED]``: ``resume_suspended`` goes on with the config's model
  and headers (as a crash ``resume`` does), so the next model call sends the real header, over
  real HTTP. A config whose header is the redaction marker itself is refused before anything
  runs: the marker is never sent.
- The approved tool of a resumed run (and the tool a crash ``resume`` runs again) returns
  before the run's first model call, so before any ``get_api_key`` of the run was asked: a
  resumed run asks for the key at its start, so that a result quoting it is scrubbed from the
  first line written.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Approve, Model, UserMessage, replace
from interpreters import ScriptedModel, tool
from interpreters.replay import aresume, fork, replay, resume
from interpreters.streams.scripted import Reply, ScriptedCall
from interpreters.transcript import TranscriptRecorder, read_transcript
from tests.support.clocks import clock
from tests.support.flavours import Flavour
from tests.support.http_script_server import Reply as HttpReply
from tests.support.http_script_server import ScriptServer, chat_model

HEADER = "hdr-" + "".join(random.Random(3).choices(string.ascii_letters, k=32))
KEY = "".join(random.Random(11).choices(string.ascii_letters + string.digits, k=40))  # no known key shape


@pytest.fixture
def server() -> Any:
    with ScriptServer(seed=5) as srv:
        yield srv


def sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def calls_delete() -> bytes:
    return sse([chunk({"role": "assistant", "content": ""}),
                chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                       "function": {"name": "delete", "arguments": '{"path": "old.log"}'}}]}),
                chunk({}, "tool_calls")])


def says(text: str) -> bytes:
    return sse([chunk({"role": "assistant", "content": ""}), chunk({"content": text}), chunk({}, "stop")])


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def test_a_suspension_recovered_from_its_transcript_sends_the_configs_headers(
        flavour: Flavour, server: ScriptServer, tmp_path: Path) -> None:
    server.add(HttpReply(body=calls_delete()), HttpReply(body=says("Deleted.")))
    model = replace(chat_model(server.url), headers={"X-Api-Key": HEADER})
    context, config = AgentContext("", (), [delete]), AgentLoopConfig(model=model, api_key="test-key")
    path = tmp_path / "run.jsonl"
    flavour.start_suspending("Delete old.log.", context, config, None,
                             journal=TranscriptRecorder(path, context, config))
    assert HEADER not in path.read_text()
    # The suspension as its transcript has it (the process that suspended is gone).
    recovered = resume(path, config).suspension
    assert recovered is not None and recovered.state.run.model.headers["X-Api-Key"] == "[REDACTED]"
    _, messages, again = flavour.resume(recovered, {"call_1": Approve()}, context, config, None, transcript=path)
    assert again is None and messages[-1].text == "Deleted."
    sent = [r.headers.get("x-api-key") for r in server.requests]
    assert sent == [HEADER, HEADER]
    assert HEADER not in path.read_text()
    assert replay(path).finished


def test_a_config_whose_header_is_the_redaction_marker_is_refused(flavour: Flavour, server: ScriptServer,
                                                                 tmp_path: Path) -> None:
    server.add(HttpReply(body=calls_delete()))
    model = replace(chat_model(server.url), headers={"X-Api-Key": HEADER})
    context, config = AgentContext("", (), [delete]), AgentLoopConfig(model=model, api_key="test-key")
    path = tmp_path / "run.jsonl"
    flavour.start_suspending("Delete old.log.", context, config, None,
                             journal=TranscriptRecorder(path, context, config))
    recovered = resume(path, config).suspension
    before = path.read_bytes()
    copied = replace(config, model=recovered.state.run.model)  # the model as the transcript has it
    with pytest.raises(ValueError) as info:
        flavour.resume(recovered, {"call_1": Approve()}, context, copied, None, transcript=path)
    assert str(info.value) == (
        "resume_suspended(): the model's header 'X-Api-Key' is '[REDACTED]', the text a transcript writes "
        "instead of a secret: give the config's model with its real headers")
    assert server.attempts == 1 and path.read_bytes() == before


# --------------------------------------------------------------------------- keys in results


@tool(requires_approval=True)
def whoami() -> str:
    """Say which key the service saw."""
    return f"the service saw key {KEY}"


@tool
def plain_whoami() -> str:
    """Say which key the service saw (no approval)."""
    return f"the service saw key {KEY}"


async def async_key(provider: str) -> str:
    return KEY


def keyed(quoting: Any, get_api_key: Any = lambda provider: KEY) -> tuple[AgentContext, AgentLoopConfig,
                                                                          ScriptedModel]:
    """A run whose tool ``quoting`` returns the key ``get_api_key`` gives (a shape no pattern knows)."""
    model = ScriptedModel(lambda ctx, n: "ok" if ctx.messages[-1].role == "toolResult"
                          else Reply(tool_calls=[ScriptedCall(quoting.name, {}, "w1")]), clock=clock)
    config = AgentLoopConfig(model=Model(id="m", provider="xai"), get_api_key=get_api_key)
    return AgentContext("", (), [quoting]), config, model


@pytest.mark.parametrize("get_api_key", [lambda provider: KEY, async_key], ids=["def", "async-def"])
def test_a_key_quoted_by_the_approved_tool_is_never_written(flavour: Flavour, tmp_path: Path,
                                                           get_api_key: Any) -> None:
    context, config, model = keyed(whoami, get_api_key)
    path, other = tmp_path / "run.jsonl", tmp_path / "resumed.jsonl"
    _, _, suspension = flavour.start_suspending("Who am I?", context, config, model, clock=clock,
                                                journal=TranscriptRecorder(path, context, config))
    _, messages, _ = flavour.resume(suspension, {"w1": Approve()}, context, config, model, clock=clock,
                                    transcript=path, journal=TranscriptRecorder(other, context, config))
    assert KEY in messages[-2].content[0].text  # the run itself has it
    for written in (path, other):
        text = written.read_text()
        assert KEY not in text and "the service saw key [REDACTED]" in text
    assert replay(path).finished


def test_a_key_quoted_by_a_tool_a_crash_resume_runs_again_is_never_written(flavour: Flavour,
                                                                           tmp_path: Path) -> None:
    context, config, model = keyed(plain_whoami)
    full = tmp_path / "full.jsonl"
    flavour.run("Who am I?", context, config, model, clock=clock, journal=TranscriptRecorder(full, context, config))
    assert KEY not in full.read_text()  # its key was known before the tool ran
    asked = next(e.step for e in read_transcript(full) if any(x["type"] == "execute_tool" for x in e.effects_json))
    cut = fork(full, asked, tmp_path / "cut.jsonl")
    start = resume if not flavour.is_async else aresume
    _, messages = flavour.collect(lambda: start(cut, config, context.tools, stream_fn=model, clock=clock))
    assert messages[-1].text == "ok"
    text = cut.read_text()
    assert KEY not in text and "the service saw key [REDACTED]" in text


# --------------------------------------------------------------------------- keys known late


def flaky_key(fails: int) -> tuple[Any, list[str]]:
    """A ``get_api_key`` whose first ``fails`` calls time out (a token refresh), then gives KEY."""
    asked: list[str] = []

    def get_api_key(provider: str) -> str:
        asked.append(provider)
        if len(asked) <= fails:
            raise TimeoutError("the vault timed out")
        return KEY

    return get_api_key, asked


@pytest.mark.parametrize("flush", ["entry", "turn"])
def test_a_fresh_run_whose_conversation_quotes_the_key_never_writes_it(flavour: Flavour, tmp_path: Path,
                                                                      flush: str) -> None:
    """The header and the first steps are held until the first model call has the key: no
    extra ``get_api_key`` call."""
    get_api_key, asked = flaky_key(0)
    path = tmp_path / "run.jsonl"
    context = AgentContext("s", (UserMessage(f"earlier: my key is {KEY}", timestamp=1),), [plain_whoami])
    config = AgentLoopConfig(model=Model(id="m", provider="xai"), get_api_key=get_api_key)
    model = ScriptedModel([Reply(tool_calls=[ScriptedCall("plain_whoami", {}, "w1")]), "ok"], clock=clock)
    _, messages = flavour.run("hi", context, config, model, clock=clock,
                              journal=TranscriptRecorder(path, context, config, flush=flush))
    assert messages[-1].text == "ok" and KEY in messages[2].content[0].text
    assert asked == ["xai", "xai"]  # once per model call, as without a recorder
    text = path.read_text()
    assert KEY not in text and "earlier: my key is [REDACTED]" in text
    assert replay(path).finished


def test_a_fresh_run_whose_get_api_key_fails_is_written_whole(flavour: Flavour, tmp_path: Path) -> None:
    get_api_key, asked = flaky_key(1)
    path = tmp_path / "run.jsonl"
    context = AgentContext("s", (UserMessage("hello", timestamp=1),), [])
    config = AgentLoopConfig(model=Model(id="m", provider="xai"), get_api_key=get_api_key)
    _, messages = flavour.record(path, "hi", context, config, ScriptedModel(["ok"], clock=clock), clock=clock)
    assert messages[-1].stop_reason == "error" and "the vault timed out" in messages[-1].error_message
    assert asked == ["xai"]
    result = replay(path)
    assert result.finished and result.messages == messages


def test_a_resumed_run_whose_first_key_lookup_fails_holds_its_lines_until_the_key_is_known(
        flavour: Flavour, tmp_path: Path) -> None:
    """The approved tool's result quotes the key: it is held until the model call, whose
    ``get_api_key`` works, tells it; then written scrubbed."""
    context, config0, model = keyed(whoami, None)
    path = tmp_path / "run.jsonl"
    _, _, suspension = flavour.start_suspending("Who am I?", context, config0, model, clock=clock,
                                                journal=TranscriptRecorder(path, context, config0))
    get_api_key, asked = flaky_key(1)
    config = replace(config0, get_api_key=get_api_key)
    _, messages, _ = flavour.resume(suspension, {"w1": Approve()}, context, config, model, clock=clock,
                                    transcript=path)
    assert messages[-1].text == "ok" and KEY in messages[-2].content[0].text
    assert asked == ["xai", "xai"]  # the run's start (failed), its model call
    text = path.read_text()
    assert KEY not in text and "the service saw key [REDACTED]" in text
    assert replay(path).finished


@tool(requires_approval=True)
def second_whoami() -> str:
    """Say which key the service saw, again."""
    return f"the service saw key {KEY} again"


def test_held_lines_are_written_when_the_run_suspends_before_the_key_is_known(flavour: Flavour,
                                                                           tmp_path: Path) -> None:
    """Nothing is lost: a resumed run that suspends again before any model call writes what it
    held (the key could not be known: pass it as secrets= when a tool may quote it)."""
    model = ScriptedModel(lambda ctx, n: "ok" if ctx.messages[-1].role == "toolResult" and n > 1 else Reply(
        tool_calls=[ScriptedCall("whoami", {}, "w1"), ScriptedCall("second_whoami", {}, "w2")]), clock=clock)
    context = AgentContext("", (), [whoami, second_whoami])
    config0 = AgentLoopConfig(model=Model(id="m", provider="xai"), tool_execution="sequential")
    path = tmp_path / "run.jsonl"
    _, _, s1 = flavour.start_suspending("Who am I?", context, config0, model, clock=clock,
                                        journal=TranscriptRecorder(path, context, config0))
    get_api_key, asked = flaky_key(5)
    config = replace(config0, get_api_key=get_api_key)
    _, _, s2 = flavour.resume(s1, {"w1": Approve()}, context, config, model, clock=clock, transcript=path,
                              secrets=[KEY])
    assert s2 is not None and [p.tool_call_id for p in s2.pending] == ["w2"]
    assert asked == ["xai"]
    text = path.read_text()
    assert KEY not in text and "the service saw key [REDACTED]" in text
    t = read_transcript(path)
    assert t.entries[-1].effects[-1].type == "run_suspended"
