"""The command with runs that suspend (tool calls that wait for an approval or a result).

A suspended run is not a success: ``run``, ``chat`` and ``transcript resume`` exit with 3 and
name each waiting call (id, tool, arguments) and what can decide it; ``chat`` ends cleanly when
its input ends while it asks about a call, deciding nothing; the live display shows a waiting
call as waiting, not as running. Every subprocess is bounded in time, so a hang fails the test.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import tool
from interpreters.render import PlainRenderer, RichRenderer
from interpreters.replay import replay
from tests.support.clocks import clock
from tests.support.flavours import Flavour
from tests.support.suspending import calls, model

from .cli_helpers import COMMAND, PtySession, demo_env, run_cli

PROMPT = "How long is my trip?"
WAITING = [
    '  call_1 calculator {"expression": "120 / 80"} waits for an approval (Tool "calculator" requires approval)',
    '  call_2 calculator {"expression": "30 / 45"} waits for an approval (Tool "calculator" requires approval)',
]
SUSPENDED = "agentcore: the run is suspended: 2 tool calls wait for a decision; none was approved or denied:"


def how_to_decide(path: Path, tools: str, options: str = "--approve call_1 --approve call_2",
                 decisions: str = '{"call_1": Approve(), "call_2": Approve()}') -> list[str]:
    """What the report says about deciding the calls of the run ``path`` ends with."""
    name = json.dumps(str(path))
    return [
        f"agentcore: {path} ends at this suspension; decide its calls with:",
        f"  agentcore transcript resume {path} --tools {tools} {options}",
        "  (per call: --approve ID, or --approve 'ID={...}' to run it with other arguments (JSON); --deny ID[:REASON]; "
        "--output ID=TEXT, the result of a call that waits for one; or --approve-all, --deny-all[=REASON] for every "
        "call; without any of these, on a terminal, it asks about each call)",
        "agentcore: or from Python (docs/approvals.md), with the run's config and tools:",
        f"  resume_suspended(resume({name}, config, tools).suspension, {decisions}, "
        f"context=AgentContext(tools=tools), config=config, transcript={name})",
        "  (from interpreters; per call Approve(), Approve(arguments={...}) or Deny(reason) for an approval, "
        "ToolOutput(result) or Deny(reason) for a result)",
    ]


def piped_chat(stdin: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """``agentcore chat --model demo ARGS`` with ``stdin`` piped in (its end is the end of input);
    a chat that hangs fails the test at ``timeout``."""
    return subprocess.run([*COMMAND, "chat", "--model", "demo", *args], input=stdin, capture_output=True,
                          text=True, env=demo_env(), timeout=timeout)


def suspended_at_the_end(path: Path) -> list[str]:
    """The ids of the calls the transcript's run waits on at its end (it replays strictly)."""
    result = replay(path)
    assert not result.finished
    return [p.tool_call_id for p in result.state.phase.pending]


# --------------------------------------------------------------------------- chat: end of input


def test_chat_input_that_ends_at_the_approval_question_leaves_the_run_suspended(approval_tools: str,
                                                                                tmp_path: Path) -> None:
    record = tmp_path / "chat.jsonl"
    proc = piped_chat(PROMPT + "\n", "--tools", approval_tools, "--record", str(record))
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    out = proc.stdout.splitlines()
    assert 'run calculator({"expression": "120 / 80"})? [y/N/e] ' in out
    assert "(end of input: nothing was decided; the run stays suspended)" in out
    assert out[-1] == "bye"
    assert "denied" not in proc.stdout and "did not approve" not in proc.stdout
    assert proc.stderr.splitlines() == [SUSPENDED, *WAITING, *how_to_decide(record, approval_tools)]
    assert suspended_at_the_end(record) == ["call_1", "call_2"]  # nothing was decided, nothing ran
    shown = run_cli("transcript", "show", str(record))
    assert shown.returncode == 0 and "(suspended)" in shown.stdout and "approved" not in shown.stdout


def test_chat_input_that_ends_at_the_result_question_of_a_deferred_call(deferred_tools: str) -> None:
    proc = piped_chat(PROMPT + "\n", "--tools", deferred_tools)
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert 'result of calculator({"expression": "120 / 80"})? (empty: deny) ' in proc.stdout.splitlines()
    assert proc.stderr.splitlines() == [
        "agentcore: the run is suspended: 2 tool calls wait for a decision; none was approved or denied:",
        '  call_1 calculator {"expression": "120 / 80"} waits for its result (Tool "calculator" is deferred: '
        'its result comes from outside the run)',
        '  call_2 calculator {"expression": "30 / 45"} waits for its result (Tool "calculator" is deferred: '
        'its result comes from outside the run)',
        "agentcore: the session was not recorded, so nothing can decide these calls after it ends "
        "(--record FILE keeps a suspended run, to decide it later with 'agentcore transcript resume FILE')",
    ]


