"""Live rendering of a run in a terminal, event by event.

A renderer is a callable taking each :class:`~agentcore.AgentEvent` of a run, in order (pass
it as ``emit=`` or call it while iterating ``agent_loop``). The event logic lives in
:class:`LiveRenderer`; what differs between outputs is five primitives (begin a labelled line,
write streamed text, print a whole line, show/hide the tools that are running):

* :class:`PlainRenderer`: plain text, ANSI colours only when the output is a terminal. Needs
  nothing beyond the runtime dependencies (the demo must run on a fresh install).
* :class:`RichRenderer`: styled with `rich <https://rich.readthedocs.io>`_ (the ``cli`` extra),
  with a spinner while tools run.

:func:`make_renderer` picks ``RichRenderer`` for a terminal when rich is installed, else
``PlainRenderer`` (so piped output is always plain text).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

from agentcore import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    AssistantMessage,
    MessageEndEvent,
    MessageUpdateEvent,
    TextDeltaEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
    TurnStartEvent,
)
from agentcore.events import AgentSuspendedEvent, BudgetReachedEvent
from agentcore.texts import budget_reached_text

from .common import ANSI, UsageTotals, content_text, format_args, message_text, one_line, terminal_safe

__all__ = [
    "LiveRenderer",
    "PlainRenderer",
    "RichRenderer",
    "isatty",
    "make_renderer",
    "rich_available",
]


class LiveRenderer:
    """The event logic of live rendering; subclasses provide the output primitives."""

    def __init__(self) -> None:
        self.turn = 0
        self.assistant_seen = False
        self.run_usage = UsageTotals()
        self.tools: dict[str, tuple[str, float]] = {}
        self._at_line_start = True

    # primitives ------------------------------------------------------------------------

    def begin(self, label: str, style: str) -> None:
        """Start a new line with a label (``agent``, ``think`` ...); streamed text follows."""
        raise NotImplementedError

    def write(self, text: str, style: str) -> None:
        """Streamed text, on the current line."""
        raise NotImplementedError

    def line(self, text: str, style: str = "") -> None:
        """A whole line (ends a streamed line first)."""
        raise NotImplementedError

    def tools_changed(self) -> None:
        """``self.tools`` (the tool calls started and neither ended nor waiting for a decision:
        id -> (label, start time)) changed."""

    def close(self) -> None:
        """Stop anything still animated."""

    # events ----------------------------------------------------------------------------

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, MessageUpdateEvent):
            self._update(event)
        elif isinstance(event, AgentStartEvent):
            self.turn = 0
            self.assistant_seen = False
            self.run_usage = UsageTotals()
        elif isinstance(event, TurnStartEvent):
            self.turn += 1
            self.line(f"── turn {self.turn} " + "─" * 40, "rule")
        elif isinstance(event, MessageEndEvent):
            self._message_end(event.message)
        elif isinstance(event, ToolExecutionStartEvent):
            self.tools[event.tool_call_id] = (f"{event.tool_name}({format_args(event.args)})", time.perf_counter())
            self.tools_changed()
        elif isinstance(event, ToolExecutionUpdateEvent):
            partial = content_text(getattr(event.partial_result, "content", ()))
            if partial:
                self.line(f"      … {event.tool_name}: {one_line(partial)}", "dim")
        elif isinstance(event, ToolExecutionEndEvent):
            started = self.tools.pop(event.tool_call_id, None)
            # A call that waited for a decision has no start in this run's display to time it from.
            took = f" ({(time.perf_counter() - started[1]) * 1000:.0f} ms)" if started is not None else ""
            text = one_line(content_text(event.result.content)) or "(no output)"
            mark, style = ("✗", "err") if event.is_error else ("✓", "ok")
            self.tools_changed()
            self.line(f"      {mark} {event.tool_name} → {text}{took}", style)
        elif isinstance(event, AgentSuspendedEvent):
            for p in event.pending:
                self.tools.pop(p.tool_call_id, None)
            self.tools_changed()
            for p in event.pending:
                waits = "an approval" if p.waits_for == "approval" else "its result"
                self.line(f"      ⏸ {p.tool_name}({format_args(p.arguments)}): waiting for {waits}", "tool")
            n = len(event.pending)
            self.line(f"── suspended: {n} tool call{'s wait' if n != 1 else ' waits'} for a decision", "rule")
        elif isinstance(event, BudgetReachedEvent):
            self.line(budget_reached_text(event.budget, event.limit, event.used), "err")
        elif isinstance(event, AgentEndEvent):
            self.tools.clear()
            self.tools_changed()
            self.line(f"── done: {len(event.messages)} new messages, {self.run_usage}", "rule")
            self.close()

    def _update(self, event: MessageUpdateEvent) -> None:
        ev = event.assistant_message_event
        if isinstance(ev, TextDeltaEvent):
            self.write(ev.delta, "text")
        elif isinstance(ev, ThinkingDeltaEvent):
            self.write(ev.delta, "think")
        elif isinstance(ev, TextStartEvent):
            self.begin("agent ", "agent")
        elif isinstance(ev, ThinkingStartEvent):
            self.begin("think ", "think")
        elif isinstance(ev, ToolCallStartEvent):
            self.begin("call  ", "tool")
            self.write(f"{ev.name} ", "tool")
        elif isinstance(ev, ToolCallDeltaEvent):
            self.write(ev.delta, "dim")
        elif isinstance(ev, ToolCallEndEvent):
            self.line("", "")

    def _message_end(self, message: Any) -> None:
        if isinstance(message, AssistantMessage):
            self.assistant_seen = True
            self.run_usage.add(message.usage)
            if not self._at_line_start:
                self.line("", "")
            if message.stop_reason in ("error", "aborted"):
                self.line(f"{message.stop_reason}: {message.error_message or ''}", "err")
            u = UsageTotals()
            u.add(message.usage)
            self.line(f"      [{u}]", "dim")
        elif isinstance(message, ToolResultMessage):
            return  # shown at its tool_execution_end
        else:
            label = "user  " if not self.assistant_seen else "user* "
            style = "user"
            self.begin(label, style)
            self.write(message_text(message), "")
            if self.assistant_seen:
                self.write("  (queued while the agent worked)", "dim")
            self.line("", "")


class PlainRenderer(LiveRenderer):
    """Text output; ANSI colours only when ``out`` is a terminal (and ``NO_COLOR`` is unset)."""

    def __init__(self, out: TextIO | None = None, *, color: bool | None = None) -> None:
        super().__init__()
        self.out = out if out is not None else sys.stdout
        if color is None:
            color = isatty(self.out) and not os.environ.get("NO_COLOR")
        self.color = color
        self._lock = threading.RLock()
        self._announced: set[str] = set()

    def _style(self, text: str, style: str) -> str:
        text = terminal_safe(text)
        code = ANSI.get(style, "")
        return f"\033[{code}m{text}\033[0m" if self.color and code and text else text

    def begin(self, label: str, style: str) -> None:
        with self._lock:
            if not self._at_line_start:
                self.out.write("\n")
            self.out.write(self._style(label, style))
            self._at_line_start = False
            self.out.flush()

    def write(self, text: str, style: str) -> None:
        if not text:
            return
        with self._lock:
            self.out.write(self._style(text, style))
            self._at_line_start = text.endswith("\n")
            self.out.flush()

    def line(self, text: str, style: str = "") -> None:
        with self._lock:
            if not self._at_line_start:
                self.out.write("\n")
                self._at_line_start = True
            if text:
                self.out.write(self._style(text, style) + "\n")
            self.out.flush()

    def tools_changed(self) -> None:
        # No spinner in plain text: one line per call when it starts ("started", not "running":
        # a call may go on to wait for a decision, shown with ⏸ when the run suspends).
        for call_id, (label, _) in self.tools.items():
            if call_id not in self._announced:
                self._announced.add(call_id)
                self.line(f"      ⋯ started {label}", "dim")
        self._announced &= set(self.tools)


def isatty(out: TextIO) -> bool:
    """Whether ``out`` is a terminal (a stream without ``isatty`` is not)."""
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def rich_available() -> bool:
    """Whether the optional ``rich`` package can be imported."""
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


_RICH = {
    "rule": "dim", "agent": "bold green", "think": "dim italic", "user": "bold blue",
    "tool": "bold yellow", "ok": "green", "err": "bold red", "dim": "dim", "text": "", "": "",
}


class RichRenderer(LiveRenderer):
    """Output through a ``rich`` console, with a spinner listing the tools that are running."""

    def __init__(self, console: Any = None) -> None:
        super().__init__()
        from rich.console import Console

        self.console: Any = console if console is not None else Console(highlight=False)
        self._live: Any = None
        self._lock = threading.RLock()

    def _print(self, text: str, style: str, end: str) -> None:
        self.console.print(terminal_safe(text), style=_RICH.get(style) or None, end=end, markup=False,
                           highlight=False, soft_wrap=True)

    def begin(self, label: str, style: str) -> None:
        with self._lock:
            if not self._at_line_start:
                self._print("", "", "\n")
            self._print(label, style, "")
            self._at_line_start = False

    def write(self, text: str, style: str) -> None:
        if not text:
            return
        with self._lock:
            self._print(text, style, "")
            self._at_line_start = text.endswith("\n")

    def line(self, text: str, style: str = "") -> None:
        with self._lock:
            if not self._at_line_start:
                self._print("", "", "\n")
                self._at_line_start = True
            if text:
                self._print(text, style, "\n")

    def _spinner(self) -> Any:
        from rich.spinner import Spinner
        from rich.text import Text

        labels = [label for label, _ in self.tools.values()]
        text = Text("running " + ", ".join(labels), style="yellow", no_wrap=True, overflow="ellipsis")
        return Spinner("dots", text=text, style="yellow")

    def tools_changed(self) -> None:
        from rich.live import Live

        with self._lock:
            if self.tools:
                if self._live is None:
                    if not self._at_line_start:
                        self._print("", "", "\n")
                        self._at_line_start = True
                    self._live = Live(self._spinner(), console=self.console, transient=True,
                                      refresh_per_second=12.5)
                    self._live.start()
                else:
                    self._live.update(self._spinner())
            elif self._live is not None:
                self._live.stop()
                self._live = None

    def close(self) -> None:
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None


def make_renderer(out: TextIO | None = None, *, plain: bool = False) -> LiveRenderer:
    """``RichRenderer`` when ``out`` is a terminal and rich is installed, else ``PlainRenderer``."""
    stream = out if out is not None else sys.stdout
    if not plain and isatty(stream) and rich_available():
        from rich.console import Console

        return RichRenderer(Console(file=stream, highlight=False,
                                    no_color=bool(os.environ.get("NO_COLOR"))))
    return PlainRenderer(stream)
