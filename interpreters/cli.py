"""The ``agentcore`` command.

Exit codes: 0 ok, 1 the run failed, 2 usage error. User mistakes print one line saying what to
do; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from agentcore import (
    AgentEndEvent,
    AgentEvent,
    AssistantMessage,
    MessageEndEvent,
    MessageUpdateEvent,
    TextDeltaEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolResultMessage,
    TurnStartEvent,
    UserMessage,
)

__all__ = ["Renderer", "main"]


class Renderer:
    """Renders agent events to a terminal (or any text stream) as they happen."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.tty = self.out.isatty()
        self.turn = 0
        self.in_text = False
        self.tool_started: dict[str, float] = {}

    def _style(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.tty else text

    def _line(self, text: str = "") -> None:
        if self.in_text:
            self.out.write("\n")
            self.in_text = False
        self.out.write(text + "\n")
        self.out.flush()

    def _start(self, label: str) -> None:
        if self.in_text:
            self.out.write("\n")
        self.out.write(label)
        self.in_text = True

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, TurnStartEvent):
            self.turn += 1
            self._line(self._style(f"── turn {self.turn} " + "─" * 40, "2"))
        elif isinstance(event, MessageUpdateEvent):
            ev = event.assistant_message_event
            if isinstance(ev, ThinkingStartEvent):
                self._start(self._style("think ", "2;3"))
            elif isinstance(ev, ThinkingDeltaEvent):
                self.out.write(self._style(ev.delta, "2;3"))
            elif isinstance(ev, TextStartEvent):
                self._start(self._style("agent ", "1;32"))
            elif isinstance(ev, TextDeltaEvent):
                self.out.write(ev.delta)
                self.out.flush()
        elif isinstance(event, MessageEndEvent):
            msg = event.message
            if isinstance(msg, UserMessage):
                self._line(self._style("user  ", "1;34") + msg.text)
            elif isinstance(msg, AssistantMessage):
                if msg.stop_reason in ("error", "aborted"):
                    self._line(self._style(f"{msg.stop_reason}: {msg.error_message}", "1;31"))
                u = msg.usage
                self._line(self._style(f"      [{u.input} in / {u.output} out tokens, ${u.cost.total:.4f}]", "2"))
        elif isinstance(event, ToolExecutionStartEvent):
            args = ", ".join(f"{k}={v!r}" for k, v in dict(event.args).items())
            self.tool_started[event.tool_call_id] = time.perf_counter()
            self._line(self._style("tool  ", "1;33") + f"{event.tool_name}({args}) …")
        elif isinstance(event, ToolExecutionEndEvent):
            took = time.perf_counter() - self.tool_started.pop(event.tool_call_id, time.perf_counter())
            text = "".join(getattr(b, "text", "") for b in event.result.content)
            mark = self._style("✗", "31") if event.is_error else self._style("✓", "32")
            self._line(f"      {mark} {event.tool_name}: {text} ({took * 1000:.0f} ms)")
        elif isinstance(event, AgentEndEvent):
            self._line(self._style(f"── done: {len(event.messages)} new messages", "2"))


def _demo(args: argparse.Namespace) -> int:
    from .demo import DEMO_PROMPT, demo_config, demo_context, demo_model, steer_when_tools_start
    from .driver import now_ms
    from .sync import agent_loop

    steering: list[Any] = []
    render = Renderer()
    steer = steer_when_tools_start(steering, now_ms)
    stream = agent_loop(DEMO_PROMPT, demo_context(), demo_config(steering),
                        stream_fn=demo_model(delay=args.delay))
    for event in stream:
        steer(event)
        render(event)
    messages = stream.result()
    last = messages[-1]
    ok = isinstance(last, AssistantMessage) and last.stop_reason == "stop"
    tools_run = sum(isinstance(m, ToolResultMessage) for m in messages)
    print(f"\n{len(messages)} messages, {tools_run} tool results.")
    return 0 if ok else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentcore", description="Run and debug LLM agents.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the offline demo (no key, no network)")
    demo.add_argument("--delay", type=float, default=0.01, help="seconds between stream events (default 0.01)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        print(f"agentcore: {exc} (run with --debug for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
