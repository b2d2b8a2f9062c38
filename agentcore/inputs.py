"""Inputs: facts the interpreter reports to the core, in the past tense.

Every answer to an effect carries that effect's ``id``. Every input carries ``at``, the
interpreter's clock in milliseconds when the fact happened: the core stamps the messages it
creates with it (so a replay reproduces the recorded timestamps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from .config import AfterToolCallResult, BeforeToolCallResult, NextTurn
from .frozen import JSON, freeze
from .messages import AgentMessage, Model, TextContent
from .records import Record, set_field
from .stream import StreamEvent
from .tools import AgentToolResult, ToolExecutionMode, ToolPolicy, ToolSpec

__all__ = [
    "AbortRequested",
    "AfterToolCallDecided",
    "ApprovalChecked",
    "Approve",
    "ArgumentsPrepared",
    "BeforeToolCallDecided",
    "ContextConverted",
    "ContextTransformed",
    "Continued",
    "Decision",
    "Deny",
    "FollowUpsPolled",
    "HookFailed",
    "Input",
    "NextTurnPrepared",
    "Resumed",
    "RunSettings",
    "Started",
    "SteeringPolled",
    "StopAfterTurnDecided",
    "StreamEventReceived",
    "StreamFailed",
    "ToolCallDecided",
    "ToolFailed",
    "ToolFinished",
    "ToolOutput",
    "ToolTimedOut",
    "ToolUpdated",
]


class Started(Record, frozen=True, tag="started"):
    """The user started a run with these prompt messages."""

    prompts: tuple[AgentMessage, ...]
    at: int = 0


class Continued(Record, frozen=True, tag="continued"):
    """The user continued from the current context without a new message."""

    at: int = 0


class SteeringPolled(Record, frozen=True, tag="steering_polled"):
    id: int
    messages: tuple[AgentMessage, ...]
    at: int = 0


class FollowUpsPolled(Record, frozen=True, tag="follow_ups_polled"):
    id: int
    messages: tuple[AgentMessage, ...]
    at: int = 0


class ContextTransformed(Record, frozen=True, tag="context_transformed"):
    id: int
    messages: Sequence[AgentMessage]
    at: int = 0


class ContextConverted(Record, frozen=True, tag="context_converted"):
    id: int
    messages: Sequence[AgentMessage]
    at: int = 0


class StreamEventReceived(Record, frozen=True, tag="stream_event_received"):
    """The stream function produced one event for model call ``id``."""

    id: int
    event: StreamEvent
    at: int = 0


class StreamFailed(Record, frozen=True, tag="stream_failed"):
    """The stream function raised, or its stream ended without a ``done``/``error`` event."""

    id: int
    error: str
    at: int = 0


class ArgumentsPrepared(Record, frozen=True, tag="arguments_prepared"):
    id: int
    arguments: JSON
    at: int = 0


class BeforeToolCallDecided(Record, frozen=True, tag="before_tool_call_decided"):
    id: int
    result: BeforeToolCallResult | None
    at: int = 0


class ToolUpdated(Record, frozen=True, tag="tool_updated"):
    """A running tool called ``on_update(partial_result)``."""

    id: int
    partial_result: Any
    at: int = 0


class ToolFinished(Record, frozen=True, tag="tool_finished"):
    id: int
    result: AgentToolResult
    at: int = 0


class ToolFailed(Record, frozen=True, tag="tool_failed"):
    """The tool raised; ``error`` is the exception text."""

    id: int
    error: str
    at: int = 0


class ToolTimedOut(Record, frozen=True, tag="tool_timed_out"):
    """The tool was still running ``timeout_ms`` after it started: the interpreter aborted the
    call's signal and will drop its late result."""

    id: int
    timeout_ms: int
    at: int = 0


class AfterToolCallDecided(Record, frozen=True, tag="after_tool_call_decided"):
    id: int
    result: AfterToolCallResult | None
    at: int = 0


class NextTurnPrepared(Record, frozen=True, tag="next_turn_prepared"):
    id: int
    next_turn: NextTurn | None
    at: int = 0


class StopAfterTurnDecided(Record, frozen=True, tag="stop_after_turn_decided"):
    id: int
    stop: bool
    at: int = 0


class HookFailed(Record, frozen=True, tag="hook_failed"):
    """A hook (or ``prepare_arguments``) raised; ``error`` is the exception text."""

    id: int
    error: str
    at: int = 0


