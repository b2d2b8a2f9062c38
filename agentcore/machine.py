"""The agent loop as a pure function: ``step(state, input) -> Result[(state, effects), Rejection]``.

Theory of operation
-------------------

A run is driven by an interpreter. It builds the idle state with
:func:`agentcore.state.initial_state`, feeds ``Started(prompts)`` (or ``Continued()``), and then
repeats: carry out the effects ``step`` returned, feed back the answer of each effect that wants
one (matching ``id``), until a ``RunEnded`` effect says the run is over. The core decides
everything else: which events are emitted and in what order, when hooks are called, which tools
run and how, what goes into the context.

``step`` is *total*: an input that makes no sense in the current phase (an unknown id, an answer
of the wrong kind, anything after the end) returns ``Failure(Rejection)`` and the state is left as
it was. It never raises for such cases and never mutates its arguments. It is deterministic: no
clock (timestamps come in as ``at`` on inputs), no randomness, no iteration over unordered
collections.

How a turn goes is one table, :data:`TURN`, read top to bottom::

    poll_steering           [get_steering_messages]    the messages join the turn
    poll_follow_ups         [get_follow_up_messages]   only when nothing else goes on; none: agent_end
    open_turn               turn_start (unless open), the polled messages
    transform_context       [transform_context]
    convert_to_llm          [convert_to_llm]           else the default conversion
    call_model              CallLlm; the stream's events; an error or aborted reply ends the run
    run_tools               the tool batch (agentcore.batch), when the reply asked for tools
    suspend                 calls wait for decisions: agent_suspended, the run suspends
    end_turn                the results join the context; turn_end
    check_budgets           a budget (max_turns, ...) reached: budget_reached, agent_end
    prepare_next_turn       [prepare_next_turn]
    should_stop_after_turn  [should_stop_after_turn]   true: agent_end
    (back to the top)

``Started`` emits ``agent_start``, ``turn_start`` and the prompts, then walks the table from
the top; ``Continued`` does the same without prompts. One function, :func:`_walk`, goes down the
table until a stage has to wait for the world, and each answer resumes the walk after the stage
that asked. A bracketed stage asks the user's hook only when it is set, and otherwise takes the
hook's neutral answer; that gate is written once, in the walk. Each waiting stage has a phase of
its own, named for what the run waits on (``awaiting_steering``, …, ``streaming``,
``running_tools``).

A run suspends in one place, the ``suspend`` stage: the tool batch came back paused (calls
wait for decisions, :class:`~agentcore.batch.BatchPaused`), so the run emits ``agent_suspended``
and waits in :class:`~agentcore.state.Suspended`, holding the batch, instead of going on to the
end of the turn. ``Resumed`` (the decisions) hands them to the batch, and the walk goes on after
``run_tools`` as after any other answer of the batch: the same events as if the decisions had
been there at once, and the run may suspend again.

An abort is taken in two places only: an abort input ends what the run is waiting on at once
(:func:`_on_abort`: the model call is cancelled, or, when the interpreter reads on for the
stream's own final message, only that message is waited for; the tool batch ends the calls
waiting on a hook, a hook's answer is no longer waited for), and the walk stops before any stage
that would ask the world for more, closing an open turn with an aborted reply.

Messages a queue hook returns join the context in the step that brings them, so a hook that
fails later, or an abort, never loses one.

Inside, each input works on a private :class:`~agentcore.draft.Draft` of the state that collects
the effects; the draft never escapes ``step``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from pyrsistent import PVector, pvector
from returns.result import Failure, Result, Success

from . import batch, hooks, reply
from . import checks as inputs_checked
from .call_ids import take_call_ids, taken_call_ids
from .config import NextTurn, PrepareNextTurnContext
from .convert import default_convert_to_llm
from .draft import Draft
from .effects import (
    CallLlm,
    CancelLlm,
    ConvertToLlm,
    Effect,
    Emit,
    PollFollowUps,
    PollSteering,
    PrepareNextTurn,
    RunEnded,
    RunSuspended,
    ShouldStopAfterTurn,
    TransformContext,
)
from .events import (
    AgentEndEvent,
    AgentStartEvent,
    AgentSuspendedEvent,
    BudgetReachedEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .inputs import (
    AbortRequested,
    Continued,
    HookFailed,
    Input,
    Resumed,
    Started,
    StreamEventReceived,
    StreamFailed,
)
from .messages import (
    AgentMessage,
    AssistantMessage,
    ThinkingLevel,
)
from .records import Record
from .reply import stream_event_problem
from .settings import put_in_force
from .state import (
    AwaitingConvert,
    AwaitingFollowUps,
    AwaitingNextTurn,
    AwaitingSteering,
    AwaitingStopDecision,
    AwaitingTransform,
    CompletedTurn,
    Finished,
    Idle,
    LoopState,
    RunningTools,
    Streaming,
    Suspended,
    emitted_results,
    index_tools,
    llm_view,
)
from .texts import (
    REQUEST_ABORTED_TEXT,
    hook_failed_text,
    not_expected_text,
)
from .tools import spec_of, tool_policies

__all__ = [
    "TRANSITIONS",
    "TURN",
    "Ask",
    "Do",
    "Rejection",
    "StepResult",
    "awaits",
    "step",
    "stream_event_problem",
    "transition",
]


class Rejection(Record, frozen=True):
    """Why ``step`` refused an input. The state is unchanged."""

    reason: str
    phase: str
    input: str

    def __str__(self) -> str:
        return f"{self.reason} (phase {self.phase}, input {self.input})"


StepResult: TypeAlias = Result[tuple[LoopState, tuple[Effect, ...]], Rejection]

_DELTA_KIND: Final = reply.DELTA_KIND
_PARTIAL_TYPES: Final = reply.PARTIAL_TYPES
_AGENT_START: Final = AgentStartEvent()
_TURN_START: Final = TurnStartEvent()


# --------------------------------------------------------------------------- the turn, as a table


def _never(s: Draft) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Ask:
    """A stage that asks the user's ``hook`` when it is set, and otherwise takes ``default``.

    Asking means: a new id, the ``effect`` built for it (of the hook's effect type), and the
    ``phase`` that waits for the hook's ``answer`` input with that id. The answer's ``value``
    (or the default) goes to ``take``, which returns whether the turn goes on (false: the run
    ended). A stage whose ``skip`` is true is passed over.
    """

    name: str
    hook: hooks.Hook
    phase: type
    effect: Callable[[int, Draft], Effect]
    value: Callable[[Any], Any]
    default: Callable[[Draft], Any]
    take: Callable[[Draft, Any], bool]
    skip: Callable[[Draft], bool] = _never

    @property
    def answer(self) -> type:
        """The input that brings the hook's value."""
        answer = self.hook.answer
        assert answer is not None
        return answer


@dataclass(frozen=True, slots=True)
class Do:
    """A stage the core does itself; ``run`` returns whether the walk goes on (false: the run
    waits for the world, or ended)."""

    name: str
    run: Callable[[Draft], bool]


def _take_steering(s: Draft, messages: Sequence[AgentMessage]) -> bool:
    s.pending = tuple(messages)
    return True


def _run_goes_on(s: Draft) -> bool:
    """Whether the run goes on without follow-ups: a turn is open, steering messages were
    polled, or the last reply asked for (non-terminating) tools. Follow-ups are polled only
    when the run would otherwise end."""
    return s.turn_open or bool(s.pending) or s.has_more_tool_calls


def _take_follow_ups(s: Draft, messages: Sequence[AgentMessage]) -> bool:
    if not messages:
        _end_run(s)
        return False
    s.pending = messages
    return True


def _open_turn(s: Draft) -> bool:
    if not s.turn_open:
        s.emit(_TURN_START)
        s.turn_open = True
    for message in s.pending:
        s.announce(message)
    return True


def _take_view(s: Draft, messages: Sequence[AgentMessage]) -> bool:
    s.view = messages
    return True


def _view(s: Draft) -> Sequence[AgentMessage]:
    view = s.view
    assert view is not None, "the view is set by transform_context before it is used"
    return view


def _default_conversion(s: Draft) -> Sequence[AgentMessage]:
    if s.llm_messages is not None and s.view is s.messages:
        return s.llm_messages
    return pvector(default_convert_to_llm(_view(s)))


def _call_model(s: Draft) -> bool:
    id_ = s.new_id()
    model = s.model
    level: ThinkingLevel = s.thinking_level if model.reasoning else "off"  # only models that reason
    s.ask(CallLlm(id_, model, level, s.system_prompt, _view(s), s.tools))
    s.phase = Streaming(id_)
    return False


def _run_tools(s: Draft) -> bool:
    reply = s.reply
    assert reply is not None
    if not reply.tool_calls:
        s.results = ()
        s.has_more_tool_calls = False
        return True
    return _tools_done(s, batch.start(s, reply))


def _tools_done(s: Draft, done: batch.BatchDone | batch.BatchPaused | None) -> bool:
    if done is None:
        return False
    if type(done) is batch.BatchPaused:
        s.waiting = done.pending
        return True
    assert isinstance(done, batch.BatchDone)
    s.reply, s.results, s.has_more_tool_calls = done.message, done.results, done.more
    return True


def _suspend(s: Draft) -> bool:
    """The batch waits for decisions: the run suspends (the turn stays open)."""
    pending = s.waiting
    if not pending:
        return True
    tools = s.phase
    assert isinstance(tools, RunningTools)
    s.emit(AgentSuspendedEvent(pending))
    s.ask(RunSuspended(tuple(s.new_messages) + emitted_results(tools), pending))
    s.phase = Suspended(tools, pending)
    return False


def _end_turn(s: Draft) -> bool:
    reply = s.reply
    assert reply is not None
    for result in s.results:
        s.append(result)
    s.emit(TurnEndEvent(reply, s.results))
    s.turn_open = False
    s.last_turn = CompletedTurn(reply, s.results)
    s.turns += 1
    for usage in (reply.usage, *(r.usage for r in s.results)):
        if usage is not None:  # read leniently: a usage that is not one adds nothing
            s.total_tokens += _counted(getattr(usage, "total_tokens", 0))
            s.cost_usd += _counted(getattr(getattr(usage, "cost", None), "total", 0))
    return True


def _counted(amount: Any) -> Any:
    """What a usage figure adds to a budget: a finite number; anything else a stream function
    or a transcript may hold there (``None``, NaN, infinity, text, a usage that is not one)
    adds nothing."""
    if type(amount) is int or (type(amount) is float and amount - amount == 0.0):
        return amount
    return 0


def _check_budgets(s: Draft) -> bool:
    """After each turn: a budget the run reached ends it (``budget_reached``, ``agent_end``).
    An aborted run ends as aborted (the walk sees to it), not as one a budget ended. Costs are
    sums of floats: ten turns of $0.10 reach a $1.00 budget though they add up to 0.999…"""
    if s.aborted:
        return True
    for budget, limit, used in (("max_turns", s.max_turns, s.turns),
                                ("max_total_tokens", s.max_total_tokens, s.total_tokens),
                                ("max_cost_usd", s.max_cost_usd, s.cost_usd)):
        if limit is not None and (used >= limit or math.isclose(used, limit, rel_tol=1e-9)):
            s.emit(BudgetReachedEvent(budget, limit, used))  # type: ignore[arg-type]
            _end_run(s)
            return False
    return True


def _turn_context(s: Draft) -> PrepareNextTurnContext:
    turn = s.last_turn
    assert turn is not None
    return PrepareNextTurnContext(turn.message, turn.tool_results, s.context(), s.new_messages)


def _take_next_turn(s: Draft, nxt: NextTurn | None) -> bool:
    if nxt is None:
        return True
    if nxt.context is not None:
        ctx = nxt.context
        s.system_prompt = ctx.system_prompt
        s.messages = ctx.messages if isinstance(ctx.messages, PVector) else pvector(ctx.messages)
        s.tools = tuple(spec_of(t) for t in ctx.tools)
        s.tool_index = index_tools(s.tools)
        s.tool_policies = tool_policies(ctx.tools)
        s.llm_messages = llm_view(s.messages, s.hooks)
        s.call_ids = taken_call_ids(s.messages, s.new_messages)  # the run's ids stay taken
    if nxt.model is not None:
        s.model = nxt.model
    if nxt.thinking_level is not None:
        s.thinking_level = nxt.thinking_level
    return True


def _take_stop(s: Draft, stop: bool) -> bool:
    if stop:
        _end_run(s)
        return False
    return True


TURN: Final[tuple[Ask | Do, ...]] = (
    Ask("poll_steering", hooks.GET_STEERING_MESSAGES, AwaitingSteering,
        effect=lambda id_, s: PollSteering(id_), value=lambda a: a.messages,
        default=lambda s: (), take=_take_steering),
    Ask("poll_follow_ups", hooks.GET_FOLLOW_UP_MESSAGES, AwaitingFollowUps,
        effect=lambda id_, s: PollFollowUps(id_), value=lambda a: a.messages,
        default=lambda s: (), take=_take_follow_ups, skip=_run_goes_on),
    Do("open_turn", _open_turn),
    Ask("transform_context", hooks.TRANSFORM_CONTEXT, AwaitingTransform,
        effect=lambda id_, s: TransformContext(id_, s.messages), value=lambda a: a.messages,
        default=lambda s: s.messages, take=_take_view),
    Ask("convert_to_llm", hooks.CONVERT_TO_LLM, AwaitingConvert,
        effect=lambda id_, s: ConvertToLlm(id_, _view(s)), value=lambda a: a.messages,
        default=_default_conversion, take=_take_view),
    Do("call_model", _call_model),
    Do("run_tools", _run_tools),
    Do("suspend", _suspend),
    Do("end_turn", _end_turn),
    Do("check_budgets", _check_budgets),
    Ask("prepare_next_turn", hooks.PREPARE_NEXT_TURN, AwaitingNextTurn,
        effect=lambda id_, s: PrepareNextTurn(id_, _turn_context(s)), value=lambda a: a.next_turn,
        default=lambda s: None, take=_take_next_turn),
    Ask("should_stop_after_turn", hooks.SHOULD_STOP_AFTER_TURN, AwaitingStopDecision,
        effect=lambda id_, s: ShouldStopAfterTurn(id_, _turn_context(s)), value=lambda a: a.stop,
        default=lambda s: False, take=_take_stop),
)
"""The stages of a turn, in order; after the last comes the first (the next turn)."""

_AT: Final = {stage.name: i for i, stage in enumerate(TURN)}
_ASKS: Final = tuple(stage for stage in TURN if isinstance(stage, Ask))
_ASK_OF_PHASE: Final = {stage.phase: stage for stage in _ASKS}


def _walk(s: Draft, at: int) -> None:
    """Go down :data:`TURN` from stage ``at`` until the run waits for the world or ends."""
    while True:
        stage = TURN[at]
        if type(stage) is Ask:
            if s.aborted:
                _abort_now(s)
                return
            if stage.skip(s):
                go = True
            elif stage.hook.name in s.hooks:  # the one hook gate
                id_ = s.new_id()
                s.ask(stage.effect(id_, s))
                s.phase = stage.phase(id_)
                return
            else:
                go = stage.take(s, stage.default(s))
        else:
            assert isinstance(stage, Do)
            go = stage.run(s)
        if not go:
            return
        at = (at + 1) % len(TURN)


def _walk_after(s: Draft, name: str) -> None:
    _walk(s, (_AT[name] + 1) % len(TURN))


# --------------------------------------------------------------------------- run start and end


def _on_started(s: Draft, inp: Started) -> None:
    s.emit(_AGENT_START)
    s.emit(_TURN_START)
    s.turn_open = True
    for message in inp.prompts:
        s.announce(message)
    _walk(s, 0)


def _on_continued(s: Draft, inp: Continued) -> None:
    s.emit(_AGENT_START)
    s.emit(_TURN_START)
    s.turn_open = True
    _walk(s, 0)


def _end_run(s: Draft) -> None:
    messages = tuple(s.new_messages)
    s.emit(AgentEndEvent(messages))
    s.ask(RunEnded(messages))
    s.phase = Finished()
    s.turn_open = False


def _close_turn_with(s: Draft, message: AssistantMessage, started: bool) -> None:
    """End the run with ``message`` (an error or aborted reply) as the last of its turn."""
    if not s.turn_open:
        s.emit(_TURN_START)
    if not started:
        s.emit(MessageStartEvent(message))
    s.emit(MessageEndEvent(message))
    s.append(message)
    s.emit(TurnEndEvent(message, ()))
    _end_run(s)


def _synthetic_reply(s: Draft, stop_reason: Literal["error", "aborted"], text: str) -> AssistantMessage:
    m = s.model
    return AssistantMessage(
        (), api=m.api, provider=m.provider, model=m.id, stop_reason=stop_reason, error_message=text, timestamp=s.at,
    )


def _abort_now(s: Draft) -> None:
    """Stop at once, with no model call or tool in flight: an open turn is closed by an aborted
    reply."""
    if s.turn_open:
        _close_turn_with(s, _synthetic_reply(s, "aborted", REQUEST_ABORTED_TEXT), started=False)
    else:
        _end_run(s)


# --------------------------------------------------------------------------- answers


def _on_answer(s: Draft, inp: Any) -> None:
    """The answer of the hook an :class:`Ask` stage asked."""
    stage = _ASK_OF_PHASE[type(s.phase)]
    if stage.take(s, stage.value(inp)):
        _walk_after(s, stage.name)


def _on_hook_failed(s: Draft, inp: HookFailed) -> None:
    """A loop hook raised (a tool hook's failure is the batch's: :data:`TRANSITIONS` sends it there)."""
    text = hook_failed_text(_ASK_OF_PHASE[type(s.phase)].hook.name, inp.error)
    _close_turn_with(s, _synthetic_reply(s, "error", text), started=False)


def _on_tool_answer(s: Draft, inp: batch.ToolAnswer) -> None:
    if _tools_done(s, batch.answer(s, inp)):
        _walk_after(s, "run_tools")


def _on_resumed(s: Draft, inp: Resumed) -> None:
    """The decisions on a suspended run's pending calls: the batch goes on, under the settings
    the resuming code put in force (if it gave them)."""
    phase = s.phase
    assert isinstance(phase, Suspended)
    if inp.settings is not None:
        put_in_force(s, inp.settings)
    s.phase = phase.batch
    if _tools_done(s, batch.decide(s, inp.decisions)):
        _walk_after(s, "run_tools")


def _on_abort(s: Draft, inp: AbortRequested) -> None:
    if s.aborted:
        return
    s.aborted = True
    phase = s.phase
    if isinstance(phase, Suspended):  # the pending calls get an aborted result; the run ends
        phase = s.phase = phase.batch
    if isinstance(phase, Idle):
        return  # the run stops before its first model call
    if isinstance(phase, Streaming):
        if not inp.wait_for_stream:
            _drop_stream(s)
        # else the stream's final event (taken as the reply) or StreamFailed (it did not come)
        # closes the reply: _on_stream_event, _on_stream_failed
    elif isinstance(phase, RunningTools):
        if _tools_done(s, batch.abort(s)):
            _walk_after(s, "run_tools")
    else:
        _abort_now(s)


def _drop_stream(s: Draft) -> None:
    """An abort ends the reply with the library's own aborted message (the reply so far): the
    interpreter drops the stream."""
    phase = s.phase
    assert isinstance(phase, Streaming)
    s.ask(CancelLlm(phase.id))
    if phase.partial is None:
        _abort_now(s)
    else:
        final = reply.finished(phase.partial, stop_reason="aborted", error_message=REQUEST_ABORTED_TEXT)
        _close_turn_with(s, final, started=True)


# --------------------------------------------------------------------------- the model's reply


def _on_stream_event(s: Draft, inp: StreamEventReceived) -> None:
    """Every stream event but the deltas of open blocks (``transition`` takes those at once):
    the reply's own machine (:func:`agentcore.reply.take`) says what became of the reply."""
    phase = s.phase
    assert isinstance(phase, Streaming)
    outcome = reply.take(s, inp.event)
    if type(outcome) is reply.Ended:
        _reply_finished(s, outcome.message, started=outcome.started)
    elif type(outcome) is reply.Broken:
        _stream_broken(s, outcome.text)
    elif type(outcome) is reply.Dropped:
        _drop_stream(s)


def _stream_broken(s: Draft, text: str) -> None:
    """The stream broke the protocol: stop reading it, end the reply as an error."""
    phase = s.phase
    assert isinstance(phase, Streaming)
    s.ask(CancelLlm(phase.id))
    _stream_ended(s, text)


def _stream_ended(s: Draft, text: str) -> None:
    """The reply ends as an error with ``text``, keeping what it streamed so far."""
    phase = s.phase
    assert isinstance(phase, Streaming)
    if phase.partial is not None:
        final = reply.finished(phase.partial, stop_reason="error", error_message=text)
    else:
        final = _synthetic_reply(s, "error", text)
    _reply_finished(s, final, started=phase.partial is not None)


def _on_stream_failed(s: Draft, inp: StreamFailed) -> None:
    if s.aborted:  # the stream did not end within its grace period after the abort, or broke
        _drop_stream(s)
        return
    _stream_ended(s, inp.error)


def _reply_finished(s: Draft, final: AssistantMessage, started: bool) -> None:
    if s.unique_call_ids:  # the ids the calls run with (agentcore.call_ids)
        final, s.call_ids = take_call_ids(final, s.call_ids)
    if not started:
        s.emit(MessageStartEvent(final))
    s.emit(MessageEndEvent(final))
    s.append(final, calls_taken=s.unique_call_ids)
    if final.stop_reason in ("error", "aborted"):
        s.emit(TurnEndEvent(final, ()))
        _end_run(s)
        return
    s.reply = final
    _walk_after(s, "call_model")


# --------------------------------------------------------------------------- what each phase takes

_Handler: TypeAlias = Callable[[Draft, Any], None]

TRANSITIONS: Final[dict[tuple[type, type], _Handler]] = {
    (Idle, Started): _on_started,
    (Idle, Continued): _on_continued,
    (Streaming, StreamEventReceived): _on_stream_event,
    (Streaming, StreamFailed): _on_stream_failed,
    (Suspended, Resumed): _on_resumed,
    **{(RunningTools, t): _on_tool_answer for t in batch.ANSWERS},
    **{(stage.phase, stage.answer): _on_answer for stage in _ASKS},
    **{(stage.phase, HookFailed): _on_hook_failed for stage in _ASKS},
    **{(p, AbortRequested): _on_abort for p in (Idle, Streaming, RunningTools, Suspended, *_ASK_OF_PHASE)},
}
"""(phase type, input type) → handler. A pair that is not here is rejected."""


def awaits(state: LoopState, id: int) -> bool:
    """Whether the core waits for an answer with ``id`` now (interpreters drop late answers:
    a hook the abort left behind, a tool that ran past its deadline).

    >>> from agentcore import AgentContext, Model, initial_state
    >>> awaits(initial_state(AgentContext(), model=Model(id="m")), 1)
    False
    """
    phase = state.phase
    if isinstance(phase, RunningTools):
        return batch.slot_of(phase, id) is not None
    return getattr(phase, "id", None) == id


def transition(state: LoopState, input: Input) -> tuple[LoopState, tuple[Effect, ...]] | Rejection:
    """:func:`step` without the ``Result`` wrapper: ``(state, effects)`` or a :class:`Rejection`.

    For interpreters' hot loops; everything else should use :func:`step`.
    """
    phase = state.phase
    if type(input) is StreamEventReceived and type(phase) is Streaming:
        # The hot path (the reply's, inlined): a delta of an open block only replaces the phase.
        event: Any = input.event
        kind = _DELTA_KIND.get(type(event))
        if kind is not None and input.id == phase.id and not state.run.aborted:
            index, blocks = event.content_index, phase.blocks
            if (type(index) is int and 0 <= index < len(blocks) and blocks[index] == kind
                    and type(event.partial) in _PARTIAL_TYPES):
                return (LoopState(Streaming(phase.id, event.partial, blocks), state.run),
                        (Emit(MessageUpdateEvent(event.partial, event)),))
    handler = TRANSITIONS.get((type(phase), type(input)))
    if handler is None:
        return Rejection(not_expected_text(input.type, phase.name), phase.name, input.type)
    problem = inputs_checked.problem(state, input)
    if problem is not None:
        return Rejection(problem, phase.name, input.type)
    draft = Draft(state, input.at)
    handler(draft, input)
    return draft.freeze(), tuple(draft.effects)


def step(state: LoopState, input: Input) -> StepResult:
    """Advance the run by one input. Returns ``Success((new state, effects))``, or
    ``Failure(Rejection)`` when the input is not legal now (the state is then unchanged)."""
    out = transition(state, input)
    if type(out) is Rejection:
        return Failure(out)
    return Success(out)  # type: ignore[arg-type]
