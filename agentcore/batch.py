"""The tool batch: the sub-machine that runs the tool calls of one reply.

The turn (:mod:`agentcore.machine`) hands a reply with tool calls to :func:`start`, and every
answer about a call to :func:`answer`; on an abort it calls :func:`abort`. Each returns
:class:`BatchDone` once every call has its result, or ``None`` while the batch waits (the
phase is then :class:`~agentcore.state.RunningTools`). The batch knows nothing of turns.

Each call goes through its :class:`~agentcore.state.ToolSlot` steps in source order::

    waiting → lookup, invalid JSON → [preparing: prepare_arguments] → validate
            → [checking: before_tool_call] → [approving: requires_approval(args)]
            → [deciding: decide_tool_call] → (pending) → ready → running: execute
            → [finishing: after_tool_call] → done (tool_execution_end emitted)

Brackets mark steps that only occur when the tool or the run has the hook. A call waits for a
decision when ``before_tool_call`` returned ``suspend=True``, when its tool requires approval
(``True``, or its function says so) or is deferred: ``decide_tool_call``, when the run has it,
is asked first; a call it gives no decision is ``pending``. A decision takes a pending call on:
``Approve`` makes it ready (edited arguments are validated again), ``Deny`` gives it an error
result, ``ToolOutput`` is its result as if the tool had returned it (``after_tool_call`` sees it).

In sequential mode (the run's mode, or any called tool's) a call runs to ``done``, and its
result message is emitted, before the next is prepared; a pending call stops the batch there.
In parallel mode every call is prepared in order, then all ready calls start at once, and the
result messages are emitted in call order when the last one is done. When every call is done
or pending and some are pending, the batch is paused (:class:`BatchPaused`): the turn suspends
the run, and :func:`decide` takes the decisions when it is resumed.

An abort ends, at once, every call waiting on a hook or a decision; calls already running
finish with their own results; calls not reached yet get an aborted result as they are reached.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeAlias

from returns.result import Failure

from .config import (
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from .draft import Draft
from .effects import AfterToolCall, BeforeToolCall, CheckApproval, DecideToolCall, ExecuteTool, PrepareArguments
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
    Approve,
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
from .state import RunningTools, ToolSlot
from .texts import (
    ABORTED_TEXT,
    BLOCKED_TEXT,
    DENIED_TEXT,
    SUSPENDED_TEXT,
    approval_required_text,
    bad_answer_text,
    bad_decision_text,
    decisions_problem_text,
    decisions_shape_text,
    deferred_text,
    invalid_json_text,
    length_cutoff_text,
    not_found_text,
    slot_busy_text,
    slot_not_waiting_text,
    timed_out_text,
    waits_for_text,
    wrong_decision_text,
)
from .tools import AgentToolResult, PendingCall, ToolPolicy, ToolSpec, error_result, validate_arguments

__all__ = ["ANSWERS", "BatchDone", "BatchPaused", "ToolAnswer", "abort", "answer", "decide", "decision_problem", "decisions_problem",
           "problem", "slot_of", "start", "waits_problem"]

ToolAnswer: TypeAlias = (ArgumentsPrepared | BeforeToolCallDecided | ToolUpdated | ToolFinished | ToolFailed
                         | ToolTimedOut | AfterToolCallDecided | HookFailed | ApprovalChecked | ToolCallDecided)
"""The inputs that answer something about one call of the batch."""


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


ANSWERS: Final[dict[type, tuple[str, ...]]] = {
    ArgumentsPrepared: ("preparing",),
    BeforeToolCallDecided: ("checking",),
    ToolUpdated: ("running",),
    ToolFinished: ("running",),
    ToolFailed: ("running",),
    ToolTimedOut: ("running",),
    AfterToolCallDecided: ("finishing",),
    ApprovalChecked: ("approving",),
    ToolCallDecided: ("deciding",),
    HookFailed: ("preparing", "checking", "approving", "deciding", "finishing"),
}
"""Input type → the slot steps that can take it."""

_HOOK_STEPS: Final = ANSWERS[HookFailed]
_WAITING: Final = frozenset(step for steps in ANSWERS.values() for step in steps)
"""The steps in which a call waits for an answer (the others carry no id: ``wait_id`` is -1)."""


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
    """The calls run one at a time: the run's mode says so, or a called tool declares it."""
    return s.tool_execution == "sequential" or any(
        (spec := s.tool_index.get(c.name)) is not None and spec.execution_mode == "sequential" for c in calls
    )


def _one_at_a_time(s: Draft, b: RunningTools) -> bool:
    """A batch that started parallel, whose calls the tools and mode in force now run one at a
    time: a run resumed under other code (``Resumed.settings``). The calls approved at the
    resume then run one after the other, in call order."""
    return _sequential(s, b.message.tool_calls)


