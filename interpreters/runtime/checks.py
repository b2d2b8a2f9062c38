"""What users hand the loop, checked: the prompt, the messages a hook returns, the loop's
arguments, the tools. A bad value is a ``TypeError`` that names it and says what is accepted."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pyrsistent import PVector, pvector

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from agentcore.records import is_message

__all__ = [
    "MESSAGE_HINT",
    "article",
    "check_run_arguments",
    "expect",
    "history",
    "polled_messages",
    "prompt_messages",
    "shown",
    "tool_registry",
]


def shown(value: Any) -> str:
    """``repr(value)``, cut at 120 characters."""
    text = repr(value)
    return text if len(text) <= 120 else text[:120] + "..."


def article(name: str) -> str:
    """``name`` with its indefinite article: ``a dict``, ``an int``."""
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


MESSAGE_HINT: Final = ("a message (UserMessage, AssistantMessage, ToolResultMessage, ... or an "
                       "application's own record with a role)")


def prompt_messages(prompts: Any, clock: Callable[[], int], where: str = "agent_loop() argument 'prompts'"
                    ) -> tuple[AgentMessage, ...]:
    """The prompt of a run: a ``str`` (one user message), one message, or a list or tuple of
    messages. Anything else is a ``TypeError`` naming what was given and what is accepted.

    >>> prompt_messages("hi", lambda: 5)
    (UserMessage(content='hi', timestamp=5),)
    >>> prompt_messages({"role": "user", "content": "hi"}, lambda: 0)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    TypeError: agent_loop() argument 'prompts' must be a str, a message or a list of messages, not a dict
    ({'role': 'user', 'content': 'hi'}); build the message instead, e.g. UserMessage("hi")
    """
    if isinstance(prompts, str):
        return (UserMessage(prompts, timestamp=clock()),)
    if is_message(prompts):
        return (prompts,)
    if isinstance(prompts, (list, tuple)):
        for i, item in enumerate(prompts):
            if not is_message(item):
                raise TypeError(
                    f"{where}[{i}] must be {MESSAGE_HINT}, not {article(type(item).__name__)} ({shown(item)})"
                    + ("; pass one str, or UserMessage(...) items" if isinstance(item, str) else "")
                )
        return tuple(prompts)
    hint = '; build the message instead, e.g. UserMessage("hi")' if isinstance(prompts, Mapping) else ""
    raise TypeError(f"{where} must be a str, a message or a list of messages, "
                    f"not {article(type(prompts).__name__)} ({shown(prompts)}){hint}")


def polled_messages(hook: str, value: Any) -> tuple[Any, ...]:
    """What a queue hook returned, as messages: ``None`` or a list or tuple of messages."""
    if value is None:
        return ()
    if is_message(value):
        raise TypeError(f"{hook} returned a single {type(value).__name__}; expected a list of messages")
    if not isinstance(value, (list, tuple)) and (isinstance(value, (str, bytes, Mapping))
                                                 or not hasattr(value, "__iter__")):
        raise TypeError(f"{hook} returned {article(type(value).__name__)} ({shown(value)}); "
                        "expected a list of messages")
    items = tuple(value)
    for i, item in enumerate(items):
        if not is_message(item):
            raise TypeError(f"{hook} returned a list whose item {i} is {article(type(item).__name__)} "
                            f"({shown(item)}); expected {MESSAGE_HINT}")
    return items


def check_run_arguments(context: Any, config: Any, signal: Any, stream_fn: Any, fn: str) -> None:
    """The loop's other arguments have the right types (``TypeError`` naming the one that does not)."""
    if not isinstance(context, AgentContext):
        raise TypeError(f"{fn}() argument 'context' must be an AgentContext, not {article(type(context).__name__)}")
    if not isinstance(config, AgentLoopConfig):
        raise TypeError(f"{fn}() argument 'config' must be an AgentLoopConfig, not {article(type(config).__name__)}")
    if signal is not None and not (hasattr(signal, "aborted") and hasattr(signal, "add_callback")):
        raise TypeError(f"{fn}() argument 'signal' must be an AbortSignal or None, "
                        f"not {article(type(signal).__name__)}")
    if stream_fn is not None and not callable(stream_fn):
        raise TypeError(f"{fn}() argument 'stream_fn' must be callable or None, "
                        f"not {article(type(stream_fn).__name__)}")



_MESSAGE_TYPES: Final = frozenset(
    t for t in (UserMessage, AssistantMessage, ToolResultMessage, BashExecutionMessage,
                CompactionSummaryMessage, BranchSummaryMessage))


def history(hook: str, value: Any) -> PVector[Any]:
    """What ``transform_context`` / ``convert_to_llm`` returned: a list of messages (checked at
    C speed for the library's message types, one by one for the others)."""
    if value is None or isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{hook} returned a {type(value).__name__}; expected a list of messages")
    items = value if isinstance(value, PVector) else pvector(value)
    if not _MESSAGE_TYPES.issuperset(map(type, items)):
        for i, item in enumerate(items):
            if not is_message(item):
                raise TypeError(f"{hook} returned a list whose item {i} is {article(type(item).__name__)} "
                                f"({shown(item)}); expected {MESSAGE_HINT}")
    return items


def expect(kind: type, name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{name} returned {type(value).__name__}, expected {kind.__name__} or None")
        return value

    return check


def tool_registry(tools: Sequence[AgentTool | ToolSpec]) -> dict[str, AgentTool]:
    """Name → tool for the tools that have an implementation (first declaration wins)."""
    registry: dict[str, AgentTool] = {}
    for tool in tools:
        if isinstance(tool, AgentTool):
            registry.setdefault(tool.name, tool)
    return registry
