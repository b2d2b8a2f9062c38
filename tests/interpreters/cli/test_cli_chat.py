"""``agentcore chat`` on a pseudo-terminal: steering while the agent works, Ctrl-C, Ctrl-D.

The offline demo model (``--model demo``) plays the LLM; ``AGENTCORE_DEMO_DELAY`` slows its
stream so that there is time to type while it works.
"""

from __future__ import annotations

from pathlib import Path

from interpreters.cli.demo import STEERING

from .cli_helpers import APPROVAL_TOOLS, PtySession, clean_env, run_cli


def chat(*args: str, delay: str = "0.03") -> PtySession:
    return PtySession("chat", "--model", "demo", *args, env=clean_env(AGENTCORE_DEMO_DELAY=delay))


def test_typing_while_the_agent_works_steers_it(tmp_path: Path) -> None:
    record = tmp_path / "chat.jsonl"
    session = chat("--record", str(record))
    try:
        session.expect(r"› ")
        session.send("How long is my trip?\r")
        session.expect(r"think ")  # the first reply is streaming
        session.send(STEERING + "\r")
        session.expect(r"queued: " + STEERING)
        session.expect(r"(?:user\* |user  )" + STEERING)  # delivered as a message of the run
        session.expect(r"30 mi = 48\.2803 km")  # the model saw it and converted the distance
        session.expect(r"The total distance is 168\.3 km")
        session.expect(r"transcript: ")
        session.expect(r"› ")
        session.send("\x04")  # Ctrl-D at the prompt
        session.expect(r"bye")
        assert session.wait() == 0
    finally:
        session.close()
    replayed = run_cli("transcript", "replay", str(record))
    assert replayed.returncode == 0 and "identical" in replayed.stdout


def test_ctrl_c_aborts_the_run_and_twice_exits(tmp_path: Path) -> None:
    record = tmp_path / "chat.jsonl"
    session = chat("--record", str(record), delay="0.05")
    try:
        session.expect(r"› ")
        session.send("How long is my trip?\r")
        session.expect(r"think ")
        session.send("\x03")  # Ctrl-C through the terminal: SIGINT
        session.expect(r"aborting")
        session.expect(r"aborted: Request was aborted")
        session.expect(r"› ")
        # The session goes on: the next prompt runs.
        session.send("And now?\r")
        session.expect(r"── done")
        session.expect(r"› ")
        session.send("\x03")
        session.expect(r"Ctrl-C again")
        session.send("\x03")
        session.expect(r"bye")
        assert session.wait() == 0
    finally:
        session.close()
    first = run_cli("transcript", "show", str(record))
    assert first.returncode == 0 and "aborted" in first.stdout
    assert run_cli("transcript", "replay", str(record)).returncode == 0
    second = record.with_name("chat.2.jsonl")
    assert second.is_file() and run_cli("transcript", "replay", str(second)).returncode == 0


def test_a_tool_that_requires_approval_is_asked_about_and_e_edits_its_arguments(tmp_path: Path) -> None:
    tools, record = tmp_path / "approval_tools.py", tmp_path / "chat.jsonl"
    tools.write_text(APPROVAL_TOOLS)
    session = chat("--tools", f"{tools}:TOOLS", "--record", str(record), delay="0")
    try:
        session.expect(r"› ")
        session.send("How long is my trip?\r")
        session.expect(r'run calculator\(\{"expression": "120 / 80"\}\)\? \[y/N/e\] ')
        session.send("y\r")
        session.expect(r'run calculator\(\{"expression": "30 / 45"\}\)\? \[y/N/e\] ')
        session.send("e\r")
        session.expect(r"arguments \(JSON\): ")
        session.send('{"expression": "30 / 60"}\r')
        session.expect(r"30 / 60 = 0\.5")
        session.expect(r"The total distance is")
        session.expect(r"transcript: ")
        session.expect(r"› ")
        session.send("\x04")
        session.expect(r"bye")
        assert session.wait() == 0
    finally:
        session.close()
    replayed = run_cli("transcript", "replay", str(record))
    assert replayed.returncode == 0 and "identical" in replayed.stdout
    shown = run_cli("transcript", "show", str(record))
    assert shown.returncode == 0 and "approved" in shown.stdout, shown.stdout


def test_approve_all_runs_them_without_asking(tmp_path: Path) -> None:
    tools = tmp_path / "approval_tools.py"
    tools.write_text(APPROVAL_TOOLS)
    proc = run_cli("run", "How long is my trip?", "--model", "demo", "--tools", f"{tools}:TOOLS", "--approve-all",
                   env=clean_env(AGENTCORE_DEMO_DELAY="0"))
    assert proc.returncode == 0 and "The trip takes" in proc.stdout and "[y/N/e]" not in proc.stdout
    asked = run_cli("run", "How long is my trip?", "--model", "demo", "--tools", f"{tools}:TOOLS",
                    env=clean_env(AGENTCORE_DEMO_DELAY="0"))
    assert asked.returncode == 3 and "── suspended: 2 tool calls wait for a decision" in asked.stdout


def test_max_cost_is_a_budget_of_the_run() -> None:
    bad = run_cli("run", "x", "--model", "demo", "--max-cost", "0")
    assert bad.returncode == 2 and "expected an amount in US dollars above 0, got '0'" in bad.stderr
