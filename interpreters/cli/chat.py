"""``agentcore chat``: an interactive session; lines typed while the agent works steer it."""

from __future__ import annotations

import argparse
import threading
from collections import deque
from pathlib import Path
from typing import Any

from agentcore.records import replace
from agentcore import AgentContext, AgentMessage, UserMessage

from ..render import make_renderer
from ..signal import AbortSignal
from .common import Setup, open_recorder, run_options, setup_from_args, writable

__all__ = [
    "add_commands",
]


def _numbered(path: Path, n: int) -> Path:
    return path if n == 1 else path.with_name(f"{path.stem}.{n}{path.suffix or '.jsonl'}")


class _Chat:
    """The interactive session: the main thread reads lines, a worker thread runs the agent."""

    def __init__(self, args: argparse.Namespace, setup: Setup) -> None:
        self.args = args
        self.setup = setup
        self.steering: deque[AgentMessage] = deque()
        self.config = replace(setup.config, get_steering_messages=self._poll)
        self.messages: list[AgentMessage] = []
        self.render = make_renderer()
        self.lock = threading.Lock()
        self.running = False
        self.signal: AbortSignal | None = None
        self.worker: threading.Thread | None = None
        self.runs = 0
        self.interrupted = False

    def _poll(self) -> list[AgentMessage]:
        out: list[AgentMessage] = []
        while self.steering:
            out.append(self.steering.popleft())
        return out

    def prompt(self) -> None:
        self.render.line("", "")
        self.render.write("› ", "user")

    def start(self, prompts: list[AgentMessage]) -> None:
        signal = AbortSignal()
        with self.lock:
            self.running = True
            self.signal = signal
        self.worker = threading.Thread(target=self._work, args=(prompts, signal), name="agentcore-chat",
                                       daemon=True)
        self.worker.start()

    def _work(self, prompts: list[AgentMessage], signal: AbortSignal) -> None:
        from ..sync import agent_loop

        try:
            while prompts:
                self.runs += 1
                context = AgentContext(self.setup.system_prompt, tuple(self.messages), self.setup.tools)
                recorder = None
                if self.args.record:
                    recorder = open_recorder(_numbered(Path(self.args.record), self.runs), context, self.config)
                try:
                    stream = agent_loop(prompts, context, self.config, signal, self.setup.stream_fn,
                                        journal=recorder)
                    for event in stream:
                        self.render(event)
                    self.messages.extend(stream.result())
                finally:
                    if recorder is not None:
                        recorder.close()
                        self.render.line(f"transcript: {recorder.path}", "dim")
                if signal.aborted:
                    break
                # Lines typed after the run's last steering poll start the next run.
                prompts = self._poll()
                if prompts:
                    self.render.line("(sending what was typed as the run ended)", "dim")
        except Exception as exc:  # keep the session alive
            self.render.line(f"error: {type(exc).__name__}: {exc}", "err")
        finally:
            self.render.close()
            with self.lock:
                self.running = False
                self.signal = None
            self.prompt()

    def steer(self, text: str) -> None:
        from ..clock import now_ms

        self.steering.append(UserMessage(text, timestamp=now_ms()))
        self.render.line(f"queued: {text}  (the agent reads it after its current step)", "dim")

    def is_running(self) -> bool:
        with self.lock:
            return self.running

    def abort(self) -> None:
        with self.lock:
            signal = self.signal
        if signal is not None:
            signal.abort()

    def finish(self) -> None:
        self.abort()
        if self.worker is not None:
            self.worker.join(5)

    def _interrupt(self) -> bool:
        """Ctrl-C: abort the run, or (the second in a row) exit. True: exit."""
        if self.interrupted:
            return True
        self.interrupted = True
        if self.is_running():
            self.abort()
            self.render.line("aborting… (Ctrl-C again to exit)", "err")
        else:
            self.render.line("(Ctrl-C again or Ctrl-D to exit)", "dim")
            self.prompt()
        return False

    def _line(self, text: str) -> bool:
        """A line typed: a prompt, or a steering message while a run goes on. True: exit."""
        from ..clock import now_ms

        if not text:
            if not self.is_running():
                self.prompt()
            return False
        self.interrupted = False
        if text in ("/exit", "/quit"):
            return True
        if self.is_running():
            self.steer(text)
        else:
            self.start([UserMessage(text, timestamp=now_ms())])
        return False

    def loop(self) -> int:
        s = self.setup
        tools = ", ".join(t.name for t in s.tools) or "none"
        self.render.line(f"agentcore chat · model {s.model.provider}/{s.model.id} · tools: {tools}", "rule")
        self.render.line("Enter sends. Typing while the agent works steers it. Ctrl-C aborts the run; "
                         "Ctrl-C twice or Ctrl-D exits.", "dim")
        self.prompt()
        self.interrupted = False
        pending_interrupt = False
        while True:
            # A Ctrl-C may land anywhere in this loop (while printing too): it is always
            # handled at the top of the next iteration.
            try:
                if pending_interrupt:
                    pending_interrupt = False
                    if self._interrupt():
                        break
                    continue
                try:
                    line = input("")
                except EOFError:
                    if self.is_running():
                        self.render.line("(end of input: waiting for the run to finish)", "dim")
                        if self.worker is not None:
                            self.worker.join()
                    break
                if self._line(line.strip()):
                    break
            except KeyboardInterrupt:
                pending_interrupt = True
        self.finish()
        self.render.line("bye", "dim")
        return 0


def _cmd_chat(args: argparse.Namespace) -> int:
    setup = setup_from_args(args)
    if args.record:
        writable(Path(args.record))
    return _Chat(args, setup).loop()


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """``chat``."""
    chat = sub.add_parser("chat", parents=[common], help="an interactive session",
                          description="Chat with the agent. Lines typed while it works are queued as "
                                      "steering messages; Ctrl-C aborts the run; Ctrl-C twice or Ctrl-D "
                                      "exits.")
    run_options(chat, model_required=True, json_flag=False)
    chat.add_argument("--record", metavar="FILE",
                      help="record each run: the first to FILE, the next ones to FILE's stem.2.jsonl, ...")
    chat.set_defaults(func=_cmd_chat)
