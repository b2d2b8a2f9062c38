"""Rendering agent runs for people: live in a terminal, and recorded runs as text or HTML.

Used by the ``agentcore`` command (:mod:`interpreters.cli`); usable on its own.

Live rendering
--------------
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

Recorded runs
-------------
:func:`build_conversation` folds the events of a run (a replayed transcript's, say) into
:class:`Conversation`: turns, each with its user and assistant messages, the tool calls of each
assistant message with their results, and the usage and cost per turn. :func:`conversation_text`
renders it as text (``agentcore transcript show``) and :func:`conversation_html` as one
self-contained HTML page (``agentcore transcript html``).
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Final, TextIO

from agentcore import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    AssistantMessage,
    ImageContent,
    MessageEndEvent,
    MessageUpdateEvent,
    TextContent,
    TextDeltaEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
    TurnStartEvent,
    Usage,
    UserMessage,
    thaw,
)

__all__ = [
    "AssistantEntry",
    "Conversation",
    "LiveRenderer",
    "OtherEntry",
    "PlainRenderer",
    "RichRenderer",
    "ToolCallEntry",
    "Turn",
    "UsageTotals",
    "UserEntry",
    "build_conversation",
    "conversation_html",
    "conversation_text",
    "format_args",
    "isatty",
    "make_renderer",
    "message_text",
    "money",
    "rich_available",
    "terminal_safe",
]


# --------------------------------------------------------------------------- small helpers


def format_args(args: Any, limit: int = 120) -> str:
    """Tool call arguments as ``a=1, b='x'`` (cut at ``limit`` characters)."""
    value = thaw(args)
    if isinstance(value, Mapping):
        text = ", ".join(f"{k}={v!r}" for k, v in value.items())
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _content_text(content: Any) -> str:
    """Text of a message's content: text blocks joined, images as ``[image mime]``."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or ():
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append(f"[image {block.mime_type}]")
    return "".join(parts)


def message_text(message: Any) -> str:
    """The text of any message, for display (its text blocks, or its ``text``)."""
    content = getattr(message, "content", None)
    if content is not None:
        return _content_text(content)
    text = getattr(message, "text", None)
    if isinstance(text, str):
        return text
    for name in ("summary", "command", "output"):
        value = getattr(message, name, None)
        if isinstance(value, str):
            return value
    return repr(message)


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def money(usd: float) -> str:
    """A cost in USD, with enough digits to see small amounts: ``$0``, ``$0.000021``, ``$1.2345``."""
    if usd == 0:
        return "$0"
    return f"${usd:.6f}" if abs(usd) < 0.01 else f"${usd:.4f}"