def test_chat_ctrl_d_at_the_arguments_question_decides_nothing(approval_tools: str, tmp_path: Path) -> None:
    record = tmp_path / "chat.jsonl"
    session = PtySession("chat", "--model", "demo", "--tools", approval_tools, "--record", str(record),
                         env=demo_env())
    try:
        session.expect(r"› ")
        session.send(PROMPT + "\r")
        session.expect(r'run calculator\(\{"expression": "120 / 80"\}\)\? \[y/N/e\] ')
        session.send("y\r")  # answered, but a run goes on only with a decision for every call
        session.expect(r'run calculator\(\{"expression": "30 / 45"\}\)\? \[y/N/e\] ')
        session.send("e\r")
        session.expect(r"arguments \(JSON\): ")
        session.send("\x04")  # Ctrl-D: the end of input
        session.expect(r"none was approved or denied:")
        session.expect(r'call_1 calculator \{"expression": "120 / 80"\} waits for an approval \(Tool "calculator" '
                       r'requires approval\); answered: approved, not applied \(a run goes on only with a '
                       r'decision for every call\)')
        session.expect(r'call_2 calculator \{"expression": "30 / 45"\} waits for an approval')
        session.expect(re.escape(f"agentcore: {record} ends at this suspension; decide its calls with:"))
        session.expect(r"bye")
        assert session.wait() == 3
    finally:
        session.close()
    assert "calculator →" not in session.text  # no tool ran
    assert suspended_at_the_end(record) == ["call_1", "call_2"]


def test_chat_end_of_input_at_the_prompt_ends_cleanly(tmp_path: Path) -> None:
    empty = piped_chat("")
    assert empty.returncode == 0 and empty.stdout.splitlines()[-1] == "bye" and empty.stderr == ""
    record = tmp_path / "chat.jsonl"
    ran = piped_chat(PROMPT + "\n", "--record", str(record))
    assert ran.returncode == 0, ran.stderr
    assert "The trip takes" in ran.stdout and ran.stdout.splitlines()[-1] == "bye" and ran.stderr == ""
    assert replay(record).finished


def test_chat_takes_piped_lines_in_turn_answers_included(approval_tools: str, tmp_path: Path) -> None:
    """Piped input is read a line at a time, when the session needs one: a prompt once the run
    before it has ended, an answer once a question is asked (not a steering message)."""
    record = tmp_path / "chat.jsonl"
    proc = piped_chat(f"{PROMPT}\ny\nn\n", "--tools", approval_tools, "--record", str(record))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert proc.stderr == ""
    out = proc.stdout.splitlines()
    assert 'run calculator({"expression": "120 / 80"})? [y/N/e] ' in out
    assert 'run calculator({"expression": "30 / 45"})? [y/N/e] ' in out
    assert "      ✓ calculator → 120 / 80 = 1.5" in out
    assert "      ✗ calculator → the user did not approve the call" in out
    assert "queued:" not in proc.stdout and out[-1] == "bye"
    assert replay(record).finished
    shown = run_cli("transcript", "show", str(record)).stdout.splitlines()
    assert "      waited │ approved" in shown
    assert "      waited │ denied: the user did not approve the call" in shown


def test_chat_piped_answers_that_end_before_the_last_question_decide_nothing(approval_tools: str,
                                                                            tmp_path: Path) -> None:
    record = tmp_path / "chat.jsonl"
    proc = piped_chat(f"{PROMPT}\ne\n{{\"expression\": \"2 * 3\"}}\n", "--tools", approval_tools, "--record",
                      str(record))
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert proc.stderr.splitlines()[1] == (
        '  call_1 calculator {"expression": "120 / 80"} waits for an approval (Tool "calculator" requires approval); '
        'answered: approved with arguments {"expression": "2 * 3"}, not applied (a run goes on only with a decision '
        'for every call)')
    assert suspended_at_the_end(record) == ["call_1", "call_2"]


def test_chat_piped_lines_after_a_run_start_the_next_run(tmp_path: Path) -> None:
    record = tmp_path / "chat.jsonl"
    proc = piped_chat(f"{PROMPT}\nAnd now?\n", "--record", str(record))
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "queued:" not in proc.stdout
    assert replay(record).finished and replay(record.with_name("chat.2.jsonl")).finished
    assert [m.text for m in replay(record.with_name("chat.2.jsonl")).messages if m.role == "user"] == ["And now?"]


# --------------------------------------------------------------------------- run


