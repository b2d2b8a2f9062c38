"""The spans of one run while it is open (the run's, its turn's, its model call's, its tools'),
and the scope that makes a tool's span current where the tool runs."""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span

from agentcore import AssistantMessage, ToolSpec

__all__ = ["RunSpans", "ToolScope", "ToolSpan", "library_version"]


@dataclass(slots=True, eq=False)
class ToolSpan:
    """The span of one tool execution (``eid``: its effect id) and how it ended."""

    span: Span
    eid: int
    name: str
    call_id: str
    ended_at: int | None = None
    exception: str | None = None


@dataclass(slots=True, eq=False)
class RunSpans:
    """The spans of one run still open, and what the run span says at its end."""

    span: Span
    context: otel_context.Context
    recording: bool = True
    propagate: bool = True
    turn: Span | None = None
    turn_context: otel_context.Context | None = None
    turns: int = 0
    chat: Span | None = None
    chat_failed: bool = False
    tools: dict[int, ToolSpan] = field(default_factory=dict)
    by_call_id: dict[str, ToolSpan] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    tool_specs: tuple[ToolSpec, ...] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    model_known: bool = False
    system_known: bool = False
    aborted: bool = False
    hook_failed: bool = False
    error_type: str | None = None
    error_message: str | None = None
    last_reply: AssistantMessage | None = None
    # capture_content: each message is encoded once (messages are immutable and the history
    # shares them from call to call); the id is kept with the message so it cannot be reused.
    fragments: dict[int, tuple[Any, str]] = field(default_factory=dict)
    tool_definitions: str = ""
    system_instructions: tuple[str, str] = ("", "")


class ToolScope:
    """Makes a tool span current in the tool's thread or task; records what the tool raised."""

    __slots__ = ("_span", "_token", "_redact")

    def __init__(self, span: Span, redact: Callable[[str], str]) -> None:
        self._span = span
        self._token: object = None
        self._redact = redact

    def __enter__(self) -> Span:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self._span

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if isinstance(exc, Exception):
                trace_text = "".join(traceback.format_exception(type(exc), exc, tb))
                self._span.record_exception(exc, attributes={  # no key in the message or the trace
                    "exception.message": self._redact(str(exc)),
                    "exception.stacktrace": self._redact(trace_text)})
        finally:
            otel_context.detach(self._token)  # type: ignore[arg-type]


@functools.cache
def library_version() -> str:
    """The installed distribution's version (the tracer's instrumentation version)."""
    try:
        from importlib.metadata import version

        return version("agentcore-fx")
    except Exception:
        return "0"
