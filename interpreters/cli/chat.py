"""``agentcore chat``: an interactive session; lines typed while the agent works steer it.

A run that suspends (tool calls that require approval, deferred tools) asks about each pending
call: ``run <tool>(<args>)? [y/N/e]`` (``e``: type the arguments to run it with, as JSON), or,
for a deferred call, its result; then it resumes. ``--approve-all`` approves without asking.
Piped input (not a terminal) is read a line at a time when the session needs one: a prompt once
the run before it has ended, an answer once a question is asked; so a script can answer the
questions, and no piped line steers a run.
When the input ends (Ctrl-D, the end of piped input) while a call waits, nothing is decided: the
session ends with the run suspended, names the waiting calls and exits with
:data:`~interpreters.cli.common.EXIT_SUSPENDED`.
"""

from __future__ import annotations

import argparse
import queue
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Any, NamedTuple

from agentcore import (
    AgentContext,
    AgentMessage,
    Decision,
    Deny,
    PendingCall,
    Suspension,
    UserMessage,
)
from agentcore.records import replace

from ..render import isatty, make_renderer
from ..signal import AbortSignal
from .common import (
    EXIT_SUSPENDED,
    Setup,
    ask_decision,
    open_recorder,
    resume_options,
    run_options,
    setup_from_args,
    suspension_report,
    writable,
)

__all__ = [
    "add_commands",
]


def _numbered(path: Path, n: int) -> Path:
    return path if n == 1 else path.with_name(f"{path.stem}.{n}{path.suffix or '.jsonl'}")


class _Left(NamedTuple):
    """A run the session left suspended when its input ended."""

    suspension: Suspension
    answered: dict[str, Decision]
    """Decisions typed for some of the calls, not applied (a run goes on only with all)."""
    transcript: str | None


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
        self.changed = threading.Condition(self.lock)
        """Notified when a run ends and when a question is asked (what piped input waits for)."""
        self.running = False
        self.signal: AbortSignal | None = None
        self.worker: threading.Thread | None = None
        self.runs = 0
        self.interrupted = False
        self.answers: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self.asking = False
        """The worker waits for an answer about a pending tool call: the next line typed is the
        answer (and clears this)."""
        self.input_ended = False
        """The input ended (Ctrl-D, the end of piped input): no question gets an answer any more."""
        self.left: _Left | None = None

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
                    while stream.suspension is not None:
                        resumed = self._resume(stream.suspension, context, signal, recorder)
                        if resumed is None:  # the input ended: the run stays suspended
                            break
                        stream = resumed
                    if self.left is None:
                        self.messages.extend(stream.result())
                finally:
                    if recorder is not None:
                        recorder.close()
                        self.render.line(f"transcript: {recorder.path}", "dim")
                if signal.aborted or self.left is not None:
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
                ended = self.input_ended
                self.changed.notify_all()
            if not ended:
                self.prompt()

    def _resume(self, suspension: Any, context: AgentContext, signal: AbortSignal, recorder: Any) -> Any:
        """Ask about each pending call, then resume (recorded on in the same transcript). An
        abort while asking denies what is left, and the aborted run ends. When the input ends
        while asking, nothing is decided: the run is left suspended (``self.left``) and ``None``
        returned."""
        from ..sync import resume_suspended

        decisions: dict[str, Decision] = {}
        for pending in suspension.pending:
            decision = None if signal.aborted else self._decide(pending)
            if decision is None and not signal.aborted:  # no answer, no abort: the input ended
                self.left = _Left(suspension, decisions, str(recorder.path) if recorder is not None else None)
                self.render.line("(end of input: nothing was decided; the run stays suspended)", "dim")
                return None
            decisions[pending.tool_call_id] = decision if decision is not None else Deny("aborted by the user")
        path = None
        if recorder is not None:
            recorder.close()
            path = recorder.path
        stream = resume_suspended(suspension, decisions, context=context, config=self.config, signal=signal,
                                  stream_fn=self.setup.stream_fn, transcript=path)
        for event in stream:
            self.render(event)
        return stream

    def _ask(self, question: str) -> str | None:
        """A line typed in answer to ``question`` (``None``: the run was aborted meanwhile, or
        the input ended)."""
        with self.lock:
            self.asking = True  # before the question shows: an answer typed at once is the answer
            ended = self.input_ended
            self.changed.notify_all()
        self.render.line("", "")
        self.render.write(question, "tool")
        if ended:
            with self.lock:
                self.asking = False
            return None
        try:
            return self.answers.get()
        finally:
            with self.lock:
                self.asking = False

    def _decide(self, pending: PendingCall) -> Decision | None:
        """The decision typed for one pending call (``None``: aborted, or the input ended)."""
        return ask_decision(pending, self._ask, self.render.line)

    def steer(self, text: str) -> None:
        from ..runtime.clock import now_ms

        self.steering.append(UserMessage(text, timestamp=now_ms()))
        self.render.line(f"queued: {text}  (the agent reads it after its current step)", "dim")

    def is_running(self) -> bool:
        with self.lock:
            return self.running

    def abort(self) -> None:
        with self.lock:
            signal = self.signal
            asking = self.asking
        if signal is not None:
            signal.abort()
        if asking:
            self.answers.put(None)

    def end_of_input(self) -> None:
        """The input ended: a question being asked gets no answer (nor will any later one);
        wait for the run in progress to finish or to suspend."""
        with self.lock:
            self.input_ended = True
            asking, running = self.asking, self.running
        if asking:
            self.answers.put(None)
        elif running:
            self.render.line("(end of input: waiting for the run to finish)", "dim")
        if running and self.worker is not None:
            self.worker.join()

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
        from ..runtime.clock import now_ms

        with self.lock:
            asking = self.asking
            self.asking = False  # one line answers one question
        if asking:  # the answer to the question about a pending tool call
            self.answers.put(text)
            return False
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

    def _wait_until_a_line_is_needed(self) -> None:
        """Piped input is read when the session needs a line: no run goes on (a prompt), or a
        question is asked (its answer). A pipe gives its lines at once, so reading them as they
        come would make every line after the first a steering message of the first run, or its
        next prompt, depending on timing; and an answer meant for a question a steering message."""
        with self.changed:
            while self.running and not self.asking:
                self.changed.wait(0.1)

    def loop(self) -> int:
        s = self.setup
        piped = not isatty(sys.stdin)
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
                if piped:
                    self._wait_until_a_line_is_needed()
                try:
                    line = input("")
                except EOFError:
                    self.end_of_input()
                    break
                if self._line(line.strip()):
                    break
            except KeyboardInterrupt:
                pending_interrupt = True
        self.finish()
        left = self.left
        if left is not None:
            sys.stdout.flush()
            sys.stderr.write(suspension_report(
                left.suspension.pending, left.transcript, answered=left.answered,
                options=resume_options(self.args),
                unrecorded="the session was not recorded, so nothing can decide these calls after it ends "
                           "(--record FILE keeps a suspended run, to decide it later with 'agentcore transcript "
                           "resume FILE')"))
            sys.stderr.flush()
        self.render.line("bye", "dim")
        return 0 if left is None else EXIT_SUSPENDED


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
                                      "exits. Piped input is read a line at a time: a prompt once the run "
                                      "before it has ended, the answer to each question about a tool call.")
    run_options(chat, model_required=True, json_flag=False)
    chat.add_argument("--record", metavar="FILE",
                      help="record each run: the first to FILE, the next ones to FILE's stem.2.jsonl, ...")
    chat.set_defaults(func=_cmd_chat)