def test_run_that_suspends_exits_3_naming_the_waiting_calls(approval_tools: str, tmp_path: Path) -> None:
    record = tmp_path / "run.jsonl"
    proc = run_cli("run", PROMPT, "--model", "demo", "--tools", approval_tools, "--record", str(record),
                   env=demo_env())
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    out = proc.stdout.splitlines()
    assert out[-6:-1] == [
        "      ⋯ started calculator(expression='120 / 80')",
        "      ⋯ started calculator(expression='30 / 45')",
        "      ⏸ calculator(expression='120 / 80'): waiting for an approval",
        "      ⏸ calculator(expression='30 / 45'): waiting for an approval",
        "── suspended: 2 tool calls wait for a decision",
    ]
    assert "running" not in proc.stdout
    assert out[-1] == f"Transcript: {record}"
    assert proc.stderr.splitlines() == [SUSPENDED, *WAITING, *how_to_decide(record, approval_tools)]
    assert suspended_at_the_end(record) == ["call_1", "call_2"]


def test_run_that_suspends_unrecorded_and_as_json(approval_tools: str) -> None:
    proc = run_cli("run", PROMPT, "--model", "demo", "--tools", approval_tools, "--json", env=demo_env())
    assert proc.returncode == 3, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]  # stdout stays JSON lines
    assert events[-1]["type"] == "agent_suspended"
    assert [p["tool_call_id"] for p in events[-1]["pending"]] == ["call_1", "call_2"]
    assert proc.stderr.splitlines() == [
        SUSPENDED, *WAITING,
        "agentcore: the run was not recorded, so nothing can decide these calls after this command: record it "
        "(--record FILE) to decide them later with 'agentcore transcript resume FILE', or answer them as they come "
        "in 'agentcore chat'",
    ]


def test_approve_all_is_still_exit_0(approval_tools: str) -> None:
    proc = run_cli("run", PROMPT, "--model", "demo", "--tools", approval_tools, "--approve-all", env=demo_env())
    assert proc.returncode == 0 and proc.stderr == "" and "⏸" not in proc.stdout


# --------------------------------------------------------------------------- transcript resume / replay


def test_transcript_resume_of_a_suspended_run_appends_nothing_and_exits_3(suspended_transcript: Path,
                                                                        approval_tools: str) -> None:
    before = suspended_transcript.read_bytes()
    proc = run_cli("transcript", "resume", str(suspended_transcript), "--tools", approval_tools, env=demo_env())
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert proc.stdout == ""  # no "resuming ...", no "the transcript was appended to"
    assert proc.stderr.splitlines() == [SUSPENDED, *WAITING, *how_to_decide(suspended_transcript, approval_tools)]
    assert suspended_transcript.read_bytes() == before
    as_json = run_cli("transcript", "resume", str(suspended_transcript), "--tools", approval_tools, "--json",
                      env=demo_env())
    assert as_json.returncode == 3 and as_json.stdout == "" and as_json.stderr == proc.stderr
    assert suspended_transcript.read_bytes() == before


def test_transcript_resume_that_goes_on_live_into_a_suspension_exits_3(suspended_transcript: Path,
                                                                      approval_tools: str, tmp_path: Path) -> None:
    """A run cut before its suspension: resumed live, it appends, then suspends again."""
    fork = tmp_path / "fork.jsonl"
    assert run_cli("transcript", "fork", str(suspended_transcript), "--step", "3", "-o", str(fork)).returncode == 0
    proc = run_cli("transcript", "resume", str(fork), "--tools", approval_tools, env=demo_env())
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    out = proc.stdout.splitlines()
    assert out[-2:] == ["── suspended: 2 tool calls wait for a decision",
                        f"Resumed {fork}: the run has 2 new messages; the transcript was appended to."]
    assert proc.stderr.splitlines() == [SUSPENDED, *WAITING, *how_to_decide(fork, approval_tools)]
    assert suspended_at_the_end(fork) == ["call_1", "call_2"]


def test_the_python_route_the_message_gives_decides_the_calls(suspended_transcript: Path,
                                                              approval_tools: str) -> None:
    """What the message says to run, run: the calls are decided and recorded in the same file."""
    from agentcore import Approve, Deny
    from interpreters import resume, resume_suspended
    from interpreters.cli.common import load_tools
    from interpreters.cli.demo import DEMO_MODEL, demo_model

    config, tools = AgentLoopConfig(model=DEMO_MODEL), load_tools(approval_tools)
    stream = resume_suspended(resume(str(suspended_transcript), config, tools).suspension,
                              {"call_1": Approve(), "call_2": Deny("not now")}, context=AgentContext(tools=tools),
                              config=config, stream_fn=demo_model(delay=0), transcript=str(suspended_transcript))
    assert stream.result()[-1].stop_reason == "stop"
    assert replay(suspended_transcript).finished


