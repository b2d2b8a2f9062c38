"""interpreters: the effectful side of agentcore-fx.

The package root is the sync API (the caller's thread, tools on a thread pool);
``interpreters.aio`` has the same names for asyncio. Both carry out the effects of the pure core
in :mod:`agentcore`. The root also gives :class:`Agent` / :class:`SyncAgent`, the transcript
recorder and the replay functions (imported when first used), and :class:`Journal`, the base
class of every observer given as ``journal=``.

>>> from agentcore import AgentContext, AgentLoopConfig, Model
>>> messages = run_agent_loop("2 + 2?", AgentContext(), AgentLoopConfig(model=Model(id="m")),
...                           emit=lambda event: None, stream_fn=ScriptedModel(["4"]))
>>> messages[-1].text
'4'
"""

from . import moved
from .runtime.journal import InterpreterError, Journal
from .signal import AbortSignal
from .streams.scripted import ScriptedModel
from .sync import (
    AgentEventStream,
    agent_loop,
    agent_loop_continue,
    resume_suspended,
    run_agent_loop,
    run_agent_loop_continue,
)
from .tool import ToolContext, tool

moved.install()  # the module paths of 0.5 (interpreters.scripted, ...) for one release

__all__ = [
    "AbortSignal",
    "Agent",
    "AgentEventStream",
    "Cassette",
    "CassetteMiss",
    "InterpreterError",
    "Journal",
    "MatchPolicy",
    "ReplayDivergence",
    "ScriptedModel",
    "SyncAgent",
    "ToolContext",
    "TranscriptRecorder",
    "agent_loop",
    "agent_loop_continue",
    "read_transcript",
    "replay",
    "replay_llm",
    "resume",
    "resume_suspended",
    "run_agent_loop",
    "run_agent_loop_continue",
    "tool",
]

_LAZY = {
    "Agent": "agent", "SyncAgent": "agent",
    "TranscriptRecorder": "transcript", "read_transcript": "transcript",
    "Cassette": "streams.cassette", "CassetteMiss": "streams.cassette", "MatchPolicy": "streams.cassette",
    "ReplayDivergence": "replay", "replay": "replay", "replay_llm": "replay", "resume": "replay.recovery",
}


def __getattr__(name: str) -> object:
    """The names imported when first used (``_LAZY``), and the moved modules by their old paths
    (``interpreters.scripted``: 0.5's package had them as attributes once imported)."""
    import importlib

    if f"{__name__}.{name}" in moved.MOVED:
        return importlib.import_module(f"{__name__}.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'interpreters' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
