"""The tool batch: the sub-machine that runs the tool calls of one reply.

The turn (:mod:`agentcore.machine`) hands a reply with tool calls to :func:`start`, and every
answer about a call to :func:`answer`; on an abort it calls :func:`abort`. Each returns
:class:`BatchDone` once every call has its result, or ``None`` while the batch waits (the
phase is then :class:`~agentcore.state.RunningTools`). The batch knows nothing of turns.

How one call goes is one table, :data:`CALL`, read top to bottom (the step is what the call's
:class:`~agentcore.state.ToolSlot` holds while it rests at that stage)::

    stage              step       asks                               then
    start              waiting                                       tool_execution_start
    lookup                                                           unknown tool, invalid JSON: done
    prepare_arguments  preparing  [the tool's prepare_arguments]
    validate                                                         invalid arguments: done
    before_tool_call   checking   [before_tool_call]                 block: done; suspend: decision
    approval           approving  [the tool's requires_approval]     no approval needed: ready
    decision           deciding   [decide_tool_call]                 no decision: pending
    pending            pending    the world, later (Resumed)
    ready              ready                                         parallel: waits for the batch's start
    execute            running    the tool (ExecuteTool)
    after_tool_call    finishing  [after_tool_call]
    done               done                                          tool_execution_end

One function, :func:`_walk`, takes a call down the table until it waits for the world or is
done; each answer resumes it at the stage that asked. A bracketed stage asks only when the hook
is set, and otherwise takes the hook's neutral answer; that gate is written once, in the walk.
Answers are dispatched by the step of the call they answer.

A call waits for a decision when ``before_tool_call`` returned ``suspend=True``, when its tool
requires approval (``True``, or its function says so) or is deferred: ``decide_tool_call``,
when the run has it, is asked first; a call it gives no decision is ``pending``. A decision
takes a pending call on: ``Approve`` makes it ready (edited arguments are validated again),
``Deny`` gives it an error result, ``ToolOutput`` is its result as if the tool had returned it
(``after_tool_call`` sees it).

In sequential mode (the run's mode, or any called tool's) a call runs to ``done``, and its
result message is emitted, before the next is prepared; a pending call stops the batch there.
In parallel mode every call is prepared in order, then all ready calls start at once, and the
result messages are emitted in call order when the last one is done. When every call is done
or pending and some are pending, the batch is paused (:class:`BatchPaused`): the turn suspends
the run, and :func:`decide` takes the decisions when it is resumed.

An abort is taken in two places only: :func:`abort` ends, at once, every call waiting on a hook
or a decision, and the walk stops a call before any stage after ``start``: calls already running
finish with their own results; calls not reached yet get an aborted result as they are reached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from returns.result import Failure

from . import hooks
from .config import (
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from .decisions import decision_problem, decisions_problem, waits_problem
from .draft import Draft
from .effects import AfterToolCall, BeforeToolCall, CheckApproval, DecideToolCall, Effect, ExecuteTool, PrepareArguments
from .events import (
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from .frozen import freeze
from .inputs import (
    AfterToolCallDecided,
    ApprovalChecked,
    ArgumentsPrepared,
    BeforeToolCallDecided,
    Decision,
    Deny,
    HookFailed,
    ToolCallDecided,
    ToolFailed,
    ToolFinished,
    ToolOutput,
    ToolTimedOut,
    ToolUpdated,
)
from .messages import AssistantMessage, ToolCall, ToolResultMessage
from .records import Record
from .state import RunningTools, SlotStep, ToolSlot
from .texts import (
    ABORTED_TEXT,
    BLOCKED_TEXT,
    DENIED_TEXT,
    SUSPENDED_TEXT,
    approval_required_text,
    bad_answer_text,
    deferred_text,
    invalid_json_text,
    length_cutoff_text,
    not_found_text,
    slot_busy_text,
    slot_not_waiting_text,
    timed_out_text,
)
from .tools import AgentToolResult, PendingCall, error_result, validate_arguments

__all__ = ["ANSWERS", "CALL", "BatchDone", "BatchPaused", "SlotAsk", "SlotDo", "ToolAnswer", "abort", "answer",
           "decide", "decision_problem", "decisions_problem", "problem", "slot_of", "start", "waits_problem"]

ToolAnswer: TypeAlias = (ArgumentsPrepared | BeforeToolCallDecided | ToolUpdated | ToolFinished | ToolFailed
                         | ToolTimedOut | AfterToolCallDecided | HookFailed | ApprovalChecked | ToolCallDecided)
"""The inputs that answer something about one call of the batch (:data:`ANSWERS` says where)."""


class BatchDone(Record, frozen=True):
    """Every call of ``message`` has its result: ``results`` in call order; ``more`` says the
    model gets another turn (false only when every call asked to terminate)."""

    message: AssistantMessage
    results: tuple[ToolResultMessage, ...]
    more: bool


class BatchPaused(Record, frozen=True):
    """The batch cannot go on without decisions on ``pending`` (in call order): every other call
    that could run has run (parallel), or the call at hand waits (sequential)."""

    pending: tuple[PendingCall, ...]


# --------------------------------------------------------------------------- one call, as a table


class _Call:
    """One call while the walk takes it down :data:`CALL`, within one step: what its stages
    hand on. Its slot in the batch is written when it rests (waits, or is done)."""

    __slots__ = ("index", "call", "raw", "args", "pending", "result", "is_error")

    def __init__(self, index: int, slot: ToolSlot) -> None:
        self.index = index
        self.call: ToolCall = slot.call
        self.raw: Any = None
        """The arguments to validate (the call's own, or what ``prepare_arguments`` made of them)."""
        self.args: Any = slot.args
        """The validated arguments (``None`` before)."""
        self.pending: PendingCall | None = slot.pending
        self.result: AgentToolResult | None = slot.result
        self.is_error: bool = slot.is_error


WaitsFor: TypeAlias = Literal["approval", "result"]

Go: TypeAlias = "str | None"
"""Where a call goes next: the name of a stage of :data:`CALL`, or ``None``: it rests there."""


def _always(s: Draft, c: _Call) -> bool:
    return True


def _config_hook(hook: hooks.Hook) -> Callable[[Draft, _Call], bool]:
    """The gate of a stage that asks a hook of the run's config: is it set."""
    name = hook.name

    def is_set(s: Draft, c: _Call) -> bool:
        return name in s.hooks

    return is_set


@dataclass(frozen=True, slots=True)
class SlotAsk:
    """A stage that asks the world about the call when ``asks`` says so (the hook is set), and
    otherwise does what the hook's neutral answer would (``otherwise``).

    Asking means: a new id, the ``effect`` built for it, and the call waits, holding ``step``,
    for an answer with that id: ``answers`` maps each input type it takes to the value that
    input brings (``failure`` is the input a hook that raised gives: the call is done with an
    error result; ``updates`` the input that reports progress without an answer). ``take``
    gets the value and says where the call goes next, as ``otherwise`` does.
    """

    name: str
    step: SlotStep
    hook: hooks.Hook | None
    asks: Callable[[Draft, _Call], bool]
    effect: Callable[[int, Draft, _Call], Effect]
    answers: Mapping[type, Callable[[Any, _Call], Any]]
    otherwise: Callable[[Draft, _Call], Go]
    take: Callable[[Draft, _Call, Any], Go]
    updates: type | None = None
    failure: type | None = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "failure", self.hook.failure if self.hook is not None else None)


