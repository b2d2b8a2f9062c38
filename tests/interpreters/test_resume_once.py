"""A suspension is resumed at most once per transcript, and a tool call keeps its id.

``resume_suspended(suspension, decisions, ..., transcript=path)`` goes on with the run at the
end of the transcript that recorded it. Asked twice for one suspension (a double-clicked
"approve", two workers handed the same job), whether one after the other, at once in two
threads, or in two processes, and whatever happens between reading the transcript and writing
to it, exactly one resumed run happens: the approved tool runs once, the transcript replays,
and each later attempt gets :class:`interpreters.replay.recovery.AlreadyResumed` naming the transcript
and where the suspension was resumed. Races use real threads and real processes, with the
window between reading the transcript and writing to it forced open.

A tool receives its call id (``execute(tool_call_id, ...)``, ``ToolContext.tool_call_id``),
the same in the run that suspended or crashed and in its resumed run: the idempotency key a
tool uses to make a run-again safe.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcore import Approve, Deny, ToolOutput
from agentcore.codec import from_json, to_json
from interpreters.replay import aresume, fork, replay, resume
from interpreters.replay.recovery import AlreadyResumed
from interpreters.transcript import TranscriptError, TranscriptRecorder, read_transcript
from tests.support.clocks import clock
from tests.support.flavours import Flavour
from tests.support.scripts import script_command, script_env, script_module

once: Any = script_module("once_agent")
agent: Any = script_module("approval_agent")

PROCESS_TIMEOUT = 60
THREAD_TIMEOUT = 30


def suspended(flavour: Flavour, tmp_path: Path, name: str = "run") -> tuple[Path, Path, Any]:
    """A recorded run of the once agent, suspended on ``c1``: (transcript, markers, suspension)."""
    path, markers = tmp_path / f"{name}.jsonl", tmp_path / f"{name}-markers"
    markers.mkdir()
    context, config, model = once.setup(markers)
    _, _, suspension = flavour.start_suspending(once.PROMPT, context, config, model, clock=clock,
                                                journal=TranscriptRecorder(path, context, config))
    assert [p.tool_call_id for p in suspension.pending] == ["c1"]
    return path, markers, suspension


def approve(flavour: Flavour, suspension: Any, path: Path, markers: Path, before: Any = lambda: None) -> Any:
    context, config, model = once.setup(markers, before)
    return flavour.resume(suspension, {"c1": Approve()}, context, config, model, clock=clock, transcript=path)


def resumed_runs(path: Path) -> int:
    return sum(1 for e in read_transcript(path) if e.input.type == "resumed")


def test_a_second_resume_after_the_first_ended_is_refused_naming_where_it_was_resumed(
        flavour: Flavour, tmp_path: Path) -> None:
    path, markers, suspension = suspended(flavour, tmp_path)
    step = read_transcript(path).steps
    events, messages, again = approve(flavour, suspension, path, markers)
    assert again is None and messages[-1].text == "Done: deleted old.log"
    before = path.read_bytes()
    with pytest.raises(AlreadyResumed) as info:
        approve(flavour, suspension, path, markers)
    assert str(info.value) == (f"{path}: this suspension (step {step}) was already resumed at step {step + 1} "
                               "(c1 approved); a suspension is resumed at most once per transcript")
    assert isinstance(info.value, TranscriptError)
    assert path.read_bytes() == before  # nothing written
    assert once.executions(markers) == ["c1"]
    result = replay(path)
    assert result.finished and result.events[-len(events):] == events


def test_a_suspension_resumed_again_after_its_run_suspended_again_is_refused(flavour: Flavour,
                                                                             tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    context, config, model = agent.setup()
    _, _, s1 = flavour.start_suspending(agent.PROMPT, context, config, model, clock=clock,
                                        journal=TranscriptRecorder(path, context, config))
    step = read_transcript(path).steps
    _, _, s2 = flavour.resume(s1, {"c2": Approve(), "c3": ToolOutput("photos")}, context, config, model,
                              clock=clock, transcript=path)
    assert [p.tool_call_id for p in s2.pending] == ["c4"]
    before = path.read_bytes()
    with pytest.raises(AlreadyResumed) as info:
        flavour.resume(s1, {"c2": Deny(), "c3": ToolOutput("music")}, context, config, model, clock=clock,
                       transcript=path)
    assert str(info.value) == (f"{path}: this suspension (step {step}) was already resumed at step {step + 1} "
                               "(c2 approved, c3 given its result); a suspension is resumed at most once per "
                               "transcript")
    assert path.read_bytes() == before
    # The later suspension still goes on.
    _, messages, s3 = flavour.resume(s2, {"c4": Deny("keep it")}, context, config, model, clock=clock,
                                     transcript=path)
    assert s3 is None and replay(path).messages == messages


def run_threads(targets: list[Any]) -> None:
    threads = [threading.Thread(target=t, name=f"resume-{i}", daemon=True) for i, t in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(THREAD_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a resume never ended"


@pytest.mark.parametrize("attempts", [2, 4])
def test_resumes_of_one_suspension_at_once_in_threads_give_one_resumed_run(flavour: Flavour, tmp_path: Path,
                                                                           attempts: int) -> None:
    for round_ in range(8):
        path, markers, suspension = suspended(flavour, tmp_path, f"run{round_}")
        stored = json.dumps(to_json(suspension))  # each request decodes its own copy
        start = threading.Barrier(attempts)
        outcomes: list[Any] = []
        all_refused = threading.Event()

        def attempt() -> None:
            mine = from_json(json.loads(stored))
            start.wait(THREAD_TIMEOUT)
            try:
                # The approved tool waits (a while at most) until the other attempts were refused.
                outcomes.append(approve(flavour, mine, path, markers, lambda: all_refused.wait(5))[1][-1].text)
            except AlreadyResumed as exc:
                outcomes.append(exc)
                if len(outcomes) == attempts - 1:
                    all_refused.set()

        run_threads([attempt] * attempts)
        done = [o for o in outcomes if isinstance(o, str)]
        refused = [o for o in outcomes if isinstance(o, AlreadyResumed)]
        assert done == ["Done: deleted old.log"] and len(refused) == attempts - 1, outcomes
        for exc in refused:
            text = str(exc)
            assert text.startswith(f"{path}: ") and "a suspension is resumed at most once per transcript" in text
        assert once.executions(markers) == ["c1"]
        assert resumed_runs(path) == 1 and replay(path).finished


def pause_in_thread(monkeypatch: pytest.MonkeyPatch, thread: str, read: threading.Event,
                    go: threading.Event) -> None:
    """Thread ``thread`` pauses right after it read the transcript it goes on with, until ``go``."""
    import interpreters.replay.recovery as resuming

    for name in ("read_transcript", "parse_transcript"):
        original = getattr(resuming, name, None)
        if original is None:
            continue

        def paused(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
            value = __original(*args, **kwargs)
            if threading.current_thread().name == thread:
                read.set()
                assert go.wait(THREAD_TIMEOUT)
            return value

        monkeypatch.setattr(resuming, name, paused)


def race(monkeypatch: pytest.MonkeyPatch, attempt: Callable[[str], None]) -> None:
    """``attempt("slow")`` on a thread that pauses right after it read the transcript, and
    ``attempt("fast")`` on another that ends (goes on, or is refused) while the slow one waits;
    then the slow one goes on. Both end within the time limit."""
    read, go = threading.Event(), threading.Event()
    pause_in_thread(monkeypatch, "slow", read, go)
    slow = threading.Thread(target=attempt, args=("slow",), name="slow", daemon=True)
    slow.start()
    assert read.wait(THREAD_TIMEOUT)
    fast = threading.Thread(target=attempt, args=("fast",), name="fast", daemon=True)
    fast.start()
    fast.join(THREAD_TIMEOUT)
    go.set()
    slow.join(THREAD_TIMEOUT)
    assert not slow.is_alive() and not fast.is_alive()
    monkeypatch.undo()


def test_a_resume_that_ends_while_another_is_between_reading_and_writing_is_the_only_one(
        flavour: Flavour, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for round_ in range(3):
        path, markers, suspension = suspended(flavour, tmp_path, f"run{round_}")
        outcomes: dict[str, Any] = {}

        def attempt(name: str) -> None:
            try:
                outcomes[name] = approve(flavour, suspension, path, markers)[1][-1].text
            except AlreadyResumed as exc:
                outcomes[name] = exc

        race(monkeypatch, attempt)
        assert sorted(type(o).__name__ for o in outcomes.values()) == ["AlreadyResumed", "str"], outcomes
        assert once.executions(markers) == ["c1"]
        assert resumed_runs(path) == 1 and replay(path).finished


def script(*args: str) -> list[str]:
    return script_command("once_agent", *args)


def suspended_in_a_process(flavour: Flavour, tmp_path: Path, name: str) -> tuple[Path, Path, Path]:
    suspension, path, markers = tmp_path / f"{name}.json", tmp_path / f"{name}.jsonl", tmp_path / f"{name}-markers"
    markers.mkdir()
    subprocess.run(script("suspend", flavour.name, str(suspension), str(path), str(markers)), check=True,
                   timeout=PROCESS_TIMEOUT, env=script_env())
    return suspension, path, markers


def finished(proc: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=PROCESS_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, err


def test_a_resume_in_another_process_between_reading_and_writing_gives_one_resumed_run(
        flavour: Flavour, tmp_path: Path) -> None:
    for round_ in range(2):
        suspension, path, markers = suspended_in_a_process(flavour, tmp_path, f"run{round_}")
        hold = tmp_path / f"hold{round_}"
        hold.mkdir()
        resume_args = ("resume", flavour.name, str(suspension), str(path), str(markers))
        slow = subprocess.Popen(script(*resume_args, str(hold)), stderr=subprocess.PIPE, text=True, env=script_env())
        try:
            deadline = time.monotonic() + PROCESS_TIMEOUT
            while not (hold / "read").exists():  # the slow one has read the transcript, and waits
                assert slow.poll() is None, slow.communicate()[1]
                assert time.monotonic() < deadline
                time.sleep(0.01)
            fast = subprocess.run(script(*resume_args), capture_output=True, text=True, timeout=PROCESS_TIMEOUT,
                                  env=script_env())
        finally:
            (hold / "go").write_text("go")
        code, err = finished(slow)
        assert sorted([code, fast.returncode]) == [0, 4], (err, fast.stderr)
        refusal = err if code == 4 else fast.stderr
        assert refusal.startswith(f"AlreadyResumed: {path}: ") and "resumed at most once per transcript" in refusal
        assert once.executions(markers) == ["c1"]
        assert resumed_runs(path) == 1 and replay(path).finished


def test_resumes_of_one_suspension_at_once_in_processes_give_one_resumed_run(flavour: Flavour,
                                                                             tmp_path: Path) -> None:
    for round_ in range(2):
        suspension, path, markers = suspended_in_a_process(flavour, tmp_path, f"run{round_}")
        args = script("resume", flavour.name, str(suspension), str(path), str(markers))
        procs = [subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=script_env()) for _ in range(3)]
        outcomes = [finished(p) for p in procs]
        assert sorted(code for code, _ in outcomes) == [0, 4, 4], outcomes
        for code, err in outcomes:
            if code == 4:
                assert err.startswith(f"AlreadyResumed: {path}: ")
        assert once.executions(markers) == ["c1"]
        assert resumed_runs(path) == 1 and replay(path).finished


# ----------------------------------------------------------------------- the call id


def test_the_approved_tool_gets_the_call_id_the_approver_was_shown(flavour: Flavour, tmp_path: Path) -> None:
    path, markers, suspension = suspended(flavour, tmp_path)
    approve(flavour, from_json(to_json(suspension)), path, markers)
    assert once.executions(markers) == [suspension.pending[0].tool_call_id] == ["c1"]


def test_a_tool_run_again_by_a_crash_resume_gets_the_same_call_id(flavour: Flavour, tmp_path: Path) -> None:
    full, markers = tmp_path / "full.jsonl", tmp_path / "markers"
    markers.mkdir()
    context, config, model = once.setup(markers, approval=False)
    flavour.run(once.PROMPT, context, config, model, clock=clock, journal=TranscriptRecorder(full, context, config))
    assert once.executions(markers) == ["c1"]
    # A crash while the tool ran: the transcript ends with the step that asked for it.
    asked = next(e.step for e in read_transcript(full) if any(x["type"] == "execute_tool" for x in e.effects_json))
    cut = fork(full, asked, tmp_path / "cut.jsonl")
    start = resume if not flavour.is_async else aresume
    _, messages = flavour.collect(lambda: start(cut, config, context.tools, stream_fn=model, clock=clock))
    assert messages[-1].text == "Done: deleted old.log"
    assert once.executions(markers) == ["c1", "c1"]  # run again (at least once), with the same id
    assert replay(cut).messages == messages


def test_two_crash_resumes_of_one_transcript_run_the_cut_tool_once(flavour: Flavour, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash ``resume`` claims the transcript before it reads it too: a second one, even one
    that read the file before the first one ended, never runs the cut tool again."""
    from interpreters.transcript import TranscriptBusy

    full, markers = tmp_path / "full.jsonl", tmp_path / "markers"
    markers.mkdir()
    context, config, model = once.setup(markers, approval=False)
    flavour.run(once.PROMPT, context, config, model, clock=clock, journal=TranscriptRecorder(full, context, config))
    asked = next(e.step for e in read_transcript(full) if any(x["type"] == "execute_tool" for x in e.effects_json))
    start = resume if not flavour.is_async else aresume
    for round_ in range(3):
        cut = fork(full, asked, tmp_path / f"cut{round_}.jsonl")
        outcomes: dict[str, Any] = {}

        def attempt(name: str, cut: Path = cut) -> None:
            try:
                outcomes[name] = flavour.collect(lambda: start(cut, config, context.tools, stream_fn=model,
                                                               clock=clock))[1]
            except TranscriptBusy as exc:
                outcomes[name] = exc

        race(monkeypatch, attempt)
        assert len(once.executions(markers)) == 2 + round_, outcomes  # the original run's, and one per round
        assert replay(cut).messages[-1].text == "Done: deleted old.log"
        assert read_transcript(cut).resumed_from == (asked,)