@dataclass
class UsageTotals:
    """Token counts and cost (USD) added up over messages."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    def add(self, usage: Usage | None) -> None:
        if usage is None:
            return
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.cost += usage.cost.total

    def merge(self, other: UsageTotals) -> None:
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        self.cost += other.cost

    def __str__(self) -> str:
        cache = ""
        if self.cache_read or self.cache_write:
            cache = f", cache {self.cache_read} read / {self.cache_write} written"
        return f"{self.input} in / {self.output} out tokens{cache}, {money(self.cost)}"


# --------------------------------------------------------------------------- live rendering


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
        """``self.tools`` (running tool calls: id -> (label, start time)) changed."""

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
            partial = _content_text(getattr(event.partial_result, "content", ()))
            if partial:
                self.line(f"      … {event.tool_name}: {_one_line(partial)}", "dim")
        elif isinstance(event, ToolExecutionEndEvent):
            _, started = self.tools.pop(event.tool_call_id, ("", time.perf_counter()))
            took = (time.perf_counter() - started) * 1000
            text = _one_line(_content_text(event.result.content)) or "(no output)"
            mark, style = ("✗", "err") if event.is_error else ("✓", "ok")
            self.tools_changed()
            self.line(f"      {mark} {event.tool_name} → {text} ({took:.0f} ms)", style)
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


_ANSI = {
    "rule": "2", "agent": "1;32", "think": "2;3", "user": "1;34", "tool": "1;33",
    "ok": "32", "err": "1;31", "dim": "2", "text": "", "": "",
}


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
        code = _ANSI.get(style, "")
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
        # No spinner in plain text: one line per call when it starts.
        for call_id, (label, _) in self.tools.items():
            if call_id not in self._announced:
                self._announced.add(call_id)
                self.line(f"      ⋯ running {label}", "dim")
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


# --------------------------------------------------------------------------- recorded runs


@dataclass
class ToolCallEntry:
    call: ToolCall
    result: ToolResultMessage | None = None

    @property
    def is_error(self) -> bool:
        return self.result is not None and self.result.is_error


@dataclass
class UserEntry:
    message: Any
    queued: bool = False
    """Delivered during the run (steering or follow-up), not as the prompt."""


@dataclass
class AssistantEntry:
    message: AssistantMessage
    calls: list[ToolCallEntry] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.message.stop_reason in ("error", "aborted")


@dataclass
class OtherEntry:
    """A tool result without its call, or a message of an application-defined type."""

    message: Any


Entry = UserEntry | AssistantEntry | OtherEntry


@dataclass
class Turn:
    number: int
    entries: list[Entry] = field(default_factory=list)

    @property
    def usage(self) -> UsageTotals:
        total = UsageTotals()
        for e in self.entries:
            if isinstance(e, AssistantEntry):
                total.add(e.message.usage)
                for c in e.calls:
                    total.add(c.result.usage if c.result is not None else None)
            elif isinstance(e, OtherEntry) and isinstance(e.message, ToolResultMessage):
                total.add(e.message.usage)
        return total


@dataclass
class Conversation:
    turns: list[Turn] = field(default_factory=list)
    finished: bool = False
    new_messages: int = 0

    @property
    def usage(self) -> UsageTotals:
        total = UsageTotals()
        for t in self.turns:
            total.merge(t.usage)
        return total

    @property
    def tool_calls(self) -> list[ToolCallEntry]:
        return [c for t in self.turns for e in t.entries if isinstance(e, AssistantEntry) for c in e.calls]


def build_conversation(events: Iterable[AgentEvent]) -> Conversation:
    """Fold a run's events into turns, messages, tool calls with their results, and usage."""
    conv = Conversation()
    assistant_seen = False

    def current() -> Turn:
        if not conv.turns:
            conv.turns.append(Turn(1))
        return conv.turns[-1]

    for event in events:
        if isinstance(event, TurnStartEvent):
            conv.turns.append(Turn(len(conv.turns) + 1))
        elif isinstance(event, MessageEndEvent):
            m = event.message
            if isinstance(m, AssistantMessage):
                assistant_seen = True
                current().entries.append(AssistantEntry(m, [ToolCallEntry(c) for c in m.tool_calls]))
            elif isinstance(m, ToolResultMessage):
                for entry in reversed(current().entries):
                    if isinstance(entry, AssistantEntry):
                        match = next((c for c in entry.calls if c.call.id == m.tool_call_id), None)
                        if match is not None:
                            match.result = m
                            break
                else:
                    current().entries.append(OtherEntry(m))
            elif isinstance(m, UserMessage):
                current().entries.append(UserEntry(m, queued=assistant_seen))
            else:
                current().entries.append(OtherEntry(m))
        elif isinstance(event, AgentEndEvent):
            conv.finished = True
            conv.new_messages = len(event.messages)
    return conv