@dataclass(frozen=True, slots=True)
class SlotDo:
    """A stage the core does itself; ``run`` says where the call goes next (``None``: it rests
    at this stage, holding ``step``, or is done)."""

    name: str
    step: SlotStep | None
    run: Callable[[Draft, _Call], Go]


def _fail(c: _Call, text: str, terminate: bool | None = None) -> Go:
    """The call ends with the error result ``text``."""
    c.result, c.is_error = error_result(text, terminate), True
    return "done"


def _rest(s: Draft, c: _Call, step: SlotStep, wait_id: int = -1) -> None:
    _put(s, c.index, ToolSlot(c.call, step, wait_id, c.args, c.result, c.is_error, 0, None, c.pending))


def _start(s: Draft, c: _Call) -> Go:
    call = c.call
    s.emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))
    return "lookup"


def _lookup(s: Draft, c: _Call) -> Go:
    call = c.call
    if call.name not in s.tool_index:
        return _fail(c, not_found_text(call.name))
    if call.invalid_json is not None:
        return _fail(c, invalid_json_text(call.name, call.invalid_json))
    return "prepare_arguments"


def _take_prepared(s: Draft, c: _Call, arguments: Any) -> Go:
    c.raw = arguments
    return "validate"


def _unprepared(s: Draft, c: _Call) -> Go:
    c.raw = c.call.arguments
    return "validate"


