"""``Agent``: a stateful, asyncio-first wrapper around the agent loop.

The loop functions in :mod:`interpreters.aio` are stateless: every run takes a context and a
configuration and gives back events. An application usually wants more: one conversation that
grows over several prompts, a live view of what is streaming, messages typed by the user while
the agent works, a stop button. :class:`Agent` keeps that state, in the manner of the
TypeScript ``pi-agent-core`` ``Agent`` class.

Theory of operation
-------------------

- The agent owns an :class:`AgentState` (system prompt, model, thinking level, tools,
  conversation, and the live run: ``is_streaming``, ``stream_message``,
  ``pending_tool_calls``, ``error``).
- ``await agent.prompt(...)`` / ``await agent.continue_()`` run :func:`interpreters.aio.agent_loop`
  / :func:`~interpreters.aio.agent_loop_continue` over a snapshot of the conversation. Every
  event of the run first updates the agent's state (``message_end`` appends to
  ``state.messages``, ...) and is then given to each subscribed listener. The state is changed
  *only* through the events, so a listener always sees a state consistent with the event it is
  handed.
- One run at a time. While a run is in progress, messages go through two queues polled by the
  loop: :meth:`Agent.steer` (delivered after the current turn, before the next model call) and
  :meth:`Agent.follow_up` (delivered when the agent would otherwise stop). A queue in
  ``"one-at-a-time"`` mode gives one message per poll; in ``"all"`` mode, everything queued.
- Whatever happens, a run ends with the agent idle and listeners having seen ``agent_end``: an
  unexpected exception is recorded as an assistant message with ``stop_reason="error"`` (or
  ``"aborted"`` after :meth:`Agent.abort`) and ``state.error`` is set.

>>> import asyncio
>>> from agentcore import Model
>>> from interpreters.streams.scripted import ScriptedModel
>>> agent = Agent(model=Model(id="m"), stream_fn=ScriptedModel(["Hello!"]))
>>> asyncio.run(agent.prompt("Hi"))
>>> [m.role for m in agent.state.messages], agent.state.messages[-1].text
(['user', 'assistant'], 'Hello!')

From synchronous code, use :class:`SyncAgent`: the same agent driven by an event loop in a
background thread (see its docstring).
"""

from .async_agent import Agent
from .state import CONTINUE_BUSY as CONTINUE_BUSY  # the texts of its refusals, importable from here
from .state import NO_MODEL as NO_MODEL
from .state import NOT_SUSPENDED as NOT_SUSPENDED
from .state import PROMPT_BUSY as PROMPT_BUSY
from .state import RESET_BUSY as RESET_BUSY
from .state import SUSPENDED as SUSPENDED
from .state import (
    AgentBusyError,
    AgentListener,
    AgentState,
    QueueMode,
)
from .sync_agent import SyncAgent

__all__ = [
    "Agent",
    "AgentBusyError",
    "AgentListener",
    "AgentState",
    "QueueMode",
    "SyncAgent",
]

AgentBusyError.__module__ = __name__  # an exception is pickled by its path: the one it always had
