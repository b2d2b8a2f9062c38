"""The state of a run: one immutable :class:`LoopState` and the phase it is in.

A phase names what the core is waiting for. Phases that wait for one answer carry that answer's
``id``; :class:`RunningTools` waits for several (one per tool call, see :class:`ToolSlot`).

The phases a turn waits in follow the stages of :data:`agentcore.machine.TURN`, in order::

    Idle ─Started/Continued─▶ [AwaitingSteering] ─▶ [AwaitingFollowUps] ─▶ [AwaitingTransform]
      ─▶ [AwaitingConvert] ─▶ Streaming ─▶ RunningTools ─▶ [AwaitingNextTurn]
      ─▶ [AwaitingStopDecision] ─▶ (the next turn: AwaitingSteering ...)     any ─▶ Finished
                        RunningTools ─(calls wait for decisions)─▶ Suspended ─Resumed─▶ RunningTools

Brackets mark phases that only occur when the matching hook is set. Messages a queue hook
returns join the context in the same step that brings them (the next turn starts at once), so
no message taken from a queue ever waits in the state for another hook.

:class:`Suspended` is the one phase a run can leave its process in: the state is plain data
(:class:`Suspension` wraps it for storage), and the decisions that resume it are an input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal, TypeAlias

import msgspec
from pyrsistent import PVector, pvector

from .call_ids import CallIds, taken_call_ids
from .config import AgentContext, AgentLoopConfig, hooks_set
from .convert import convert_message
from .frozen import JSON, FrozenDict
from .hooks import CONVERT_TO_LLM, GET_API_KEY, TRANSFORM_CONTEXT
from .messages import (
    AgentMessage,
    AssistantMessage,
    Model,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
)
from .records import Record
from .stream import PartialAssistantMessage
from .tools import AgentToolResult, PendingCall, ToolExecutionMode, ToolPolicy, ToolSpec, spec_of, tool_policies

__all__ = [
    "SUSPENSION_CHECKS",
    "AwaitingConvert",
    "AwaitingFollowUps",
    "AwaitingNextTurn",
    "AwaitingSteering",
    "AwaitingStopDecision",
    "AwaitingTransform",
    "CompletedTurn",
    "Finished",
    "Idle",
    "LoopState",
    "Phase",
    "RunState",
    "RunningTools",
    "SUSPENSION_VERSION",
    "Streaming",
    "Suspended",
    "Suspension",
    "ToolSlot",
    "emitted_results",
    "index_tools",
    "initial_state",
    "llm_view",
    "read_back_run",
    "suspension_problem",
]


# --------------------------------------------------------------------------- phases


class Idle(Record, frozen=True):
    """Created, not started."""

    name: ClassVar[str] = "idle"


class AwaitingSteering(Record, frozen=True):
    """Polling the steering queue: before the first model call, and after each turn."""

    name: ClassVar[str] = "awaiting_steering"
    id: int


class AwaitingFollowUps(Record, frozen=True):
    name: ClassVar[str] = "awaiting_follow_ups"
    id: int


class AwaitingNextTurn(Record, frozen=True):
    name: ClassVar[str] = "awaiting_next_turn"
    id: int


class AwaitingTransform(Record, frozen=True):
    name: ClassVar[str] = "awaiting_transform"
    id: int


class AwaitingConvert(Record, frozen=True):
    name: ClassVar[str] = "awaiting_convert"
    id: int


class Streaming(Record, frozen=True):
    """A model call is in flight; ``partial`` is the reply so far (``None`` before its start).

    ``blocks`` has one entry per content block the stream opened: its kind (``text``,
    ``thinking``, ``toolCall``) while it is open, ``""`` once its end event closed it; the core
    checks every block event against it (the stream protocol)."""

    name: ClassVar[str] = "streaming"
    id: int
    partial: PartialAssistantMessage | AssistantMessage | None = None
    blocks: tuple[str, ...] = ()


SlotStep = Literal["waiting", "preparing", "checking", "approving", "deciding", "pending", "ready", "running",
                   "finishing", "done"]
"""The steps of a tool call, in the order of the stages of :data:`agentcore.batch.CALL` (a test
checks they agree)."""


class ToolSlot(Record, frozen=True):
    """One tool call of a batch and how far it got: ``step`` is the stage of the tool batch's
    table (:data:`agentcore.batch.CALL`) it rests at, from ``waiting`` (not reached yet) to
    ``done`` (``result`` set, ``tool_execution_end`` emitted); ``wait_id`` is the id of the
    answer it waits for (-1: none). ``pending`` says what a ``deciding`` or ``pending`` call
    waits for. ``message`` is the result message once emitted (sequential mode emits it as soon
    as the call is done; the turn's ``tool_results`` then hold that same message).
    """

    call: ToolCall
    step: SlotStep = "waiting"
    wait_id: int = -1
    args: JSON = None
    result: AgentToolResult | None = None
    is_error: bool = False
    at: int = 0
    message: ToolResultMessage | None = None
    pending: PendingCall | None = None


class RunningTools(Record, frozen=True):
    """Preparing and executing the tool calls of ``message``.

    ``cursor`` is the next call to prepare (preparation is always in source order). In sequential
    mode a call runs to ``done`` before the next is prepared; in parallel mode all are prepared,
    then every ready call is started at once.
    """

    name: ClassVar[str] = "running_tools"
    message: AssistantMessage
    sequential: bool
    slots: tuple[ToolSlot, ...]
    cursor: int = 0


class AwaitingStopDecision(Record, frozen=True):
    name: ClassVar[str] = "awaiting_stop_decision"
    id: int


class Suspended(Record, frozen=True):
    """The tool batch waits for decisions from outside the run on the calls in ``pending``
    (``agent_suspended`` was emitted). ``batch`` is the batch as it stands; ``Resumed`` (the
    decisions) takes it on from there, ``AbortRequested`` gives the pending calls an aborted
    result and ends the run."""

    name: ClassVar[str] = "suspended"
    batch: RunningTools
    pending: tuple[PendingCall, ...]


class Finished(Record, frozen=True):
    """``agent_end`` was emitted; every further input is rejected."""

    name: ClassVar[str] = "finished"


Phase: TypeAlias = (
    Idle
    | AwaitingSteering
    | AwaitingFollowUps
    | AwaitingNextTurn
    | AwaitingTransform
    | AwaitingConvert
    | Streaming
    | RunningTools
    | AwaitingStopDecision
    | Suspended
    | Finished
)


# --------------------------------------------------------------------------- the state


class CompletedTurn(Record, frozen=True):
    message: AssistantMessage
    tool_results: tuple[ToolResultMessage, ...]


class RunState(Record, frozen=True):
    """Everything but the phase: the conversation, the model, the queues, the counters.

    ``messages`` is the whole context, ``new_messages`` what this run added, ``llm_messages``
    the default conversion of ``messages`` kept up to date message by message (``None`` when a
    ``transform_context`` or ``convert_to_llm`` hook does the conversion instead).
    ``tool_policies`` says which tools' calls wait for a decision (name → policy). The budgets
    (``max_*``, ``None``: none) are checked against what the run used so far (``turns``,
    ``total_tokens``, ``cost_usd``) after each turn. ``call_ids`` are the tool call ids taken in
    ``messages`` and ``new_messages`` (see :mod:`agentcore.call_ids`): derived from them, not
    written with the state, rebuilt when it is read back. ``unique_call_ids`` says whether the
    run makes each reply's tool call ids unique in the conversation: :func:`initial_state` sets
    it; a state written by agentcore-fx 0.5.0 or earlier (transcript format 5 and older, a
    suspension of format 1) reads back without it, so its run goes on, and replays, with the ids
    its model gave, as it ran then.
    """

    model: Model
    thinking_level: ThinkingLevel
    tool_execution: ToolExecutionMode
    hooks: frozenset[str]
    system_prompt: str
    tools: tuple[ToolSpec, ...]
    tool_index: Mapping[str, ToolSpec]
    messages: PVector[AgentMessage]
    llm_messages: PVector[AgentMessage] | None
    new_messages: PVector[AgentMessage] = msgspec.field(default_factory=pvector)
    has_more_tool_calls: bool = False
    last_turn: CompletedTurn | None = None
    turn_open: bool = False
    aborted: bool = False
    next_id: int = 1
    tool_policies: Mapping[str, ToolPolicy] = msgspec.field(default_factory=FrozenDict)
    max_turns: int | None = None
    max_total_tokens: int | None = None
    max_cost_usd: float | None = None
    turns: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    call_ids: CallIds = msgspec.field(default_factory=CallIds)
    unique_call_ids: bool = False


RUN_FIELDS: tuple[str, ...] = RunState.__struct_fields__


class LoopState(Record, frozen=True):
    """The state of a run: the phase (what the core waits for) and the run's data.

    The two are kept apart so that the most frequent step, a stream delta, only replaces the
    phase. Build one with :func:`initial_state`.
    """

    phase: Phase
    run: RunState

    @property
    def messages(self) -> PVector[AgentMessage]:
        return self.run.messages

    @property
    def new_messages(self) -> PVector[AgentMessage]:
        return self.run.new_messages

    @property
    def model(self) -> Model:
        return self.run.model

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self.run.thinking_level

    @property
    def system_prompt(self) -> str:
        return self.run.system_prompt

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        return self.run.tools

    @property
    def aborted(self) -> bool:
        return self.run.aborted

    @property
    def hooks(self) -> frozenset[str]:
        return self.run.hooks


SUSPENSION_VERSION: int = 2
"""The format version of :class:`Suspension` this library writes (and the newest it reads).
Format 2 writes each value of the state once (see :mod:`agentcore.suspension`); format 1 wrote
the state as it is. Both are read."""


class Suspension(Record, frozen=True):
    """A suspended run, as data: everything needed to go on, in any process.

    ``state`` is the core's state (phase :class:`Suspended`), ``pending`` the calls that wait
    for a decision. It round-trips through JSON (``agentcore.codec.to_json`` / ``from_json``),
    which holds each value once; resume it with ``interpreters.resume_suspended`` (or
    ``interpreters.aio``'s), which refuses one that :meth:`problem` finds fault with. ``version``
    is its format version (:data:`SUSPENSION_VERSION`; one read from format 1 keeps 1, and is
    written as format 1 wrote it).
    """

    state: LoopState
    pending: tuple[PendingCall, ...]
    version: int = SUSPENSION_VERSION

    def is_at(self, state: LoopState) -> bool:
        """Whether ``state`` is this suspension's point of its run: suspended on the same pending
        calls, after the same new messages, in JSON form (how a transcript, which holds values as
        their JSON gives them back, is matched with a suspension)."""
        return self.difference(state) is None

    def difference(self, state: LoopState, where: str = "the state") -> str | None:
        """How ``state`` is not this suspension's point of its run (``None``: it is), for an error
        message: ``suspended on other tool calls (c4)``, ``suspended on c1 with other arguments:
        arguments.path is "b" in the transcript, "a" in this suspension``... ``where`` names
        ``state``."""
        return SUSPENSION_CHECKS["difference"](self, state, where)  # type: ignore[no-any-return]

    def problem(self) -> str | None:
        """Why this suspension cannot be resumed as it is (``None``: it can), naming the field and
        the values: a value that is not of its field's type, or parts that disagree on what would
        run (the arguments ``pending`` shows and those the call would run with). A stored
        suspension may have been edited: the interpreters check it before anything runs."""
        return suspension_problem(self)

    @property
    def messages(self) -> tuple[AgentMessage, ...]:
        """The conversation as the run's listeners saw it when it suspended: the state's
        messages and the tool results a sequential batch already emitted (they join the
        state's messages when the turn ends, after the resume). An agent restored from this
        suspension takes these as its conversation."""
        return tuple(self.state.run.messages) + emitted_results(self.state.phase)


def suspension_problem(suspension: Suspension) -> str | None:
    """:meth:`Suspension.problem`: why ``suspension`` cannot be resumed as it is, or ``None``."""
    return SUSPENSION_CHECKS["problem"](suspension)  # type: ignore[no-any-return]


SUSPENSION_CHECKS: dict[str, Callable[..., Any]] = {}
"""The work behind :meth:`Suspension.difference` and :meth:`Suspension.problem`, registered by
:mod:`agentcore.suspension` (which builds on the codec, above this module) when it is imported;
importing ``agentcore`` imports it. Registered rather than imported, so imports go one way."""


def emitted_results(phase: Phase) -> tuple[ToolResultMessage, ...]:
    """The tool results of the current batch that have had their ``message_end`` but are not in
    the state's messages yet (a sequential batch emits each as soon as its call is done)."""
    batch = phase.batch if isinstance(phase, Suspended) else phase
    if not isinstance(batch, RunningTools):
        return ()
    return tuple(slot.message for slot in batch.slots if slot.message is not None)


def index_tools(tools: tuple[ToolSpec, ...]) -> Mapping[str, ToolSpec]:
    """Name → spec; the first declaration of a name wins, as a linear search would find it."""
    index: dict[str, ToolSpec] = {}
    for spec in tools:
        index.setdefault(spec.name, spec)
    return FrozenDict(index)


def llm_view(messages: PVector[AgentMessage], hooks: frozenset[str]) -> PVector[AgentMessage] | None:
    """The default conversion of ``messages``, kept by the state (``None`` when a hook converts)."""
    if CONVERT_TO_LLM.name in hooks or TRANSFORM_CONTEXT.name in hooks:
        return None
    return pvector(c for c in map(convert_message, messages) if c is not None)


def initial_state(
    context: AgentContext,
    config: AgentLoopConfig | None = None,
    *,
    model: Model | None = None,
    thinking_level: ThinkingLevel | None = None,
    tool_execution: ToolExecutionMode | None = None,
    hooks: frozenset[str] | None = None,
) -> LoopState:
    """The idle state of a run over ``context``.

    Pass the run's ``config`` (the core reads its model, thinking level, tool execution mode and
    which hooks are set) or give those values directly.
    """
    if config is None and model is None:
        raise ValueError("initial_state needs a config or a model")
    the_model = model if model is not None else config.model  # type: ignore[union-attr]
    level: ThinkingLevel = thinking_level or (config.thinking_level if config else "off")
    mode: ToolExecutionMode = tool_execution or (config.tool_execution if config else "parallel")
    the_hooks = hooks if hooks is not None else (hooks_set(config) if config else frozenset())
    specs = tuple(spec_of(t) for t in context.tools)
    messages = context.messages if isinstance(context.messages, PVector) else pvector(context.messages)
    cost = config.max_cost_usd if config is not None else None
    return LoopState(Idle(), RunState(
        model=the_model,
        thinking_level=level,
        tool_execution=mode,
        hooks=frozenset(the_hooks) - {GET_API_KEY.name},
        system_prompt=context.system_prompt,
        tools=specs,
        tool_index=index_tools(specs),
        messages=messages,
        llm_messages=llm_view(messages, the_hooks),
        tool_policies=tool_policies(context.tools),
        max_turns=config.max_turns if config is not None else None,
        max_total_tokens=config.max_total_tokens if config is not None else None,
        max_cost_usd=float(cost) if cost is not None else None,
        call_ids=taken_call_ids(messages),
        unique_call_ids=True,
    ))


def read_back_run(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields of a :class:`RunState` read back from JSON, with what is derived, not written:
    the tool index and the tool call ids the conversation has taken."""
    tools = fields.get("tools", ())
    sound = type(tools) is tuple and all(isinstance(t, ToolSpec) for t in tools)
    # Damaged tools get no index: the record is built, and a check of its types names them.
    fields["tool_index"] = index_tools(tools) if sound else FrozenDict()
    conversations = [m for m in (fields.get("messages"), fields.get("new_messages")) if isinstance(m, PVector)]
    fields["call_ids"] = taken_call_ids(*conversations)
    return fields