def _header_facts(header: Mapping[str, Any]) -> list[tuple[str, str]]:
    model = header.get("model") or {}
    facts: list[tuple[str, str]] = []
    if isinstance(model, Mapping):
        facts.append(("model", f"{model.get('id', '?')} ({model.get('provider', '?')}, {model.get('api', '?')})"))
    tools = [t.get("name", "?") for t in header.get("tools") or () if isinstance(t, Mapping)]
    facts.append(("tools", ", ".join(tools) or "none"))
    hooks = header.get("hooks") or ()
    if hooks:
        facts.append(("hooks", ", ".join(str(h) for h in hooks)))
    created = header.get("created_at")
    if isinstance(created, int):
        when = datetime.fromtimestamp(created / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        facts.append(("recorded", when))
    facts.append(("library", f"agentcore-fx {header.get('library_version', '?')}, "
                             f"{header.get('interpreter', '?')} interpreter"))
    return facts


# ---- text


_STYLE_ON: Final = "\ue000"
_STYLE_OFF: Final = "\ue001"
_UNSAFE: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ue000\ue001]")


def terminal_safe(text: str) -> str:
    r"""Recorded or streamed text as a terminal may show it: control characters (escape
    sequences that clear the screen, set the window title or the clipboard), bidirectional
    overrides and line separators written as visible escapes; line breaks and tabs kept.

    >>> print(terminal_safe("hi\x1b]0;pwned\x07 there"))
    hi\x1b]0;pwned\x07 there
    """
    return _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                       else f"\\u{ord(m.group()):04x}", text)


def conversation_text(conv: Conversation, header: Mapping[str, Any], *, title: str = "",
                      steps: int | None = None, color: bool = False,
                      notes: Iterable[str] = ()) -> str:
    """A recorded run as text: turns, messages, tool calls with arguments and results, usage."""

    # Styling is marked with private characters while the text is built, then every piece of
    # recorded text is made safe at once and the marks become the terminal's codes.
    def st(text: str, style: str) -> str:
        code = _ANSI.get(style, "")
        return f"{_STYLE_ON}{code}m{text}{_STYLE_OFF}" if color and code and text else text

    def indent(text: str, prefix: str) -> str:
        return "\n".join(prefix + line for line in text.splitlines()) if text else prefix.rstrip()

    out: list[str] = []
    if title:
        out.append(st(title, "agent"))
    for k, v in _header_facts(header):
        out.append(f"{k + ':':<10}{v}")
    if steps is not None:
        out.append(f"{'steps:':<10}{steps}" + ("" if conv.finished else " (the run did not finish)"))
    system = str(header.get("system_prompt") or "")
    if system:
        out.append(f"{'system:':<10}" + indent(system, " " * 10).lstrip())
    out.extend(notes)
    for turn in conv.turns:
        out.append("")
        out.append(st(f"── turn {turn.number} " + "─" * 40, "rule"))
        for e in turn.entries:
            if isinstance(e, UserEntry):
                label = "user (queued)" if e.queued else "user"
                out.append(st(label, "user"))
                out.append(indent(message_text(e.message), "    "))
            elif isinstance(e, AssistantEntry):
                m = e.message
                out.append(st("assistant", "agent") + st(f"  [{m.model or '?'}, stop: {m.stop_reason}]", "dim"))
                for block in m.content:
                    if isinstance(block, ThinkingContent):
                        text = "[redacted thinking]" if block.redacted else block.thinking
                        out.append(st(indent(text, "    think │ "), "think"))
                    elif isinstance(block, TextContent):
                        out.append(indent(block.text, "    "))
                if e.failed:
                    out.append(st(f"    {m.stop_reason}: {m.error_message or ''}", "err"))
                for c in e.calls:
                    out.append(st(f"    tool call {c.call.name}", "tool") + st(f"  [{c.call.id}]", "dim"))
                    out.append(indent(_args_json(c.call.arguments), "      args   │ "))
                    if c.result is None:
                        out.append(st("      result │ (no result recorded)", "dim"))
                    else:
                        prefix = "      error  │ " if c.result.is_error else "      result │ "
                        out.append(st(indent(_content_text(c.result.content) or "(no output)", prefix),
                                      "err" if c.result.is_error else ""))
                u = UsageTotals()
                u.add(m.usage)
                out.append(st(f"    usage: {u}", "dim"))
            else:
                role = getattr(e.message, "role", type(e.message).__name__)
                out.append(st(str(role), "user"))
                out.append(indent(message_text(e.message), "    "))
        out.append(st(f"  turn {turn.number} total: {turn.usage}", "dim"))
    out.append("")
    state = "finished" if conv.finished else "not finished"
    out.append(st(f"Total: {len(conv.turns)} turns, {len(conv.tool_calls)} tool calls, {conv.usage} ({state})",
                  "agent"))
    text = terminal_safe("\n".join(out) + "\n")
    return text.replace(_STYLE_ON, "\033[").replace(_STYLE_OFF, "\033[0m")


