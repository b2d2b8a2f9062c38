"""The agent's side of a run's events: the state each event updates (before anyone sees it), the
listeners that get it, and the ``agent_end`` of a run that failed outside the loop."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from agentcore.events import AgentEndEvent, AgentEvent
from agentcore.messages import AssistantMessage, Model

from ..runtime.hooks import with_signal
from .state import AgentListener, AgentState, RunBook

__all__ = ["AgentListeners"]

_log = logging.getLogger("agentcore")


async def _await_listener(outcome: Awaitable[Any], run: RunBook) -> None:
    """Await an async listener from the run's private task.

    The asyncio interpreter aborts a streaming reply by cancelling the task that iterates the
    events, which is this one; when that happens while a listener is awaited here, the
    cancellation is absorbed (the listener finishes; the stream sees the abort when it resumes).
    Only the agent cancels this task otherwise, and then ``run.stopping`` is set.
    """
    future = asyncio.ensure_future(outcome)
    while True:
        try:
            await asyncio.shield(future)
            return
        except asyncio.CancelledError:
            if future.done():  # the listener itself was cancelled: its own business
                return
            if run.stopping:
                future.cancel()
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()


class AgentListeners:
    """The listener methods of :class:`~interpreters.agent.Agent` (a base class of it)."""

    clock: Callable[[], int]
    _state: AgentState
    _listeners: list[AgentListener]
    _current: RunBook | None

    def subscribe(self, listener: AgentListener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event of every run, after the agent has applied
        the event to its state; a listener that takes a second argument (or a ``signal``
        keyword) also gets the run's :class:`AbortSignal`, aborted once :meth:`abort` is called.
        An ``async def`` listener is awaited (the run waits for it).
        A listener that raises is logged; the run and the other listeners go on. Returns a
        function that unsubscribes (calling it twice is harmless)."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            try:
                self._listeners.remove(listener)
            except ValueError:
                pass

        return unsubscribe

    async def _emit(self, event: AgentEvent, run: RunBook) -> None:
        for listener in tuple(self._listeners):
            try:
                args, kwargs = with_signal(listener, (event,), run.signal)
                outcome = listener(*args, **kwargs)
                if inspect.isawaitable(outcome):
                    await _await_listener(outcome, run)
            except Exception:
                _log.exception("agent listener %r raised on %s; the run goes on", listener, event.type)

    def _apply(self, event: AgentEvent) -> None:
        """Update the state from one event of the run (before the listeners see it)."""
        state = self._state
        kind = event.type
        if kind == "message_update":
            state.stream_message = event.message  # type: ignore[union-attr]
        elif kind == "message_start":
            message = event.message  # type: ignore[union-attr]
            if getattr(message, "role", None) == "assistant":
                state.stream_message = message
        elif kind == "message_end":
            state.stream_message = None
            state.messages.append(event.message)  # type: ignore[union-attr]
            run = self._current
            if run is not None:
                run.taken.pop(id(event.message), None)  # type: ignore[union-attr]
        elif kind == "tool_execution_start":
            state.pending_tool_calls = state.pending_tool_calls | {event.tool_call_id}  # type: ignore[union-attr]
        elif kind == "tool_execution_end":
            state.pending_tool_calls = state.pending_tool_calls - {event.tool_call_id}  # type: ignore[union-attr]
        elif kind == "turn_end":
            error = getattr(event.message, "error_message", None)  # type: ignore[union-attr]
            if error:
                state.error = error
        elif kind == "agent_end" or kind == "agent_suspended":
            state.is_streaming = False
            state.stream_message = None


    async def _record_failure(self, model: Model, text: str, run: RunBook, *, aborted: bool) -> None:
        message = AssistantMessage(
            (),
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason="aborted" if aborted else "error",
            error_message=text,
            timestamp=self.clock(),
        )
        state = self._state
        state.messages.append(message)
        state.error = text
        state.is_streaming = False
        state.stream_message = None
        state.pending_tool_calls = frozenset()
        await self._emit(AgentEndEvent((message,)), run)
