"""``perform_sequence``: a test interpreter that checks the exact sequence of effects.

Give it the state, the first input and the effects you expect, each with the answer to feed
back. It steps the core, compares every effect that wants an answer with the next expectation,
and on a mismatch fails with what ran, what was expected next and what came instead. ``Emit``
effects are collected (not matched) and returned with the final state.

>>> from agentcore import AgentContext, Model, Started, UserMessage, initial_state
>>> from agentcore import CallLlm, StreamEventReceived, PartialAssistantMessage
>>> done = PartialAssistantMessage.begin(model="m").done("stop")
>>> state, events = perform_sequence(
...     initial_state(AgentContext(), model=Model(id="m")),
...     Started((UserMessage("hi"),), at=0),
...     [(CallLlm, lambda effect: StreamEventReceived(effect.id, done, at=1))],
... )
>>> [e.type for e in events][-1], state.phase.name
('agent_end', 'finished')
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

from returns.result import Failure

from .effects import CancelLlm, Effect, Emit, RunEnded
from .inputs import Input
from .machine import step
from .state import LoopState

__all__ = ["Expectation", "perform_sequence"]

Matcher: TypeAlias = "type | Callable[[Effect], bool] | Effect"
Answer: TypeAlias = "Input | Sequence[Input] | Callable[[Effect], Input | Sequence[Input]] | None"
Expectation: TypeAlias = "tuple[Matcher, Answer]"


def _matches(matcher: Any, effect: Effect) -> bool:
    if isinstance(matcher, type):
        return isinstance(effect, matcher)
    if callable(matcher) and not hasattr(matcher, "__dataclass_fields__"):
        return bool(matcher(effect))
    return bool(matcher == effect)


def _describe(matcher: Any) -> str:
    if isinstance(matcher, type):
        return matcher.__name__
    return repr(matcher)


def perform_sequence(
    state: LoopState, first: Input, expected: Sequence[tuple[Any, Any]]
) -> tuple[LoopState, list[Any]]:
    """Run the core from ``state`` with ``first``, answering effects as ``expected`` says.

    Each expectation is ``(matcher, answer)``: the matcher is an effect type, a predicate or an
    equal effect; the answer is an input, a list of inputs, a function of the effect giving
    either, or ``None`` (expect the effect, feed nothing). Raises ``AssertionError`` on the first
    unexpected effect, on a rejected input, on expectations left over, and when the core waits
    with nothing left to answer.
    """
    events: list[Any] = []
    ran: list[str] = []
    todo = deque(expected)
    queue: deque[Input] = deque([first])
    ended = False
    while queue:
        inp = queue.popleft()
        result = step(state, inp)
        if isinstance(result, Failure):
            raise AssertionError(f"the core rejected {inp!r}: {result.failure()}\nran: {ran}")
        state, effects = result.unwrap()
        for effect in effects:
            if isinstance(effect, Emit):
                events.append(effect.event)
                continue
            if isinstance(effect, (RunEnded, CancelLlm)):
                ended = ended or isinstance(effect, RunEnded)
                continue
            if not todo:
                raise AssertionError(f"unexpected effect {effect!r}: no expectation left\nran: {ran}")
            matcher, answer = todo.popleft()
            if not _matches(matcher, effect):
                raise AssertionError(
                    f"expected {_describe(matcher)} next, got {effect!r}\nran: {ran}\n"
                    f"remaining: {[_describe(m) for m, _ in todo]}"
                )
            ran.append(type(effect).__name__)
            produced = answer(effect) if callable(answer) and not isinstance(answer, type) else answer
            if produced is None:
                continue
            if isinstance(produced, (list, tuple)):
                queue.extend(produced)
            else:
                queue.append(produced)
    if todo:
        raise AssertionError(f"expectations left over: {[_describe(m) for m, _ in todo]}\nran: {ran}")
    if not ended and state.phase.name != "finished":
        waiting = state.phase.name
        raise AssertionError(f"the run did not end: the core is {waiting} and nothing is left to feed\nran: {ran}")
    return state, events
