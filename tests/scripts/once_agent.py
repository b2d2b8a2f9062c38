"""An agent whose one tool call waits for an approval, run in processes of its own (used by
tests/interpreters/test_resume_once.py and test_recorder_exclusive.py).

    python -m tests.scripts.once_agent suspend FLAVOUR SUSPENSION TRANSCRIPT MARKERS
    python -m tests.scripts.once_agent resume FLAVOUR SUSPENSION TRANSCRIPT MARKERS [HOLD]
    python -m tests.scripts.once_agent record FLAVOUR TRANSCRIPT MARKERS HOLD

Each execution of the tool ``delete`` writes a file ``exec-<tool call id>-<uuid>`` into MARKERS.

``suspend`` runs the prompt until the run suspends on the call ``c1``, recording TRANSCRIPT, and
writes the suspension's JSON to SUSPENSION. ``resume`` approves ``c1`` and resumes the run with
``transcript=TRANSCRIPT``: it exits 0 when its run ended, 4 when the resume was refused with a
``TranscriptError`` (its message on stderr). With HOLD (a directory), the process pauses right
after it read the transcript: it writes ``HOLD/read`` and waits until ``HOLD/go`` exists (the
window between reading a transcript and writing to it, forced).

``record`` runs a fresh recorded run whose tool reads the transcript being written (as a
progress viewer would), then writes ``HOLD/in-tool`` and waits until ``HOLD/go`` exists.
FLAVOUR is ``sync`` or ``asyncio``.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Approve, Model
from agentcore.codec import from_json, to_json
from interpreters import ScriptedModel, ToolContext, tool
from interpreters.streams.scripted import Reply, ScriptedCall
from interpreters.transcript import TranscriptError, TranscriptRecorder
from tests.support.clocks import clock
from tests.support.flavours import ASYNCIO, SYNC

PROMPT = "Delete old.log."
WAIT_LIMIT = 30.0


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT_LIMIT
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{path} never appeared")
        time.sleep(0.005)


def reply(context: Any, n: int) -> Reply | str:
    if context.messages[-1].role == "toolResult":
        return "Done: " + context.messages[-1].content[0].text
    return Reply(tool_calls=[ScriptedCall("delete", {"path": "old.log"}, "c1")])


def setup(markers: Path, before: Callable[[], None] = lambda: None,
          approval: bool = True) -> tuple[AgentContext, AgentLoopConfig, ScriptedModel]:
    """The scenario: ``before`` runs at the start of each execution of the tool."""

    @tool(requires_approval=approval)
    def delete(path: str, ctx: ToolContext) -> str:
        """Delete a file."""
        before()
        (markers / f"exec-{ctx.tool_call_id}-{uuid.uuid4().hex}").write_text(str(os.getpid()))
        return f"deleted {path}"

    context = AgentContext("You tidy up.", (), [delete])
    return context, AgentLoopConfig(model=Model(id="tidy")), ScriptedModel(reply, clock=clock)


def executions(markers: Path) -> list[str]:
    """The tool call ids of the tool's executions so far."""
    return sorted(p.name.split("-")[1] for p in markers.glob("exec-*"))


def pause_after_reading(hold: Path) -> None:
    """Make this process pause right after it read a transcript to go on with it."""
    import interpreters.replay.recovery as resuming

    for name in ("read_transcript", "parse_transcript"):
        original = getattr(resuming, name, None)
        if original is None:
            continue

        def paused(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
            value = __original(*args, **kwargs)
            (hold / "read").write_text(str(os.getpid()))
            wait_for(hold / "go")
            return value

        setattr(resuming, name, functools.wraps(original)(paused))


def main(argv: list[str]) -> int:
    mode, flavour_name = argv[:2]
    flavour = SYNC if flavour_name == "sync" else ASYNCIO
    if mode == "record":
        transcript, markers, hold = Path(argv[2]), Path(argv[3]), Path(argv[4])

        def viewing() -> None:
            transcript.read_bytes()  # a look at the transcript while its run goes on
            (hold / "in-tool").write_text(str(os.getpid()))
            wait_for(hold / "go")

        context, config, model = setup(markers, viewing, approval=False)
        flavour.run(PROMPT, context, config, model, clock=clock,
                    journal=TranscriptRecorder(transcript, context, config))
        return 0
    suspension_path, transcript, markers = Path(argv[2]), Path(argv[3]), Path(argv[4])
    context, config, model = setup(markers)
    if mode == "suspend":
        journal = TranscriptRecorder(transcript, context, config)
        _, _, suspension = flavour.start_suspending(PROMPT, context, config, model, clock=clock, journal=journal)
        suspension_path.write_text(json.dumps(to_json(suspension)))
        return 0
    if len(argv) > 5:
        pause_after_reading(Path(argv[5]))
    suspension = from_json(json.loads(suspension_path.read_text()))
    try:
        _, _, again = flavour.resume(suspension, {"c1": Approve()}, context, config, model, clock=clock,
                                     transcript=transcript)
    except TranscriptError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 4
    assert again is None
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