def answer(s: Draft, inp: ToolAnswer) -> BatchOutcome:
    """Take an answer about one call (``problem`` said it is legal)."""
    index = slot_of(_batch(s), inp.id)
    assert index is not None
    slot = _batch(s).slots[index]
    if isinstance(inp, ToolUpdated):
        s.emit(ToolExecutionUpdateEvent(slot.call.id, slot.call.name, slot.call.arguments, inp.partial_result))
        return None
    if isinstance(inp, ArgumentsPrepared):
        _validate(s, index, freeze(inp.arguments))
    elif isinstance(inp, BeforeToolCallDecided):
        decision = inp.result
        if decision is not None and decision.block:
            _complete(s, index, error_result(decision.reason or BLOCKED_TEXT, True if decision.terminate else None), True)
        elif decision is not None and decision.suspend:
            deferred = s.tool_policies.get(slot.call.name) == "deferred"
            _needs_decision(s, index, slot.args, decision.reason or SUSPENDED_TEXT,
                            "result" if deferred else "approval")
        else:
            _checked(s, index, slot.args)
    elif isinstance(inp, ApprovalChecked):
        if inp.required:
            _needs_decision(s, index, slot.args, approval_required_text(slot.call.name), "approval")
        else:
            _ready(s, index, slot.args)
    elif isinstance(inp, ToolCallDecided):
        if inp.decision is None:
            _put(s, index, ToolSlot(slot.call, "pending", -1, slot.args, pending=slot.pending))
        else:
            _apply(s, index, inp.decision)
    elif isinstance(inp, ToolFinished):
        _executed(s, index, inp.result, False)
    elif isinstance(inp, ToolFailed):
        _executed(s, index, error_result(inp.error), True)
    elif isinstance(inp, ToolTimedOut):
        _executed(s, index, error_result(timed_out_text(slot.call.name, inp.timeout_ms)), True)
    elif isinstance(inp, AfterToolCallDecided):
        assert slot.result is not None
        _complete(s, index, *_patch(slot.result, slot.is_error, inp.result))
    else:  # HookFailed: prepare_arguments, before_tool_call or after_tool_call raised
        _complete(s, index, error_result(inp.error), True)
    return _advance(s)


def abort(s: Draft) -> BatchOutcome:
    """The run was aborted (``s.aborted`` is set): calls waiting on a hook or a decision end now."""
    for i, slot in enumerate(_batch(s).slots):
        if slot.step in _HOOK_STEPS or slot.step == "pending":
            _complete(s, i, error_result(ABORTED_TEXT), True)
    return _advance(s)


def decide(s: Draft, decisions: tuple[tuple[str, Decision], ...]) -> BatchOutcome:
    """Take the decisions on the pending calls (``decisions_problem`` said they fit), then go on."""
    for call_id, decision in decisions:
        for i, slot in enumerate(_batch(s).slots):
            if slot.step == "pending" and slot.call.id == call_id:
                _apply(s, i, decision)
                break
    return _advance(s)


def decisions_problem(pending: tuple[PendingCall, ...], decisions: tuple[tuple[str, Decision], ...]) -> str | None:
    """Why ``decisions`` cannot be taken for ``pending`` (``None`` when they fit): decisions that
    are not (tool call id, decision) pairs, or every missing, unknown, repeated or wrong kind of
    decision, by tool call id."""
    shape = _shape_problem(decisions)
    if shape is not None:
        return "Cannot resume: " + shape
    by_id = {p.tool_call_id: p for p in pending}
    given: dict[str, int] = {}
    for call_id, _ in decisions:
        given[call_id] = given.get(call_id, 0) + 1
    missing = [p.tool_call_id for p in pending if p.tool_call_id not in given]
    extra = [call_id for call_id in given if call_id not in by_id]
    repeated = [call_id for call_id, n in given.items() if n > 1]
    wrong = []
    for call_id, decision in decisions:
        p = by_id.get(call_id)
        if p is not None:
            problem = decision_problem(p, decision)
            if problem is not None:
                wrong.append(problem)
    if missing or extra or repeated or wrong:
        return decisions_problem_text(missing, extra, wrong, repeated)
    return None


def waits_problem(pending: tuple[PendingCall, ...], tools: tuple[ToolSpec, ...],
                  policies: Mapping[str, ToolPolicy]) -> str | None:
    """Why the pending calls of a suspended run cannot go on under ``tools`` and ``policies``
    (a resuming code's: ``None`` when they can): a call waits for what its tool, as declared
    there, does not make it wait for. A deferred tool's call waits for a result (it never runs
    here), any other's for an approval; a call of a tool that is not there is not looked at (an
    approval of it gets the "not found" result)."""
    names = {t.name for t in tools}
    for p in pending:
        if p.tool_name in names and (policies.get(p.tool_name) == "deferred") != (p.waits_for == "result"):
            return waits_for_text(p.tool_call_id, p.tool_name, p.waits_for)
    return None


