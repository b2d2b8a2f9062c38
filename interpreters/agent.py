"""``Agent``: a stateful, asyncio-first wrapper around the agent loop.

The loop functions in :mod:`interpreters.aio` are stateless: every run takes a context and a
configuration and gives back events. An application usually wants more: one conversation that
grows over several prompts, a live view of what is streaming, messages typed by the user while
the agent works, a stop button. :class:`Agent` keeps that state, in the manner of the
TypeScript ``pi-agent-core`` ``Agent`` class.

Theory of operation
-------------------

- The agent owns an :class:`AgentState` (system prompt, model, thinking level, tools,
  conversation, and the live run: ``is_streaming``, ``stream_message``,
  ``pending_tool_calls``, ``error``).
- ``await agent.prompt(...)`` / ``await agent.continue_()`` run :func:`interpreters.aio.agent_loop`
  / :func:`~interpreters.aio.agent_loop_continue` over a snapshot of the conversation. Every
  event of the run first updates the agent's state (``message_end`` appends to
  ``state.messages``, ...) and is then given to each subscribed listener. The state is changed
  *only* through the events, so a listener always sees a state consistent with the event it is
  handed.
- One run at a time. While a run is in progress, messages go through two queues polled by the
  loop: :meth:`Agent.steer` (delivered after the current turn, before the next model call) and
  :meth:`Agent.follow_up` (delivered when the agent would otherwise stop). A queue in
  ``"one-at-a-time"`` mode gives one message per poll; in ``"all"`` mode, everything queued.
- Whatever happens, a run ends with the agent idle and listeners having seen ``agent_end``: an
  unexpected exception is recorded as an assistant message with ``stop_reason="error"`` (or
  ``"aborted"`` after :meth:`Agent.abort`) and ``state.error`` is set.

>>> import asyncio
>>> from agentcore import Model
>>> from interpreters.streams.scripted import ScriptedModel
>>> agent = Agent(model=Model(id="m"), stream_fn=ScriptedModel(["Hello!"]))
>>> asyncio.run(agent.prompt("Hi"))
>>> [m.role for m in agent.state.messages], agent.state.messages[-1].text
(['user', 'assistant'], 'Hello!')

From synchronous code, use :class:`SyncAgent`: the same agent driven by an event loop in a
background thread (see its docstring).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import inspect
import logging
import os
import threading
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, TypeVar

from agentcore.batch import decision_problem
from agentcore.config import AgentContext, AgentLoopConfig
from agentcore.events import AgentEndEvent, AgentEvent
from agentcore.hooks import GET_FOLLOW_UP_MESSAGES, GET_STEERING_MESSAGES
from agentcore.inputs import Approve, Decision, Deny, ToolOutput
from agentcore.messages import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    Model,
    TextContent,
    ThinkingLevel,
    UserMessage,
)
from agentcore.records import is_message, replace
from agentcore.resumption import checked_suspension
from agentcore.state import Suspension
from agentcore.tools import AgentTool, AgentToolResult, PendingCall, ToolExecutionMode, check_tools

from . import aio
from .runtime.checks import prompt_messages
from .runtime.clock import now_ms
from .runtime.hooks import failure_text, with_signal
from .runtime.journal import Journals, observers
from .signal import AbortSignal

__all__ = [
    "Agent",
    "AgentBusyError",
    "AgentListener",
    "AgentState",
    "QueueMode",
    "SyncAgent",
]

_log = logging.getLogger("agentcore")

QueueMode: TypeAlias = Literal["one-at-a-time", "all"]
"""How many queued messages one poll of a queue takes: the first one, or all of them."""

AgentListener: TypeAlias = Callable[..., Any]
"""A subscriber: called with every event (``listener(event)``, or ``listener(event, signal)``
to get the run's :class:`AbortSignal`); may be sync or ``async def`` (then awaited)."""

_T = TypeVar("_T")

PROMPT_BUSY: Final = (
    "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
    "or wait for completion (await agent.wait_for_idle())."
)
CONTINUE_BUSY: Final = (
    "Agent is already processing. Wait for completion (await agent.wait_for_idle()) "
    "before continuing."
)
NO_MODEL: Final = "No model configured: pass model=... to Agent() or call set_model()"
RESET_BUSY: Final = "Agent is already processing. Wait for completion before resetting."
SUSPENDED: Final = (
    "Agent is suspended: tool calls wait for decisions ({ids}). Decide them (approve(), deny(), "
    "supply()) and await resume(), or reset()."
)
NOT_SUSPENDED: Final = "Agent is not suspended: no tool call waits for a decision"

# AgentLoopConfig fields the agent fills in itself; the others may be passed through.
_OWNED: Final = frozenset({"model", "thinking_level", GET_STEERING_MESSAGES.name, GET_FOLLOW_UP_MESSAGES.name})
_PASS_THROUGH: Final = frozenset(f.name for f in dataclasses.fields(AgentLoopConfig)) - _OWNED
_QUEUE_MODES: Final = ("one-at-a-time", "all")


class AgentBusyError(RuntimeError):
    """``prompt()`` or ``continue_()`` was called while a run is in progress."""


@dataclass(slots=True, kw_only=True)
class AgentState:
    """What the agent knows. Read it freely; change it through the :class:`Agent` setters.

    - ``messages``: the conversation; a run appends each message at its ``message_end``.
    - ``is_streaming``: a run is in progress (cleared at ``agent_end``).
    - ``stream_message``: the partial assistant message while a reply streams, else ``None``.
    - ``pending_tool_calls``: the ids of the tool calls started and not yet finished (a new
      frozen set on each change, so a reference kept by a listener never changes under it).
    - ``error``: the ``error_message`` of the last failed (or aborted) run, ``None`` after a
      run that ended well.
    - ``suspension``: the :class:`~agentcore.Suspension` of the last run when it suspended
      (tool calls wait for decisions: :attr:`Agent.pending`), else ``None``. Store it
      (``agentcore.codec.to_json``) with the conversation; :meth:`Agent.restore` takes it back.
    """

    system_prompt: str = ""
    model: Model | None = None
    thinking_level: ThinkingLevel = "off"
    tools: list[AgentTool] = field(default_factory=list)
    messages: list[AgentMessage] = field(default_factory=list)
    is_streaming: bool = False
    stream_message: AgentMessage | None = None
    pending_tool_calls: frozenset[str] = frozenset()
    error: str | None = None
    suspension: Suspension | None = None


@dataclass(frozen=True, slots=True)
class _Resumption:
    """What :meth:`Agent.resume` goes on with: the suspension, its decisions, and where the
    resumed run is recorded (``transcript``, ``secrets``: as for ``resume_suspended``)."""

    suspension: Suspension
    decisions: dict[str, Decision]
    transcript: str | os.PathLike[str] | None
    secrets: Sequence[str]


@dataclass(slots=True)
class _Run:
    """Book-keeping of one run: has ``agent_end`` been seen, is the agent stopping it, and the
    queued messages it took that have not reached the conversation yet (by identity, in the
    order taken, with the queue each came from)."""

    signal: AbortSignal
    ended: bool = False
    stopping: bool = False
    taken: dict[int, tuple[deque[AgentMessage], AgentMessage]] = field(default_factory=dict)

    def take(self, queue: deque[AgentMessage], messages: list[AgentMessage]) -> list[AgentMessage]:
        for message in messages:
            self.taken[id(message)] = (queue, message)
        return messages

    def give_back(self) -> None:
        """Put what was taken and never delivered back at the front of its queue, in order."""
        for queue, message in reversed(list(self.taken.values())):
            queue.appendleft(message)
        self.taken.clear()


async def _await_listener(outcome: Awaitable[Any], run: _Run) -> None:
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


def _check_timestamp(method: str, timestamp: Any) -> None:
    if type(timestamp) is not int:
        raise TypeError(f"{method}(): timestamp must be an int (a message's timestamp in ms), "
                        f"not {type(timestamp).__name__}")


def _check_mode(name: str, mode: str) -> QueueMode:
    if mode not in _QUEUE_MODES:
        raise ValueError(f"{name} must be 'one-at-a-time' or 'all', not {mode!r}")
    return mode  # type: ignore[return-value]


class Agent:
    """A conversation with a model, run by the asyncio interpreter.

    Construct it with the initial state (``system_prompt``, ``model``, ``thinking_level``,
    ``tools``, ``messages``), the run options (``stream_fn``, ``convert_to_llm``,
    ``transform_context``, ``get_api_key``, ``session_id``, ``thinking_budgets``,
    ``tool_execution``, ``before_tool_call``, ``after_tool_call``, and any other
    :class:`~agentcore.AgentLoopConfig` field as a keyword) and the queue modes
    (``steering_mode`` / ``follow_up_mode``: ``"one-at-a-time"``, the default, or ``"all"``).
    ``clock()`` gives the timestamps in ms of the messages the agent creates.

    Use it from asyncio code::

        agent = Agent(model=model, tools=[...], stream_fn=...)
        unsubscribe = agent.subscribe(print)
        await agent.prompt("What is in this picture?", images=[ImageContent(data, "image/png")])
        agent.follow_up(UserMessage("And now in French."))   # from another task, while it runs
        await agent.wait_for_idle()

    Only one run at a time: ``prompt()`` / ``continue_()`` raise :class:`AgentBusyError` while
    one is in progress (checked when the coroutine starts running). Every method that is not a
    coroutine is meant to be called from the event loop's thread. From synchronous code (or
    another thread) use :class:`SyncAgent`, which runs the agent on its own event loop in a
    background thread and exposes the same methods as blocking calls.
    """

    def __init__(
        self,
        *,
        system_prompt: str = "",
        model: Model | None = None,
        thinking_level: ThinkingLevel = "off",
        tools: Iterable[AgentTool] = (),
        messages: Iterable[AgentMessage] = (),
        stream_fn: Callable[..., Any] | None = None,
        convert_to_llm: Callable[..., Any] | None = None,
        transform_context: Callable[..., Any] | None = None,
        get_api_key: Callable[..., Any] | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        session_id: str | None = None,
        thinking_budgets: dict[str, int] | None = None,
        tool_execution: ToolExecutionMode = "parallel",
        before_tool_call: Callable[..., Any] | None = None,
        after_tool_call: Callable[..., Any] | None = None,
        clock: Callable[[], int] = now_ms,
        journal: Journals = None,
        **loop_options: Any,
    ) -> None:
        unknown = sorted(set(loop_options) - _PASS_THROUGH)
        if unknown:
            raise TypeError(
                f"Agent() got unexpected keyword argument(s) {', '.join(unknown)}; "
                f"the AgentLoopConfig options it passes through are: {', '.join(sorted(_PASS_THROUGH))}"
            )
        self._state = AgentState(
            system_prompt=system_prompt,
            model=model,
            thinking_level=thinking_level,
            tools=_tools(tools),
            messages=list(messages),
        )
        self.stream_fn = stream_fn
        self.convert_to_llm = convert_to_llm
        self.transform_context = transform_context
        self.get_api_key = get_api_key
        self._steering_mode: QueueMode = _check_mode("steering_mode", steering_mode)
        self._follow_up_mode: QueueMode = _check_mode("follow_up_mode", follow_up_mode)
        self.session_id = session_id
        self.thinking_budgets = thinking_budgets
        self.tool_execution: ToolExecutionMode = tool_execution
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.clock = clock
        observers(journal)  # a journal= that is not a Journal is refused here, not at the first prompt
        self.journal = journal
        """Observers given to every run (``journal=`` of the loop: a tracer, say)."""
        self.loop_options: dict[str, Any] = dict(loop_options)
        self._listeners: list[AgentListener] = []
        self._steering: deque[AgentMessage] = deque()
        self._follow_ups: deque[AgentMessage] = deque()
        self._last_queued = -1  # the timestamp of the last message queued from a str
        self._signal: AbortSignal | None = None
        self._idle: asyncio.Future[None] | None = None
        self._current: _Run | None = None
        self._decisions: dict[str, Decision] = {}

    # ------------------------------------------------------------------ state

    @property
    def state(self) -> AgentState:
        """The agent's state (the live object: it changes as runs progress)."""
        return self._state

    def set_system_prompt(self, value: str) -> None:
        self._state.system_prompt = value

    def set_model(self, model: Model) -> None:
        self._state.model = model

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        self._state.thinking_level = level

    def set_tools(self, tools: Iterable[AgentTool]) -> None:
        self._state.tools = _tools(tools)

    def replace_messages(self, messages: Iterable[AgentMessage]) -> None:
        """Replace the conversation with a copy of ``messages``."""
        self._state.messages = list(messages)

    def append_message(self, message: AgentMessage) -> None:
        self._state.messages.append(message)

    def clear_messages(self) -> None:
        self._state.messages = []

    @property
    def steering_mode(self) -> QueueMode:
        return self._steering_mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._steering_mode = _check_mode("steering_mode", mode)

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._follow_up_mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._follow_up_mode = _check_mode("follow_up_mode", mode)

    # ------------------------------------------------------------------ queues

    def steer(self, message: AgentMessage | str) -> AgentMessage:
        """Queue a message for the running agent: it is delivered after the current turn (its
        tool calls finish first), before the next model call. A ``str`` becomes a user message
        (see :meth:`follow_up` for its timestamp). Returns the queued message."""
        queued = self._as_message(message, "steer")
        self._steering.append(queued)
        return queued

    def follow_up(self, message: AgentMessage | str) -> AgentMessage:
        """Queue a message delivered when the agent would otherwise stop (after all its tool
        calls and steering). A ``str`` becomes a user message whose timestamp is the clock's,
        or one more than the last such message's when the clock has not moved on since, so
        that each can be edited by its timestamp. Returns the queued message."""
        queued = self._as_message(message, "follow_up")
        self._follow_ups.append(queued)
        return queued

    def update_queued_user_message_by_timestamp(self, timestamp: int, text: str) -> bool:
        """Replace the text of the queued user message with ``timestamp``: the first one, in
        the steering queue then the follow-up queue. Its content becomes ``text`` (a text
        content stays a text; blocks become one text block, images dropped); its timestamp and
        place in the queue stay. Returns ``False`` when no queued user message has that
        timestamp: none was queued, or the run has already taken it (a message the loop polled
        is no longer queued, and the run delivers it as it was). Messages of other roles are
        never matched."""
        _check_timestamp("update_queued_user_message_by_timestamp", timestamp)
        if not isinstance(text, str):
            raise TypeError(f"update_queued_user_message_by_timestamp(): text must be a str, "
                            f"not {type(text).__name__}")
        found = self._find_queued_user_message(timestamp)
        if found is None:
            return False
        queue, index = found
        message = queue[index]
        content: str | tuple[TextContent, ...] = (
            text if isinstance(getattr(message, "content", None), str) else (TextContent(text),))
        queue[index] = replace(message, content=content)
        return True

    def remove_queued_user_message_by_timestamp(self, timestamp: int) -> bool:
        """Take the queued user message with ``timestamp`` out of its queue (the first one, in
        the steering queue then the follow-up queue). Returns ``False`` when no queued user
        message has that timestamp (see :meth:`update_queued_user_message_by_timestamp`)."""
        _check_timestamp("remove_queued_user_message_by_timestamp", timestamp)
        found = self._find_queued_user_message(timestamp)
        if found is None:
            return False
        queue, index = found
        del queue[index]
        return True

    def _find_queued_user_message(self, timestamp: int) -> tuple[deque[AgentMessage], int] | None:
        for queue in (self._steering, self._follow_ups):
            for index, message in enumerate(queue):
                if getattr(message, "role", None) == "user" and getattr(message, "timestamp", None) == timestamp:
                    return queue, index
        return None

    def clear_steering_queue(self) -> None:
        self._steering.clear()

    def clear_follow_up_queue(self) -> None:
        self._follow_ups.clear()

    def clear_all_queues(self) -> None:
        self._steering.clear()
        self._follow_ups.clear()

    def has_queued_messages(self) -> bool:
        return bool(self._steering) or bool(self._follow_ups)

    @property
    def steering_queue(self) -> tuple[AgentMessage, ...]:
        """The queued steering messages (a snapshot)."""
        return tuple(self._steering)

    @property
    def follow_up_queue(self) -> tuple[AgentMessage, ...]:
        """The queued follow-up messages (a snapshot)."""
        return tuple(self._follow_ups)

    @staticmethod
    def _dequeue(queue: deque[AgentMessage], mode: QueueMode) -> list[AgentMessage]:
        if not queue:
            return []
        if mode == "one-at-a-time":
            return [queue.popleft()]
        taken = list(queue)
        queue.clear()
        return taken

    def _as_message(self, message: AgentMessage | str, method: str) -> AgentMessage:
        if isinstance(message, str):
            timestamp = max(self.clock(), self._last_queued + 1)
            self._last_queued = timestamp
            return UserMessage(message, timestamp=timestamp)
        if not is_message(message):
            raise TypeError(f"Agent.{method}() takes a str or a message (UserMessage, ...), "
                            f"not a {type(message).__name__}")
        return message

    # ------------------------------------------------------------------ listeners

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

    async def _emit(self, event: AgentEvent, run: _Run) -> None:
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

    # ------------------------------------------------------------------ suspension

    @property
    def pending(self) -> tuple[PendingCall, ...]:
        """The tool calls the suspended agent waits on (``()`` when it is not suspended)."""
        suspension = self._state.suspension
        return suspension.pending if suspension is not None else ()

    @property
    def decisions(self) -> dict[str, Decision]:
        """The decisions taken so far for :attr:`pending` (a copy), by tool call id."""
        return dict(self._decisions)

    def _decide(self, call_id: str, decision: Decision) -> None:
        pending = {p.tool_call_id: p for p in self.pending}
        if not pending:
            raise RuntimeError(NOT_SUSPENDED)
        call = pending.get(call_id)
        if call is None:
            raise KeyError(f"no pending tool call {call_id} (pending: {', '.join(pending)})")
        problem = decision_problem(call, decision)
        if problem is not None:
            raise ValueError(problem)
        self._decisions[call_id] = decision

    def approve(self, call_id: str, arguments: Any = None) -> None:
        """Approve the pending call ``call_id`` (with ``arguments``: run it with these instead,
        validated again). Taken by the next :meth:`resume`."""
        self._decide(call_id, Approve(arguments))

    def deny(self, call_id: str, reason: str | None = None) -> None:
        """Deny the pending call ``call_id``: it gets an error result with ``reason``."""
        self._decide(call_id, Deny(reason))

    def supply(self, call_id: str, result: AgentToolResult | str, is_error: bool = False) -> None:
        """Give the deferred call ``call_id`` its result."""
        self._decide(call_id, ToolOutput(result, is_error))

    def restore(self, suspension: Suspension) -> None:
        """Take back a stored suspension: the conversation becomes the suspended run's and
        :attr:`pending` its calls (only while idle). It is checked first, as :meth:`resume`
        would check it (``TypeError`` for what is not a ``Suspension``, ``ValueError`` with
        ``Suspension.problem``'s text for one that cannot be resumed): the agent is then left as
        it was."""
        if self._idle is not None:
            raise AgentBusyError(PROMPT_BUSY)
        checked_suspension(suspension, "restore")
        self._state.messages = list(suspension.messages)
        self._state.suspension = suspension
        self._decisions = {}

    async def resume(self, *, transcript: str | os.PathLike[str] | None = None, secrets: Sequence[str] = ()) -> None:
        """Go on with the suspended run with the decisions taken (every pending call needs one:
        ``ValueError`` naming the others, before anything runs). The run may suspend again.

        Recording: a ``TranscriptRecorder`` among the agent's journals that recorded the run up
        to its suspension goes on recording it in its file. ``transcript`` (the path of the
        transcript that recorded the run up to its suspension, say by another process's agent)
        goes on in that file instead, never writing ``secrets`` (give the ones its recorder was
        given), as ``resume_suspended(..., transcript=, secrets=)``. A resume refused before the
        run starts (bad decisions, a transcript that is not this suspension's, a journal that
        cannot record it) raises, and leaves the agent as it was: still suspended, its
        conversation and decisions unchanged."""
        suspension = self._state.suspension
        if suspension is None:
            raise RuntimeError(NOT_SUSPENDED)
        if self._idle is not None:
            raise AgentBusyError(CONTINUE_BUSY)
        await self._run(None, resuming=_Resumption(suspension, dict(self._decisions), transcript, secrets))

    def _check_not_suspended(self) -> None:
        if self._state.suspension is not None:
            raise AgentBusyError(SUSPENDED.format(ids=", ".join(p.tool_call_id for p in self.pending)))

    # ------------------------------------------------------------------ runs

    async def prompt(
        self,
        input: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
    ) -> None:
        """Run the agent on new input until it stops.

        ``input`` is a text (with ``images``, a user message holding the text then the
        images), a message, or a list of messages. Raises :class:`AgentBusyError` if a run is in
        progress, ``RuntimeError`` if no model is set. Failures of the run itself do not raise:
        they end up in ``state.error`` and as the last message."""
        if self._idle is not None:
            raise AgentBusyError(PROMPT_BUSY)
        self._check_not_suspended()
        prompts = self._prompt_messages(input, images)
        await self._run(prompts)

    async def continue_(self) -> None:
        """Continue from the current conversation without adding a new message.

        When the last message is an assistant message, queued steering messages (else queued
        follow-ups) become the prompt of the run; with nothing queued it raises ``ValueError``
        ("Cannot continue from message role: assistant"). An empty conversation is handled
        the same way ("No messages to continue from" when nothing is queued). Otherwise (the
        last message is a user or tool result message, e.g. a retry) the loop continues from it.
        """
        if self._idle is not None:
            raise AgentBusyError(CONTINUE_BUSY)
        self._check_not_suspended()
        if self._state.model is None:
            raise RuntimeError(NO_MODEL)  # before any message is taken off a queue
        messages = self._state.messages
        if not messages or getattr(messages[-1], "role", None) == "assistant":
            steering = self._dequeue(self._steering, self._steering_mode)
            if steering:
                await self._run(steering, skip_initial_steering_poll=True, taken_from=self._steering)
                return
            follow_ups = self._dequeue(self._follow_ups, self._follow_up_mode)
            if follow_ups:
                await self._run(follow_ups, taken_from=self._follow_ups)
                return
            if not messages:
                raise ValueError("No messages to continue from")
            raise ValueError("Cannot continue from message role: assistant")
        await self._run(None)

    def _prompt_messages(
        self, input: str | AgentMessage | Sequence[AgentMessage], images: Sequence[ImageContent] | None
    ) -> list[AgentMessage]:
        if isinstance(input, str):
            if images:
                content: tuple[TextContent | ImageContent, ...] = (TextContent(input), *images)
                return [UserMessage(content, timestamp=self.clock())]
            return [UserMessage(input, timestamp=self.clock())]
        if images:
            raise TypeError("images can only be given with a text prompt")
        if isinstance(input, (list, tuple)) and not input:
            raise ValueError("prompt() needs at least one message")
        return list(prompt_messages(input, self.clock, "Agent.prompt() argument 'input'"))

    def _config(self, model: Model, skip_initial_steering_poll: bool, run: _Run) -> AgentLoopConfig:
        skip = skip_initial_steering_poll

        async def get_steering_messages() -> list[AgentMessage]:
            nonlocal skip
            if skip:
                skip = False
                return []
            return run.take(self._steering, self._dequeue(self._steering, self._steering_mode))

        async def get_follow_up_messages() -> list[AgentMessage]:
            return run.take(self._follow_ups, self._dequeue(self._follow_ups, self._follow_up_mode))

        options: dict[str, Any] = dict(self.loop_options)
        options.update(
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            get_api_key=self.get_api_key,
            session_id=self.session_id,
            thinking_budgets=self.thinking_budgets,
            tool_execution=self.tool_execution,
            before_tool_call=self.before_tool_call,
            after_tool_call=self.after_tool_call,
        )
        return AgentLoopConfig(
            model=model,
            thinking_level=self._state.thinking_level,
            get_steering_messages=get_steering_messages,
            get_follow_up_messages=get_follow_up_messages,
            **options,
        )

    async def _run(self, prompts: list[AgentMessage] | None, *, skip_initial_steering_poll: bool = False,
                   taken_from: deque[AgentMessage] | None = None, resuming: _Resumption | None = None) -> None:
        state = self._state
        model = state.model
        if model is None:
            raise RuntimeError(NO_MODEL)
        signal = AbortSignal()
        run = _Run(signal)
        resumed: aio.AgentEventStream | None = None
        if resuming is not None:
            # Refused here, before the agent is busy, changing nothing: bad decisions, a transcript
            # that cannot go on with this suspension, a journal that cannot record the run.
            context = AgentContext(state.system_prompt, tuple(state.messages), tuple(state.tools))
            resumed = aio.resume_suspended(
                resuming.suspension, resuming.decisions, context=context, config=self._config(model, False, run),
                signal=signal, stream_fn=self.stream_fn, clock=self.clock, journal=self.journal,
                transcript=resuming.transcript, secrets=resuming.secrets)
        # Everything up to the first await happens at once: a second prompt() sees the run.
        idle: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._idle, self._signal = idle, signal
        state.is_streaming = True
        state.stream_message = None
        state.pending_tool_calls = frozenset()
        state.error = None
        if taken_from is not None and prompts is not None:
            run.take(taken_from, prompts)
        self._current = run
        pump: asyncio.Task[None] | None = None
        try:
            if resumed is not None:
                stream = resumed
                state.suspension, self._decisions = None, {}
            else:
                config = self._config(model, skip_initial_steering_poll, run)
                context = AgentContext(state.system_prompt, tuple(state.messages), tuple(state.tools))
                if prompts is None:
                    stream = aio.agent_loop_continue(context, config, signal, self.stream_fn, clock=self.clock,
                                                     journal=self.journal)
                else:
                    stream = aio.agent_loop(prompts, context, config, signal, self.stream_fn, clock=self.clock,
                                            journal=self.journal)
            # The events are consumed in a private task: the asyncio interpreter aborts a stream
            # by cancelling the task iterating it, and that cancellation must stay in there.
            pump = asyncio.ensure_future(self._pump(stream, run))
            await asyncio.shield(pump)
        except asyncio.CancelledError:
            if pump is not None and not pump.done():
                run.stopping = True
                pump.cancel()
                try:
                    await pump
                except BaseException:
                    pass
            if not run.ended:
                await self._record_failure(model, "Agent run was cancelled", run, aborted=True)
            raise
        except Exception as exc:
            if not run.ended:
                await self._record_failure(model, failure_text(exc), run, aborted=signal.aborted)
            else:
                _log.exception("agent run raised after agent_end")
        finally:
            run.give_back()
            self._current = None
            state.is_streaming = False
            state.stream_message = None
            state.pending_tool_calls = frozenset()
            self._signal = None
            self._idle = None
            if not idle.done():
                idle.set_result(None)

    async def _pump(self, stream: aio.AgentEventStream, run: _Run) -> None:
        """In the run's private task: apply each event to the state, then hand it to listeners."""
        try:
            async for event in stream:
                self._apply(event)
                if event.type == "agent_end":
                    run.ended = True
                elif event.type == "agent_suspended":  # the core's state is the suspended one now
                    run.ended = True
                    self._state.suspension = Suspension(stream.state, event.pending)  # type: ignore[union-attr]
                await self._emit(event, run)
        finally:
            await stream.aclose()  # cancels whatever the run still has in flight

    async def _record_failure(self, model: Model, text: str, run: _Run, *, aborted: bool) -> None:
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

    # ------------------------------------------------------------------ control

    def abort(self) -> None:
        """Abort the run in progress (does nothing when idle). The run ends soon after with an
        ``aborted`` assistant message; ``await wait_for_idle()`` to wait for it."""
        signal = self._signal
        if signal is not None:
            signal.abort()

    async def wait_for_idle(self) -> None:
        """Return when no run is in progress (at once when idle)."""
        idle = self._idle
        if idle is not None:
            await asyncio.shield(idle)

    @property
    def is_running(self) -> bool:
        """A run is in progress (from the start of ``prompt()`` until it has fully returned;
        ``state.is_streaming`` is already false while listeners handle ``agent_end``)."""
        return self._idle is not None

    def reset(self) -> None:
        """Forget the conversation, the queues, the streaming state and the error.

        Only while idle: during a run it raises ``RuntimeError`` and changes nothing (call
        :meth:`abort` and ``await wait_for_idle()`` first)."""
        if self._idle is not None:
            raise RuntimeError(RESET_BUSY)
        state = self._state
        state.messages = []
        state.is_streaming = False
        state.stream_message = None
        state.pending_tool_calls = frozenset()
        state.error = None
        state.suspension = None
        self._decisions = {}
        self.clear_all_queues()


def _tools(tools: Iterable[AgentTool]) -> list[AgentTool]:
    if isinstance(tools, (str, bytes)) or not hasattr(tools, "__iter__"):
        raise TypeError(f"Agent tools must be a list of tools, not a {type(tools).__name__}")
    listed = list(tools)
    check_tools(tuple(listed), "Agent tools")
    return listed


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

    # -- plumbing

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

    def prompt(
        self,
        input: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
    ) -> None:
        self._wait(self.agent.prompt(input, images))

    def continue_(self) -> None:
        self._wait(self.agent.continue_())

    def wait_for_idle(self) -> None:
        self._wait(self.agent.wait_for_idle())

    def resume(self, *, transcript: str | os.PathLike[str] | None = None, secrets: Sequence[str] = ()) -> None:
        self._wait(self.agent.resume(transcript=transcript, secrets=secrets))

    @property
    def pending(self) -> tuple[PendingCall, ...]:
        return self.agent.pending

    def approve(self, call_id: str, arguments: Any = None) -> None:
        self._call(self.agent.approve, call_id, arguments)

    def deny(self, call_id: str, reason: str | None = None) -> None:
        self._call(self.agent.deny, call_id, reason)

    def supply(self, call_id: str, result: AgentToolResult | str, is_error: bool = False) -> None:
        self._call(self.agent.supply, call_id, result, is_error)

    def restore(self, suspension: Suspension) -> None:
        self._call(self.agent.restore, suspension)

    # -- everything else (any thread)

    @property
    def state(self) -> AgentState:
        return self.agent.state

    def steer(self, message: AgentMessage | str) -> AgentMessage:
        return self._call(self.agent.steer, message)

    def follow_up(self, message: AgentMessage | str) -> AgentMessage:
        return self._call(self.agent.follow_up, message)

    def update_queued_user_message_by_timestamp(self, timestamp: int, text: str) -> bool:
        return self._call(self.agent.update_queued_user_message_by_timestamp, timestamp, text)

    def remove_queued_user_message_by_timestamp(self, timestamp: int) -> bool:
        return self._call(self.agent.remove_queued_user_message_by_timestamp, timestamp)

    @property
    def steering_queue(self) -> tuple[AgentMessage, ...]:
        return self._call(lambda: self.agent.steering_queue)

    @property
    def follow_up_queue(self) -> tuple[AgentMessage, ...]:
        return self._call(lambda: self.agent.follow_up_queue)

    def clear_steering_queue(self) -> None:
        self._call(self.agent.clear_steering_queue)

    def clear_follow_up_queue(self) -> None:
        self._call(self.agent.clear_follow_up_queue)

    def clear_all_queues(self) -> None:
        self._call(self.agent.clear_all_queues)

    def has_queued_messages(self) -> bool:
        return self._call(self.agent.has_queued_messages)

    def abort(self) -> None:
        self._call(self.agent.abort)

    def reset(self) -> None:
        self._call(self.agent.reset)

    def subscribe(self, listener: AgentListener) -> Callable[[], None]:
        unsubscribe = self._call(self.agent.subscribe, listener)
        return lambda: self._call(unsubscribe)

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

    # -- lifetime

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
