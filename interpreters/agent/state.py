"""What the agent knows (``AgentState``), the texts of its refusals, and the book-keeping of one
run (the queued messages it took, whether it has ended)."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from agentcore.inputs import Decision
from agentcore.messages import AgentMessage, Model, ThinkingLevel
from agentcore.state import Suspension
from agentcore.tools import AgentTool, check_tools

from ..signal import AbortSignal

__all__ = [
    "CONTINUE_BUSY",
    "NOT_SUSPENDED",
    "NO_MODEL",
    "PROMPT_BUSY",
    "RESET_BUSY",
    "SUSPENDED",
    "AgentBusyError",
    "AgentListener",
    "AgentState",
    "QueueMode",
    "Resumption",
    "RunBook",
    "check_mode",
    "check_timestamp",
    "tool_list",
]

QueueMode: TypeAlias = Literal["one-at-a-time", "all"]
"""How many queued messages one poll of a queue takes: the first one, or all of them."""

AgentListener: TypeAlias = Callable[..., Any]
"""A subscriber: called with every event (``listener(event)``, or ``listener(event, signal)``
to get the run's :class:`AbortSignal`); may be sync or ``async def`` (then awaited)."""

PROMPT_BUSY: Final = (
    "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
    "or wait for completion (await agent.wait_for_idle())."
)
CONTINUE_BUSY: Final = (
    "Agent is already processing. Wait for completion (await agent.wait_for_idle()) "
    "before continuing."
)
NO_MODEL: Final = "No model configured: pass model=... to Agent() or call set_model()"
RESET_BUSY: Final = "Agent is already processing. Wait for completion before resetting."
SUSPENDED: Final = (
    "Agent is suspended: tool calls wait for decisions ({ids}). Decide them (approve(), deny(), "
    "supply()) and await resume(), or reset()."
)
NOT_SUSPENDED: Final = "Agent is not suspended: no tool call waits for a decision"

_QUEUE_MODES: Final = ("one-at-a-time", "all")


class AgentBusyError(RuntimeError):
    """``prompt()`` or ``continue_()`` was called while a run is in progress."""


@dataclass(slots=True, kw_only=True)
class AgentState:
    """What the agent knows. Read it freely; change it through the :class:`Agent` setters.

    - ``messages``: the conversation; a run appends each message at its ``message_end``.
    - ``is_streaming``: a run is in progress (cleared at ``agent_end``).
    - ``stream_message``: the partial assistant message while a reply streams, else ``None``.
    - ``pending_tool_calls``: the ids of the tool calls started and not yet finished (a new
      frozen set on each change, so a reference kept by a listener never changes under it).
    - ``error``: the ``error_message`` of the last failed (or aborted) run, ``None`` after a
      run that ended well.
    - ``suspension``: the :class:`~agentcore.Suspension` of the last run when it suspended
      (tool calls wait for decisions: :attr:`Agent.pending`), else ``None``. Store it
      (``agentcore.codec.to_json``) with the conversation; :meth:`Agent.restore` takes it back.
    """

    system_prompt: str = ""
    model: Model | None = None
    thinking_level: ThinkingLevel = "off"
    tools: list[AgentTool] = field(default_factory=list)
    messages: list[AgentMessage] = field(default_factory=list)
    is_streaming: bool = False
    stream_message: AgentMessage | None = None
    pending_tool_calls: frozenset[str] = frozenset()
    error: str | None = None
    suspension: Suspension | None = None


@dataclass(frozen=True, slots=True)
class Resumption:
    """What :meth:`Agent.resume` goes on with: the suspension, its decisions, and where the
    resumed run is recorded (``transcript``, ``secrets``: as for ``resume_suspended``)."""

    suspension: Suspension
    decisions: dict[str, Decision]
    transcript: str | os.PathLike[str] | None
    secrets: Sequence[str]



@dataclass(slots=True)
class RunBook:
    """Book-keeping of one run: has ``agent_end`` been seen, is the agent stopping it, and the
    queued messages it took that have not reached the conversation yet (by identity, in the
    order taken, with the queue each came from)."""

    signal: AbortSignal
    ended: bool = False
    stopping: bool = False
    taken: dict[int, tuple[deque[AgentMessage], AgentMessage]] = field(default_factory=dict)

    def take(self, queue: deque[AgentMessage], messages: list[AgentMessage]) -> list[AgentMessage]:
        for message in messages:
            self.taken[id(message)] = (queue, message)
        return messages

    def give_back(self) -> None:
        """Put what was taken and never delivered back at the front of its queue, in order."""
        for queue, message in reversed(list(self.taken.values())):
            queue.appendleft(message)
        self.taken.clear()


def check_timestamp(method: str, timestamp: Any) -> None:
    if type(timestamp) is not int:
        raise TypeError(f"{method}(): timestamp must be an int (a message's timestamp in ms), "
                        f"not {type(timestamp).__name__}")


def check_mode(name: str, mode: str) -> QueueMode:
    if mode not in _QUEUE_MODES:
        raise ValueError(f"{name} must be 'one-at-a-time' or 'all', not {mode!r}")
    return mode  # type: ignore[return-value]



def tool_list(tools: Iterable[AgentTool]) -> list[AgentTool]:
    if isinstance(tools, (str, bytes)) or not hasattr(tools, "__iter__"):
        raise TypeError(f"Agent tools must be a list of tools, not a {type(tools).__name__}")
    listed = list(tools)
    check_tools(tuple(listed), "Agent tools")
    return listed
