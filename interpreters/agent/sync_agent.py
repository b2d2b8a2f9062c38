"""``SyncAgent``: the :class:`~interpreters.agent.Agent` for synchronous code, driven by an event
loop in a background thread; the twin of ``Agent`` method for method, each a blocking call."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, TypeVar

from agentcore.inputs import Decision
from agentcore.messages import AgentMessage, ImageContent, Model, ThinkingLevel
from agentcore.state import Suspension
from agentcore.tools import AgentTool, AgentToolResult, PendingCall

from .async_agent import Agent
from .state import AgentListener, AgentState, QueueMode

__all__ = ["SyncAgent"]

_T = TypeVar("_T")


def _stop_loop(loop: asyncio.AbstractEventLoop) -> None:
    if not loop.is_closed():
        loop.call_soon_threadsafe(loop.stop)


class _DaemonExecutor(concurrent.futures.ThreadPoolExecutor):
    """An executor whose work runs on daemon threads (one per call); a ThreadPoolExecutor only
    because asyncio accepts nothing else as a default executor."""

    def submit(self, fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[_T]:
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

        threading.Thread(target=work, name="agentcore-agent-worker", daemon=True).start()
        return future


class SyncAgent:
    """An :class:`Agent` for synchronous code: its event loop runs in a background thread.

    ``prompt()``, ``continue_()`` and ``wait_for_idle()`` block the calling thread until the run
    is over; every other method may be called from any thread (for instance ``steer()`` or
    ``abort()`` from a UI thread while another thread is blocked in ``prompt()``). Listeners,
    tools and hooks run on the background thread. ``close()`` (or leaving a ``with`` block)
    aborts a run in progress and stops the thread.

    >>> from agentcore import Model
    >>> from interpreters.streams.scripted import ScriptedModel
    >>> with SyncAgent(model=Model(id="m"), stream_fn=ScriptedModel(["Hi!"])) as agent:
    ...     agent.prompt("Hello")
    ...     agent.state.messages[-1].text
    'Hi!'
    """

    def __init__(self, agent: Agent | None = None, **options: Any) -> None:
        """Wrap ``agent``, or an ``Agent(**options)`` made here."""
        if agent is not None and options:
            raise TypeError("give either an Agent or the options to make one, not both")
        self.agent = agent if agent is not None else Agent(**options)
        self._loop = asyncio.new_event_loop()
        # Sync tools and hooks run in this loop's executor: daemon threads, so a tool that never
        # returns cannot keep the process from exiting.
        self._loop.set_default_executor(_DaemonExecutor())
        self._thread = threading.Thread(target=self._loop.run_forever, name="agentcore-agent", daemon=True)
        self._thread.start()
        self._closed = False
        # A SyncAgent dropped without close(): stop its loop so its thread ends too.
        weakref.finalize(self, _stop_loop, self._loop)

    # ------------------------------------------------------------------ plumbing

    def _in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def _wait(self, coro: Coroutine[Any, Any, _T]) -> _T:
        if self._closed:
            coro.close()
            raise RuntimeError("SyncAgent is closed")
        if self._in_loop_thread():
            coro.close()
            raise RuntimeError(
                "a blocking SyncAgent call was made from the agent's own thread (a listener, tool "
                "or hook); use steer()/follow_up() there, or the async Agent (sync_agent.agent)"
            )
        future: concurrent.futures.Future[_T] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            # Ctrl-C (or any interruption) while blocked here: abort the run rather than leave it
            # going with nobody waiting for it, then let the interruption through.
            if not future.done():
                self._loop.call_soon_threadsafe(self.agent.abort)
            raise

    def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._in_loop_thread() or self._closed:
            return fn(*args)

        async def run() -> _T:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    # -- runs (blocking)
    # ------------------------------------------------------------------ state (any thread)

    @property
    def state(self) -> AgentState:
        return self.agent.state

    def set_system_prompt(self, value: str) -> None:
        self._call(self.agent.set_system_prompt, value)

    def set_model(self, model: Model) -> None:
        self._call(self.agent.set_model, model)

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        self._call(self.agent.set_thinking_level, level)

    def set_tools(self, tools: Iterable[AgentTool]) -> None:
        self._call(self.agent.set_tools, tools)

    def replace_messages(self, messages: Iterable[AgentMessage]) -> None:
        self._call(self.agent.replace_messages, messages)

    def append_message(self, message: AgentMessage) -> None:
        self._call(self.agent.append_message, message)

    def clear_messages(self) -> None:
        self._call(self.agent.clear_messages)

    # ------------------------------------------------------------------ queues (any thread)

    @property
    def steering_mode(self) -> QueueMode:
        return self._call(lambda: self.agent.steering_mode)

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._call(setattr, self.agent, "steering_mode", mode)

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._call(lambda: self.agent.follow_up_mode)

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._call(setattr, self.agent, "follow_up_mode", mode)

    def steer(self, message: AgentMessage | str) -> AgentMessage:
        return self._call(self.agent.steer, message)

    def follow_up(self, message: AgentMessage | str) -> AgentMessage:
        return self._call(self.agent.follow_up, message)

    def update_queued_user_message_by_timestamp(self, timestamp: int, text: str) -> bool:
        return self._call(self.agent.update_queued_user_message_by_timestamp, timestamp, text)

    def remove_queued_user_message_by_timestamp(self, timestamp: int) -> bool:
        return self._call(self.agent.remove_queued_user_message_by_timestamp, timestamp)

    def clear_steering_queue(self) -> None:
        self._call(self.agent.clear_steering_queue)

    def clear_follow_up_queue(self) -> None:
        self._call(self.agent.clear_follow_up_queue)

    def clear_all_queues(self) -> None:
        self._call(self.agent.clear_all_queues)

    def has_queued_messages(self) -> bool:
        return self._call(self.agent.has_queued_messages)

    @property
    def steering_queue(self) -> tuple[AgentMessage, ...]:
        return self._call(lambda: self.agent.steering_queue)

    @property
    def follow_up_queue(self) -> tuple[AgentMessage, ...]:
        return self._call(lambda: self.agent.follow_up_queue)

    # ------------------------------------------------------------------ listeners (any thread)

    def subscribe(self, listener: AgentListener) -> Callable[[], None]:
        unsubscribe = self._call(self.agent.subscribe, listener)
        return lambda: self._call(unsubscribe)

    # ------------------------------------------------------------------ suspension

    @property
    def pending(self) -> tuple[PendingCall, ...]:
        return self.agent.pending

    @property
    def decisions(self) -> dict[str, Decision]:
        return self._call(lambda: self.agent.decisions)

    def approve(self, call_id: str, arguments: Any = None) -> None:
        self._call(self.agent.approve, call_id, arguments)

    def deny(self, call_id: str, reason: str | None = None) -> None:
        self._call(self.agent.deny, call_id, reason)

    def supply(self, call_id: str, result: AgentToolResult | str, is_error: bool = False) -> None:
        self._call(self.agent.supply, call_id, result, is_error)

    def restore(self, suspension: Suspension) -> None:
        self._call(self.agent.restore, suspension)

    def resume(self, *, transcript: str | os.PathLike[str] | None = None, secrets: Sequence[str] = ()) -> None:
        self._wait(self.agent.resume(transcript=transcript, secrets=secrets))

    # ------------------------------------------------------------------ runs (blocking)

    def prompt(
        self,
        input: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
    ) -> None:
        self._wait(self.agent.prompt(input, images))

    def continue_(self) -> None:
        self._wait(self.agent.continue_())

    # ------------------------------------------------------------------ control

    def abort(self) -> None:
        self._call(self.agent.abort)

    def wait_for_idle(self) -> None:
        self._wait(self.agent.wait_for_idle())

    @property
    def is_running(self) -> bool:
        return self._call(lambda: self.agent.is_running)

    def reset(self) -> None:
        self._call(self.agent.reset)

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Abort any run, wait for it to end, stop the background thread."""
        if self._closed:
            return
        if self._in_loop_thread():
            raise RuntimeError("SyncAgent.close() cannot be called from the agent's own thread")
        self._call(self.agent.abort)
        self._wait(self.agent.wait_for_idle())
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> SyncAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
