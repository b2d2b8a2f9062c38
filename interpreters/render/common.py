"""What every rendering shares: the text of messages and arguments, usage totals, costs, the
terminal's colours, and :func:`terminal_safe` for recorded or streamed text."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from agentcore import ImageContent, TextContent, Usage, thaw

__all__ = [
    "ANSI",
    "UsageTotals",
    "content_text",
    "format_args",
    "message_text",
    "money",
    "one_line",
    "terminal_safe",
]


def format_args(args: Any, limit: int = 120) -> str:
    """Tool call arguments as ``a=1, b='x'`` (cut at ``limit`` characters)."""
    value = thaw(args)
    if isinstance(value, Mapping):
        text = ", ".join(f"{k}={v!r}" for k, v in value.items())
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def content_text(content: Any) -> str:
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
        return content_text(content)
    text = getattr(message, "text", None)
    if isinstance(text, str):
        return text
    for name in ("summary", "command", "output"):
        value = getattr(message, name, None)
        if isinstance(value, str):
            return value
    return repr(message)


def one_line(text: str, limit: int = 160) -> str:
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


ANSI = {
    "rule": "2", "agent": "1;32", "think": "2;3", "user": "1;34", "tool": "1;33",
    "ok": "32", "err": "1;31", "dim": "2", "text": "", "": "",
}


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