def _validate(s: Draft, c: _Call) -> Go:
    checked = validate_arguments(s.tool_index[c.call.name], c.raw)
    if isinstance(checked, Failure):
        return _fail(c, checked.failure())
    c.args = checked.unwrap()
    return "before_tool_call"


def _wait_for_decision(c: _Call, reason: str, waits_for: WaitsFor) -> Go:
    call = c.call
    c.pending = PendingCall(call.id, call.name, c.args, reason, waits_for)
    return "decision"


def _take_check(s: Draft, c: _Call, decision: BeforeToolCallResult | None) -> Go:
    if decision is not None and decision.block:
        return _fail(c, decision.reason or BLOCKED_TEXT, True if decision.terminate else None)
    if decision is not None and decision.suspend:
        deferred = s.tool_policies.get(c.call.name) == "deferred"
        return _wait_for_decision(c, decision.reason or SUSPENDED_TEXT, "result" if deferred else "approval")
    return "approval"


_WAITS_FOR: Final[dict[str | None, WaitsFor | None]] = {None: None, "approval": "approval", "deferred": "result"}
"""A tool's policy → what its calls wait for; a policy not here (``check_approval``) asks the
tool's ``requires_approval`` function."""


def _asks_approval(s: Draft, c: _Call) -> bool:
    return s.tool_policies.get(c.call.name) not in _WAITS_FOR


def _by_policy(s: Draft, c: _Call) -> Go:
    """What the tool's policy says when it asks no function: the call waits for an approval or
    a result, or is ready."""
    waits_for = _WAITS_FOR[s.tool_policies.get(c.call.name)]
    return "ready" if waits_for is None else _take_approval(s, c, waits_for)


def _take_approval(s: Draft, c: _Call, waits_for: WaitsFor | None) -> Go:
    if waits_for is None:
        return "ready"
    if waits_for == "result":
        return _wait_for_decision(c, deferred_text(c.call.name), "result")
    return _wait_for_decision(c, approval_required_text(c.call.name), "approval")


def _take_decision(s: Draft, c: _Call, decision: Decision | None) -> Go:
    return "pending" if decision is None else _apply(s, c, decision)


def _apply(s: Draft, c: _Call, decision: Decision) -> Go:
    """A decision on a call that waits for one (its kind was checked)."""
    c.pending = None
    if isinstance(decision, Deny):
        return _fail(c, decision.reason or DENIED_TEXT)
    if isinstance(decision, ToolOutput):
        c.result, c.is_error = decision.result, decision.is_error  # type: ignore[assignment]  # checked
        return "after_tool_call"
    # Approve: checked against the tool as the tools in force declare it (a resumed run's are the
    # resuming code's: what a stored suspension says the call was checked against is not taken)
    spec = s.tool_index.get(c.call.name)
    if spec is None:
        return _fail(c, not_found_text(c.call.name))
    checked = validate_arguments(spec, c.args if decision.arguments is None else decision.arguments)
    if isinstance(checked, Failure):
        return _fail(c, checked.failure())
    c.args = checked.unwrap()
    return "ready"


def _pending(s: Draft, c: _Call) -> Go:
    _rest(s, c, "pending")
    return None


def _ready(s: Draft, c: _Call) -> Go:
    if _batch(s).sequential:
        return "execute"
    _rest(s, c, "ready")  # the batch starts every ready call once all are prepared
    return None


def _take_result(s: Draft, c: _Call, outcome: tuple[AgentToolResult, bool]) -> Go:
    c.result, c.is_error = outcome
    return "after_tool_call"


def _take_patch(s: Draft, c: _Call, patch: AfterToolCallResult | None) -> Go:
    result = c.result
    assert result is not None
    c.result, c.is_error = _patch(result, c.is_error, patch)
    return "done"


def _after_context(s: Draft, c: _Call) -> AfterToolCallContext:
    result = c.result
    assert result is not None
    return AfterToolCallContext(_batch(s).message, c.call, c.args, result, c.is_error, s.context())


def _complete(s: Draft, c: _Call) -> Go:
    """The call has its final result: ``tool_execution_end`` (and, sequentially, its message)."""
    call, result = c.call, c.result
    assert result is not None
    s.emit(ToolExecutionEndEvent(call.id, call.name, result, c.is_error))
    slot = ToolSlot(call, "done", -1, c.args, result, c.is_error, s.at)
    if _batch(s).sequential:  # kept: the turn's tool_results hold this same message
        slot = ToolSlot(call, "done", -1, c.args, result, c.is_error, s.at, _emit_message(s, slot))
    _put(s, c.index, slot)
    return None


