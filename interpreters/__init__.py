"""interpreters: the effectful side of agentcore-fx.

The package root is the sync API (the caller's thread, tools on a thread pool);
``interpreters.aio`` has the same names for asyncio. Both carry out the effects of the pure core
in :mod:`agentcore`.

>>> from agentcore import AgentContext, AgentLoopConfig, Model
>>> messages = run_agent_loop("2 + 2?", AgentContext(), AgentLoopConfig(model=Model(id="m")),
...                           emit=lambda event: None, stream_fn=ScriptedModel(["4"]))
>>> messages[-1].text
'4'
"""

from .driver import InterpreterError
from .scripted import ScriptedModel
from .signal import AbortSignal
from .sync import (
    AgentEventStream,
    agent_loop,
    agent_loop_continue,
    run_agent_loop,
    run_agent_loop_continue,
)
from .tool import ToolContext, tool

__all__ = [
    "AbortSignal",
    "AgentEventStream",
    "InterpreterError",
    "ScriptedModel",
    "ToolContext",
    "agent_loop",
    "agent_loop_continue",
    "run_agent_loop",
    "run_agent_loop_continue",
    "tool",
]