def _shape_problem(decisions: Any) -> str | None:
    """Why ``decisions`` are not a tuple (or list) of (tool call id, decision) pairs."""
    if type(decisions) not in (tuple, list):
        return decisions_shape_text(decisions)
    for i, pair in enumerate(decisions):
        if type(pair) not in (tuple, list) or len(pair) != 2:
            return decisions_shape_text(pair, i)
        if type(pair[0]) is not str:
            return decisions_shape_text(pair[0], i, call_id=True)
    return None


def decision_problem(p: PendingCall, decision: Any) -> str | None:
    """Why ``decision`` cannot be taken for the pending call ``p`` (``None`` when it can): the
    wrong kind for what the call waits for, or a decision holding what it cannot (a ``Deny``
    whose reason is not text, a ``ToolOutput`` whose result is not a result)."""
    if isinstance(decision, Deny):
        if decision.reason is not None and type(decision.reason) is not str:
            return bad_decision_text(p.tool_call_id, "Deny", "reason", decision.reason, "text")
        return None
    if isinstance(decision, Approve) and p.waits_for == "approval":
        return None
    if isinstance(decision, ToolOutput) and p.waits_for == "result":
        if not isinstance(decision.result, AgentToolResult):
            return bad_decision_text(p.tool_call_id, "ToolOutput", "result", decision.result,
                                     "an AgentToolResult or a str")
        if type(decision.is_error) is not bool:
            return bad_decision_text(p.tool_call_id, "ToolOutput", "is_error", decision.is_error, "a bool")
        return None
    return wrong_decision_text(p.tool_call_id, p.waits_for, _kind_name(decision))


def _kind_name(value: Any) -> str:
    if isinstance(value, (Approve, Deny, ToolOutput)):
        return type(value).__name__
    return f"{type(value).__name__} {value!r:.60}"


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


# --------------------------------------------------------------------------- one call's steps


def _batch(s: Draft) -> RunningTools:
    batch = s.phase
    assert isinstance(batch, RunningTools)
    return batch


def _put(s: Draft, index: int, slot: ToolSlot) -> None:
    b = _batch(s)
    s.phase = RunningTools(b.message, b.sequential, b.slots[:index] + (slot,) + b.slots[index + 1:], b.cursor)


def _prepare(s: Draft, index: int) -> None:
    """The call's start event, lookup, then ``prepare_arguments`` or validation."""
    call = _batch(s).slots[index].call
    s.emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))
    spec = s.tool_index.get(call.name)
    if s.aborted:
        _complete(s, index, error_result(ABORTED_TEXT), True)
    elif spec is None:
        _complete(s, index, error_result(not_found_text(call.name)), True)
    elif call.invalid_json is not None:
        _complete(s, index, error_result(invalid_json_text(call.name, call.invalid_json)), True)
    elif spec.has_prepare_arguments:
        id_ = s.new_id()
        s.ask(PrepareArguments(id_, call))
        _put(s, index, ToolSlot(call, "preparing", id_))
    else:
        _validate(s, index, call.arguments)


def _validate(s: Draft, index: int, arguments: Any) -> None:
    call = _batch(s).slots[index].call
    checked = validate_arguments(s.tool_index[call.name], arguments)
    if isinstance(checked, Failure):
        _complete(s, index, error_result(checked.failure()), True)
    elif "before_tool_call" in s.hooks:
        args = checked.unwrap()
        id_ = s.new_id()
        s.ask(BeforeToolCall(id_, BeforeToolCallContext(_batch(s).message, call, args, s.context())))
        _put(s, index, ToolSlot(call, "checking", id_, args))
    else:
        _checked(s, index, checked.unwrap())


def _checked(s: Draft, index: int, args: Any) -> None:
    """``before_tool_call`` let the call through: the tool's policy decides whether it waits."""
    call = _batch(s).slots[index].call
    policy = s.tool_policies.get(call.name)
    if policy is None:
        _ready(s, index, args)
    elif policy == "deferred":
        _needs_decision(s, index, args, deferred_text(call.name), "result")
    elif policy == "approval":
        _needs_decision(s, index, args, approval_required_text(call.name), "approval")
    else:  # check_approval: the tool's requires_approval function says
        id_ = s.new_id()
        s.ask(CheckApproval(id_, call, args))
        _put(s, index, ToolSlot(call, "approving", id_, args))