CALL: Final[tuple[SlotAsk | SlotDo, ...]] = (
    SlotDo("start", "waiting", _start),
    SlotDo("lookup", None, _lookup),
    SlotAsk("prepare_arguments", "preparing", hooks.PREPARE_ARGUMENTS,
            asks=lambda s, c: s.tool_index[c.call.name].has_prepare_arguments,
            effect=lambda id_, s, c: PrepareArguments(id_, c.call),
            answers={ArgumentsPrepared: lambda a, c: freeze(a.arguments)},
            otherwise=_unprepared, take=_take_prepared),
    SlotDo("validate", None, _validate),
    SlotAsk("before_tool_call", "checking", hooks.BEFORE_TOOL_CALL, asks=_config_hook(hooks.BEFORE_TOOL_CALL),
            effect=lambda id_, s, c: BeforeToolCall(id_, BeforeToolCallContext(_batch(s).message, c.call, c.args,
                                                                               s.context())),
            answers={BeforeToolCallDecided: lambda a, c: a.result},
            otherwise=lambda s, c: "approval", take=_take_check),
    SlotAsk("approval", "approving", hooks.REQUIRES_APPROVAL, asks=_asks_approval,
            effect=lambda id_, s, c: CheckApproval(id_, c.call, c.args),
            answers={ApprovalChecked: lambda a, c: "approval" if a.required else None},
            otherwise=_by_policy, take=_take_approval),
    SlotAsk("decision", "deciding", hooks.DECIDE_TOOL_CALL, asks=_config_hook(hooks.DECIDE_TOOL_CALL),
            effect=lambda id_, s, c: DecideToolCall(id_, c.pending),  # type: ignore[arg-type]  # set before
            answers={ToolCallDecided: lambda a, c: a.decision},
            otherwise=lambda s, c: "pending", take=_take_decision),
    SlotDo("pending", "pending", _pending),
    SlotDo("ready", "ready", _ready),
    SlotAsk("execute", "running", None, asks=_always,
            effect=lambda id_, s, c: ExecuteTool(id_, c.call, c.args),
            answers={ToolFinished: lambda a, c: (a.result, a.result.is_error is True),
                     ToolFailed: lambda a, c: (error_result(a.error), True),
                     ToolTimedOut: lambda a, c: (error_result(timed_out_text(c.call.name, a.timeout_ms)), True)},
            otherwise=lambda s, c: None, take=_take_result, updates=ToolUpdated),  # always asks
    SlotAsk("after_tool_call", "finishing", hooks.AFTER_TOOL_CALL, asks=_config_hook(hooks.AFTER_TOOL_CALL),
            effect=lambda id_, s, c: AfterToolCall(id_, _after_context(s, c)),
            answers={AfterToolCallDecided: lambda a, c: a.result},
            otherwise=lambda s, c: "done", take=_take_patch),
    SlotDo("done", "done", _complete),
)
"""The stages of one call, in order."""

_STAGE: Final = {stage.name: stage for stage in CALL}
_UNCHECKED: Final = frozenset({CALL[0].name, CALL[-1].name})
"""The stages an aborted call still goes through: its start, and the end of it."""
_ASK_OF_STEP: Final = {stage.step: stage for stage in CALL if type(stage) is SlotAsk}
_WAITING: Final = frozenset(_ASK_OF_STEP)
"""The steps in which a call waits for an answer (the others carry no id: ``wait_id`` is -1)."""
_ENDED_BY_ABORT: Final = frozenset(step for step, stage in _ASK_OF_STEP.items() if stage.hook is not None) | {"pending"}
"""The steps of a call waiting on a hook or a decision: an abort ends them at once."""


def _answers() -> dict[type, tuple[str, ...]]:
    answers: dict[type, tuple[str, ...]] = {}
    for step, stage in _ASK_OF_STEP.items():
        for kind in (*stage.answers, stage.updates, stage.failure):
            if kind is not None:
                answers[kind] = answers.get(kind, ()) + (step,)
    return answers


ANSWERS: Final[dict[type, tuple[str, ...]]] = _answers()
"""Input type → the slot steps that can take it (read from :data:`CALL`)."""


