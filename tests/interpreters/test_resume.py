"""Resume after a crash: a real subprocess killed with SIGKILL, then resumed in this process."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, agent_loop, run_agent_loop
from interpreters.replay import ReplayDivergence, aresume, fork, replay, resume
from interpreters.transcript import TranscriptError, TranscriptRecorder, read_transcript
from tests.scripts import crash_agent
from tests.support.flavours import SYNC
from tests.support.scripts import script_command, script_env

SECRET = "sk-ant-api03-" + "x" * 40


def uninterrupted(tmp_path: Path) -> list[Any]:
    markers = tmp_path / "reference"
    markers.mkdir()
    context, config, _tools, stream_fn = crash_agent.setup(markers)
    return run_agent_loop("Do a, b, then c.", context, config, emit=lambda e: None,
                          stream_fn=stream_fn, clock=crash_agent.clock)


def executions(markers: Path, name: str) -> int:
    return len(list(markers.glob(f"exec-{name}-*")))


def crash(tmp_path: Path, mode: str) -> tuple[Path, Path]:
    transcript, markers = tmp_path / "run.jsonl", tmp_path / "markers"
    markers.mkdir()
    proc = subprocess.Popen(script_command("crash_agent", str(transcript), str(markers), mode), env=script_env())
    try:
        deadline = time.monotonic() + 30
        while not (markers / "reached").exists():
            assert proc.poll() is None, "the agent script exited before the kill point"
            assert time.monotonic() < deadline, "the agent script never reached the kill point"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(10)
    assert proc.returncode == -signal.SIGKILL
    assert not (markers / "finished").exists()
    return transcript, markers


@pytest.mark.slow
def test_resume_after_sigkill_in_a_tool_call(tmp_path: Path) -> None:
    expected = uninterrupted(tmp_path)
    transcript, markers = crash(tmp_path, "tool")
    assert executions(markers, "a") == 1 and executions(markers, "b") == 1
    before = read_transcript(transcript)
    assert not before.torn

    context, config, tools, stream_fn = crash_agent.setup(markers)
    stream = resume(transcript, config, tools, stream_fn=stream_fn, clock=crash_agent.clock)
    events = list(stream)
    messages = stream.result()

    assert messages == expected
    # a had finished before the crash: not run again; b was cut: run again; c ran once.
    assert (executions(markers, "a"), executions(markers, "b"), executions(markers, "c")) == (1, 2, 1)
    # Nothing re-emitted: the resumed stream starts with b's end, not with agent_start.
    assert events[0].type == "tool_execution_end" and events[0].tool_call_id == "c2"
    assert [e.type for e in events].count("agent_start") == 0
    assert events[-1].type == "agent_end"
    after = read_transcript(transcript)
    assert after.resumed_from == (before.steps,)
    assert replay(after).messages == expected
    assert SECRET not in transcript.read_text()


@pytest.mark.slow
def test_resume_after_sigkill_in_a_stream(tmp_path: Path) -> None:
    expected = uninterrupted(tmp_path)
    transcript, markers = crash(tmp_path, "stream")
    before = read_transcript(transcript)
    last_call = max(e.step for e in before if any(x["type"] == "call_llm" for x in e.effects_json))
    # The start and text_start events after the model call were written; the deltas that
    # followed were still held as one run when the process died (a resume asks again anyway).
    assert before.steps == last_call + 2
    written = len(transcript.read_text().splitlines())

    context, config, tools, stream_fn = crash_agent.setup(markers)
    stream = resume(transcript, config, tools, stream_fn=stream_fn, clock=crash_agent.clock)
    events = list(stream)
    assert stream.result() == expected
    assert (executions(markers, "a"), executions(markers, "b"), executions(markers, "c")) == (1, 1, 1)
    # The cut stream is discarded: the reply streams again from its start.
    assert [e.type for e in events[:2]] == ["message_start", "message_update"]
    text = transcript.read_text().splitlines()
    assert json.loads(text[written]) == {"resumed_from_step": last_call, "at": json.loads(text[written])["at"]}
    after = read_transcript(transcript)
    assert after.resumed_from == (last_call,)
    result = replay(after)
    assert result.messages == expected and result.finished
    assert [e.step for e in after] == list(range(1, after.steps + 1))


def record_partial(tmp_path: Path, steps: int) -> tuple[Path, list[Any]]:
    """A transcript cut after ``steps`` steps (as a crash would leave it), and the full run."""
    markers = tmp_path / "m"
    markers.mkdir(exist_ok=True)
    context, config, tools, stream_fn = crash_agent.setup(markers)
    full = tmp_path / "full.jsonl"
    _, expected = SYNC.record(full, "Do a, b, then c.", context, config, stream_fn, clock=crash_agent.clock)
    # A crash leaves whole lines: the same as the first ``steps`` steps with a line each.
    cut = fork(full, steps, tmp_path / "cut.jsonl")
    return cut, expected


def test_resume_at_every_step_gives_the_uninterrupted_messages(tmp_path: Path) -> None:
    _, expected = record_partial(tmp_path, 1)
    total = read_transcript(tmp_path / "full.jsonl").steps
    for n in range(1, total + 1):
        cut, _ = record_partial(tmp_path, n)
        markers = tmp_path / "m"
        context, config, tools, stream_fn = crash_agent.setup(markers)
        stream = resume(cut, config, tools, stream_fn=stream_fn, clock=crash_agent.clock)
        assert stream.result() == expected, f"resumed after step {n}"
        assert replay(cut).messages == expected


def test_resume_with_a_torn_last_line_truncates_it(tmp_path: Path) -> None:
    cut, expected = record_partial(tmp_path, 10)
    whole = cut.read_bytes()
    cut.write_bytes(whole + b'{"step":11,"input":{"type":"stream_ev')
    context, config, tools, stream_fn = crash_agent.setup(tmp_path / "m")
    with pytest.warns(RuntimeWarning, match="line 12 is torn"):
        stream = resume(cut, config, tools, stream_fn=stream_fn, clock=crash_agent.clock)
    assert stream.result() == expected
    assert cut.read_bytes().startswith(whole + b'{"resumed_from_step":')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert replay(cut).messages == expected


def test_async_resume(tmp_path: Path) -> None:
    cut, expected = record_partial(tmp_path, 12)
    context, config, tools, stream_fn = crash_agent.setup(tmp_path / "m")

    async def go() -> list[Any]:
        stream = aresume(cut, config, tools, stream_fn=stream_fn, clock=crash_agent.clock)
        return await stream.result()

    assert asyncio.run(go()) == expected


def test_resuming_a_finished_run_does_nothing(tmp_path: Path) -> None:
    cut, expected = record_partial(tmp_path, 1)
    full = tmp_path / "full.jsonl"
    size = full.stat().st_size
    context, config, tools, stream_fn = crash_agent.setup(tmp_path / "m")
    stream = resume(full, config, tools, stream_fn=stream_fn)
    assert list(stream) == [] and stream.result() == expected
    assert full.stat().st_size == size


def test_resume_needs_a_step(tmp_path: Path) -> None:
    cut, _ = record_partial(tmp_path, 0)
    context, config, tools, stream_fn = crash_agent.setup(tmp_path / "m")
    with pytest.raises(TranscriptError, match="nothing to resume"):
        resume(cut, config, tools, stream_fn=stream_fn)


def test_resume_refuses_a_transcript_the_code_no_longer_reproduces(tmp_path: Path) -> None:
    cut, _ = record_partial(tmp_path, 8)
    lines = cut.read_text().splitlines()
    entry = json.loads(lines[8])
    entry["effects"].append({"type": "emit", "event": {"type": "turn_start"}})
    lines[8] = json.dumps(entry)
    cut.write_text("\n".join(lines) + "\n")
    context, config, tools, stream_fn = crash_agent.setup(tmp_path / "m")
    with pytest.raises(ReplayDivergence) as info:
        resume(cut, config, tools, stream_fn=stream_fn)
    assert info.value.report.step == 8


def record_cut(path: Path, ctx: AgentContext, cfg: AgentLoopConfig, **recorder: Any) -> None:
    """Record a run that stops mid-reply, as if the process died there: its event stream is
    abandoned after the 8th event (nothing more is fed or recorded)."""
    stream = agent_loop("go", ctx, cfg, stream_fn=ScriptedModel(["one two three four five six seven"], chunk_size=4),
                        journal=TranscriptRecorder(path, ctx, cfg, **recorder))
    for i, _ in enumerate(stream):
        if i == 8:
            break
    stream.close()


def test_resume_goes_on_with_the_config_model_not_its_redacted_copy(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    model = Model(id="m", headers={"Authorization": "Bearer abcdefgh12345678"})  # type: ignore[arg-type]
    ctx, cfg = AgentContext(), AgentLoopConfig(model=model)
    record_cut(path, ctx, cfg)
    assert "abcdefgh12345678" not in path.read_text()
    seen: list[Any] = []
    scripted = ScriptedModel(["one two three four five six seven"], chunk_size=4)

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        seen.append(dict(model.headers or {}))
        return scripted(model, context, options)

    messages = resume(path, cfg, stream_fn=stream_fn).result()
    assert seen == [{"Authorization": "Bearer abcdefgh12345678"}]
    assert messages[-1].text == "one two three four five six seven"
    assert "abcdefgh12345678" not in path.read_text() and replay(path).finished


def test_resuming_a_version_1_transcript_keeps_writing_version_1(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    record_cut(path, ctx, cfg, flush="entry")
    # The same prefix as a version-1 writer would have left it: one step line each.
    t = read_transcript(path)
    header = json.loads(path.read_text().splitlines()[0])
    header["version"] = 1
    # (and without the digests of message_update effects, which came with version 4)
    old = [re.sub(r',"digest":"[0-9a-f]+"', "", e.text) for e in t]
    path.write_text("\n".join([json.dumps(header)] + old) + "\n")
    messages = resume(path, cfg, stream_fn=ScriptedModel(["one two three four five six seven"], chunk_size=4)).result()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["version"] == 1 and not any("deltas" in line for line in lines)
    assert read_transcript(path).version == 1 and replay(path).messages == messages
