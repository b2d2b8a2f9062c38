"""One transcript, one writer: a second recorder on a file that is being written is refused.

Two :class:`TranscriptRecorder` s on one path, in two threads of one process or in two
processes, never write over each other: the second is refused with
:class:`interpreters.transcript.TranscriptBusy` naming the path, before it truncates or writes
anything, and the first run's transcript stays whole and replays. Reading the transcript while
its run goes on (a viewer, a tool) does not let a second writer in. A recorder lets go of its
file when its run ends (or suspends), even while the run's stream is still referenced, so that
the run can be resumed into the same file at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Approve, Model
from interpreters import ScriptedModel, agent_loop, aio, resume_suspended
from interpreters.replay import aresume, replay, resume
from interpreters.transcript import TranscriptBusy, TranscriptFile, TranscriptRecorder
from tests.support.clocks import clock
from tests.support.flavours import Flavour
from tests.support.scripts import script_command, script_env, script_module

once: Any = script_module("once_agent")

TIMEOUT = 30


def busy_in_process(path: Path, thread: str) -> str:
    return (f"{path}: another recorder in this process is writing this transcript (opened in thread {thread!r}); "
            "give each run its own path, or close that recorder first")


def busy_elsewhere(path: Path) -> str:
    return (f"{path}: another process is writing this transcript (a second worker, or pytest-xdist running the "
            "same test twice?); give each run its own path")


def test_two_recorders_on_one_file_in_two_threads_one_is_refused(flavour: Flavour, tmp_path: Path) -> None:
    for round_ in range(10):
        path, markers = tmp_path / f"run{round_}.jsonl", tmp_path / f"markers{round_}"
        markers.mkdir()
        start, refused_one = threading.Barrier(2), threading.Event()
        outcomes: dict[str, Any] = {}

        def record(name: str) -> None:
            # The tool of the run that records waits (a while at most) until the other was refused.
            context, config, model = once.setup(markers, lambda: refused_one.wait(5), approval=False)
            start.wait(TIMEOUT)
            try:
                outcomes[name] = flavour.run(once.PROMPT, context, config, model, clock=clock,
                                             journal=TranscriptRecorder(path, context, config))[1]
            except TranscriptBusy as exc:
                outcomes[name] = exc
                refused_one.set()

        threads = [threading.Thread(target=record, args=(n,), name=n, daemon=True) for n in ("one", "two")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT)
        assert not any(t.is_alive() for t in threads)
        refused = {n: o for n, o in outcomes.items() if isinstance(o, TranscriptBusy)}
        assert len(refused) == 1, outcomes
        (loser, exc), = refused.items()
        winner = "two" if loser == "one" else "one"
        assert str(exc) == busy_in_process(path, winner)
        assert isinstance(exc, RuntimeError)
        assert once.executions(markers) == ["c1"]  # the refused run ran nothing
        result = replay(path)
        assert result.finished and result.messages == outcomes[winner]


def test_a_second_recorder_while_a_run_is_open_is_refused_and_destroys_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    first = agent_loop("hi", ctx, cfg, stream_fn=ScriptedModel(["one two three"], chunk_size=3),
                       journal=TranscriptRecorder(path, ctx, cfg), clock=clock)
    next(first)  # the run is open: its header and first step are written
    before = path.read_bytes()
    second = agent_loop("hi", ctx, cfg, stream_fn=ScriptedModel(["x"]), journal=TranscriptRecorder(path, ctx, cfg))
    with pytest.raises(TranscriptBusy) as info:
        next(second)
    assert str(info.value) == busy_in_process(path, threading.current_thread().name)
    assert path.read_bytes() == before
    assert first.result()[-1].text == "one two three"
    assert replay(path).messages[-1].text == "one two three"
    # Once the first run ended, the file is free again.
    again = agent_loop("hi", ctx, cfg, stream_fn=ScriptedModel(["x"]), journal=TranscriptRecorder(path, ctx, cfg))
    assert again.result()[-1].text == "x" and replay(path).messages[-1].text == "x"


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_one_file_under_two_names_is_one_transcript(tmp_path: Path, link: str) -> None:
    path, alias = tmp_path / "run.jsonl", tmp_path / "alias.jsonl"
    path.write_bytes(b"")
    alias.symlink_to(path) if link == "symlink" else alias.hardlink_to(path)
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    first = agent_loop("hi", ctx, cfg, stream_fn=ScriptedModel(["one two three"], chunk_size=3),
                       journal=TranscriptRecorder(path, ctx, cfg), clock=clock)
    next(first)
    second = agent_loop("hi", ctx, cfg, stream_fn=ScriptedModel(["x"]), journal=TranscriptRecorder(alias, ctx, cfg))
    with pytest.raises(TranscriptBusy) as info:
        next(second)
    assert str(info.value) == busy_in_process(alias, threading.current_thread().name)
    assert first.result()[-1].text == "one two three"
    assert replay(path).messages[-1].text == "one two three"


def test_a_closed_stream_lets_go_of_its_transcript(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    recorder = TranscriptRecorder(path, ctx, cfg)
    stream = agent_loop("hi", ctx, cfg, stream_fn=ScriptedModel(["one two three"], chunk_size=3), journal=recorder,
                        clock=clock)
    next(stream)
    stream.close()  # abandoned: the run goes no further
    again = agent_loop("hi", ctx, cfg, stream_fn=ScriptedModel(["x"]), journal=TranscriptRecorder(path, ctx, cfg))
    assert again.result()[-1].text == "x"
    assert recorder.steps > 0  # (still referenced)


def test_a_run_that_suspended_lets_go_of_its_transcript_though_its_stream_is_kept(tmp_path: Path) -> None:
    """The README's flow: keep the stream for its suspension, resume into the same file."""
    path, markers = tmp_path / "run.jsonl", tmp_path / "markers"
    markers.mkdir()
    context, config, model = once.setup(markers)
    stream = agent_loop(once.PROMPT, context, config, stream_fn=model, clock=clock,
                        journal=TranscriptRecorder(path, context, config))
    assert [event.type for event in stream][-1] == "agent_suspended"
    assert stream.suspension is not None  # the stream (and its recorder) is still referenced
    resumed = resume_suspended(stream.suspension, {"c1": Approve()}, context=context, config=config,
                               stream_fn=model, clock=clock, transcript=path)
    assert resumed.result()[-1].text == "Done: deleted old.log"
    assert replay(path).finished


