"""The driver protocol shared by every interpreter.

An interpreter owns a :class:`Driver` (the core's state plus ``feed``) and carries out effects.
Everything that does not depend on *how* it waits (threads or asyncio) lives here, so the sync
and asyncio runners are twins, kept parallel method for method (as httpx keeps ``Client`` and
``AsyncClient``), that differ only in how they call things and wait for answers:

- :meth:`Driver.feed` steps the core, raises :class:`InterpreterError` on a rejection (that is a
  bug in the interpreter, never a user error) and reports each step to the run's journals
  (:class:`Journal`: the recorder, the tracer, your own observers).
- :class:`Run` is what both runners share: :meth:`Run.effects` walks the effects (each runner
  only carries out what it gives), feeding, the abort, what a hook's answer becomes, tools'
  deadlines. Its :class:`AnswerOrder` is the public strategy that decides in which order the
  answers it waits for reach the core (as they arrive; LLM-only replay feeds them in the
  recorded order).
- :class:`ModelCall` is one model call but for reading the stream: :meth:`ModelCall.received`
  feeds one stream event. :class:`ToolRun` is one tool call but for where it runs.
- :func:`hook_call` maps a hook effect to the user's callable, its arguments, and the input that
  carries its answer back.
- :func:`tool_call` does the same for ``ExecuteTool``; :func:`stream_options` builds the options
  of a model call.
- :func:`failure_text` turns an exception into the text the model or the user will see.
- :func:`with_signal` passes the run's signal to the callables that take one;
  :func:`prompt_messages` and :func:`polled_messages` check what users hand the loop.
"""

from __future__ import annotations

import abc
import inspect
import logging
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from pyrsistent import PVector, pvector

from agentcore import (
    ABORTED_TEXT,
    SUSPENSION_VERSION,
    AbortRequested,
    AfterToolCall,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    Approve,
    AssistantMessage,
    BashExecutionMessage,
    BeforeToolCall,
    BeforeToolCallResult,
    BranchSummaryMessage,
    CallLlm,
    CancelLlm,
    CheckApproval,
    CompactionSummaryMessage,
    ConvertToLlm,
    DecideToolCall,
    Decision,
    Deny,
    DoneEvent,
    Effect,
    Emit,
    ErrorEvent,
    ExecuteTool,
    HookFailed,
    Input,
    LlmContext,
    LoopState,
    NextTurn,
    PartialAssistantMessage,
    PendingCall,
    PollFollowUps,
    PollSteering,
    PrepareArguments,
    PrepareNextTurn,
    Resumed,
    RunEnded,
    RunSuspended,
    ShouldStopAfterTurn,
    StreamEventReceived,
    StreamFailed,
    StreamOptions,
    Suspension,
    TextContent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallDeltaEvent,
    ToolFailed,
    ToolFinished,
    ToolOutput,
    ToolResultMessage,
    ToolSpec,
    ToolTimedOut,
    ToolUpdated,
    TransformContext,
    UserMessage,
    awaits,
    stream_event_problem,
    thaw,
)
from agentcore.batch import decisions_problem, waits_problem
from agentcore.codec import PartialFold
from agentcore.hooks import (
    AFTER_TOOL_CALL,
    BEFORE_TOOL_CALL,
    CONVERT_TO_LLM,
    GET_API_KEY,
    GET_FOLLOW_UP_MESSAGES,
    GET_STEERING_MESSAGES,
    HOOK_OF_EFFECT,
    PREPARE_ARGUMENTS,
    PREPARE_NEXT_TURN,
    TRANSFORM_CONTEXT,
    Hook,
)
from agentcore.machine import Rejection, transition
from agentcore.records import is_message, replace
from agentcore.state import Suspended
from agentcore.suspension import run_settings
from agentcore.texts import STREAM_ENDED_TEXT, suspension_version_text

from ..secrets import REDACTED, environment_key
from ..signal import AbortSignal, StopRun
from .clock import now_ms

__all__ = [
    "AS_THEY_ARRIVE",
    "AnswerOrder",
    "WAIT",
    "WAKE",
    "END",
    "Driver",
    "HookCall",
    "InterpreterError",
    "Journal",
    "KeyLookup",
    "Journals",
    "ModelCall",
    "Returned",
    "Run",
    "ToolRun",
    "FATAL",
    "NO_STREAM_FN",
    "check_run_arguments",
    "resumed_input",
    "checked_suspension",
    "suspended_state",
    "with_config_model",
    "deliver",
    "is_message",
    "observers",
    "tool_scopes",
    "failure_text",
    "hook_call",
    "polled_messages",
    "prompt_messages",
    "stream_options",
    "stream_start_timeout_text",
    "tool_registry",
    "with_signal",
]

_log = logging.getLogger("agentcore")


class InterpreterError(RuntimeError):
    """The core rejected an input: the interpreter fed something out of protocol."""


class Journal(abc.ABC):
    """Observes a run: the driver calls :meth:`record` after every step of the core.

    The transcript recorder and the OpenTelemetry tracer are journals; write your own by
    subclassing this class and defining :meth:`record`. The other methods are part of the
    protocol too, and do nothing here: override the ones your observer needs.
    """

    __slots__ = ()

    @abc.abstractmethod
    def record(self, step: int, input: Input, effects: Sequence[Effect]) -> None:
        """Step ``step`` fed ``input`` to the core, which asked for ``effects``."""

    def tool_scope(self, effect: ExecuteTool) -> AbstractContextManager[Any]:
        """A context manager the interpreter enters around the execution of ``effect``'s tool,
        in the thread or task that runs it (a tracer makes the tool's own spans children of its
        ``execute_tool`` span this way)."""
        return nullcontext()

    def flush(self) -> None:
        """Write what is held back (the run's event stream closed: see :meth:`run_closed`)."""

    def run_started(self, state: LoopState) -> None:
        """The run starts from ``state``, before its first step (a resumed run: its suspended
        state). A journal that cannot observe this run (a recorder that recorded one already)
        raises here, before anything runs."""

    def run_closed(self) -> None:
        """The run's event stream closed (at the run's end, or abandoned before it): the run
        goes no further. Calls :meth:`flush`; the transcript recorder also closes its file."""
        self.flush()

    def add_secrets(self, values: Sequence[str]) -> None:
        """API keys the run resolved (``get_api_key``'s answer, the provider's environment
        variable): keep them out of whatever is written."""

    def keys_pending(self, pending: bool) -> None:
        """``True``: the run will use an API key that ``get_api_key`` has not given yet, and
        what the run does meanwhile may quote it (a conversation holding it, a tool's result):
        hold back what would be written. ``False``: the key is known now (:meth:`add_secrets`
        was told it first) or the run goes on without it: write what is held. (The transcript
        recorder holds its lines; a journal that writes nothing needs do nothing.)"""


