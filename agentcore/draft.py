"""One ``step``'s scratch space: a mutable draft of the state and the effects it collects.

:func:`agentcore.machine.step` never mutates a state. It copies the run's fields into a
:class:`Draft`, lets the stages of the turn (``machine``) and of the tool batch (``batch``)
assign to it, and freezes it into the next :class:`~agentcore.state.LoopState` at the end. The
effects the stages produce go into the :class:`Draft` too, in order. A draft never leaves the
``step`` that made it.

>>> from agentcore import AgentContext, Model, initial_state
>>> state = initial_state(AgentContext(), model=Model(id="m"))
>>> d = Draft(state)
>>> d.new_id(), d.new_id()
(1, 2)
>>> d.freeze().run.next_id
3
>>> Draft(state).freeze().run is state.run   # nothing changed: the same run data
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyrsistent import PVector

from .call_ids import CallIds, with_calls_of
from .config import AgentContext
from .convert import convert_message
from .effects import Effect, Emit
from .events import MessageEndEvent, MessageStartEvent
from .messages import (
    AgentMessage,
    AssistantMessage,
    Model,
    ThinkingLevel,
    ToolResultMessage,
)
from .state import RUN_FIELDS, CompletedTurn, LoopState, Phase, RunState
from .tools import PendingCall, ToolExecutionMode, ToolPolicy, ToolSpec

__all__ = ["Draft"]


def _compile_copies() -> tuple[Callable[[Draft, RunState], None], Callable[[Draft, RunState], RunState]]:
    """``copy_in(draft, run)`` and ``copy_out(draft, run)``, written out for RunState's fields.

    Generated once, the way ``dataclasses`` writes ``__init__``: they cannot fall out of step
    with :class:`RunState`, and cost what hand-written assignments cost (a loop of ``setattr``
    over the fields costs several times more, on every step).
    """
    copy_in = "\n".join(f"    d.{name} = r.{name}" for name in RUN_FIELDS)
    unchanged = " and ".join(f"d.{name} is r.{name}" for name in RUN_FIELDS)
    values = ", ".join(f"d.{name}" for name in RUN_FIELDS)
    source = (f"def copy_in(d, r):\n{copy_in}\n"
              f"def copy_out(d, r):\n    return r if {unchanged} else RunState({values})\n")
    namespace: dict[str, Any] = {"RunState": RunState}
    exec(source, namespace)  # noqa: S102 - source built above from RunState's field names only
    return namespace["copy_in"], namespace["copy_out"]


class Draft:
    """The state of a run while one ``step`` works on it, and the effects that step produced.

    The fields of :class:`~agentcore.state.RunState` are plain attributes here, plus what one
    stage of a turn hands to the next within the same step (``pending``, ``view``, ``reply``,
    ``results``), which never outlives the step.
    """

    __slots__ = ("phase", "at", "effects", "_base", *RUN_FIELDS, "pending", "view", "reply", "results", "waiting")

    phase: Phase
    at: int
    effects: list[Effect]
    # the fields of RunState
    model: Model
    thinking_level: ThinkingLevel
    tool_execution: ToolExecutionMode
    hooks: frozenset[str]
    system_prompt: str
    tools: tuple[ToolSpec, ...]
    tool_index: Mapping[str, ToolSpec]
    messages: PVector[AgentMessage]
    llm_messages: PVector[AgentMessage] | None
    new_messages: PVector[AgentMessage]
    has_more_tool_calls: bool
    last_turn: CompletedTurn | None
    turn_open: bool
    aborted: bool
    next_id: int
    tool_policies: Mapping[str, ToolPolicy]
    max_turns: int | None
    max_total_tokens: int | None
    max_cost_usd: float | None
    turns: int
    total_tokens: int
    cost_usd: float
    call_ids: CallIds
    unique_call_ids: bool
    # handed from one stage to the next within the step
    pending: Sequence[AgentMessage]
    """Messages that join the context when the turn opens (steering or follow-ups)."""
    view: Sequence[AgentMessage] | None
    """The messages the model call is made with (after ``transform_context`` / conversion)."""
    reply: AssistantMessage | None
    """The turn's final assistant message."""
    results: tuple[ToolResultMessage, ...]
    """The turn's tool results, in call order."""
    waiting: tuple[PendingCall, ...]
    """The calls the tool batch stopped on, waiting for decisions (the run suspends)."""

    def __init__(self, state: LoopState, at: int = 0) -> None:
        self.phase = state.phase
        self.at = at
        self.effects = []
        self._base = state.run
        _copy_in(self, state.run)
        self.pending = ()
        self.view = None
        self.reply = None
        self.results = ()
        self.waiting = ()

    def freeze(self) -> LoopState:
        """The next state; the run data is the old object when no field of it changed."""
        return LoopState(self.phase, _copy_out(self, self._base))

    # ----------------------------------------------------------------- what the stages use

    def new_id(self) -> int:
        """A fresh effect id (ids are never reused within a run)."""
        id_ = self.next_id
        self.next_id = id_ + 1
        return id_

    def emit(self, event: Any) -> None:
        self.effects.append(Emit(event))

    def ask(self, effect: Effect) -> None:
        self.effects.append(effect)

    def context(self) -> AgentContext:
        """The context as hooks see it now."""
        return AgentContext(self.system_prompt, self.messages, self.tools)

    def append(self, message: AgentMessage, calls_taken: bool = False) -> None:
        """Add ``message`` to the context (and to the kept LLM view of it), and the ids of its
        tool calls to those taken (unless ``calls_taken``: the caller took them)."""
        llm = self.llm_messages
        if llm is not None:
            converted = convert_message(message)
            if converted is not None:
                self.llm_messages = llm.append(converted)
        self.messages = self.messages.append(message)
        self.new_messages = self.new_messages.append(message)
        if not calls_taken and isinstance(message, AssistantMessage):
            self.call_ids = with_calls_of(self.call_ids, message)

    def announce(self, message: AgentMessage) -> None:
        """Emit the start and end of a message that enters the context whole, and add it."""
        self.emit(MessageStartEvent(message))
        self.emit(MessageEndEvent(message))
        self.append(message)


_copy_in, _copy_out = _compile_copies()