def test_transcript_resume_of_a_finished_run_says_there_is_nothing_to_resume(demo_copy: Path) -> None:
    before = demo_copy.read_bytes()
    proc = run_cli("transcript", "resume", str(demo_copy))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{demo_copy}: the recorded run had finished: there is nothing to resume; nothing was " \
                          f"appended.\n"
    assert demo_copy.read_bytes() == before


def test_transcript_replay_of_a_suspended_run_says_so(suspended_transcript: Path) -> None:
    proc = run_cli("transcript", "replay", str(suspended_transcript))
    assert proc.returncode == 0
    steps = replay(suspended_transcript).steps
    assert proc.stdout == (f"Replay of {suspended_transcript}: {steps} steps, identical (the recorded run is "
                           f"suspended: 2 tool calls wait for a decision)\n")


def test_transcript_show_and_html_of_a_suspended_run(suspended_transcript: Path, tmp_path: Path) -> None:
    shown = run_cli("transcript", "show", str(suspended_transcript))
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert any(line.startswith("steps:") and line.endswith(" (the run is suspended)") for line in lines)
    assert lines.count("      waited │ waits for an approval: Tool \"calculator\" requires approval") == 2
    assert lines.count("      result │ (none yet: the call waits for a decision)") == 2
    page = tmp_path / "run.html"
    assert run_cli("transcript", "html", str(suspended_transcript), "-o", str(page)).returncode == 0
    html = page.read_text()
    assert html.count("⏸ <span class=\"name\">calculator</span>") == 2
    assert html.count('<span class="preview">waits for an approval</span>') == 2
    assert "no result recorded" not in html


# --------------------------------------------------------------------------- the live display


@tool(requires_approval=True)
def rm(path: str) -> str:
    """Remove a file."""
    return f"removed {path}"


@tool(deferred=True)
def ask(question: str) -> str:
    """Ask a person."""
    raise AssertionError("never called")


@tool
def ls() -> str:
    """List the files."""
    return "a b"


def suspended_events(flavour: Flavour) -> list[Any]:
    ctx = AgentContext("", (), [rm, ask, ls])
    cfg = AgentLoopConfig(model=Model(id="m"))
    reply = calls(("ls", {}, "l1"), ("rm", {"path": "a"}, "r1"), ("ask", {"question": "why?"}, "q1"))
    events, _, suspension = flavour.start_suspending("go", ctx, cfg, model(reply, "Done."), clock=clock)
    assert suspension is not None and events[-1].type == "agent_suspended"
    return events


def test_the_plain_display_shows_waiting_calls_as_waiting(flavour: Flavour) -> None:
    out = io.StringIO()
    render = PlainRenderer(out, color=False)
    for event in suspended_events(flavour):
        render(event)
    lines = out.getvalue().splitlines()
    tail = lines[lines.index("      ⋯ started ls()"):]
    assert tail[:3] == ["      ⋯ started ls()", "      ⋯ started rm(path='a')", "      ⋯ started ask(question='why?')"]
    assert tail[3].startswith("      ✓ ls → a b (") and tail[3].endswith(" ms)")
    assert tail[4:] == [
        "      ⏸ rm(path='a'): waiting for an approval",
        "      ⏸ ask(question='why?'): waiting for its result",
        "── suspended: 2 tool calls wait for a decision",
    ]
    assert "running" not in out.getvalue() and render.tools == {}


def test_the_rich_display_shows_waiting_calls_as_waiting(flavour: Flavour) -> None:
    from rich.console import Console

    out = io.StringIO()
    render = RichRenderer(Console(file=out, width=200, color_system=None, force_terminal=False))
    for event in suspended_events(flavour):
        render(event)
    lines = out.getvalue().splitlines()
    assert lines[-3:] == [
        "      ⏸ rm(path='a'): waiting for an approval",
        "      ⏸ ask(question='why?'): waiting for its result",
        "── suspended: 2 tool calls wait for a decision",
    ]
    assert render.tools == {} and render._live is None  # no spinner left saying they run


def test_a_call_that_waited_shows_no_duration_when_it_ends(flavour: Flavour) -> None:
    """The tool ran after the decision: the time since its start event says nothing of it."""
    from agentcore import Approve, ToolOutput

    ctx = AgentContext("", (), [rm, ask, ls])
    cfg = AgentLoopConfig(model=Model(id="m"))
    m = model(calls(("rm", {"path": "a"}, "r1"), ("ask", {"question": "why?"}, "q1")), "Done.")
    events, _, suspension = flavour.start_suspending("go", ctx, cfg, m, clock=clock)
    more, _, _ = flavour.resume(suspension, {"r1": Approve(), "q1": ToolOutput("because")}, ctx, cfg, m, clock=clock)
    out = io.StringIO()
    render = PlainRenderer(out, color=False)
    for event in events + more:
        render(event)
    lines = out.getvalue().splitlines()
    assert "      ✓ rm → removed a" in lines and "      ✓ ask → because" in lines
