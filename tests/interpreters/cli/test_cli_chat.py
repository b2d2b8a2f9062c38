"""``agentcore chat`` on a pseudo-terminal: steering while the agent works, Ctrl-C, Ctrl-D.

The offline demo model (``--model demo``) plays the LLM; ``AGENTCORE_DEMO_DELAY`` slows its
stream so that there is time to type while it works.
"""

from __future__ import annotations

from pathlib import Path

from .cli_helpers import PtySession, clean_env, run_cli

from interpreters.demo import STEERING


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
