"""The sync interpreter's front door: :func:`agent_loop`, :func:`agent_loop_continue`,
:func:`resume_suspended` and their ``run_`` forms, run in the caller's thread by
:class:`~interpreters.runtime.threads.SyncRun` (how it waits, on threads: see that module)."""


from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentcore import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    Continued,
    Decision,
    Started,
    Suspension,
    initial_state,
)
from agentcore.resumption import resumed_input, suspended_state

from .replay.recovery import with_transcript
from .runtime.checks import check_run_arguments, prompt_messages
from .runtime.clock import now_ms
from .runtime.hooks import FATAL, deliver
from .runtime.journal import Journals
from .runtime.threads import AgentEventStream, StreamFn, SyncRun
from .signal import AbortSignal

__all__ = [
    "AgentEventStream",
    "SyncRun",
    "StreamFn",
    "agent_loop",
    "agent_loop_continue",
    "run_agent_loop",
    "resume_suspended",
    "run_agent_loop_continue",
]


def agent_loop(
    prompts: str | AgentMessage | Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> AgentEventStream:
    """Start a run with ``prompts``; iterate the result for its events.

    >>> from agentcore import AgentContext, AgentLoopConfig, Model
    >>> from interpreters import ScriptedModel
    >>> stream = agent_loop("hi", AgentContext(), AgentLoopConfig(model=Model(id="m")),
    ...                     stream_fn=ScriptedModel(["Hello!"]))
    >>> [e.type for e in stream][:3]
    ['agent_start', 'turn_start', 'message_start']
    >>> stream.result()[-1].text
    'Hello!'
    """
    check_run_arguments(context, config, signal, stream_fn, "agent_loop")
    first = Started(prompt_messages(prompts, clock), clock())
    state = initial_state(context, config)
    return AgentEventStream(SyncRun(state, context.tools, config, first, signal, stream_fn, journal, clock))


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> AgentEventStream:
    """Continue from ``context`` (its last message must not be an assistant message).

    Raises ``ValueError`` at once, before any event, when the context cannot be continued.
    """
    check_run_arguments(context, config, signal, stream_fn, "agent_loop_continue")
    state, first = initial_state(context, config), Continued(clock())
    return AgentEventStream(SyncRun(state, context.tools, config, first, signal, stream_fn, journal, clock))


def resume_suspended(
    suspension: Suspension,
    decisions: Mapping[str, Decision],
    *,
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
    transcript: str | os.PathLike[str] | None = None,
    secrets: Sequence[str] = (),
) -> AgentEventStream:
    """Go on with a suspended run: ``decisions`` maps each pending call's id to ``Approve()``
    (``Approve(arguments=...)`` runs it with edited arguments, validated again), ``Deny(reason)``
    or, for a deferred call, ``ToolOutput(result)``. Iterate the result for the events from
    there (the same an uninterrupted run would give: no second ``agent_start``); it ends with
    ``agent_end``, or ``agent_suspended`` again. Its ``result()`` is every message the run added,
    before and after the suspension.

    ``context`` gives the tools (their implementations; the conversation is the suspension's)
    and ``config`` the model and its headers (the suspension's are not used: read back from a
    transcript they are redacted), hooks, budgets and model options in force from here. Missing,
    unknown or wrong-kind decisions raise ``ValueError`` naming the ids, before anything runs.
    ``transcript`` (the path of the transcript that recorded the run up to its suspension) goes
    on recording the run at its end (:func:`interpreters.replay.recovery.continue_transcript`): a
    suspension is resumed at most once per transcript, a second resume of it raises
    ``AlreadyResumed`` before anything runs. ``secrets``: strings the continued transcript must
    never hold, as the recorder's ``secrets=`` (give the ones the transcript's recorder was given:
    a transcript does not hold them, only how many, and fewer is refused with a ``ValueError``
    before anything runs). A journal's ``TranscriptRecorder`` that recorded the run up to this
    suspension goes on recording it at the end of its own file, with its own secrets (as with
    ``transcript=``). Each tool gets its call's id, the same as in the run that suspended: its
    idempotency key (``docs/approvals.md``).

    >>> from agentcore import AgentContext, AgentLoopConfig, Model, Approve
    >>> from interpreters import ScriptedModel, agent_loop, tool
    >>> from interpreters.streams.scripted import tool_call
    >>> @tool(requires_approval=True)
    ... def delete(path: str) -> str:
    ...     "Delete a file."
    ...     return f"deleted {path}"
    >>> ctx, cfg = AgentContext(tools=[delete]), AgentLoopConfig(model=Model(id="m"))
    >>> model = ScriptedModel([tool_call("delete", {"path": "a.txt"}, "c1"), "Done."])
    >>> stream = agent_loop("clean up", ctx, cfg, stream_fn=model)
    >>> [e.type for e in stream][-1], [p.tool_call_id for p in stream.suspension.pending]
    ('agent_suspended', ['c1'])
    >>> resumed = resume_suspended(stream.suspension, {"c1": Approve()}, context=ctx, config=cfg, stream_fn=model)
    >>> [m.role for m in resumed.result()]
    ['user', 'assistant', 'toolResult', 'assistant']
    """
    check_run_arguments(context, config, signal, stream_fn, "resume_suspended")
    state = suspended_state(suspension, config, "resume_suspended")
    first = resumed_input(decisions, suspension, config, context.tools, clock, "resume_suspended")
    return AgentEventStream(with_transcript(journal, transcript, suspension, config, secrets, lambda journals: SyncRun(
        state, context.tools, config, first, signal, stream_fn, journals, clock)))


def _check_emit(emit: Any, fn: str) -> None:
    if not callable(emit):
        raise TypeError(f"{fn}() argument 'emit' must be callable, not {type(emit).__name__!r}")
    if inspect.iscoroutinefunction(emit) or inspect.iscoroutinefunction(getattr(emit, "__call__", None)):
        raise TypeError(f"{fn}() argument 'emit' is an async function, which the sync interpreter cannot "
                        f"await: use interpreters.aio.{fn}, or a sync function")


def _drain(stream: AgentEventStream, emit: Callable[..., Any]) -> list[AgentMessage]:
    listeners, signal = (emit,), stream.signal
    fatal: BaseException | None = None
    for event in stream:
        try:
            deliver(listeners, event, signal)
        except FATAL as exc:  # the listener's Ctrl-C or exit: abort, let the run end, then raise
            if fatal is None:
                fatal = exc
                signal.abort(f"{type(exc).__name__} in a listener")
    messages = stream.result()
    if fatal is not None:
        raise fatal
    return messages


def run_agent_loop(
    prompts: str | AgentMessage | Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Callable[[AgentEvent], Any],
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> list[AgentMessage]:
    """Run to the end, giving each event to ``emit``; returns the new messages.

    An ``emit`` that raises is logged and the run goes on.
    """
    _check_emit(emit, "run_agent_loop")
    return _drain(agent_loop(prompts, context, config, signal, stream_fn, journal=journal, clock=clock), emit)


def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Callable[[AgentEvent], Any],
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> list[AgentMessage]:
    """:func:`run_agent_loop` for a continue."""
    _check_emit(emit, "run_agent_loop_continue")
    return _drain(agent_loop_continue(context, config, signal, stream_fn, journal=journal, clock=clock), emit)