def _args_json(args: Any) -> str:
    """Arguments as JSON: one line when short, indented otherwise."""
    value = thaw(args)
    flat = json.dumps(value, ensure_ascii=False, default=str)
    return flat if len(flat) <= 100 else json.dumps(value, ensure_ascii=False, indent=2, default=str)


# ---- HTML

_CSS = """
:root { --fg:#1d2330; --muted:#667085; --bg:#f6f7f9; --card:#fff; --line:#e3e6ea;
        --user:#1f5fbf; --agent:#1b7f3b; --tool:#9a6700; --err:#c62828; --errbg:#fdecec; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg);
       font:15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header, main, footer { max-width: 60rem; margin: 0 auto; padding: 1rem 1.25rem; }
h1 { font-size: 1.3rem; margin: .5rem 0; }
dl.facts { display:grid; grid-template-columns: max-content 1fr; gap:.15rem 1rem; margin:0; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; }
pre, code { font: 13px/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; word-break: break-word; margin: .25rem 0; }
.turn { border-left: 3px solid var(--line); margin: 1.25rem 0; padding-left: 1rem; }
.turn > h2 { font-size: 1rem; color: var(--muted); margin: 0 0 .5rem; }
.msg { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
       padding: .6rem .8rem; margin: .5rem 0; }
.role { font-weight: 600; font-size: .8rem; text-transform: uppercase; letter-spacing: .04em; }
.user .role { color: var(--user); } .assistant .role { color: var(--agent); }
.other .role { color: var(--muted); }
.text { white-space: pre-wrap; }
.meta, .usage { color: var(--muted); font-size: .85rem; }
details { border: 1px solid var(--line); border-radius: 6px; margin: .4rem 0; background: #fbfbfc; }
details > summary { cursor: pointer; padding: .3rem .6rem; list-style-position: inside; }
details > .body { padding: .2rem .8rem .5rem; border-top: 1px solid var(--line); }
details.thinking > summary { color: var(--muted); font-style: italic; }
details.tool-call > summary .name { color: var(--tool); font-weight: 600; }
details.tool-call.error { border-color: var(--err); background: var(--errbg); }
details.tool-call.error > summary { color: var(--err); }
.error-box { border: 1px solid var(--err); background: var(--errbg); color: var(--err);
             border-radius: 6px; padding: .4rem .6rem; margin: .4rem 0; font-weight: 600; }
.assistant.failed { border-color: var(--err); }
h4 { margin: .4rem 0 0; font-size: .75rem; color: var(--muted); text-transform: uppercase; }
.turn-usage { color: var(--muted); font-size: .85rem; margin-top: .25rem; }
footer { border-top: 1px solid var(--line); }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def conversation_html(conv: Conversation, header: Mapping[str, Any], *, title: str = "Agent run",
                      steps: int | None = None, notes: Iterable[str] = ()) -> str:
    """One self-contained HTML page (no script, no network resource) for a recorded run:
    a timeline of turns, thinking and tool calls in ``<details>``, usage and cost, errors
    highlighted. Every piece of recorded text is escaped."""
    parts: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f'<header><h1>{_e(title)}</h1><dl class="facts">',
    ]
    facts = _header_facts(header)
    if steps is not None:
        facts.append(("steps", f"{steps}" + ("" if conv.finished else " (the run did not finish)")))
    facts.append(("total", f"{len(conv.turns)} turns, {len(conv.tool_calls)} tool calls, {conv.usage}"))
    for k, v in facts:
        parts.append(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>")
    system = str(header.get("system_prompt") or "")
    if system:
        parts.append(f'<dt>system prompt</dt><dd><pre class="system">{_e(system)}</pre></dd>')
    parts.append("</dl>")
    for note in notes:
        parts.append(f'<div class="error-box">{_e(note)}</div>')
    parts.append('</header><main class="timeline">')
    for turn in conv.turns:
        parts.append(f'<section class="turn" id="turn-{turn.number}"><h2>Turn {turn.number}</h2>')
        for e in turn.entries:
            if isinstance(e, UserEntry):
                role = "user (queued during the run)" if e.queued else "user"
                parts.append(f'<div class="msg user"><div class="role">{_e(role)}</div>'
                             f'<div class="text">{_e(message_text(e.message))}</div></div>')
            elif isinstance(e, AssistantEntry):
                parts.append(_assistant_html(e))
            else:
                role = getattr(e.message, "role", type(e.message).__name__)
                parts.append(f'<div class="msg other"><div class="role">{_e(role)}</div>'
                             f'<div class="text">{_e(message_text(e.message))}</div></div>')
        parts.append(f'<div class="turn-usage">turn {turn.number}: {_e(turn.usage)}</div></section>')
    state = "finished" if conv.finished else "did not finish"
    parts.append(f"</main><footer><p>Total: {len(conv.turns)} turns, {len(conv.tool_calls)} tool calls, "
                 f"{_e(conv.usage)}. The run {state}.</p></footer></body></html>")
    return "\n".join(parts) + "\n"


def _assistant_html(e: AssistantEntry) -> str:
    m = e.message
    cls = "msg assistant failed" if e.failed else "msg assistant"
    out = [f'<div class="{cls}"><div class="role">assistant</div>']
    for block in m.content:
        if isinstance(block, ThinkingContent):
            text = "[redacted thinking]" if block.redacted else block.thinking
            out.append('<details class="thinking"><summary>thinking</summary>'
                       f'<div class="body"><pre>{_e(text)}</pre></div></details>')
        elif isinstance(block, TextContent):
            out.append(f'<div class="text">{_e(block.text)}</div>')
    if e.failed:
        out.append(f'<div class="error-box">{_e(m.stop_reason)}: {_e(m.error_message or "")}</div>')
    for c in e.calls:
        result = c.result
        mark = "✗" if c.is_error else ("✓" if result is not None else "…")
        preview = _one_line(_content_text(result.content), 80) if result is not None else "no result recorded"
        args = json.dumps(thaw(c.call.arguments), ensure_ascii=False, indent=2)
        cls = "tool-call error" if c.is_error else "tool-call"
        out.append(
            f'<details class="{cls}" id="call-{_e(c.call.id)}"><summary>{mark} '
            f'<span class="name">{_e(c.call.name)}</span>(<code>{_e(format_args(c.call.arguments, 80))}</code>)'
            f' → <span class="preview">{_e(preview)}</span></summary><div class="body">'
            f'<h4>arguments</h4><pre class="args">{_e(args)}</pre>'
        )
        if result is not None:
            label = "error" if result.is_error else "result"
            out.append(f'<h4>{label}</h4><pre class="result">{_e(_content_text(result.content))}</pre>')
            if result.details is not None:
                details = json.dumps(thaw(result.details), ensure_ascii=False, indent=2, default=str)
                out.append(f'<h4>details</h4><pre class="details">{_e(details)}</pre>')
        out.append(f'<div class="meta">call id {_e(c.call.id)}</div></div></details>')
    u = UsageTotals()
    u.add(m.usage)
    out.append(f'<div class="usage">{_e(m.model or "?")} · stop: {_e(m.stop_reason)} · {_e(u)}</div></div>')
    return "".join(out)
