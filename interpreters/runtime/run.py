"""The run both runners share: :class:`Run`, the walk over the core's effects (each runner only
carries out what it gives and waits), feeding (an abort that fired is always fed before the next
input), which answers still count, what a hook's answer becomes, and the order answers are fed in
(:class:`AnswerOrder`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from agentcore import (
    ABORTED_TEXT,
    AbortRequested,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    CancelLlm,
    Effect,
    ExecuteTool,
    HookFailed,
    Input,
    LoopState,
    Resumed,
    RunEnded,
    RunSuspended,
    Suspension,
    ToolFailed,
    ToolFinished,
    ToolTimedOut,
    ToolUpdated,
    awaits,
)
from agentcore.machine import Rejection, transition
from agentcore.state import Suspended

from ..signal import AbortSignal
from .checks import tool_registry
from .deadlines import Deadlines
from .hooks import FATAL, HookCall, KeyLookup, Returned, failure_text, hook_call
from .journal import Driver, Journals
from .keys import Keys
from .markers import END, WAIT, WAKE, Marker, nothing

__all__ = ["AS_THEY_ARRIVE", "END", "WAIT", "WAKE", "AnswerOrder", "Marker", "Run", "nothing"]


class AnswerOrder:
    """The order in which a run feeds the answers it waits for to the core.

    A run that waits for answers (tool results and progress, the abort's wake-up) takes them
    from its inbox one by one; its answer order decides, without waiting itself, which item is
    fed next. Both runners use it the same way (it decides, the runner waits), so one order
    serves the sync and the asyncio interpreter. This base class feeds each item as it arrives
    and lets a lone tool that cannot report progress run inline; LLM-only replay
    (:mod:`interpreters.replay`) gives its runs an order that feeds live tool answers in the
    order the recording has them.
    """

    __slots__ = ()

    runs_tools_inline: bool = True
    """Whether a lone tool call that cannot report progress and has no time limit may run
    without a hand-off (its answer is then in the inbox before the run waits)."""

    def tool_starting(self, run: Run, effect: ExecuteTool) -> None:
        """``run`` is about to start the tool call of ``effect``."""

    def due(self, run: Run) -> Any:
        """An item held back that is to be fed now, or :data:`WAIT`."""
        return WAIT

    def arrived(self, run: Run, item: Any) -> Any:
        """``item`` came out of the inbox: the item to feed now (``item``, or one held back
        before), or :data:`WAIT` to hold it and wait for the next one."""
        return item


AS_THEY_ARRIVE: Final = AnswerOrder()
"""The default order: each answer is fed as it arrives."""


class Run:
    """What the sync and asyncio runners share: the driver, the effects still to carry out
    (:meth:`effects` gives them one by one; a runner only carries them out and waits), feeding
    (an abort that fired is always fed before the next input), which answers still count, what
    a hook's answer becomes, and the one failure of user code that must stop the run and reach
    the caller (``KeyboardInterrupt``, ``SystemExit``). Its collaborators: :attr:`keys` (the API
    key, :class:`~interpreters.runtime.keys.Keys`) and :attr:`deadlines` (the tools' time
    limits and the abort's grace period, :class:`~interpreters.runtime.deadlines.Deadlines`)."""

    def __init__(
        self,
        state: LoopState,
        tools: Sequence[Any],
        config: AgentLoopConfig,
        first: Input | None,
        signal: AbortSignal | None,
        stream_fn: Any,
        journal: Journals,
        clock: Callable[[], int],
        outstanding: Sequence[Effect] = (),
        *,
        order: AnswerOrder | None = None,
    ) -> None:
        """Run from ``state``: feed ``first``, or (resuming) carry out ``outstanding`` effects.
        ``order`` decides in which order the answers the run waits for are fed (default: as
        they arrive). A state the core has already ended gives a run that is over."""
        if first is not None:
            # Check the first input now, so that a bad continue raises before any event.
            out = transition(state, first)
            if type(out) is Rejection:
                raise ValueError(out.reason)
        self.driver = Driver(state, journal, clock)  # (its journals may refuse the run: before anything is set up)
        self.config = config
        # The run's own signal: it follows the caller's, and also fires when the run is closed
        # before its end, so that tools and streams still running are told to stop.
        self.signal = AbortSignal()
        self.unlink: Callable[[], None] = (
            signal.add_callback(lambda: self.signal.abort(signal.reason)) if signal is not None else nothing
        )
        self.stream_fn = stream_fn if stream_fn is not None else self.default_stream_fn()
        self.registry = tool_registry(tools)
        self.clock = clock
        self.first = first
        self.order = order if order is not None else AS_THEY_ARRIVE
        self.pending: deque[Effect] = deque(outstanding)
        self.running: set[int] = set()
        self.deadlines = Deadlines()
        self.abort_fed = state.aborted  # a resumed run may have been aborted before
        suspended = first is None and isinstance(state.phase, Suspended)  # nothing to go on with
        self.finished = self.driver.ended or suspended
        self.fatal: BaseException | None = None
        resumed = type(first) is Resumed or (first is None and bool(outstanding))
        self.keys = Keys(config, self.driver.journals, self.signal, not self.finished and resumed)
        self.messages: tuple[AgentMessage, ...] = tuple(state.new_messages) if self.finished else ()
        self.suspension: Suspension | None = (
            Suspension(state, state.phase.pending) if suspended and isinstance(state.phase, Suspended) else None)
        """Set when the run suspended: what to resume it from."""

    abort_grace: float = 5.0
    """Seconds a running tool has, after an abort, to return before the run stops waiting for it
    (its result is then ``Operation aborted`` and a late answer is ignored)."""

    hook_grace: float = 0.02
    """Seconds a hook still running at an abort has to answer before the run stops waiting for
    it: an answer given as the abort lands (a queue hook handing over messages) is kept."""

    stream_grace: float = 1.0
    """Seconds a reply's stream has, after an abort, to end with its own final message (a
    provider that sees the abort ends with its aborted message: its error text and the usage
    already consumed), which then becomes the reply; the run reads nothing else of it. Past it
    (or at ``0``) the reply is closed with the library's own aborted message."""

    def default_stream_fn(self) -> Any:
        """The stream function used when none is given (the HTTP providers)."""
        return None

    def post(self, item: Any) -> None:
        """Put an answer into the run's inbox, from any thread (the runner's inbox)."""
        raise NotImplementedError

    def close(self) -> None:
        """The run's generator is closing: stop what still runs if the run did not end, and
        have the journals write what they hold (a run abandoned mid-stream is on disk now)."""
        self.unlink()
        if not self.finished:
            self.signal.abort("the run was closed before its end")
        self.deadlines.clear()
        for journal in self.driver.journals:
            journal.run_closed()

    @property
    def ended(self) -> bool:
        return self.finished or self.driver.ended

    # -- the effects

    def effects(self) -> Iterator[Any]:
        """What the runner carries out, in order: an ``Emit``, a ``CallLlm``, an ``ExecuteTool``,
        a hook effect, a :class:`~interpreters.runtime.hooks.KeyLookup`, or :data:`WAIT` (wait
        for an answer). ``RunEnded`` and ``CancelLlm`` are taken here; after the end, a fatal
        failure of user code is raised."""
        if not self.finished:
            lookup = self.keys.start(self.driver.state.run.model.provider)
            if lookup is not None:
                yield lookup  # carried out as a hook; the journals are told the key
        else:
            self.keys.used(self.driver.state.run.model.provider, self.config.api_key)
        if self.first is not None:
            self.feed(self.first)
        pending = self.pending
        while not self.finished:
            if not pending:
                yield WAIT
                continue
            effect = pending.popleft()
            kind = type(effect)
            if kind is RunEnded or kind is RunSuspended:
                self.end(effect)
            elif kind is not CancelLlm:  # a stream the core left behind was already closed
                yield effect
        self.raise_fatal()

    def take(self, item: Any) -> None:
        """An item out of the inbox: the abort's wake-up, or an answer (fed if it still counts)."""
        if item is WAKE:
            self.feed_abort()
        elif self.accept(item):
            self.feed(item)

    # -- feeding

    def feed(self, input: Input) -> None:
        """Feed an answer; then, if the signal fired meanwhile, the abort. (The answer goes
        first: it is a fact that already happened, e.g. messages a hook took off a queue.)"""
        if self.ended:
            return
        self.pending.extend(self.driver.feed(input))
        if not self.abort_fed and self.signal.aborted:
            self.feed_abort()

    def feed_abort(self, wait_for_stream: bool = False) -> None:
        """Feed the abort (once); ``wait_for_stream``: a reply's stream is read on for its
        final message (:class:`~interpreters.runtime.calls.ModelCall`)."""
        if self.abort_fed or self.ended:
            return
        self.abort_fed = True
        self.deadlines.abort_fed(self.abort_grace)
        self.pending.extend(self.driver.feed(AbortRequested(self.clock(), wait_for_stream)))

    def end(self, effect: Any) -> None:
        """The core ended the run (``RunEnded``) or suspended it (``RunSuspended``: the
        suspension is kept); a fatal failure of user code now reaches the caller, after the
        run's last event."""
        self.finished = True
        self.messages = effect.messages
        if type(effect) is RunSuspended:
            self.suspension = Suspension(self.driver.state, effect.pending)

    def raise_fatal(self) -> None:
        if self.fatal is not None:
            fatal, self.fatal = self.fatal, None
            raise fatal

    def stop_for(self, exc: BaseException) -> None:
        """User code raised ``KeyboardInterrupt`` or ``SystemExit``: abort the run; the
        exception is raised to the caller once the run has ended (with ``agent_end``)."""
        if self.fatal is None:
            self.fatal = exc
        self.signal.abort(f"{type(exc).__name__} in user code")

    def failed(self, exc: BaseException) -> str:
        """The text of a failure of user code (a fatal one also stops the run)."""
        if isinstance(exc, FATAL):
            self.stop_for(exc)
        return failure_text(exc)

    def ignored(self, exc: BaseException) -> None:
        """User code raised where nothing takes it (closing a stream); a fatal one stops the run."""
        if isinstance(exc, FATAL):
            self.stop_for(exc)  # raised to the caller once the run has ended

    def accept(self, item: Any) -> bool:
        """Whether an answer still counts: the core waits for it (not a hook the abort left
        behind, not a tool given up on or past its deadline)."""
        id_ = item.id
        if isinstance(item, (ToolFinished, ToolFailed)):
            if id_ not in self.running:
                return False
            self.running.discard(id_)
            if self.deadlines.tools:
                self.deadlines.drop(id_)
        elif isinstance(item, ToolUpdated):
            return id_ in self.running  # not progress reported after the tool returned
        return awaits(self.driver.state, id_)

    # -- hooks

    def hook_of(self, effect: Effect | KeyLookup) -> HookCall | None:
        """The call that carries out a hook effect (``None``: the run ended, an abort, first)."""
        return None if self.ended else hook_call(effect, self.config, self.registry, self.signal)

    def hook_returned(self, effect: Effect | KeyLookup, call: HookCall, returned: Returned | None) -> None:
        """Feed what the hook of ``effect`` gave: its answer, or ``HookFailed``; the abort when
        the run was aborted first (``None``) or the hook raised a fatal exception (the run stops
        as aborted, then the exception goes on). A :class:`~interpreters.runtime.hooks.KeyLookup`
        feeds nothing: the key ``get_api_key`` gave is told to the journals."""
        if type(effect) is KeyLookup:
            fatal = self.keys.looked_up(effect, returned)
            if fatal is not None:
                self.stop_for(fatal)
            return
        if returned is not None and isinstance(returned.error, FATAL):
            self.stop_for(returned.error)
            returned = None
        if returned is None:
            self.feed_abort()
            return
        try:
            answer = call.answer(returned.get(), self.clock())
        except BaseException as exc:
            answer = HookFailed(getattr(effect, "id"), self.failed(exc), self.clock())
        self.feed(answer)

    # -- waiting: the abort's grace period and the tools' deadlines

    def wait_limit(self) -> float | None:
        """Seconds the runner may wait for the next answer before :meth:`waited_too_long` has
        work to do (``None``: no limit)."""
        if not self.deadlines.tools and not self.abort_fed:
            return None
        return self.deadlines.limit(self.abort_fed and bool(self.running))

    def waited_too_long(self) -> list[int]:
        """The wait ran out: tools past their deadline time out (their ids are returned); after
        the abort's grace period, the tools still running are given up on."""
        expired = self.deadlines.expired()
        for id_, deadline in expired:
            self.running.discard(id_)
            self.feed(ToolTimedOut(id_, deadline.ms, self.clock()))
        if self.abort_fed and self.running and self.deadlines.abort_grace_over():
            self.give_up_on_tools()
        return [id_ for id_, _ in expired]

    def grace_text(self) -> str:
        return f"{ABORTED_TEXT} (the tool did not stop within {self.abort_grace:g} s of the abort)"

    def give_up_on_tools(self) -> None:
        """The abort's grace period is over: the tools still running get an aborted result."""
        text = self.grace_text()
        for id_ in sorted(self.running):
            self.running.discard(id_)
            self.deadlines.drop(id_)
            self.feed(ToolFailed(id_, text, self.clock()))

    # -- tools

    def timeout_of(self, tool: AgentTool | None) -> int | None:
        """The time limit of one call of ``tool`` in ms (``None``: no limit)."""
        ms = tool.timeout_ms if tool is not None and tool.timeout_ms is not None else self.config.tool_timeout_ms
        return ms or None

    def tool_starts(self, effect: ExecuteTool) -> AbortSignal | None:
        """Book a tool call as running; the signal to give it (its own, when it has a deadline).
        ``None``: not to be started (the run ended, or the abort fired: its answer is posted)."""
        self.order.tool_starting(self, effect)
        if self.ended:
            return None
        self.running.add(effect.id)
        signal = self.signal
        ms = self.timeout_of(self.registry.get(effect.tool_call.name))
        if ms is not None:
            signal = self.deadlines.add(effect.id, ms, self.signal)
        if self.signal.aborted:
            self.feed_abort()
            self.post(ToolFailed(effect.id, ABORTED_TEXT, self.clock()))
            return None
        return signal

    def quiet_lone_tool(self, effect: ExecuteTool) -> AgentTool | None:
        """The tool of ``effect`` when it is the only call running, cannot report progress, has
        no time limit and the run's :class:`AnswerOrder` lets tools run inline (runners may then
        run it without a hand-off to a thread or task)."""
        tool = self.registry.get(effect.tool_call.name)
        if (
            tool is None
            or not self.order.runs_tools_inline
            or getattr(tool.execute, "reports_progress", True) is not False
            or len(self.running) != 1
            or effect.id in self.deadlines.tools
            or any(isinstance(e, ExecuteTool) for e in self.pending)
        ):
            return None
        return tool

    def result(self) -> list[AgentMessage]:
        return list(self.messages)