def test_an_async_run_that_suspended_lets_go_of_its_transcript_though_its_stream_is_kept(tmp_path: Path) -> None:
    import asyncio

    path, markers = tmp_path / "run.jsonl", tmp_path / "markers"
    markers.mkdir()
    context, config, model = once.setup(markers)

    async def main() -> str:
        stream = aio.agent_loop(once.PROMPT, context, config, stream_fn=model, clock=clock,
                                journal=TranscriptRecorder(path, context, config))
        assert [event.type async for event in stream][-1] == "agent_suspended"
        assert stream.suspension is not None  # the stream (and its recorder) is still referenced
        resumed = aio.resume_suspended(stream.suspension, {"c1": Approve()}, context=context, config=config,
                                       stream_fn=model, clock=clock, transcript=path)
        messages = await resumed.result()
        return str(messages[-1].text)

    assert asyncio.run(main()) == "Done: deleted old.log"
    assert replay(path).finished


def test_a_recorder_in_another_process_keeps_its_file_while_the_transcript_is_read(
        flavour: Flavour, tmp_path: Path) -> None:
    """The writing process reads its own transcript mid-run (a POSIX record lock would go with
    that read): a recorder here is still refused, and the other run's transcript stays whole."""
    path, markers, hold = tmp_path / "run.jsonl", tmp_path / "markers", tmp_path / "hold"
    markers.mkdir()
    hold.mkdir()
    proc = subprocess.Popen(script_command("once_agent", "record", flavour.name, str(path), str(markers), str(hold)),
                            stderr=subprocess.PIPE, text=True, env=script_env())
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (hold / "in-tool").exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline
            time.sleep(0.01)
        before = path.read_bytes()
        context, config, model = once.setup(markers, approval=False)
        with pytest.raises(TranscriptBusy) as info:
            flavour.run(once.PROMPT, context, config, model, clock=clock,
                        journal=TranscriptRecorder(path, context, config))
        assert str(info.value) == busy_elsewhere(path)
        start = resume if not flavour.is_async else aresume
        with pytest.raises(TranscriptBusy) as info:  # nor does a crash resume go on with a run still recorded
            flavour.collect(lambda: start(path, config, context.tools, stream_fn=model, clock=clock))
        assert str(info.value) == busy_elsewhere(path)
        assert path.read_bytes() == before
    finally:
        (hold / "go").write_text("go")
        try:
            _, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    assert proc.returncode == 0, err
    assert once.executions(markers) == ["c1"]
    result = replay(path)
    assert result.finished and result.messages[-1].text == "Done: deleted old.log"


def test_recorders_in_processes_started_at_once_leave_one_whole_transcript(flavour: Flavour,
                                                                          tmp_path: Path) -> None:
    for round_ in range(2):
        path, markers, hold = tmp_path / f"run{round_}.jsonl", tmp_path / f"m{round_}", tmp_path / f"h{round_}"
        markers.mkdir()
        hold.mkdir()
        (hold / "go").write_text("go")  # no pause in the tool
        args = script_command("once_agent", "record", flavour.name, str(path), str(markers), str(hold))
        procs = [subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=script_env()) for _ in range(3)]
        outcomes = []
        for p in procs:
            try:
                outcomes.append((p.wait(TIMEOUT), p.communicate()[1]))
            except subprocess.TimeoutExpired:
                p.kill()
                raise
        ok = [err for code, err in outcomes if code == 0]
        refused = [err for code, err in outcomes if code != 0]
        assert ok, outcomes
        for err in refused:
            assert f"TranscriptBusy: {busy_elsewhere(path)}" in err
        assert len(once.executions(markers)) == len(ok)
        result = replay(path)  # the file holds one whole run
        assert result.finished and result.messages[-1].text == "Done: deleted old.log"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_sees_its_parents_transcript_as_another_processes(tmp_path: Path) -> None:
    """A child forked while a transcript is claimed shares the parent's descriptor (and its
    flock): the child's claim is refused as another process's, not as its own thread's."""
    path = tmp_path / "run.jsonl"
    claimed = TranscriptFile.claim(path, create=True)
    try:
        pid = os.fork()
        if pid == 0:  # the child: report through the exit status only
            code = 1
            try:
                TranscriptFile.claim(path, create=False)
            except TranscriptBusy as exc:
                code = 0 if str(exc) == busy_elsewhere(path) else 2
            except BaseException:
                code = 3
            os._exit(code)
        deadline = time.monotonic() + TIMEOUT
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the forked child never ended")
            time.sleep(0.01)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        claimed.close()
    TranscriptFile.claim(path, create=False).close()  # released: free again