def _needs_decision(s: Draft, index: int, args: Any, reason: str, waits_for: Any) -> None:
    """The call waits for a decision: ``decide_tool_call`` is asked, else it is pending."""
    call = _batch(s).slots[index].call
    pending = PendingCall(call.id, call.name, args, reason, waits_for)
    if "decide_tool_call" in s.hooks:
        id_ = s.new_id()
        s.ask(DecideToolCall(id_, pending))
        _put(s, index, ToolSlot(call, "deciding", id_, args, pending=pending))
    else:
        _put(s, index, ToolSlot(call, "pending", -1, args, pending=pending))


def _apply(s: Draft, index: int, decision: Decision) -> None:
    """A decision on a call that waits for one (its kind was checked)."""
    slot = _batch(s).slots[index]
    if isinstance(decision, Deny):
        _complete(s, index, error_result(decision.reason or DENIED_TEXT), True)
    elif isinstance(decision, ToolOutput):
        _executed(s, index, decision.result, decision.is_error)  # type: ignore[arg-type]  # checked
    else:  # Approve: checked against the tool as the tools in force declare it (a resumed run's are the
        # resuming code's: what a stored suspension says the call was checked against is not taken)
        spec = s.tool_index.get(slot.call.name)
        if spec is None:
            _complete(s, index, error_result(not_found_text(slot.call.name)), True)
            return
        checked = validate_arguments(spec, slot.args if decision.arguments is None else decision.arguments)
        if isinstance(checked, Failure):
            _complete(s, index, error_result(checked.failure()), True)
        else:
            _ready(s, index, checked.unwrap())


def _ready(s: Draft, index: int, args: Any) -> None:
    _put(s, index, ToolSlot(_batch(s).slots[index].call, "ready", -1, args))
    if _batch(s).sequential:
        _execute(s, index)


def _execute(s: Draft, index: int) -> None:
    slot = _batch(s).slots[index]
    if s.aborted:  # a parallel call that was ready when the abort came
        _complete(s, index, error_result(ABORTED_TEXT), True)
        return
    id_ = s.new_id()
    s.ask(ExecuteTool(id_, slot.call, slot.args))
    _put(s, index, ToolSlot(slot.call, "running", id_, slot.args))


def _executed(s: Draft, index: int, result: AgentToolResult, is_error: bool) -> None:
    """The tool returned (or raised): ``after_tool_call``, or the call is done. After an abort
    no hook is asked any more: the call keeps its own result."""
    slot = _batch(s).slots[index]
    if "after_tool_call" in s.hooks and not s.aborted:
        id_ = s.new_id()
        ctx = AfterToolCallContext(_batch(s).message, slot.call, slot.args, result, is_error, s.context())
        s.ask(AfterToolCall(id_, ctx))
        _put(s, index, ToolSlot(slot.call, "finishing", id_, slot.args, result, is_error))
    else:
        _complete(s, index, result, is_error)


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


def _complete(s: Draft, index: int, result: AgentToolResult, is_error: bool) -> None:
    """The call has its final result: ``tool_execution_end`` (and, sequentially, its message)."""
    b = _batch(s)
    call, args = b.slots[index].call, b.slots[index].args
    s.emit(ToolExecutionEndEvent(call.id, call.name, result, is_error))
    slot = ToolSlot(call, "done", -1, args, result, is_error, s.at)
    if b.sequential:  # kept: the turn's tool_results hold this same message
        slot = ToolSlot(call, "done", -1, args, result, is_error, s.at, _emit_message(s, slot))
    _put(s, index, slot)


# --------------------------------------------------------------------------- the batch


def _advance(s: Draft) -> BatchOutcome:
    """Move the batch forward as far as it goes without an answer."""
    while True:
        b = _batch(s)
        slots = b.slots
        if b.cursor < len(slots):
            current = slots[b.cursor]
            if current.step == "waiting":
                _prepare(s, b.cursor)
            elif current.step == "done" or (current.step in ("ready", "pending") and not b.sequential):
                s.phase = RunningTools(b.message, b.sequential, slots, b.cursor + 1)
            elif current.step == "pending":  # sequential: nothing after it runs before its decision
                assert current.pending is not None
                return BatchPaused((current.pending,))
            else:
                return None  # the current call waits for an answer
            continue
        if not b.sequential:
            ready = [i for i, slot in enumerate(slots) if slot.step == "ready"]
            if ready:
                if _one_at_a_time(s, b):  # resumed under code that runs these calls one at a time
                    if any(slot.step in _WAITING for slot in slots):
                        return None
                    ready = ready[:1]
                for i in ready:
                    _execute(s, i)
                continue
        if all(slot.step == "done" for slot in slots):
            return _done(s, b)
        if all(slot.step in ("done", "pending") for slot in slots):
            return BatchPaused(tuple(slot.pending for slot in slots if slot.pending is not None and slot.step == "pending"))
        return None


def _done(s: Draft, b: RunningTools) -> BatchDone:
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