Journals: TypeAlias = "Journal | Sequence[Journal] | None"
"""What ``journal=`` accepts: one observer, several, or none."""


def observers(journal: Journals) -> tuple[Journal, ...]:
    """``journal=`` as a tuple of observers (``TypeError`` for what is not a :class:`Journal`)."""
    if journal is None:
        return ()
    found: tuple[Any, ...] = tuple(journal) if isinstance(journal, (list, tuple)) else (journal,)
    for item in found:
        if not isinstance(item, Journal):
            raise TypeError(f"journal= takes Journal instances (a TranscriptRecorder, a TracingObserver, "
                            f"or a subclass of interpreters.runtime.driver.Journal), not {_a(type(item).__name__)}")
    return found


def tool_scopes(journals: Sequence[Journal], effect: ExecuteTool) -> list[AbstractContextManager[Any]]:
    """The context managers the observers want around one tool execution."""
    return [j.tool_scope(effect) for j in journals]


class Driver:
    """The core's state and the one way to advance it."""

    __slots__ = ("state", "steps", "journals", "clock", "fed")

    def __init__(self, state: LoopState, journal: Journals = None, clock: Callable[[], int] = now_ms) -> None:
        self.state = state
        self.steps = 0
        self.fed = False
        self.journals = observers(journal)
        self.clock = clock
        started: list[Journal] = []
        try:
            for observer in self.journals:
                observer.run_started(state)
                started.append(observer)
        except BaseException:
            for observer in started:  # the run will not start: those told it did let go (of a file)
                observer.run_closed()
            raise

    @property
    def ended(self) -> bool:
        """True once the core has ended the run, or suspended it (this run takes no more input;
        a driver that starts from a suspended state takes the decisions first)."""
        name = self.state.phase.name
        return name == "finished" or (name == "suspended" and self.fed)

    def feed(self, input: Input) -> tuple[Effect, ...]:
        out = transition(self.state, input)
        if type(out) is Rejection:
            raise InterpreterError(f"the core rejected an input: {out}")
        self.state, effects = out  # type: ignore[misc]
        self.steps += 1
        self.fed = True
        for journal in self.journals:
            journal.record(self.steps, input, effects)
        return effects


@dataclass(slots=True)
class _Deadline:
    """A running tool call with a time limit: when it expires and the signal it was given."""

    at: float
    ms: int
    signal: AbortSignal
    unlink: Callable[[], None]


WAIT: Final = object()
"""What an :class:`AnswerOrder` gives when nothing is to be fed yet, and what
:meth:`Run.effects` gives when the run has nothing to do but wait: the runner waits for the
next item of its inbox."""

WAKE: Final = object()
"""What a runner posts to its inbox when the run's signal fires: the wake-up that has the
abort fed."""

END: Final = object()
"""What a runner gives :meth:`ModelCall.received` when the stream has no more events."""