def _walk(s: Draft, c: _Call, go: Go) -> None:
    """Take call ``c`` down :data:`CALL` from stage ``go`` until it waits for the world or is done."""
    aborted = s.aborted
    while go is not None:
        stage = _STAGE[go]
        if aborted and go not in _UNCHECKED:  # the one abort check: nothing more is asked
            if c.result is None:  # a call that ran keeps its own result
                _fail(c, ABORTED_TEXT)
            go = "done"
            continue
        if type(stage) is SlotAsk:
            if stage.asks(s, c):  # the one hook gate
                id_ = s.new_id()
                s.ask(stage.effect(id_, s, c))
                _rest(s, c, stage.step, id_)
                return
            go = stage.otherwise(s, c)
        else:
            assert type(stage) is SlotDo
            go = stage.run(s, c)


# --------------------------------------------------------------------------- the entry points


BatchOutcome: TypeAlias = "BatchDone | BatchPaused | None"


def start(s: Draft, reply: AssistantMessage) -> BatchOutcome:
    """Run the tool calls of ``reply`` as far as they go without an answer."""
    calls = reply.tool_calls
    if reply.stop_reason == "length":  # the calls may be cut: none runs
        results = []
        for call in calls:
            s.emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))
            result = error_result(length_cutoff_text(call.name))
            s.emit(ToolExecutionEndEvent(call.id, call.name, result, True))
            results.append(_emit_message(s, ToolSlot(call, "done", result=result, is_error=True, at=s.at)))
        return BatchDone(reply, tuple(results), True)
    s.phase = RunningTools(reply, _sequential(s, calls), tuple(ToolSlot(c) for c in calls))
    return _advance(s)


def _sequential(s: Draft, calls: tuple[ToolCall, ...]) -> bool:
    """The calls run one at a time: the run's mode says so, or a called tool declares it. (A
    batch that started parallel and is resumed under code that says so, ``Resumed.settings``,
    runs the calls approved at the resume one after the other, in call order.)"""
    return s.tool_execution == "sequential" or any(
        (spec := s.tool_index.get(c.name)) is not None and spec.execution_mode == "sequential" for c in calls
    )


def answer(s: Draft, inp: ToolAnswer) -> BatchOutcome:
    """Take an answer about one call (``problem`` said it is legal): the stage that asked
    (the call's step says which) takes its value, and the call goes on from there."""
    given: Any
    batch = _batch(s)
    index = slot_of(batch, inp.id)
    assert index is not None
    slot = batch.slots[index]
    stage = _ASK_OF_STEP[slot.step]
    kind, given = type(inp), inp
    if kind is stage.updates:  # progress: the call stays where it is
        s.emit(ToolExecutionUpdateEvent(slot.call.id, slot.call.name, slot.call.arguments, given.partial_result))
        return None
    c = _Call(index, slot)
    if kind is stage.failure:  # the hook raised
        go = _fail(c, given.error)
    else:
        go = stage.take(s, c, stage.answers[kind](inp, c))
    _walk(s, c, go)
    return _advance(s)


def abort(s: Draft) -> BatchOutcome:
    """The run was aborted (``s.aborted`` is set): calls waiting on a hook or a decision end now."""
    for i, slot in enumerate(_batch(s).slots):
        if slot.step in _ENDED_BY_ABORT:
            c = _Call(i, slot)
            _walk(s, c, _fail(c, ABORTED_TEXT))
    return _advance(s)


def decide(s: Draft, decisions: tuple[tuple[str, Decision], ...]) -> BatchOutcome:
    """Take the decisions on the pending calls (``decisions_problem`` said they fit), then go on."""
    for call_id, decision in decisions:
        for i, slot in enumerate(_batch(s).slots):
            if slot.step == "pending" and slot.call.id == call_id:
                c = _Call(i, slot)
                _walk(s, c, _apply(s, c, decision))
                break
    return _advance(s)


def slot_of(batch: RunningTools, id: int) -> int | None:
    """The index of the call waiting for an answer with ``id``."""
    for i, slot in enumerate(batch.slots):
        if slot.wait_id == id and slot.step in _WAITING:
            return i
    return None


def problem(batch: RunningTools, inp: ToolAnswer) -> str | None:
    """Why the batch cannot take ``inp`` now (``None`` when it can)."""
    index = slot_of(batch, inp.id)
    if index is None:
        return slot_not_waiting_text(inp.id)
    slot = batch.slots[index]
    if slot.step not in ANSWERS[type(inp)]:
        return slot_busy_text(slot.call.id, slot.step, inp.type)
    if isinstance(inp, ToolCallDecided) and inp.decision is not None and slot.pending is not None:
        return decision_problem(slot.pending, inp.decision)
    return _answer_problem(inp)


