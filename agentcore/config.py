"""The run's inputs as the user gives them: context, loop configuration, hook contexts and results.

:class:`AgentLoopConfig` holds the user's callables (hooks, ``get_api_key`` ...). The core never
calls them: it reads which hooks are set (:func:`hooks_set`) and asks the interpreter to call them
through effects. Everything here is a plain frozen record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pyrsistent import PVector, pvector

from .frozen import JSON
from .messages import (
    AgentMessage,
    AssistantMessage,
    Model,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
)
from .records import Record, set_field
from .tools import AgentTool, AgentToolResult, ToolExecutionMode, ToolSpec, check_tools

__all__ = [
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentContext",
    "AgentLoopConfig",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "HOOK_NAMES",
    "NextTurn",
    "PrepareNextTurnContext",
    "hooks_set",
]


class AgentContext(Record, frozen=True):
    """System prompt, conversation so far and the tools the model may call.

    ``messages`` is stored as a persistent vector, so handing the context to a hook costs O(1)
    whatever the length of the history.
    """

    system_prompt: str = ""
    messages: Sequence[AgentMessage] = ()
    tools: Sequence[AgentTool | ToolSpec] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.messages, PVector):
            set_field(self, "messages", pvector(self.messages))
        if not isinstance(self.tools, tuple):
            if isinstance(self.tools, (str, bytes)) or not hasattr(self.tools, "__iter__"):
                raise TypeError(f"AgentContext tools must be a list of tools, not a {type(self.tools).__name__}")
            set_field(self, "tools", tuple(self.tools))
        check_tools(self.tools, "AgentContext tools")


class BeforeToolCallContext(Record, frozen=True):
    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: JSON
    context: AgentContext


class BeforeToolCallResult(Record, frozen=True):
    """``block=True`` stops the call; ``reason`` becomes its error text. ``suspend=True`` makes
    the call wait for an approval (the run suspends; ``reason`` says why)."""

    block: bool = False
    reason: str | None = None
    terminate: bool | None = None
    suspend: bool = False


class AfterToolCallContext(Record, frozen=True):
    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: JSON
    result: AgentToolResult
    is_error: bool
    context: AgentContext


class AfterToolCallResult(Record, frozen=True):
    """Field-by-field replacement of a tool's result; ``None`` keeps the original field."""

    content: tuple[Any, ...] | None = None
    details: JSON = None
    is_error: bool | None = None
    usage: Usage | None = None
    terminate: bool | None = None


class PrepareNextTurnContext(Record, frozen=True):
    """The turn that just completed, given to ``prepare_next_turn`` and ``should_stop_after_turn``."""

    message: AssistantMessage
    tool_results: tuple[ToolResultMessage, ...]
    context: AgentContext
    new_messages: Sequence[AgentMessage]


class NextTurn(Record, frozen=True):
    """What ``prepare_next_turn`` may change for the next turn; ``None`` keeps the current value."""

    context: AgentContext | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None