@dataclass(frozen=True, slots=True)
class KeyLookup:
    """Not an effect of the core: what :meth:`Run.effects` gives a runner, as a hook to carry
    out, when a resumed run asks ``get_api_key`` for ``provider``'s key before its first step
    (:attr:`Run.keys_first`). Its answer is told to the journals; nothing is fed to the core."""

    provider: str


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
    a hook's answer becomes, the tools' deadlines, and the one failure of user code that must
    stop the run and reach the caller (``KeyboardInterrupt``, ``SystemExit``)."""

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
            signal.add_callback(lambda: self.signal.abort(signal.reason)) if signal is not None else _nothing
        )
        self.stream_fn = stream_fn if stream_fn is not None else self.default_stream_fn()
        self.registry = tool_registry(tools)
        self.clock = clock
        self.first = first
        self.order = order if order is not None else AS_THEY_ARRIVE
        self.pending: deque[Effect] = deque(outstanding)
        self.running: set[int] = set()
        self.deadlines: dict[int, _Deadline] = {}
        self.abort_fed = state.aborted  # a resumed run may have been aborted before
        self.abort_deadline = 0.0
        suspended = first is None and isinstance(state.phase, Suspended)  # nothing to go on with
        self.finished = self.driver.ended or suspended
        self.fatal: BaseException | None = None
        self.secrets_told: set[str] = set()
        self.keys_first = not self.finished and (type(first) is Resumed or (first is None and bool(outstanding)))
        """A resumed run (decisions, or effects left outstanding by a crash) asks ``get_api_key``
        before its first step when it has journals: its first lines (a tool's result) come
        before its first model call, and must already be scrubbed of the key."""
        self.keys_held = False
        """The journals hold back what they write until a ``get_api_key`` answer tells them the
        key (:meth:`Journal.keys_pending`)."""
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
        for deadline in self.deadlines.values():
            deadline.unlink()
        self.deadlines.clear()
        for journal in self.driver.journals:
            journal.run_closed()

    @property
    def ended(self) -> bool:
        return self.finished or self.driver.ended

    # -- the effects

    def effects(self) -> Iterator[Any]:
        """What the runner carries out, in order: an ``Emit``, a ``CallLlm``, an ``ExecuteTool``,
        a hook effect, or :data:`WAIT` (wait for an answer). ``RunEnded`` and ``CancelLlm`` are
        taken here; after the end, a fatal failure of user code is raised."""
        provider = self.driver.state.run.model.provider
        if self.config.get_api_key is not None and self.driver.journals and not self.finished:
            if self.keys_first:
                yield KeyLookup(provider)  # carried out as a hook; the journals are told the key
            else:  # a fresh run: held until its first model call asks get_api_key (no extra call)
                self.keys_used(provider, self.config.api_key)
                self.hold_for_key(True)
        else:
            self.keys_used(provider, self.config.api_key)
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
        final message (:class:`ModelCall`)."""
        if self.abort_fed or self.ended:
            return
        self.abort_fed = True
        self.abort_deadline = time.monotonic() + self.abort_grace
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
            deadline = self.deadlines.pop(id_, None)
            if deadline is not None:
                deadline.unlink()
        elif isinstance(item, ToolUpdated):
            return id_ in self.running  # not progress reported after the tool returned
        return awaits(self.driver.state, id_)

    # -- hooks and the API key

    def hook_returned(self, effect: Effect | KeyLookup, call: HookCall, returned: Returned | None) -> None:
        """Feed what the hook of ``effect`` gave: its answer, or ``HookFailed``; the abort when
        the run was aborted first (``None``) or the hook raised a fatal exception (the run stops
        as aborted, then the exception goes on). A :class:`KeyLookup` feeds nothing: the key
        ``get_api_key`` gave is told to the journals."""
        if type(effect) is KeyLookup:
            self.key_looked_up(effect, returned)
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

    def key_looked_up(self, lookup: KeyLookup, returned: Returned | None) -> None:
        """What ``get_api_key`` gave at a resumed run's start: the journals are told the key
        (the config's ``api_key`` when it gave none). What it raised is left to the first model
        call, which asks again and reports it (a fatal exception stops the run); meanwhile the
        journals hold back what they write, which may quote the key not known yet."""
        key = self.config.api_key
        known = False
        if returned is not None:
            if isinstance(returned.error, FATAL):
                self.stop_for(returned.error)
            elif returned.error is None:
                known = True
                if isinstance(returned.value, str) and returned.value:
                    key = returned.value
        self.keys_used(lookup.provider, key)
        if not known:
            self.hold_for_key(True)

    def hold_for_key(self, held: bool) -> None:
        """Have the journals hold back what they write until the key is known (``True``), or
        write it (``False``)."""
        if held == self.keys_held:
            return
        self.keys_held = held
        for journal in self.driver.journals:
            journal.keys_pending(held)

    def key_call(self, effect: CallLlm) -> HookCall | None:
        """``get_api_key`` for ``effect``, called like a hook (``None``: the config has none)."""
        get = self.config.get_api_key
        if get is None:
            return None
        return _hook(GET_API_KEY.name, get, (effect.model.provider,), _no_answer, self.signal)

    def resolved_key(self, effect: CallLlm, returned: Returned | None) -> str | None:
        """The key of a model call: what ``get_api_key`` returned (what it raised is raised)
        wins over ``api_key``; the journals are told."""
        key = self.config.api_key
        if returned is not None:
            key = returned.get() or key
        self.keys_used(effect.model.provider, key)
        if self.keys_held:
            self.hold_for_key(False)
        return key

    def keys_used(self, provider: str, key: str | None) -> None:
        """Tell the journals (a recorder, a tracer) the API keys this model call may use: the
        resolved ``key`` and the provider's environment variable, so that no line or attribute
        holds one, whatever its shape."""
        found = [k for k in (key, environment_key(provider)) if k and k not in self.secrets_told]
        if not found:
            return
        self.secrets_told.update(found)
        for journal in self.driver.journals:
            journal.add_secrets(found)

    # -- waiting: the abort's grace period and the tools' deadlines

    def wait_limit(self) -> float | None:
        """Seconds the runner may wait for the next answer before :meth:`waited_too_long` has
        work to do (``None``: no limit)."""
        now = time.monotonic()
        limit: float | None = None
        if self.abort_fed and self.running:
            limit = self.abort_deadline - now
        if self.deadlines:
            first = min(d.at for d in self.deadlines.values()) - now
            limit = first if limit is None else min(limit, first)
        return None if limit is None else max(0.0, limit)

    def waited_too_long(self) -> list[int]:
        """The wait ran out: tools past their deadline time out (their ids are returned); after
        the abort's grace period, the tools still running are given up on."""
        now = time.monotonic()
        expired = sorted(i for i, d in self.deadlines.items() if d.at <= now)
        for id_ in expired:
            deadline = self.deadlines.pop(id_)
            deadline.unlink()
            deadline.signal.abort(f"the tool timed out after {deadline.ms} ms")
            self.running.discard(id_)
            self.feed(ToolTimedOut(id_, deadline.ms, self.clock()))
        if self.abort_fed and self.running and self.abort_deadline <= now:
            self.give_up_on_tools()
        return expired

    def grace_text(self) -> str:
        return f"{ABORTED_TEXT} (the tool did not stop within {self.abort_grace:g} s of the abort)"

    def give_up_on_tools(self) -> None:
        """The abort's grace period is over: the tools still running get an aborted result."""
        text = self.grace_text()
        for id_ in sorted(self.running):
            self.running.discard(id_)
            deadline = self.deadlines.pop(id_, None)
            if deadline is not None:
                deadline.unlink()
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
            own = AbortSignal()
            run_signal = self.signal
            unlink = run_signal.add_callback(lambda: own.abort(run_signal.reason))
            self.deadlines[effect.id] = _Deadline(time.monotonic() + ms / 1000, ms, own, unlink)
            signal = own
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
            or effect.id in self.deadlines
            or any(isinstance(e, ExecuteTool) for e in self.pending)
        ):
            return None
        return tool

    def result(self) -> list[AgentMessage]:
        return list(self.messages)


class Returned:
    """What user code gave: its value, or the exception it raised (carried out of a thread)."""

    __slots__ = ("value", "error")

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value = value
        self.error = error

    def get(self) -> Any:
        """The value; what the code raised is raised."""
        if self.error is not None:
            raise self.error
        return self.value


