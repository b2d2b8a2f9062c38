"""A recorded conversation as terminal text (``agentcore transcript show``): turns, messages,
tool calls with arguments and results, usage; recorded text made safe for the terminal."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from agentcore import TextContent, ThinkingContent, thaw

from .common import ANSI, UsageTotals, content_text, message_text, terminal_safe
from .conversation import AssistantEntry, Conversation, UserEntry, header_facts

__all__ = [
    "conversation_text",
]


_STYLE_ON: Final = "\ue000"
_STYLE_OFF: Final = "\ue001"


def conversation_text(conv: Conversation, header: Mapping[str, Any], *, title: str = "",
                      steps: int | None = None, color: bool = False,
                      notes: Iterable[str] = ()) -> str:
    """A recorded run as text: turns, messages, tool calls with arguments and results, usage."""

    # Styling is marked with private characters while the text is built, then every piece of
    # recorded text is made safe at once and the marks become the terminal's codes.
    def st(text: str, style: str) -> str:
        code = ANSI.get(style, "")
        return f"{_STYLE_ON}{code}m{text}{_STYLE_OFF}" if color and code and text else text

    def indent(text: str, prefix: str) -> str:
        return "\n".join(prefix + line for line in text.splitlines()) if text else prefix.rstrip()

    out: list[str] = []
    if title:
        out.append(st(title, "agent"))
    for k, v in header_facts(header):
        out.append(f"{k + ':':<10}{v}")
    if steps is not None:
        out.append(f"{'steps:':<10}{steps}" + ("" if conv.finished else " (the run is suspended)" if conv.suspended
                                                 else " (the run did not finish)"))
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
                    if c.pending is not None:
                        out.append(st(f"      waited │ {c.decided}", "tool"))
                    if c.result is None and c.pending is not None and c.decision is None:
                        out.append(st("      result │ (none yet: the call waits for a decision)", "dim"))
                    elif c.result is None:
                        out.append(st("      result │ (no result recorded)", "dim"))
                    else:
                        prefix = "      error  │ " if c.result.is_error else "      result │ "
                        out.append(st(indent(content_text(c.result.content) or "(no output)", prefix),
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
    if conv.budget:
        out.append(st(conv.budget, "err"))
    state = "finished" if conv.finished else "suspended" if conv.suspended else "not finished"
    out.append(st(f"Total: {len(conv.turns)} turns, {len(conv.tool_calls)} tool calls, {conv.usage} ({state})",
                  "agent"))
    text = terminal_safe("\n".join(out) + "\n")
    return text.replace(_STYLE_ON, "\033[").replace(_STYLE_OFF, "\033[0m")


def _args_json(args: Any) -> str:
    """Arguments as JSON: one line when short, indented otherwise."""
    value = thaw(args)
    flat = json.dumps(value, ensure_ascii=False, default=str)
    return flat if len(flat) <= 100 else json.dumps(value, ensure_ascii=False, indent=2, default=str)