def _answer_problem(inp: ToolAnswer) -> str | None:
    """What an answer's result holds that the batch cannot take (the interpreters check what
    the user's code returns; this is for other drivers and damaged transcripts)."""
    if isinstance(inp, ToolFinished):
        if not isinstance(inp.result, AgentToolResult):
            return bad_answer_text(inp.type, "result", inp.result, "an AgentToolResult")
    elif isinstance(inp, BeforeToolCallDecided):
        if inp.result is not None and not isinstance(inp.result, BeforeToolCallResult):
            return bad_answer_text(inp.type, "result", inp.result, "a BeforeToolCallResult or None")
    elif isinstance(inp, AfterToolCallDecided) and inp.result is not None:
        if not isinstance(inp.result, AfterToolCallResult):
            return bad_answer_text(inp.type, "result", inp.result, "an AfterToolCallResult or None")
        content = inp.result.content
        if content is not None and not isinstance(content, (str, tuple, list)):
            return bad_answer_text(inp.type, "content", content, "a tuple of content blocks, a str or None", "result")
    return None


# --------------------------------------------------------------------------- the batch


def _batch(s: Draft) -> RunningTools:
    batch = s.phase
    assert isinstance(batch, RunningTools)
    return batch


def _put(s: Draft, index: int, slot: ToolSlot) -> None:
    b = _batch(s)
    s.phase = RunningTools(b.message, b.sequential, b.slots[:index] + (slot,) + b.slots[index + 1:], b.cursor)


def _patch(result: AgentToolResult, is_error: bool, patch: AfterToolCallResult | None) -> tuple[AgentToolResult, bool]:
    if patch is None:
        return result, is_error
    patched = AgentToolResult(
        patch.content if patch.content is not None else result.content,
        freeze(patch.details) if patch.details is not None else result.details,
        patch.usage if patch.usage is not None else result.usage,
        result.added_tool_names,
        patch.terminate if patch.terminate is not None else result.terminate,
    )
    return patched, patch.is_error if patch.is_error is not None else is_error



def _advance(s: Draft) -> BatchOutcome:
    """Move the batch forward as far as it goes without an answer."""
    while True:
        b = _batch(s)
        slots = b.slots
        if b.cursor < len(slots):
            current = slots[b.cursor]
            if current.step == "waiting":
                _walk(s, _Call(b.cursor, current), "start")
            elif current.step == "done" or (current.step in ("ready", "pending") and not b.sequential):
                s.phase = RunningTools(b.message, b.sequential, slots, b.cursor + 1)
            elif current.step == "pending":  # sequential: nothing after it runs before its decision
                assert current.pending is not None
                return BatchPaused((current.pending,))
            else:
                return None  # the current call waits for an answer
            continue
        if not b.sequential:  # every call is prepared: the ready ones start (each runs, or is done)
            ready = [i for i, slot in enumerate(slots) if slot.step == "ready"]
            if ready and _sequential(s, b.message.tool_calls):  # resumed under code that runs them one at a time
                if any(slot.step in _WAITING for slot in slots):
                    return None
                ready = ready[:1]
            for i in ready:
                _walk(s, _Call(i, slots[i]), "execute")
            b = _batch(s)
            slots = b.slots
        paused, pending = False, []
        for slot in slots:
            if slot.step == "pending":
                paused = True
                if slot.pending is not None:
                    pending.append(slot.pending)
            elif slot.step != "done":
                return None  # a call waits for an answer
        return BatchPaused(tuple(pending)) if paused else _batch_done(s, b)


def _batch_done(s: Draft, b: RunningTools) -> BatchDone:
    if b.sequential:
        results = tuple(slot.message or _result_message(slot) for slot in b.slots)
    else:
        results = tuple(_emit_message(s, slot) for slot in b.slots)
    terminate = all(slot.result is not None and slot.result.terminate is True for slot in b.slots)
    return BatchDone(b.message, results, not terminate)


def _result_message(slot: ToolSlot) -> ToolResultMessage:
    result = slot.result
    assert result is not None
    return ToolResultMessage(
        slot.call.id,
        slot.call.name,
        result.content,
        details=result.details,
        is_error=slot.is_error,
        usage=result.usage,
        added_tool_names=result.added_tool_names or None,
        timestamp=slot.at,
    )


def _emit_message(s: Draft, slot: ToolSlot) -> ToolResultMessage:
    message = _result_message(slot)
    s.emit(MessageStartEvent(message))
    s.emit(MessageEndEvent(message))
    return message