class ModelCall:
    """One model call (``CallLlm``) as both runners carry it out, all but reading the stream.

    A runner checks :attr:`may_start`, resolves the key, :meth:`open` s the stream, and gives
    each item it reads to :meth:`received` (which feeds the core), then :data:`END`; what goes
    wrong is kept (:meth:`fail`) and, once the stream is closed, :meth:`end` feeds it, or the
    abort. An item that is not a stream event never reaches the core (a transcript could not
    hold it); an event whose partial is an ``AssistantMessage`` (pi-ai style) reaches it with
    the library's partial, folded from the events' own fields, so that a transcript reproduces
    exactly what the core read.

    An abort while the stream is open is fed as one that waits for the stream
    (``AbortRequested(wait_for_stream=True)``): the runner reads on until the stream's final
    event, which is fed (the core makes it the aborted reply), dropping any other, for
    :attr:`Run.stream_grace` seconds (:meth:`reads_on`); past that, or when the stream ends
    otherwise, :meth:`end` feeds ``StreamFailed`` and the core closes the reply itself."""

    __slots__ = ("run", "effect", "id", "signal", "failure", "over", "fold", "feed_core", "clock", "pending",
                 "opened", "waiting", "deadline", "start_timeout_ms", "stream_signal", "unlink")

    def __init__(self, run: Run, effect: CallLlm) -> None:
        self.run = run
        self.effect = effect
        self.id = effect.id
        self.signal = run.signal
        self.failure: str | None = None if run.stream_fn is not None else NO_STREAM_FN.format(api=effect.model.api)
        self.over = False
        self.fold: PartialFold | None = None
        # Only the stream function's own failures become StreamFailed: an error while feeding
        # the core (a journal that cannot write) is the caller's and propagates.
        self.feed_core, self.clock, self.pending = run.driver.feed, run.clock, run.pending
        self.opened = False
        """The runner has the stream to read (set by it): there is a stream to read on after
        an abort."""
        self.waiting = False
        """The abort was fed as one that waits for the stream's final event."""
        self.deadline: float | None = None
        """After an abort, the ``time.monotonic()`` until which the stream is read on."""
        ms = run.config.stream_start_timeout_ms
        self.start_timeout_ms: int | None = ms or None
        """The time the stream has to give its first item (``stream_start_timeout_ms``)."""
        self.stream_signal = self.signal
        """The signal the stream function gets: the run's, or, with a start timeout, its own
        (following the run's), aborted when the stream does not start in time."""
        self.unlink: Callable[[], None] = _nothing
        if ms:
            own = self.stream_signal = AbortSignal()
            run_signal = self.signal
            self.unlink = run_signal.add_callback(lambda: own.abort(run_signal.reason))

    @property
    def may_start(self) -> bool:
        """There is a stream function, nothing failed, no abort (no model call starts after one)."""
        return self.failure is None and not self.signal.aborted

    def open(self, api_key: str | None) -> Any:
        """Call the stream function: what it returns (events, as the runner can read them)."""
        run, effect = self.run, self.effect
        options = stream_options(effect, run.config, api_key, self.stream_signal)
        return run.stream_fn(effect.model, llm_context(effect), options)

    def start_timed_out(self) -> None:
        """The stream gave no item within its start timeout: it is told to stop (its own
        signal) and left; the reply ends with the timeout's error."""
        ms = self.start_timeout_ms
        self.failure = stream_start_timeout_text(ms or 0)
        self.stream_signal.abort(f"the stream did not start within {ms} ms")

    def may_wait(self) -> bool:
        """After an abort, whether the stream is to be read on for its final event: it is
        open, the run has a grace period for it and the abort was not fed another way."""
        return self.waiting or (self.opened and self.run.stream_grace > 0 and not self.run.abort_fed)

    def grace_deadline(self) -> float:
        """The ``time.monotonic()`` until which the stream is read on after the abort (set the
        first time it is asked for: when the runner sees the abort)."""
        if self.deadline is None:
            self.deadline = time.monotonic() + self.run.stream_grace
        return self.deadline

    def reads_on(self) -> bool:
        """The abort fired: whether to go on reading the stream for its final event. The first
        time, the abort is fed as one that waits for it; ``False`` once the grace period is
        over (or when there is none)."""
        if not self.waiting:
            if not self.may_wait():
                return False
            deadline = self.grace_deadline()
            self.waiting = True
            self.run.feed_abort(wait_for_stream=True)
        else:
            deadline = self.grace_deadline()
        return time.monotonic() < deadline

    def grace_text(self) -> str:
        return f"the stream did not end within {self.run.stream_grace:g} s of the abort"

    def fail(self, exc: BaseException) -> None:
        """The stream function raised ``exc`` (calling it, or reading it)."""
        self.failure = self.run.failed(exc)

    def received(self, event: Any) -> Sequence[Any] | None:
        """Feed one item of the stream: the ``Emit`` s to give now (:attr:`over` once the reply
        is over), or ``None`` to drop the stream (an abort, its end, an item that is not a stream
        event).
        The common case, a delta carrying the library's partial, costs two lookups."""
        if self.signal.aborted:
            if not self.waiting and not self.reads_on():
                return None
            return self.received_after_abort(event)
        if type(event) not in _DELTA_TYPES or type(event.partial) is not PartialAssistantMessage:
            if event is END:  # without done or error
                self.failure = STREAM_ENDED_TEXT
                return None
            problem = stream_event_problem(event)
            if problem is not None:
                self.failure = problem
                return None
            if type(getattr(event, "partial", None)) is AssistantMessage:
                if self.fold is None:
                    self.fold = PartialFold()
                event = self.fold.adopt(event)
        return self.took(self.feed_core(StreamEventReceived(self.id, event, self.clock())))

    def took(self, effects: Sequence[Any]) -> Sequence[Any]:
        """What the core gave for a stream event: the ``Emit`` s to give now; anything else
        means the reply is over (:attr:`over`) and goes to the run's pending effects."""
        for out in effects:
            if type(out) is not Emit:
                break
        else:
            return effects
        self.over = True  # the reply is over: the core asks for what comes next
        emits = []
        for out in effects:
            if type(out) is Emit:
                emits.append(out)
            else:
                self.pending.append(out)
        return emits

    def received_after_abort(self, event: Any) -> Sequence[Any] | None:
        """An item read after the abort (fed as one that waits for the stream): its final
        event is fed, even a little past the grace period (it was read); any other item is
        dropped, ``()`` to read on, ``None`` once the grace period is over."""
        kind = type(event)
        if kind is DoneEvent or kind is ErrorEvent:
            problem = stream_event_problem(event)
            if problem is not None:
                self.failure = problem
                return None
            return self.took(self.feed_core(StreamEventReceived(self.id, event, self.clock())))
        if event is END:
            self.failure = STREAM_ENDED_TEXT
            return None
        return () if time.monotonic() < self.grace_deadline() else None

    def end(self) -> None:
        """The stream is closed: feed its failure, else the abort (nothing once it is over).
        After an abort that waited for the stream, ``StreamFailed`` says why its final event
        did not come (the core then closes the reply itself)."""
        self.unlink()
        if self.over:
            return
        run = self.run
        if self.signal.aborted or run.abort_fed:
            if self.may_wait():
                if not self.waiting:  # the abort landed as the stream ended or was left
                    self.waiting = True
                    run.feed_abort(wait_for_stream=True)
                run.feed(StreamFailed(self.id, self.failure or self.grace_text(), self.clock()))
            else:
                run.feed_abort()
            return
        if self.failure is not None:
            run.feed(StreamFailed(self.id, self.failure, self.clock()))
            return
        run.feed_abort()