# --------------------------------------------------------------------------- a suspended run's transcript


def destroys(path: Path) -> str:
    return (f"{path}: it records a suspended run (tool calls wait for decisions), which a new recorder would "
            "destroy: resume that run into it (resume_suspended(..., transcript=path)), record this run to another "
            "path, or pass TranscriptRecorder(..., overwrite=True) to replace it")


class Counted:
    """A scripted model that counts its calls."""

    def __init__(self, replies: list[Any]) -> None:
        self.model, self.calls = ScriptedModel(replies, clock=clock), 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.model(*args)


@pytest.mark.parametrize("prompt_size", [10, 200_000], ids=["short", "a suspended line over 64 KiB"])
def test_a_later_recorder_does_not_destroy_a_suspended_runs_transcript(flavour: Flavour, tmp_path: Path,
                                                                      prompt_size: int) -> None:
    path, markers = tmp_path / "run.jsonl", tmp_path / "markers"
    markers.mkdir()
    context, config, model = once.setup(markers)
    prompt = once.PROMPT + " " * prompt_size
    _, _, suspension = flavour.start_suspending(prompt, context, config, model, clock=clock,
                                                journal=TranscriptRecorder(path, context, config))
    before = path.read_bytes()
    other = Counted(["ok"])
    with pytest.raises(FileExistsError) as info:
        flavour.run("Something else", context, config, other, clock=clock,
                    journal=TranscriptRecorder(path, context, config))
    assert str(info.value) == destroys(path)
    assert path.read_bytes() == before and other.calls == 0
    # The file is free: the approval goes on in it.
    _, messages, _ = flavour.resume(suspension, {"c1": Approve()}, context, config, model, clock=clock,
                                    transcript=path)
    assert messages[-1].text == "Done: deleted old.log" and replay(path).finished
    # A transcript whose run ended is replaced, as before.
    flavour.run("Something else", context, config, other, clock=clock,
                journal=TranscriptRecorder(path, context, config))
    assert replay(path).messages[-1].text == "ok"


def test_a_suspended_transcript_whose_resume_wrote_only_its_resume_line_is_kept(tmp_path: Path) -> None:
    from interpreters.replay.recovery import continue_transcript

    path, markers = tmp_path / "run.jsonl", tmp_path / "markers"
    markers.mkdir()
    context, config, model = once.setup(markers)
    stream = agent_loop(once.PROMPT, context, config, stream_fn=model, clock=clock,
                        journal=TranscriptRecorder(path, context, config))
    list(stream)
    continue_transcript(path, stream.suspension, config).close()  # a resume that never ran
    assert path.read_text().splitlines()[-1].startswith('{"resumed_suspension"')
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        agent_loop("hi", context, config, stream_fn=ScriptedModel(["x"]), clock=clock,
                   journal=TranscriptRecorder(path, context, config)).result()
    assert path.read_bytes() == before


def test_overwrite_replaces_a_suspended_runs_transcript(flavour: Flavour, tmp_path: Path) -> None:
    path, markers = tmp_path / "run.jsonl", tmp_path / "markers"
    markers.mkdir()
    context, config, model = once.setup(markers)
    flavour.start_suspending(once.PROMPT, context, config, model, clock=clock,
                             journal=TranscriptRecorder(path, context, config))
    flavour.run("Something else", context, config, ScriptedModel(["ok"], clock=clock), clock=clock,
                journal=TranscriptRecorder(path, context, config, overwrite=True))
    assert replay(path).messages[-1].text == "ok"


def test_a_file_that_is_not_a_transcript_or_a_crashed_runs_is_replaced(tmp_path: Path) -> None:
    from interpreters.replay import fork

    context, config = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"step": 1, "effects": [{"type": "run_suspended"}]}\n')
    agent_loop("hi", context, config, stream_fn=ScriptedModel(["x"]), clock=clock,
               journal=TranscriptRecorder(notes, context, config)).result()
    assert replay(notes).finished
    crashed = fork(notes, 2, tmp_path / "crashed.jsonl")  # a run that stopped mid-way (resume() could go on)
    agent_loop("hi", context, config, stream_fn=ScriptedModel(["y"]), clock=clock,
               journal=TranscriptRecorder(crashed, context, config)).result()
    assert replay(crashed).messages[-1].text == "y"
