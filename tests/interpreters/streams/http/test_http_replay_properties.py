"""Record then strict replay, through real HTTP: random runs against a loopback OpenAI-compatible
server (streamed text, streamed tool calls, server errors, connections lost mid-stream, aborts at
random moments) on both interpreters replay identically, and a one-field change of any recorded
answer is reported at its step with the field in the headline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import AgentContext, AgentLoopConfig, replace
from interpreters import AbortSignal
from interpreters.replay import ReplayDivergence, replay
from interpreters.transcript import read_transcript
from tests.support.flavours import FLAVOURS
from tests.support.http_script_server import Reply, ScriptServer, chat_model
from tests.support.sample_tools import add


def sse(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def chunk(n: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def streamed_reply(n: int, words: list[str], calls: list[tuple[int, int]]) -> bytes:
    """A reply streaming ``words`` as text deltas, then ``calls`` to add (arguments in pieces)."""
    out = [chunk(n, {"role": "assistant", "content": ""})]
    out += [chunk(n, {"content": w}) for w in words]
    for i, (a, b) in enumerate(calls):
        args = json.dumps({"a": a, "b": b})
        out.append(chunk(n, {"tool_calls": [{"index": i, "id": f"call_{n}_{i}", "type": "function",
                                             "function": {"name": "add", "arguments": args[:4]}}]}))
        out.append(chunk(n, {"tool_calls": [{"index": i, "function": {"arguments": args[4:]}}]}))
    out.append(chunk(n, {}, "tool_calls" if calls else "stop"))
    usage = {"prompt_tokens": 10 + n, "completion_tokens": len(words) + 1, "total_tokens": 11 + n + len(words)}
    out.append({"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
                "choices": [], "usage": usage})
    return sse(out)


word = st.sampled_from(["Hel", "lo", " wor", "ld", "!", " é", " 1", "\n"])
answer = st.fixed_dictionaries({
    "words": st.lists(word, min_size=1, max_size=6),
    "calls": st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)), max_size=2),
    "fault": st.sampled_from([None, None, None, "500", "400", "reset"]),
})
scenario = st.fixed_dictionaries({
    "answers": st.lists(answer, min_size=1, max_size=3),
    "abort_after": st.one_of(st.none(), st.integers(1, 30)),
    "flavour": st.sampled_from(FLAVOURS),
})


def serve(server: ScriptServer, answers: list[dict[str, Any]]) -> None:
    for n, a in enumerate(answers):
        body = streamed_reply(n, a["words"], a["calls"])
        if a["fault"] == "500":
            server.add(Reply(status=500, body=b'{"error": {"message": "overloaded"}}', content_type="application/json"))
        elif a["fault"] == "400":
            server.add(Reply(status=400, body=b'{"error": {"message": "context too long"}}',
                             content_type="application/json"))
        elif a["fault"] == "reset":
            server.add(Reply(body=body, cut_after=len(body) // 2, then="reset"))
        else:
            server.add(Reply(body=body))
    final = streamed_reply(len(answers), ["Done."], [])
    server.add(*(Reply(body=final) for _ in range(4)))  # what a run asks after the scripted answers


def record_over_http(path: Path, server: ScriptServer, sc: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The scenario's run through the flavour's streamer (no retries), recorded."""
    server.clear()
    serve(server, sc["answers"])
    signal = AbortSignal()
    ctx = AgentContext("Add.", [], [add])
    cfg = AgentLoopConfig(model=replace(chat_model(server.url)), api_key="test-key")
    seen = 0

    def count(event: Any) -> None:
        nonlocal seen
        seen += 1
        if sc["abort_after"] is not None and seen == sc["abort_after"]:
            signal.abort()

    return sc["flavour"].record(path, "Go", ctx, cfg, None, signal, count, http={"max_retries": 0, "read_timeout": 5.0})


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _one_field_changes(path: Path) -> list[tuple[int, int, Any, str]]:
    """(step, line, change, what the headline must name) for each answer field that can change."""
    found: list[tuple[int, int, Any, str]] = []
    for entry in read_transcript(path):
        inp = entry.input_json
        if inp["type"] == "tool_finished":
            def result(o: dict[str, Any]) -> None:
                o["input"]["result"]["content"][0]["text"] += "0"
            found.append((entry.step, entry.line, result, "tool_execution_end.result.content[0].text"))
        if inp["type"] != "stream_event_received" or "deltas" in json.loads(entry.text):
            continue
        ev = inp["event"]
        kind = ev["type"]
        if kind in ("text_delta", "toolcall_delta") and entry.text.count('"delta"') == 1:
            last = json.loads(path.read_text().splitlines()[entry.line - 1])
            if "deltas" in last:
                continue  # a step of a run: changed below, on the run's line

            def delta(o: dict[str, Any]) -> None:
                o["input"]["event"]["delta"] += "x"
            found.append((entry.step, entry.line, delta, "message_update.digest of step"))
        elif kind == "text_end":
            def text(o: dict[str, Any]) -> None:
                o["input"]["event"]["content"]["text"] += "x"
            found.append((entry.step, entry.line, text, "message_update.digest of step"))
        elif kind == "toolcall_end":
            def args(o: dict[str, Any]) -> None:
                o["input"]["event"]["tool_call"]["arguments"]["a"] += 1
            found.append((entry.step, entry.line, args, "message_update.digest of step"))
        elif kind == "done":
            def done(o: dict[str, Any]) -> None:
                o["input"]["event"]["message"]["usage"]["output"] += 1
            found.append((entry.step, entry.line, done, "message_end.message.usage.output"))
    for n, line in enumerate(path.read_text().splitlines()[1:], start=2):
        obj = json.loads(line)
        if "deltas" in obj:
            def run(o: dict[str, Any]) -> None:
                o["deltas"]["text"][-1] += "x"
            found.append((obj["last"], n, run, f"message_update.digest of steps {obj['step']}-{obj['last']}"))
    return found


@SETTINGS
@given(sc=scenario, pick=st.integers(0, 10_000))
def test_http_runs_replay_identically_and_every_changed_answer_is_named(
        tmp_path: Path, server: ScriptServer, sc: dict[str, Any], pick: int) -> None:
    path = tmp_path / "run.jsonl"
    events, messages = record_over_http(path, server, sc)
    assert [e.type for e in events].count("agent_end") == 1 and events[-1].type == "agent_end"
    result = replay(path)
    assert result.finished and result.events == events and result.messages == messages

    changes = _one_field_changes(path)
    if not changes:
        return
    step, line, change, named = changes[pick % len(changes)]
    lines = path.read_text().splitlines()
    obj = json.loads(lines[line - 1])
    change(obj)
    lines[line - 1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n")
    try:
        replay(path)
    except ReplayDivergence as exc:
        headline = str(exc).splitlines()[0]
        assert exc.report.step == step, headline
        assert named in headline, headline
    else:
        raise AssertionError(f"a change at step {step} ({named}) was not detected")