class ToolRun:
    """One tool call as both runners carry it out, wherever it runs: the tool and its
    arguments, its progress (:meth:`on_update`, posted while the call is open), the journals'
    scopes around it, and its outcome (posted by :meth:`close`)."""

    __slots__ = ("run", "effect", "id", "signal", "open", "clock", "post")

    def __init__(self, run: Run, effect: ExecuteTool, signal: AbortSignal) -> None:
        self.run = run
        self.effect = effect
        self.id = effect.id
        self.signal = signal
        self.open = True
        self.clock = run.clock
        self.post = run.post

    def on_update(self, partial: Any) -> None:
        if self.open:
            self.post(ToolUpdated(self.id, partial, self.clock()))

    def call(self) -> tuple[AgentTool, tuple[Any, ...]]:
        """The tool and the arguments of its ``execute`` (``LookupError`` without one)."""
        effect = self.effect
        tool = tool_call(effect, self.run.registry)
        return tool, (effect.tool_call.id, thaw(effect.args), self.signal, self.on_update)

    def scope(self) -> AbstractContextManager[Any]:
        """The context managers the journals want around the execution, as one."""
        journals = self.run.driver.journals
        if not journals:
            return _NO_SCOPE
        stack = ExitStack()
        try:
            for scope in tool_scopes(journals, self.effect):
                stack.enter_context(scope)
        except BaseException:
            stack.close()
            raise
        return stack

    def finished(self, tool: AgentTool, value: Any) -> Input:
        return ToolFinished(self.id, tool_result(tool.name, value), self.clock())

    def failed(self, exc: BaseException) -> Input:
        """A tool must never take the run down: what it raised is an error result."""
        return ToolFailed(self.id, self.run.failed(exc), self.clock())

    def close(self, outcome: Input) -> None:
        """Post the outcome; progress reported after it is dropped."""
        self.open = False
        self.post(outcome)


_NO_SCOPE: Final = nullcontext()


def _no_answer(value: Any, at: int) -> Input:
    raise TypeError("get_api_key answers with a key (Run.resolved_key), not an input")


def _nothing() -> None:
    return None


FATAL: Final = (KeyboardInterrupt, SystemExit, StopRun)
"""Exceptions of user code that stop the run (which still ends with ``agent_end``) and are then
raised to the caller; every other exception becomes an error result or a failed reply."""


def stream_start_timeout_text(ms: int) -> str:
    """The ``error_message`` of a reply whose stream did not start in time.

    >>> stream_start_timeout_text(250)
    'Model call timed out: the stream gave no event within 250 ms (stream_start_timeout_ms=250)'
    """
    return f"Model call timed out: the stream gave no event within {ms} ms (stream_start_timeout_ms={ms})"


def failure_text(exc: BaseException) -> str:
    """The message of an exception, or its type name when it has none.

    >>> failure_text(ValueError("bad")), failure_text(StopIteration())
    ('bad', 'StopIteration')
    """
    cause = exc.__cause__
    if (isinstance(exc, RuntimeError) and isinstance(cause, (StopIteration, StopAsyncIteration))
            and str(exc).endswith(f" raised {type(cause).__name__}")):
        exc = cause  # PEP 479 turned what the user raised into a RuntimeError
    try:
        text = str(exc)
    except Exception:  # an exception whose __str__ fails still has a name
        return f"{type(exc).__name__} (its message could not be read)"
    return text if text else type(exc).__name__


def tool_registry(tools: Sequence[AgentTool | ToolSpec]) -> dict[str, AgentTool]:
    """Name → tool for the tools that have an implementation (first declaration wins)."""
    registry: dict[str, AgentTool] = {}
    for tool in tools:
        if isinstance(tool, AgentTool):
            registry.setdefault(tool.name, tool)
    return registry


# --------------------------------------------------------------------------- the signal

SignalPlace: TypeAlias = Literal["", "positional", "keyword"]
_signal_places: weakref.WeakKeyDictionary[Any, dict[int, SignalPlace]] = weakref.WeakKeyDictionary()


def _signal_place(fn: Any, own: int) -> SignalPlace:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature (some builtins): called as before
        return ""
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) > own and (positional[own].name == "signal" or positional[own].default is inspect.Parameter.empty):
        return "positional"
    if any(p.name == "signal" and p.kind is p.KEYWORD_ONLY for p in params):
        return "keyword"
    return ""


def signal_place(fn: Any, own: int) -> SignalPlace:
    """Where ``fn``, called with ``own`` arguments of its own, takes the run's signal: as the
    next positional argument (a parameter there named ``signal`` or without a default), as
    the keyword ``signal``, or not at all (``""``). Cached per callable.

    >>> signal_place(lambda event, signal: None, 1), signal_place(lambda event: None, 1)
    ('positional', '')
    >>> signal_place(lambda *, signal=None: None, 0), signal_place(print, 1)
    ('keyword', '')
    """
    target = getattr(fn, "__func__", None)  # a bound method: cache on its function
    if target is not None:
        own += 1
    else:
        target = fn
    try:
        places = _signal_places.get(target)
    except TypeError:  # not weakly referenceable
        return _signal_place(target, own)
    if places is None:
        places = {}
        try:
            _signal_places[target] = places
        except TypeError:
            return _signal_place(target, own)
    place = places.get(own)
    if place is None:
        place = places[own] = _signal_place(target, own)
    return place


