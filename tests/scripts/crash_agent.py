"""A recorded agent run that can be killed at a chosen point (used by tests/interpreters/test_resume.py).

    python -m tests.scripts.crash_agent TRANSCRIPT MARKER_DIR MODE

MODE ``tool``: the run stops (sleeps) inside tool call ``b`` of a parallel batch, after tool
call ``a`` has finished and been recorded. MODE ``stream``: the run stops in the middle of the
final reply's stream. MODE ``none``: runs to the end. When the kill point is reached the script
writes ``MARKER_DIR/reached``; the test then kills it with SIGKILL.

The same scenario (``setup``) is imported by the test to resume the run and to compare it with
an uninterrupted one. Every tool execution writes a file ``exec-<name>-<n>`` in MARKER_DIR.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, tool
from interpreters.streams.scripted import Reply, ScriptedCall
from tests.support.clocks import clock
from tests.support.flavours import SYNC

REPLIES = [
    Reply(text="Let me look.", tool_calls=[ScriptedCall("work", {"name": "a"}, "c1"),
                                            ScriptedCall("work", {"name": "b"}, "c2")]),
    Reply(tool_calls=[ScriptedCall("work", {"name": "c"}, "c3")]),
    Reply(text="All done: a, b and c worked. " * 4),
]


def setup(marker_dir: Path, crash: str = "none", transcript: Path | None = None) -> tuple[Any, ...]:
    """(context, config, tools, stream_fn) of the scenario."""

    @tool
    def work(name: str) -> str:
        """Do some work."""
        (marker_dir / f"exec-{name}-{uuid.uuid4().hex}").write_text(str(os.getpid()))
        if crash == "tool" and name == "b":
            # Wait until a's result is in the transcript, then stop here.
            while transcript is not None and '"tool_finished"' not in transcript.read_text():
                time.sleep(0.01)
            (marker_dir / "reached").write_text("tool")
            time.sleep(60)
        return f"{name} worked"

    scripted = ScriptedModel(lambda ctx, i: REPLIES[sum(1 for m in ctx.messages if m.role == "assistant")],
                             chunk_size=6)

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        final = sum(1 for m in context.messages if m.role == "assistant") == len(REPLIES) - 1
        for i, event in enumerate(scripted(model, context, options)):
            yield event
            if crash == "stream" and final and i == 4:
                (marker_dir / "reached").write_text("stream")
                time.sleep(60)

    context = AgentContext("You are a worker.", [], [work])
    config = AgentLoopConfig(model=Model(id="worker-1"), api_key="sk-ant-api03-" + "x" * 40)
    return context, config, [work], stream_fn


def main() -> None:
    transcript, marker_dir, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    context, config, _tools, stream_fn = setup(marker_dir, mode, transcript)
    SYNC.record(transcript, "Do a, b, then c.", context, config, stream_fn, clock=clock)
    (marker_dir / "finished").write_text("yes")


if __name__ == "__main__":
    main()
