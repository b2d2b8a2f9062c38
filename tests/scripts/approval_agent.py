"""An agent whose tool calls wait for decisions, run in a process of its own (used by
tests/interpreters/test_suspend_transcript.py).

    python -m tests.scripts.approval_agent suspend FLAVOUR SUSPENSION TRANSCRIPT
    python -m tests.scripts.approval_agent resume FLAVOUR SUSPENSION TRANSCRIPT DECISIONS OUT

``suspend`` runs the prompt until the run suspends, recording TRANSCRIPT, and writes the
suspension's JSON to SUSPENSION. ``resume`` reads it back, reads the decisions (a JSON object:
tool call id → the JSON of a decision) from DECISIONS, resumes the run (recording on at the end
of TRANSCRIPT) and writes the run's new messages and the resumed events, as JSON, to OUT; it
exits with status 3 when the run suspends again. FLAVOUR is ``sync`` or ``asyncio``.

The model is a function of the context, so that every process plays the same conversation:
``setup`` is imported by the test for the uninterrupted run it compares with.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Model
from agentcore.codec import from_json, to_json
from interpreters import ScriptedModel, tool
from interpreters.streams.scripted import Reply, ScriptedCall
from interpreters.transcript import TranscriptRecorder
from tests.support.clocks import clock
from tests.support.flavours import ASYNCIO, SYNC

PROMPT = "Tidy up: delete old.log, and ask me which folder to archive."


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool
def disk_usage() -> str:
    """How full the disk is."""
    return "71% used"


@tool(deferred=True)
def ask_user(question: str) -> str:
    """Ask the user; the answer comes later."""
    raise AssertionError("never executed")


def reply(context: Any, n: int) -> Reply | str:
    results = [m for m in context.messages if m.role == "toolResult"]
    if not results:
        return Reply(text="Let me look.", tool_calls=[
            ScriptedCall("disk_usage", {}, "c1"), ScriptedCall("delete", {"path": "old.log"}, "c2"),
            ScriptedCall("ask_user", {"question": "Which folder?"}, "c3")])
    if len(results) == 3:
        return Reply(tool_calls=[ScriptedCall("delete", {"path": "archive.tmp"}, "c4")])
    return "Done: " + "; ".join(m.content[0].text for m in results)


def setup() -> tuple[AgentContext, AgentLoopConfig, ScriptedModel]:
    context = AgentContext("You tidy up.", (), [delete, disk_usage, ask_user])
    return context, AgentLoopConfig(model=Model(id="tidy")), ScriptedModel(reply, clock=clock)


def main(argv: list[str]) -> int:
    mode, flavour_name, suspension_path, transcript = argv[:4]
    flavour = SYNC if flavour_name == "sync" else ASYNCIO
    context, config, model = setup()
    if mode == "suspend":
        journal = TranscriptRecorder(transcript, context, config)
        _, _, suspension = flavour.start_suspending(PROMPT, context, config, model, clock=clock, journal=journal)
        Path(suspension_path).write_text(json.dumps(to_json(suspension)))
        return 0
    decisions_path, out = argv[4:6]
    suspension = from_json(json.loads(Path(suspension_path).read_text()))
    decisions = {k: from_json(v) for k, v in json.loads(Path(decisions_path).read_text()).items()}
    events, messages, again = flavour.resume(suspension, decisions, context, config, model, clock=clock,
                                             transcript=transcript)
    Path(out).write_text(json.dumps({"messages": to_json(messages), "events": to_json(events)}))
    if again is not None:
        Path(suspension_path).write_text(json.dumps(to_json(again)))
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
