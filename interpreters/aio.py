"""The asyncio interpreter's front door: the sync one's functions (:mod:`interpreters.sync`),
awaited, run in a task by :class:`~interpreters.runtime.tasks.AsyncRun` (how it waits, on
tasks: see that module)."""


from __future__ import annotations

import asyncio
import inspect
import logging
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
from .runtime.hooks import FATAL, with_signal
from .runtime.journal import Journals
from .runtime.tasks import AgentEventStream, AsyncRun
from .signal import AbortSignal

_log = logging.getLogger("agentcore")

__all__ = [
    "AgentEventStream",
    "AsyncRun",
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
    stream_fn: Callable[..., Any] | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> AgentEventStream:
    """Start a run with ``prompts``; ``async for`` over the result for its events."""
    check_run_arguments(context, config, signal, stream_fn, "agent_loop")
    first = Started(prompt_messages(prompts, clock), clock())
    state = initial_state(context, config)
    return AgentEventStream(AsyncRun(state, context.tools, config, first, signal, stream_fn, journal, clock))


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: Callable[..., Any] | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> AgentEventStream:
    """Continue from ``context``; raises ``ValueError`` at once when it cannot be continued."""
    check_run_arguments(context, config, signal, stream_fn, "agent_loop_continue")
    state, first = initial_state(context, config), Continued(clock())
    return AgentEventStream(AsyncRun(state, context.tools, config, first, signal, stream_fn, journal, clock))


def resume_suspended(
    suspension: Suspension,
    decisions: Mapping[str, Decision],
    *,
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: Callable[..., Any] | None = None,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
    transcript: str | os.PathLike[str] | None = None,
    secrets: Sequence[str] = (),
) -> AgentEventStream:
    """Go on with a suspended run (asyncio): :func:`interpreters.resume_suspended`, with an
    async event stream. Missing, unknown or wrong-kind decisions raise ``ValueError`` at once;
    with ``transcript``, a suspension resumed into it already raises ``AlreadyResumed``, and
    fewer ``secrets`` than its recorder was given a ``ValueError``."""
    check_run_arguments(context, config, signal, stream_fn, "resume_suspended")
    state = suspended_state(suspension, config, "resume_suspended")
    first = resumed_input(decisions, suspension, config, context.tools, clock, "resume_suspended")
    return AgentEventStream(with_transcript(journal, transcript, suspension, config, secrets, lambda journals: AsyncRun(
        state, context.tools, config, first, signal, stream_fn, journals, clock)))


async def _drain(stream: AgentEventStream, emit: Callable[..., Any]) -> list[AgentMessage]:
    signal = stream.signal
    fatal: BaseException | None = None
    async for event in stream:
        try:
            args, kwargs = with_signal(emit, (event,), signal)
            outcome = emit(*args, **kwargs)
            if inspect.isawaitable(outcome):
                await outcome
        except FATAL as exc:  # the listener's Ctrl-C or exit: abort, let the run end, then raise
            if fatal is None:
                fatal = exc
                signal.abort(f"{type(exc).__name__} in a listener")
        except asyncio.CancelledError:
            raise
        except BaseException:
            _log.exception("listener %r raised on %s; the run goes on", emit, event.type)
    messages = await stream.result()
    if fatal is not None:
        raise fatal
    return messages


async def run_agent_loop(
    prompts: str | AgentMessage | Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Callable[[AgentEvent], Any],
    signal: AbortSignal | None = None,
    stream_fn: Callable[..., Any] | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> list[AgentMessage]:
    """Run to the end, giving each event to ``emit`` (sync or async); returns the new messages."""
    return await _drain(agent_loop(prompts, context, config, signal, stream_fn, journal=journal, clock=clock), emit)


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: Callable[[AgentEvent], Any],
    signal: AbortSignal | None = None,
    stream_fn: Callable[..., Any] | None = None,
    *,
    journal: Journals = None,
    clock: Callable[[], int] = now_ms,
) -> list[AgentMessage]:
    """:func:`run_agent_loop` for a continue."""
    return await _drain(agent_loop_continue(context, config, signal, stream_fn, journal=journal, clock=clock), emit)
