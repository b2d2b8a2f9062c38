"""Calling user code: what a hook effect calls and what its answer becomes (:func:`hook_call`,
one table for every hook), the run's signal passed to the callables that take one
(:func:`with_signal`), listeners (:func:`deliver`), and what user code gave (:class:`Returned`)
or raised (:data:`FATAL`, :func:`failure_text`)."""

from __future__ import annotations

import inspect
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from agentcore import (
    AfterToolCall,
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    Approve,
    BeforeToolCall,
    BeforeToolCallResult,
    CheckApproval,
    ConvertToLlm,
    DecideToolCall,
    Decision,
    Effect,
    Input,
    NextTurn,
    PendingCall,
    PollFollowUps,
    PollSteering,
    PrepareArguments,
    PrepareNextTurn,
    ShouldStopAfterTurn,
    ToolOutput,
    TransformContext,
    thaw,
)
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
from agentcore.records import replace
from agentcore.resumption import DECISIONS

from ..signal import StopRun
from .checks import article, expect, history, polled_messages, shown, tool_registry

__all__ = [
    "FATAL",
    "HookCall",
    "KeyLookup",
    "Returned",
    "SignalPlace",
    "deliver",
    "failure_text",
    "hook_call",
    "hook_decision",
    "signal_place",
    "user_call",
    "with_signal",
]

_log = logging.getLogger("agentcore")

FATAL: Final = (KeyboardInterrupt, SystemExit, StopRun)
"""Exceptions of user code that stop the run (which still ends with ``agent_end``) and are then
raised to the caller; every other exception becomes an error result or a failed reply."""


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


@dataclass(frozen=True, slots=True)
class KeyLookup:
    """Not an effect of the core: what :meth:`~interpreters.runtime.run.Run.effects` gives a
    runner, as a hook to carry out, when a resumed run asks ``get_api_key`` for ``provider``'s
    key before its first step (:attr:`~interpreters.runtime.keys.Keys.first`). Its answer is
    told to the journals; nothing is fed to the core."""

    provider: str


# --------------------------------------------------------------------------- the signal

SignalPlace: TypeAlias = Literal["", "positional", "keyword"]
_signal_places: weakref.WeakKeyDictionary[Any, dict[int, SignalPlace]] = weakref.WeakKeyDictionary()


def _signal_place(fn: Any, own: int) -> SignalPlace:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature (some builtins): called as before
        return ""
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) > own and (positional[own].name == "signal"
                                  or positional[own].default is inspect.Parameter.empty):
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


def _user_context(ctx: AgentContext, registry: dict[str, AgentTool]) -> AgentContext:
    """The hook's view of the context: real tools instead of the core's specs."""
    tools = tuple(registry.get(t.name, t) for t in ctx.tools)
    return AgentContext(ctx.system_prompt, ctx.messages, tools)


def user_call(name: str, fn: Any, args: tuple[Any, ...], answer: Callable[[Any, int], Input], signal: Any
              ) -> HookCall:
    """The call of ``fn(*args)`` named ``name``, with the run's ``signal`` where it takes one."""
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
        return user_call(GET_API_KEY.name, config.get_api_key, (effect.provider,), no_answer, signal)
    hook, how = HOOK_OF_EFFECT.get(type(effect)), _HOOK_CALLS.get(type(effect))
    if hook is None or how is None or hook.answer is None:
        raise TypeError(f"{type(effect).__name__} is not a hook effect")
    arguments, value = how
    fn = getattr(config, hook.name) if hook.on == "config" else _tool_hook(hook, effect, registry)
    eid, answer = effect.id, hook.answer  # type: ignore[union-attr]  # every hook effect has an id

    def answered(v: Any, at: int) -> Input:
        return answer(eid, value(effect, registry, v), at)  # type: ignore[no-any-return]

    return user_call(hook.name, fn, arguments(effect, registry), answered, signal)


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
    nxt = expect(NextTurn, PREPARE_NEXT_TURN.name)(value)
    if nxt is not None and nxt.context is not None:
        registry.clear()
        registry.update(tool_registry(nxt.context.tools))
    return nxt


_Arguments: TypeAlias = Callable[[Any, dict[str, AgentTool]], tuple[Any, ...]]
_Value: TypeAlias = Callable[[Any, dict[str, AgentTool], Any], Any]

_HOOK_CALLS: Final[dict[type, tuple[_Arguments, _Value]]] = {
    PollSteering: (lambda e, r: (), lambda e, r, v: polled_messages(GET_STEERING_MESSAGES.name, v)),
    PollFollowUps: (lambda e, r: (), lambda e, r, v: polled_messages(GET_FOLLOW_UP_MESSAGES.name, v)),
    TransformContext: (lambda e, r: (e.messages,), lambda e, r, v: history(TRANSFORM_CONTEXT.name, v)),
    ConvertToLlm: (lambda e, r: (e.messages,), lambda e, r, v: history(CONVERT_TO_LLM.name, v)),
    PrepareArguments: (lambda e, r: (thaw(e.tool_call.arguments),), lambda e, r, v: v),
    BeforeToolCall: (_in_user_context, lambda e, r, v: expect(BeforeToolCallResult, BEFORE_TOOL_CALL.name)(v)),
    AfterToolCall: (_in_user_context, lambda e, r, v: expect(AfterToolCallResult, AFTER_TOOL_CALL.name)(v)),
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


def hook_decision(pending: PendingCall, value: Any) -> Decision | None:
    """What ``decide_tool_call`` returned, checked: ``None`` or a decision of the kind the call
    waits for (``TypeError`` otherwise: the call gets an error result saying so)."""
    if value is None:
        return None
    if not isinstance(value, DECISIONS):
        raise TypeError(f"decide_tool_call returned {article(type(value).__name__)} ({shown(value)}); expected "
                        "Approve, Deny, ToolOutput or None")
    if isinstance(value, Approve if pending.waits_for == "result" else ToolOutput):
        kinds = "Approve, Deny or None" if pending.waits_for == "approval" else "ToolOutput, Deny or None"
        raise TypeError(f"decide_tool_call returned {type(value).__name__} for tool call {pending.tool_call_id}, "
                        f"which waits for {'an approval' if pending.waits_for == 'approval' else 'a result'} "
                        f"({kinds})")
    return value



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


def no_answer(value: Any, at: int) -> Input:
    """The answer of ``get_api_key``, which is not an input: never called."""
    raise TypeError("get_api_key answers with a key (Keys.resolved), not an input")
