"""``agentcore transcript resume FILE`` decides a recorded suspension: ``--approve ID[=ARGS]``,
``--deny ID[:REASON]``, ``--output ID=TEXT``, ``--approve-all``, ``--deny-all[=REASON]``, or, on
a terminal without any of them, by asking about each waiting call. The resumed run goes on at
the end of the same transcript, which then replays strictly as one run; a suspension is resumed
at most once; incomplete or wrong decisions are refused before anything runs.

Each case runs the real command in a subprocess, bounded in time.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model, UserMessage
from interpreters import ScriptedModel, agent_loop
from interpreters.cli.common import load_tools
from interpreters.cli.demo import DEMO_MODEL, DEMO_SYSTEM_PROMPT, STEERING, demo_model
from interpreters.replay import replay
from interpreters.streams.scripted import tool_call
from interpreters.transcript import TranscriptRecorder

from .cli_helpers import COMMAND, PtySession, demo_env, run_cli

PROMPT = "How long is my trip?"
DECISION_OPTIONS = "(--approve ID, --deny ID[:REASON], --output ID=TEXT, --approve-all, --deny-all[=REASON])"


def resume_cli(path: Path, tools: str, *options: str) -> subprocess.CompletedProcess[str]:
    return run_cli("transcript", "resume", str(path), "--tools", tools, *options, env=demo_env())


def steps(path: Path) -> int:
    return replay(path).steps


def finished_and_replays(path: Path) -> None:
    """The transcript replays strictly, as one run, to its end."""
    strict = run_cli("transcript", "replay", str(path))
    assert strict.returncode == 0, strict.stdout
    assert strict.stdout == f"Replay of {path}: {steps(path)} steps, identical\n"
    assert replay(path).finished


def shown(path: Path) -> list[str]:
    proc = run_cli("transcript", "show", str(path))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


# --------------------------------------------------------------------------- deciding


def test_approve_and_deny_finish_the_run_at_the_end_of_the_same_transcript(suspended_transcript: Path,
                                                                           approval_tools: str) -> None:
    path = suspended_transcript
    at = steps(path)
    proc = resume_cli(path, approval_tools, "--approve", "call_1", "--deny", "call_2:ask me again")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert proc.stderr == ""
    out = proc.stdout.splitlines()
    assert out[0] == f"── resuming {path} after step {at} (turn 1): call_1 approved, call_2 denied: ask me again"
    assert out[1:3] == ["      ✗ calculator → ask me again", "      ✓ calculator → 120 / 80 = 1.5"]
    assert out[-1] == f"Resumed {path}: the run has 5 new messages; the transcript was appended to."
    finished_and_replays(path)
    lines = shown(path)
    assert "      waited │ approved" in lines and "      waited │ denied: ask me again" in lines


def test_approve_with_arguments_runs_the_call_with_them(suspended_transcript: Path, approval_tools: str) -> None:
    proc = resume_cli(suspended_transcript, approval_tools, "--approve", 'call_1={"expression": "2 * 3"}',
                      "--approve", "call_2")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].endswith('(turn 1): call_1 approved with arguments {"expression": "2 * 3"}, call_2 approved')
    assert "      ✓ calculator → 2 * 3 = 6" in out and "      ✓ calculator → 30 / 45 = 0.666667" in out
    finished_and_replays(suspended_transcript)


def test_output_gives_a_deferred_calls_result(deferred_tools: str, tmp_path: Path) -> None:
    path = tmp_path / "deferred.jsonl"
    recorded = run_cli("run", PROMPT, "--model", "demo", "--tools", deferred_tools, "--record", str(path),
                       env=demo_env())
    assert recorded.returncode == 3, recorded.stderr
    proc = resume_cli(path, deferred_tools, "--output", "call_1=120 / 80 = 1.5", "--output", "call_2=30 / 45 = 0.67")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].endswith("(turn 1): call_1 result supplied, call_2 result supplied")
    assert "      ✓ calculator → 120 / 80 = 1.5" in out and "      ✓ calculator → 30 / 45 = 0.67" in out
    finished_and_replays(path)


def test_approve_all_and_deny_all(suspended_transcript: Path, approval_tools: str, tmp_path: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(suspended_transcript.read_bytes())
    approved = resume_cli(suspended_transcript, approval_tools, "--approve-all")
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.splitlines()[0].endswith("(turn 1): call_1 approved, call_2 approved")
    finished_and_replays(suspended_transcript)
    denied = resume_cli(copy, approval_tools, "--approve", "call_2", "--deny-all=not today")
    assert denied.returncode == 0, denied.stderr
    out = denied.stdout.splitlines()
    assert out[0].endswith("(turn 1): call_1 denied: not today, call_2 approved")
    assert "      ✗ calculator → not today" in out
    finished_and_replays(copy)


def test_deny_all_without_a_reason_denies_with_the_default_one(suspended_transcript: Path,
                                                                 approval_tools: str) -> None:
    proc = resume_cli(suspended_transcript, approval_tools, "--deny-all")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].endswith("(turn 1): call_1 denied, call_2 denied")
    assert out.count("      ✗ calculator → Tool call was denied") == 2
    finished_and_replays(suspended_transcript)


def test_json_prints_the_resumed_runs_events_only(suspended_transcript: Path, approval_tools: str) -> None:
    proc = resume_cli(suspended_transcript, approval_tools, "--approve-all", "--json")
    assert proc.returncode == 0 and proc.stderr == ""
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["type"] == "tool_execution_end" and events[-1]["type"] == "agent_end"


def test_a_run_that_suspends_again_exits_3_and_is_decided_again(approval_tools: str, tmp_path: Path) -> None:
    """The model asks for the gated calculator on its second turn too (it was told to convert)."""
    path = tmp_path / "twice.jsonl"
    tools = load_tools(approval_tools)
    context, config = AgentContext(DEMO_SYSTEM_PROMPT, (), tools), AgentLoopConfig(model=DEMO_MODEL)
    recorder = TranscriptRecorder(path, context, config)
    stream = agent_loop([UserMessage(PROMPT, timestamp=1), UserMessage(STEERING, timestamp=2)], context, config,
                        stream_fn=demo_model(), journal=recorder)
    list(stream)
    recorder.close()
    assert stream.suspension is not None
    first = resume_cli(path, approval_tools, "--approve-all")
    assert first.returncode == 3, (first.stdout, first.stderr)
    assert first.stdout.splitlines()[-2:] == [
        "── suspended: 1 tool call waits for a decision",
        f"Resumed {path}: the run has 6 new messages; the transcript was appended to.",
    ]
    assert first.stderr.splitlines()[:3] == [
        "agentcore: the run is suspended: 1 tool call waits for a decision; none was approved or denied:",
        '  call_3 calculator {"expression": "1.5 + 0.666667"} waits for an approval (Tool "calculator" requires '
        'approval)',
        f"agentcore: {path} ends at this suspension; decide its calls with:",
    ]
    assert first.stderr.splitlines()[3] == (f"  agentcore transcript resume {path} --tools {approval_tools} "
                                            f"--approve call_3")
    again = resume_cli(path, approval_tools, "--approve", "call_3")
    assert again.returncode == 0, again.stderr
    assert "The trip takes 2.17 hours" in again.stdout
    finished_and_replays(path)


def test_a_chat_transcript_keeps_its_steering_poll_when_decided(approval_tools: str, tmp_path: Path) -> None:
    """The resumed run goes on with the hooks the run was recorded with, so that it replays."""
    path = tmp_path / "chat.jsonl"
    chat = subprocess.run([*COMMAND, "chat", "--model", "demo", "--tools", approval_tools, "--record", str(path)],
                          input=PROMPT + "\n", capture_output=True, text=True, env=demo_env(), timeout=30)
    assert chat.returncode == 3, chat.stderr
    proc = resume_cli(path, approval_tools, "--approve-all")
    assert proc.returncode == 0, proc.stderr
    finished_and_replays(path)


# --------------------------------------------------------------------------- refused before anything runs


def refused(path: Path, tools: str, *options: str) -> str:
    """The one line of a decision refused: exit 2, nothing written, no tool ran."""
    before = path.read_bytes()
    proc = resume_cli(path, tools, *options)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == "" and path.read_bytes() == before
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_missing_decisions_are_refused_naming_the_calls(suspended_transcript: Path, approval_tools: str) -> None:
    assert refused(suspended_transcript, approval_tools, "--approve", "call_1") == (
        'agentcore: no decision for call_2 (calculator {"expression": "30 / 45"}, waits for an approval): a run '
        f"goes on only with a decision for every waiting call {DECISION_OPTIONS}; nothing was run")


def test_approve_all_leaves_a_deferred_call_undecided(deferred_tools: str, tmp_path: Path) -> None:
    path = tmp_path / "deferred.jsonl"
    assert run_cli("run", PROMPT, "--model", "demo", "--tools", deferred_tools, "--record", str(path),
                   env=demo_env()).returncode == 3
    assert refused(path, deferred_tools, "--approve-all", "--output", "call_2=0.67") == (
        'agentcore: no decision for call_1 (calculator {"expression": "120 / 80"}, waits for its result): a run '
        f"goes on only with a decision for every waiting call {DECISION_OPTIONS}; nothing was run")
    assert refused(path, deferred_tools, "--approve", "call_1", "--output", "call_2=0.67") == (
        "agentcore: --approve call_1: call_1 (calculator) waits for its result, not an approval: give it with "
        "--output call_1=TEXT, or --deny call_1[:REASON]")
    assert refused(path, deferred_tools, "--output", "call_1", "--output", "call_2=0.67") == (
        "agentcore: --output call_1: give the result after an equals sign: --output call_1=TEXT")


@pytest.mark.parametrize(("options", "line"), [
    (["--approve", "call_9", "--approve-all"],
     "--approve call_9: no waiting call has the id call_9 (the run waits on call_1, call_2)"),
    (["--deny", "call_9:no", "--approve-all"],
     "--deny call_9:no: no waiting call has the id call_9 (the run waits on call_1, call_2)"),
    (["--approve", "call_1", "--deny", "call_1", "--approve", "call_2"],
     "more than one decision for call_1 (--approve call_1, --deny call_1): give one"),
    (["--approve", "call_1={x", "--approve", "call_2"],
     "--approve call_1={x: the arguments are not JSON (Expecting property name enclosed in double quotes: line 1 "
     "column 2 (char 1)): give them as a JSON object, e.g. --approve 'call_1={\"expression\": \"120 / 80\"}'"),
    (["--approve", "call_1=[1]", "--approve", "call_2"],
     "--approve call_1=[1]: the arguments are a JSON array, not an object: give them as a JSON object, e.g. "
     "--approve 'call_1={\"expression\": \"120 / 80\"}'"),
    (["--output", "call_1=1.5", "--approve", "call_2"],
     "--output call_1=1.5: call_1 (calculator) waits for an approval, not a result: --approve call_1, or "
     "--deny call_1[:REASON]"),
    (["--approve-all", "--deny-all"],
     "--approve-all and --deny-all: give one of them (and --approve, --deny or --output for the calls to decide "
     "otherwise)"),
    (["--approve-all", "--max-turns", "1"],
     "--max-turns 1: a suspended run goes on with the limits it was recorded with (no --max-turns), so that its "
     "transcript replays as one run; leave --max-turns out"),
])
def test_wrong_decisions_are_refused(suspended_transcript: Path, approval_tools: str, options: list[str],
                                     line: str) -> None:
    assert refused(suspended_transcript, approval_tools, *options) == f"agentcore: {line}"


def test_decisions_for_a_run_that_is_not_suspended_are_refused(demo_copy: Path, suspended_transcript: Path,
                                                               approval_tools: str, tmp_path: Path) -> None:
    assert refused(demo_copy, "interpreters.cli.demo", "--approve", "call_1") == (
        f"agentcore: {demo_copy}: the recorded run is not suspended (it finished): there is no tool call to decide; "
        f"leave out --approve, --deny, --output, --approve-all and --deny-all")
    fork = tmp_path / "fork.jsonl"
    assert run_cli("transcript", "fork", str(suspended_transcript), "--step", "3", "-o", str(fork)).returncode == 0
    assert refused(fork, approval_tools, "--approve-all") == (
        f"agentcore: {fork}: the recorded run is not suspended (it stopped before its end): there is no tool call to "
        f"decide; leave out --approve, --deny, --output, --approve-all and --deny-all")


@pytest.mark.parametrize("options", [["--approve-all"], ["--deny-all"], ["--deny-all=no"], []])
def test_a_finished_run_has_nothing_to_decide_whatever_model_recorded_it(options: list[str], demo_copy: Path,
                                                                        tmp_path: Path) -> None:
    """Deciding every waiting call of a run that waits for none is not a mistake: the command says
    the run had finished, appends nothing and exits with the run's code, even when the run was
    recorded with a model the command line cannot go on with (a scripted one)."""
    scripted = tmp_path / "scripted.jsonl"
    context, config = AgentContext(), AgentLoopConfig(model=Model(id="my-script"))
    agent_loop("hi", context, config, stream_fn=ScriptedModel(["hello"]),
               journal=TranscriptRecorder(scripted, context, config)).result()
    for path in (demo_copy, scripted):
        before = path.read_bytes()
        proc = run_cli("transcript", "resume", str(path), *options, env=demo_env())
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            0, f"{path}: the recorded run had finished: there is nothing to resume; nothing was appended.\n", "")
        assert path.read_bytes() == before


def test_a_run_a_scripted_model_recorded_that_is_suspended_still_needs_a_model(tmp_path: Path) -> None:
    from interpreters import tool

    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return path

    path = tmp_path / "scripted.jsonl"
    context, config = AgentContext(tools=[delete]), AgentLoopConfig(model=Model(id="my-script"))
    agent_loop("hi", context, config, stream_fn=ScriptedModel([tool_call("delete", {"path": "a"}, "c1"), "ok"]),
               journal=TranscriptRecorder(path, context, config)).result()
    proc = run_cli("transcript", "resume", str(path), "--approve-all", env=demo_env())
    assert (proc.returncode, proc.stderr) == (
        2, f"agentcore: {path} was recorded with a scripted model (my-script); pass --model PROVIDER/MODEL to go on "
           "with a real one\n")


# --------------------------------------------------------------------------- at most once


def already_resumed(path: Path, at: int) -> str:
    return (f"agentcore: {path}: this suspension (step {at}) was already resumed at step {at + 1} (call_1 approved, "
            f"call_2 denied); a suspension is resumed at most once per transcript")


def test_a_second_attempt_is_refused_in_one_line(suspended_transcript: Path, approval_tools: str) -> None:
    path = suspended_transcript
    at = steps(path)
    options = ["--approve", "call_1", "--deny", "call_2"]
    assert resume_cli(path, approval_tools, *options).returncode == 0
    after = path.read_bytes()
    for again in (options, ["--approve-all"]):
        proc = resume_cli(path, approval_tools, *again)
        assert proc.returncode == 1, (proc.stdout, proc.stderr)
        assert proc.stdout == "" and proc.stderr.splitlines() == [already_resumed(path, at)]
        assert path.read_bytes() == after
    finished_and_replays(path)


def test_a_second_attempt_after_the_resumed_run_stopped_says_how_to_go_on(suspended_transcript: Path,
                                                                         approval_tools: str) -> None:
    path = suspended_transcript
    at = steps(path)
    assert resume_cli(path, approval_tools, "--approve", "call_1", "--deny", "call_2").returncode == 0
    lines = path.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if json.loads(line).get("step") == at + 2)
    path.write_text("".join(lines[:cut]))  # the resumed run stopped after its first step (a crash)
    proc = resume_cli(path, approval_tools, "--approve", "call_1", "--deny", "call_2")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        f"{already_resumed(path, at)}; the resumed run stopped before its end: 'agentcore transcript resume {path}' "
        f"without decisions goes on with it"]
    going_on = resume_cli(path, approval_tools)
    assert going_on.returncode == 0, going_on.stderr
    finished_and_replays(path)


SLOW_TOOLS = '''
import time
from pathlib import Path

from interpreters import tool
from interpreters.cli.demo import convert_units

HERE = Path(__file__).parent


@tool(requires_approval=True)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression; each run is logged; it returns once the file go exists."""
    with (HERE / "ran.log").open("a") as log:
        log.write(expression + "\\n")
    deadline = time.monotonic() + 30
    while not (HERE / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return f"{expression} = {eval(expression, {'__builtins__': {}}):g}"


TOOLS = [calculator, convert_units]
'''


def test_a_second_process_deciding_while_the_first_runs_is_refused(tmp_path: Path) -> None:
    """Two processes decide the same suspension: the second comes while the first runs the
    approved tool (held there until the second has ended). The tool runs once."""
    module = tmp_path / "slow_tools.py"
    module.write_text(SLOW_TOOLS)
    tools = f"{module}:TOOLS"
    path = tmp_path / "run.jsonl"
    assert run_cli("run", PROMPT, "--model", "demo", "--tools", tools, "--record", str(path),
                   env=demo_env()).returncode == 3
    at = steps(path)
    options = ["--approve", "call_1", "--deny", "call_2"]
    first = subprocess.Popen([*COMMAND, "transcript", "resume", str(path), "--tools", tools, *options],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=demo_env())
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "ran.log").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (tmp_path / "ran.log").exists(), "the first process never ran the tool"
        second = resume_cli(path, tools, *options)
        (tmp_path / "go").touch()
        out, err = first.communicate(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert second.returncode == 1 and second.stdout == ""
    assert second.stderr.splitlines() == [f"{already_resumed(path, at)} (by another process, still writing it)"]
    assert first.returncode == 0, err
    assert (tmp_path / "ran.log").read_text() == "120 / 80\n"
    finished_and_replays(path)


def test_processes_deciding_at_once_run_the_tool_once(tmp_path: Path) -> None:
    module = tmp_path / "slow_tools.py"
    module.write_text(SLOW_TOOLS)
    (tmp_path / "go").touch()  # the tool does not wait
    tools = f"{module}:TOOLS"
    for attempt in range(3):
        path = tmp_path / f"run{attempt}.jsonl"
        (tmp_path / "ran.log").unlink(missing_ok=True)
        assert run_cli("run", PROMPT, "--model", "demo", "--tools", tools, "--record", str(path),
                       env=demo_env()).returncode == 3
        procs = [subprocess.Popen([*COMMAND, "transcript", "resume", str(path), "--tools", tools, "--approve-all"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=demo_env())
                 for _ in range(2)]
        results = [(p.wait(timeout=60), p.communicate(timeout=5)[1]) for p in procs]
        assert sorted(code for code, _ in results) == [0, 1], results
        loser = next(err for code, err in results if code == 1).splitlines()
        assert loser[-1].startswith(f"agentcore: {path}: ") and "resumed at most once per transcript" in loser[-1]
        assert sorted((tmp_path / "ran.log").read_text().splitlines()) == ["120 / 80", "30 / 45"]
        finished_and_replays(path)


# --------------------------------------------------------------------------- asking on a terminal


def session(path: Path, tools: str) -> PtySession:
    return PtySession("transcript", "resume", str(path), "--tools", tools, env=demo_env())


def test_on_a_terminal_it_asks_about_each_call(suspended_transcript: Path, approval_tools: str) -> None:
    s = session(suspended_transcript, approval_tools)
    try:
        s.expect(re.escape(f"{suspended_transcript}: the run is suspended: 2 tool calls wait for a decision"))
        s.expect(r'run calculator\(\{"expression": "120 / 80"\}\)\? \[y/N/e\] ')
        s.send("e\r")
        s.expect(r"arguments \(JSON\): ")
        s.send('{"expression": "2 * 3"}\r')
        s.expect(r'run calculator\(\{"expression": "30 / 45"\}\)\? \[y/N/e\] ')
        s.send("maybe\r")
        s.expect(r"answer y, n or e")
        s.expect(r'run calculator\(\{"expression": "30 / 45"\}\)\? \[y/N/e\] ')
        s.send("n\r")
        s.expect(r'call_1 approved with arguments \{"expression": "2 \* 3"\}, call_2 denied: the user did not '
                 r'approve the call')
        s.expect(r"2 \* 3 = 6")
        s.expect(re.escape(f"Resumed {suspended_transcript}: the run has 5 new messages; the transcript was "
                           f"appended to."))
        assert s.wait() == 0
    finally:
        s.close()
    finished_and_replays(suspended_transcript)


def test_end_of_input_at_a_question_decides_nothing(suspended_transcript: Path, approval_tools: str) -> None:
    before = suspended_transcript.read_bytes()
    s = session(suspended_transcript, approval_tools)
    try:
        s.expect(r'run calculator\(\{"expression": "120 / 80"\}\)\? \[y/N/e\] ')
        s.send("y\r")
        s.expect(r'run calculator\(\{"expression": "30 / 45"\}\)\? \[y/N/e\] ')
        s.send("\x04")  # Ctrl-D
        s.expect(re.escape("(end of input: nothing was decided; the run stays suspended)"))
        s.expect(r"none was approved or denied:")
        s.expect(r"call_1 calculator .* answered: approved, not applied")
        s.expect(re.escape(f"agentcore: {suspended_transcript} ends at this suspension; decide its calls with:"))
        assert s.wait() == 3
    finally:
        s.close()
    assert suspended_transcript.read_bytes() == before