class AbortRequested(Record, frozen=True, tag="abort_requested"):
    """The run's abort signal fired.

    ``wait_for_stream``: a reply is streaming and the interpreter goes on reading its stream for
    a grace period, for the final message the stream ends with (a provider that sees the abort
    ends with its own aborted message: its error text and the usage already consumed). The core
    then waits for that ``done``/``error`` event (or ``StreamFailed``: it did not come) instead
    of closing the reply at once. ``False`` (what transcripts recorded before it existed hold):
    the reply is closed at once with the library's own aborted message."""

    at: int = 0
    wait_for_stream: bool = False


# --------------------------------------------------------------------------- decisions


class Approve(Record, frozen=True, tag="approve"):
    """Run the pending call; with ``arguments``, run it with these instead (validated again
    against the tool's schema: arguments that fail give the call an error result).

    >>> Approve(), Approve(arguments={"path": "/tmp/x"})
    (Approve(arguments=None), Approve(arguments=FrozenDict({'path': '/tmp/x'})))
    """

    arguments: JSON = None

    def __post_init__(self) -> None:
        set_field(self, "arguments", freeze(self.arguments))


class Deny(Record, frozen=True, tag="deny"):
    """Do not run the pending call: it gets an error result with ``reason`` (the model sees it;
    default ``Tool call was denied``)."""

    reason: str | None = None


class ToolOutput(Record, frozen=True, tag="tool_output"):
    """The result of a deferred call, from outside the run (a plain string is taken as text).

    >>> ToolOutput("done").result.content
    (TextContent(text='done', text_signature=None),)
    """

    result: AgentToolResult | str
    is_error: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.result, str):
            set_field(self, "result", AgentToolResult((TextContent(self.result),)))


Decision: TypeAlias = Approve | Deny | ToolOutput
"""What a pending call gets: ``Approve`` or ``Deny`` for an approval, ``ToolOutput`` or ``Deny``
for a deferred call."""


class ApprovalChecked(Record, frozen=True, tag="approval_checked"):
    """The tool's ``requires_approval`` function said whether this call needs an approval."""

    id: int
    required: bool
    at: int = 0


class ToolCallDecided(Record, frozen=True, tag="tool_call_decided"):
    """``decide_tool_call`` answered for one pending call (``None``: no decision; the run
    suspends for it)."""

    id: int
    decision: Decision | None
    at: int = 0


class RunSettings(Record, frozen=True, tag="run_settings"):
    """What the code that resumes a suspended run puts in force for the rest of the run: its
    model, the hooks its config sets (``get_api_key`` aside: the core never asks it), its
    budgets (``None``: none), its tools (their specs and which calls wait for a decision;
    ``None``: the suspended state's) and its ``tool_execution`` (``None``: the suspended
    state's). The turns, tokens and cost used so far are kept. A stored suspension is data
    anyone could have edited: what decides whether a tool call needs an approval, the schema its
    arguments are checked against and whether calls run one at a time come from the resuming
    code. Build one with :func:`agentcore.suspension.run_settings`."""

    model: Model
    hooks: frozenset[str] = frozenset()
    max_turns: int | None = None
    max_total_tokens: int | None = None
    max_cost_usd: float | None = None
    tools: tuple[ToolSpec, ...] | None = None
    tool_policies: Mapping[str, ToolPolicy] | None = None
    tool_execution: ToolExecutionMode | None = None


class Resumed(Record, frozen=True, tag="resumed"):
    """A suspended run got its decisions: one ``(tool call id, decision)`` per pending call.

    ``settings``: the model, hooks and budgets the resumed run goes on with (``None``: those of
    the suspended state, as in transcripts written before 0.6.0). They are part of the input, so
    a resumed run whose code changed its config replays as it ran."""

    decisions: tuple[tuple[str, Decision], ...]
    at: int = 0
    settings: RunSettings | None = None


Input: TypeAlias = (
    Started
    | Continued
    | SteeringPolled
    | FollowUpsPolled
    | ContextTransformed
    | ContextConverted
    | StreamEventReceived
    | StreamFailed
    | ArgumentsPrepared
    | BeforeToolCallDecided
    | ToolUpdated
    | ToolFinished
    | ToolFailed
    | ToolTimedOut
    | AfterToolCallDecided
    | NextTurnPrepared
    | StopAfterTurnDecided
    | HookFailed
    | AbortRequested
    | ApprovalChecked
    | ToolCallDecided
    | Resumed
)