def with_signal(fn: Any, args: tuple[Any, ...], signal: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` to call ``fn`` with: ``args``, plus ``signal`` where ``fn`` takes it."""
    place = signal_place(fn, len(args))
    if place == "positional":
        return (*args, signal), {}
    if place == "keyword":
        return args, {"signal": signal}
    return args, {}


# --------------------------------------------------------------------------- what users hand in


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:120] + "..."


def _a(name: str) -> str:
    """``name`` with its indefinite article: ``a dict``, ``an int``."""
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


_MESSAGE_HINT: Final = ("a message (UserMessage, AssistantMessage, ToolResultMessage, ... or an "
                        "application's own record with a role)")


def prompt_messages(prompts: Any, clock: Callable[[], int], where: str = "agent_loop() argument 'prompts'"
                    ) -> tuple[AgentMessage, ...]:
    """The prompt of a run: a ``str`` (one user message), one message, or a list or tuple of
    messages. Anything else is a ``TypeError`` naming what was given and what is accepted.

    >>> prompt_messages("hi", lambda: 5)
    (UserMessage(content='hi', timestamp=5),)
    >>> prompt_messages({"role": "user", "content": "hi"}, lambda: 0)
    Traceback (most recent call last):
    ...
    TypeError: agent_loop() argument 'prompts' must be a str, a message or a list of messages, not a dict ({'role': 'user', 'content': 'hi'}); build the message instead, e.g. UserMessage("hi")
    """
    if isinstance(prompts, str):
        return (UserMessage(prompts, timestamp=clock()),)
    if is_message(prompts):
        return (prompts,)
    if isinstance(prompts, (list, tuple)):
        for i, item in enumerate(prompts):
            if not is_message(item):
                raise TypeError(
                    f"{where}[{i}] must be {_MESSAGE_HINT}, not {_a(type(item).__name__)} ({_shown(item)})"
                    + ("; pass one str, or UserMessage(...) items" if isinstance(item, str) else "")
                )
        return tuple(prompts)
    hint = '; build the message instead, e.g. UserMessage("hi")' if isinstance(prompts, Mapping) else ""
    raise TypeError(f"{where} must be a str, a message or a list of messages, "
                    f"not {_a(type(prompts).__name__)} ({_shown(prompts)}){hint}")


def polled_messages(hook: str, value: Any) -> tuple[Any, ...]:
    """What a queue hook returned, as messages: ``None`` or a list or tuple of messages."""
    if value is None:
        return ()
    if is_message(value):
        raise TypeError(f"{hook} returned a single {type(value).__name__}; expected a list of messages")
    if not isinstance(value, (list, tuple)) and (isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__")):
        raise TypeError(f"{hook} returned {_a(type(value).__name__)} ({_shown(value)}); expected a list of messages")
    items = tuple(value)
    for i, item in enumerate(items):
        if not is_message(item):
            raise TypeError(f"{hook} returned a list whose item {i} is {_a(type(item).__name__)} "
                            f"({_shown(item)}); expected {_MESSAGE_HINT}")
    return items


def check_run_arguments(context: Any, config: Any, signal: Any, stream_fn: Any, fn: str) -> None:
    """The loop's other arguments have the right types (``TypeError`` naming the one that does not)."""
    if not isinstance(context, AgentContext):
        raise TypeError(f"{fn}() argument 'context' must be an AgentContext, not {_a(type(context).__name__)}")
    if not isinstance(config, AgentLoopConfig):
        raise TypeError(f"{fn}() argument 'config' must be an AgentLoopConfig, not {_a(type(config).__name__)}")
    if signal is not None and not (hasattr(signal, "aborted") and hasattr(signal, "add_callback")):
        raise TypeError(f"{fn}() argument 'signal' must be an AbortSignal or None, not {_a(type(signal).__name__)}")
    if stream_fn is not None and not callable(stream_fn):
        raise TypeError(f"{fn}() argument 'stream_fn' must be callable or None, not {_a(type(stream_fn).__name__)}")


# --------------------------------------------------------------------------- hooks


@dataclass(frozen=True, slots=True)
class HookCall:
    """How to carry out one hook effect: call ``fn(*args, **kwargs)`` and wrap the value with
    ``answer``."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    answer: Callable[[Any, int], Input]
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def call(self) -> Any:
        return self.fn(*self.args, **self.kwargs)


_MESSAGE_TYPES: Final = frozenset(
    t for t in (UserMessage, AssistantMessage, ToolResultMessage, BashExecutionMessage,
                CompactionSummaryMessage, BranchSummaryMessage))


def _history(hook: str, value: Any) -> PVector[Any]:
    """What ``transform_context`` / ``convert_to_llm`` returned: a list of messages (checked at
    C speed for the library's message types, one by one for the others)."""
    if value is None or isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{hook} returned a {type(value).__name__}; expected a list of messages")
    items = value if isinstance(value, PVector) else pvector(value)
    if not _MESSAGE_TYPES.issuperset(map(type, items)):
        for i, item in enumerate(items):
            if not is_message(item):
                raise TypeError(f"{hook} returned a list whose item {i} is {_a(type(item).__name__)} "
                                f"({_shown(item)}); expected {_MESSAGE_HINT}")
    return items


def _expect(kind: type, name: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{name} returned {type(value).__name__}, expected {kind.__name__} or None")
        return value

    return check


def _user_context(ctx: AgentContext, registry: dict[str, AgentTool]) -> AgentContext:
    """The hook's view of the context: real tools instead of the core's specs."""
    tools = tuple(registry.get(t.name, t) for t in ctx.tools)
    return AgentContext(ctx.system_prompt, ctx.messages, tools)


def _hook(name: str, fn: Any, args: tuple[Any, ...], answer: Callable[[Any, int], Input], signal: Any) -> HookCall:
    args, kwargs = with_signal(fn, args, signal)
    return HookCall(name, fn, args, answer, kwargs)


def hook_call(
    effect: Effect | KeyLookup, config: AgentLoopConfig, registry: dict[str, AgentTool], signal: Any
) -> HookCall:
    """The call that carries out a hook effect (everything but model calls and tool runs), or a
    :class:`KeyLookup`: the hook the effect asks for (:data:`agentcore.hooks.HOOK_OF_EFFECT`),
    called with the arguments :data:`_HOOK_CALLS` gives, its value checked and fed back as the
    hook's answer."""
    if type(effect) is KeyLookup:
        return _hook(GET_API_KEY.name, config.get_api_key, (effect.provider,), _no_answer, signal)
    hook, how = HOOK_OF_EFFECT.get(type(effect)), _HOOK_CALLS.get(type(effect))
    if hook is None or how is None or hook.answer is None:
        raise TypeError(f"{type(effect).__name__} is not a hook effect")
    arguments, value = how
    fn = getattr(config, hook.name) if hook.on == "config" else _tool_hook(hook, effect, registry)
    eid, answer = effect.id, hook.answer  # type: ignore[union-attr]  # every hook effect has an id

    def answered(v: Any, at: int) -> Input:
        return answer(eid, value(effect, registry, v), at)  # type: ignore[no-any-return]

    return _hook(hook.name, fn, arguments(effect, registry), answered, signal)


def _tool_hook(hook: Hook, effect: Any, registry: dict[str, AgentTool]) -> Callable[..., Any]:
    """A tool's ``prepare_arguments`` (none: the arguments as they are) or ``requires_approval``
    function (not a function: the call needs approval)."""
    tool = registry.get(effect.tool_call.name)
    fn = getattr(tool, hook.name, None) if tool is not None else None
    if hook is PREPARE_ARGUMENTS:
        return fn or _identity
    return fn if callable(fn) else _always


def _in_user_context(effect: Any, registry: dict[str, AgentTool]) -> tuple[Any, ...]:
    return (replace(effect.context, context=_user_context(effect.context.context, registry)),)


def _next_turn(effect: Any, registry: dict[str, AgentTool], value: Any) -> Any:
    nxt = _expect(NextTurn, PREPARE_NEXT_TURN.name)(value)
    if nxt is not None and nxt.context is not None:
        registry.clear()
        registry.update(tool_registry(nxt.context.tools))
    return nxt


_Arguments: TypeAlias = Callable[[Any, dict[str, AgentTool]], tuple[Any, ...]]
_Value: TypeAlias = Callable[[Any, dict[str, AgentTool], Any], Any]

_HOOK_CALLS: Final[dict[type, tuple[_Arguments, _Value]]] = {
    PollSteering: (lambda e, r: (), lambda e, r, v: polled_messages(GET_STEERING_MESSAGES.name, v)),
    PollFollowUps: (lambda e, r: (), lambda e, r, v: polled_messages(GET_FOLLOW_UP_MESSAGES.name, v)),
    TransformContext: (lambda e, r: (e.messages,), lambda e, r, v: _history(TRANSFORM_CONTEXT.name, v)),
    ConvertToLlm: (lambda e, r: (e.messages,), lambda e, r, v: _history(CONVERT_TO_LLM.name, v)),
    PrepareArguments: (lambda e, r: (thaw(e.tool_call.arguments),), lambda e, r, v: v),
    BeforeToolCall: (_in_user_context, lambda e, r, v: _expect(BeforeToolCallResult, BEFORE_TOOL_CALL.name)(v)),
    AfterToolCall: (_in_user_context, lambda e, r, v: _expect(AfterToolCallResult, AFTER_TOOL_CALL.name)(v)),
    CheckApproval: (lambda e, r: (thaw(e.args),), lambda e, r, v: bool(v)),
    DecideToolCall: (lambda e, r: (e.pending,), lambda e, r, v: hook_decision(e.pending, v)),
    PrepareNextTurn: (_in_user_context, _next_turn),
    ShouldStopAfterTurn: (_in_user_context, lambda e, r, v: bool(v)),
}
"""Hook effect type → the arguments its hook is called with, and what its value answers
(checked: a ``TypeError`` becomes ``HookFailed``)."""


def _identity(value: Any) -> Any:
    return value


def _always(args: Any) -> bool:
    return True


_DECISIONS: Final = (Approve, Deny, ToolOutput)


def hook_decision(pending: PendingCall, value: Any) -> Decision | None:
    """What ``decide_tool_call`` returned, checked: ``None`` or a decision of the kind the call
    waits for (``TypeError`` otherwise: the call gets an error result saying so)."""
    if value is None:
        return None
    if not isinstance(value, _DECISIONS):
        raise TypeError(f"decide_tool_call returned {_a(type(value).__name__)} ({_shown(value)}); expected "
                        "Approve, Deny, ToolOutput or None")
    if isinstance(value, Approve if pending.waits_for == "result" else ToolOutput):
        kinds = "Approve, Deny or None" if pending.waits_for == "approval" else "ToolOutput, Deny or None"
        raise TypeError(f"decide_tool_call returned {type(value).__name__} for tool call {pending.tool_call_id}, "
                        f"which waits for {'an approval' if pending.waits_for == 'approval' else 'a result'} "
                        f"({kinds})")
    return value


# --------------------------------------------------------------------------- resuming a suspension


def checked_suspension(suspension: Any, fn: str) -> Suspension:
    """``suspension`` if it can be resumed as it is: a :class:`Suspension` (else ``TypeError``)
    of a format this library reads, whose state is suspended, whose fields hold values of their
    types and whose parts agree on what would run (else ``ValueError`` with
    ``Suspension.problem``'s text). ``fn`` names the function that was given it."""
    if not isinstance(suspension, Suspension):
        raise TypeError(f"{fn}() argument 'suspension' must be a Suspension (decode a stored one with "
                        f"agentcore.codec.from_json), not {_a(type(suspension).__name__)}")
    if type(suspension.version) is not int or not 1 <= suspension.version <= SUSPENSION_VERSION:
        raise ValueError(suspension_version_text(suspension.version, SUSPENSION_VERSION))
    problem = suspension.problem()  # not suspended, or edited: refused before anything runs or is written
    if problem is not None:
        raise ValueError(problem)
    return suspension


def suspended_state(suspension: Any, config: AgentLoopConfig, fn: str) -> LoopState:
    """The state to resume ``suspension`` from: checked (a :class:`Suspension` of a format this
    library reads, whose state is suspended, whose fields hold values of their types and whose
    parts agree on what would run: ``Suspension.problem``), with ``config`` checked for the
    redaction marker (:func:`refuse_redacted`). The config's model, hooks and budgets go in
    force through the ``Resumed`` input (:func:`resumed_input`), so the run replays as it ran."""
    state = checked_suspension(suspension, fn).state
    refuse_redacted(config, fn)
    return state


def refuse_redacted(config: AgentLoopConfig, fn: str) -> None:
    """A model or config header, or an API key, that *is* the redaction marker (copied from a
    transcript, which writes it instead of a secret) is refused with ``ValueError``: the
    marker is never sent."""
    model = config.model
    for whose, headers in (("the model's", model.headers), ("the config's", config.headers)):
        for name, value in (headers or {}).items():
            if isinstance(value, str) and REDACTED in value:
                raise ValueError(f"{fn}(): {whose} header {name!r} is {value!r}, the text a transcript writes "
                                 "instead of a secret: give the config's model with its real headers")
    if config.api_key is not None and REDACTED in config.api_key:
        raise ValueError(f"{fn}(): the config's api_key is {config.api_key!r}, the text a transcript writes "
                         "instead of a secret: give the real key")


def with_config_model(state: LoopState, config: AgentLoopConfig, fn: str) -> LoopState:
    """``state`` going on with ``config.model`` (as a crash ``resume`` does): a run read back
    from its transcript holds the recorded model, whose secret headers were written as the
    redaction marker, which is refused in ``config`` (:func:`refuse_redacted`)."""
    refuse_redacted(config, fn)
    if state.run.model == config.model:
        return state
    return replace(state, run=replace(state.run, model=config.model))


def resumed_input(decisions: Any, suspension: Suspension, config: AgentLoopConfig, tools: Sequence[Any] | None,
                  clock: Callable[[], int], fn: str) -> Resumed:
    """``decisions`` (tool call id → ``Approve`` / ``Deny`` / ``ToolOutput``) as the core's
    input, in the order of the pending calls (ids nothing waits for after them), with the
    model, hooks, budgets and ``tool_execution`` of ``config`` and the specs and policies of
    ``tools`` in force (:func:`agentcore.suspension.run_settings`). A pending call that waits
    for what its tool, as ``tools`` declare it, does not make it wait for is refused
    (``ValueError``)."""
    if not isinstance(decisions, Mapping):
        raise TypeError(f"{fn}() argument 'decisions' must be a mapping of tool call id to Approve, Deny "
                        f"or ToolOutput, not {_a(type(decisions).__name__)}")
    for call_id, decision in decisions.items():
        if not isinstance(decision, _DECISIONS):
            raise TypeError(f"{fn}() decision for {call_id!r} must be Approve, Deny or ToolOutput, not "
                            f"{_a(type(decision).__name__)} ({_shown(decision)})")
    order = [p.tool_call_id for p in suspension.pending]
    ids = [i for i in order if i in decisions] + sorted((i for i in decisions if i not in order), key=str)
    given = tuple((i, decisions[i]) for i in ids)
    settings = run_settings(config, tools)
    problem = None
    if settings.tools is not None and settings.tool_policies is not None:
        problem = waits_problem(suspension.pending, settings.tools, settings.tool_policies)
    problem = problem or decisions_problem(suspension.pending, given)
    if problem is not None:  # refused before anything runs or is written (the core would refuse it too)
        raise ValueError(problem)
    return Resumed(given, clock(), settings)


def tool_result(name: str, value: Any) -> AgentToolResult:
    """Check what a tool's ``execute`` returned (a plain string is accepted as text)."""
    if isinstance(value, AgentToolResult):
        return value
    if isinstance(value, str):
        return AgentToolResult((TextContent(value),))
    raise TypeError(f"tool {name} returned {type(value).__name__}, expected AgentToolResult")


def tool_call(effect: ExecuteTool, registry: dict[str, AgentTool]) -> AgentTool:
    """The tool an ``ExecuteTool`` effect names."""
    tool = registry.get(effect.tool_call.name)
    if tool is None:
        raise LookupError(f"Tool {effect.tool_call.name} has no implementation in this run")
    return tool


def stream_options(effect: CallLlm, config: AgentLoopConfig, api_key: str | None, signal: Any) -> StreamOptions:
    """The options of one model call: the config's, the turn's thinking level, the resolved key."""
    return StreamOptions(
        thinking_level=effect.thinking_level,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        cache_retention=config.cache_retention,
        session_id=config.session_id,
        headers=config.headers,
        metadata=config.metadata,
        thinking_budgets=config.thinking_budgets,
        max_retry_delay_ms=config.max_retry_delay_ms,
        transport=config.transport,
        api_key=api_key,
        signal=signal,
        on_payload=config.on_payload,
        on_response=config.on_response,
    )


def llm_context(effect: CallLlm) -> LlmContext:
    return LlmContext(effect.system_prompt, effect.messages, effect.tools)


_DELTA_TYPES: Final = frozenset({TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent})


NO_STREAM_FN: Final = (
    "No stream_fn was given and no HTTP provider is available for api {api!r}. Pass stream_fn "
    "(for example interpreters.ScriptedModel) or use a model from agentcore.providers."
)


def deliver(listeners: Sequence[Callable[..., Any]], event: Any, signal: Any = None) -> None:
    """Give ``event`` to each listener (with the run's ``signal`` when it takes one). A listener
    that raises is logged and stays subscribed; the run and the other listeners go on."""
    for listener in listeners:
        try:
            args, kwargs = with_signal(listener, (event,), signal)
            outcome = listener(*args, **kwargs)
            if inspect.isawaitable(outcome):
                close = getattr(outcome, "close", None)
                if close is not None:
                    close()
                raise TypeError(f"listener {listener!r} returned an awaitable: the sync interpreter does "
                                "not await listeners (use interpreters.aio)")
        except FATAL:
            raise  # the caller stops the run (it still ends), then raises it
        except BaseException:
            _log.exception("listener %r raised on %s; the run goes on", listener, event.type)