HOOK_NAMES: Final = (
    "convert_to_llm",
    "transform_context",
    "get_steering_messages",
    "get_follow_up_messages",
    "before_tool_call",
    "after_tool_call",
    "decide_tool_call",
    "prepare_next_turn",
    "should_stop_after_turn",
    "get_api_key",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentLoopConfig:
    """Configuration of one run. Only ``model`` is required.

    Hooks (each optional, sync or async under the asyncio interpreter):

    - ``convert_to_llm(messages) -> messages``: agent messages to what the model accepts
      (default: :func:`agentcore.convert.default_convert_to_llm`).
    - ``transform_context(messages, signal) -> messages``: prune or inject before conversion.
    - ``get_api_key(provider) -> str | None``: resolved before each model call; wins over
      ``api_key``. Keys never enter the core, so transcripts cannot contain them.
    - ``get_steering_messages() / get_follow_up_messages() -> messages``: queues polled by the loop.
    - ``before_tool_call(ctx, signal) -> BeforeToolCallResult | None``,
      ``after_tool_call(ctx, signal) -> AfterToolCallResult | None``.
    - ``prepare_next_turn(ctx) -> NextTurn | None``, ``should_stop_after_turn(ctx) -> bool``.
    - ``decide_tool_call(pending) -> Approve | Deny | ToolOutput | None``: the decision on a call
      that waits for one (a tool's ``requires_approval`` or ``deferred``, or ``before_tool_call``
      returning ``suspend=True``), taken at once; ``None`` (or no hook): the run suspends.

    Budgets, checked by the core after each turn from the usage the run recorded (no hook
    needed): ``max_turns`` (model replies), ``max_total_tokens`` (``total_tokens`` of the
    replies and of tool results that report usage) and ``max_cost_usd`` (their ``cost.total``).
    A run that reaches one ends after that turn: a ``budget_reached`` event names it, then
    ``agent_end``.

    ``tool_timeout_ms`` limits how long a tool call may run (``None`` or ``0``: no limit); a
    tool's own ``timeout_ms`` wins. A call past its limit has its signal aborted and gets the
    error result ``Tool "<name>" timed out after <N> ms`` at the deadline.

    ``stream_start_timeout_ms`` limits how long a model call may take to start: from the call
    of the stream function to the first item of its stream (``None`` or ``0``: no limit; later
    events are not timed). Past it the stream's signal is aborted, the stream is left, and the
    reply ends with ``stop_reason="error"``, ``error_message="Model call timed out: the stream
    gave no event within <N> ms (stream_start_timeout_ms=<N>)"`` (not retried).

    Every hook (and ``prepare_arguments``) that takes one more argument than the ones above,
    or a parameter named ``signal``, also gets the run's :class:`AbortSignal`.

    The remaining fields are model-call options passed to the stream function, and ``extra``:
    settings of the application's own (for its hooks and stream function; the library reads
    none of them), an empty mapping by default.
    """

    model: Model
    convert_to_llm: Callable[..., Any] | None = None
    transform_context: Callable[..., Any] | None = None
    get_api_key: Callable[..., Any] | None = None
    get_steering_messages: Callable[..., Any] | None = None
    get_follow_up_messages: Callable[..., Any] | None = None
    tool_execution: ToolExecutionMode = "parallel"
    tool_timeout_ms: int | None = None
    stream_start_timeout_ms: int | None = None
    before_tool_call: Callable[..., Any] | None = None
    after_tool_call: Callable[..., Any] | None = None
    prepare_next_turn: Callable[..., Any] | None = None
    should_stop_after_turn: Callable[..., Any] | None = None
    thinking_level: ThinkingLevel = "off"
    temperature: float | None = None
    max_tokens: int | None = None
    api_key: str | None = None
    cache_retention: Literal["none", "short", "long"] | None = None
    session_id: str | None = None
    headers: Mapping[str, str] | None = None
    metadata: Mapping[str, Any] | None = None
    thinking_budgets: Mapping[str, int] | None = None
    max_retry_delay_ms: int | None = None
    on_payload: Callable[..., Any] | None = None
    on_response: Callable[..., Any] | None = None
    transport: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    decide_tool_call: Callable[..., Any] | None = None
    max_turns: int | None = None
    max_total_tokens: int | None = None
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        for name in ("tool_timeout_ms", "stream_start_timeout_ms"):
            ms = getattr(self, name)
            if ms is not None and (type(ms) is not int or ms < 0):
                raise ValueError(f"{name} must be None or an integer >= 0 (milliseconds), not {ms!r}")
        for name in ("max_turns", "max_total_tokens"):
            limit = getattr(self, name)
            if limit is not None and (type(limit) is not int or limit < 1):
                raise ValueError(f"{name} must be None or an integer >= 1, not {limit!r}")
        cost = self.max_cost_usd
        if cost is not None and (type(cost) not in (int, float) or not cost > 0):
            raise ValueError(f"max_cost_usd must be None or a number > 0 (US dollars), not {cost!r}")


def hooks_set(config: AgentLoopConfig) -> frozenset[str]:
    """The names of the hooks ``config`` sets (what the core needs to know about them)."""
    return frozenset(name for name in HOOK_NAMES if getattr(config, name) is not None)
