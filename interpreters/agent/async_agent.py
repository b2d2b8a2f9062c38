"""``Agent``: the stateful wrapper on the asyncio interpreter: its construction, its state's
setters, its runs (prompt, continue, resume of a suspension) and their control."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from agentcore.config import AgentContext, AgentLoopConfig
from agentcore.decisions import decision_problem
from agentcore.hooks import GET_FOLLOW_UP_MESSAGES, GET_STEERING_MESSAGES
from agentcore.inputs import Approve, Decision, Deny, ToolOutput
from agentcore.messages import (
    AgentMessage,
    ImageContent,
    Model,
    TextContent,
    ThinkingLevel,
    UserMessage,
)
from agentcore.resumption import checked_suspension
from agentcore.state import Suspension
from agentcore.tools import AgentTool, AgentToolResult, PendingCall, ToolExecutionMode

from .. import aio
from ..runtime.checks import prompt_messages
from ..runtime.clock import now_ms
from ..runtime.hooks import failure_text
from ..runtime.journal import Journals, observers
from ..signal import AbortSignal
from .listeners import AgentListeners
from .queues import AgentQueues
from .state import (
    CONTINUE_BUSY,
    NO_MODEL,
    NOT_SUSPENDED,
    PROMPT_BUSY,
    RESET_BUSY,
    SUSPENDED,
    AgentBusyError,
    AgentListener,
    AgentState,
    QueueMode,
    Resumption,
    RunBook,
    check_mode,
    tool_list,
)

__all__ = ["Agent"]

_log = logging.getLogger("agentcore")

# AgentLoopConfig fields the agent fills in itself; the others may be passed through.
_OWNED: Final = frozenset({"model", "thinking_level", GET_STEERING_MESSAGES.name, GET_FOLLOW_UP_MESSAGES.name})
_PASS_THROUGH: Final = frozenset(f.name for f in dataclasses.fields(AgentLoopConfig)) - _OWNED


class Agent(AgentQueues, AgentListeners):
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
            tools=tool_list(tools),
            messages=list(messages),
        )
        self.stream_fn = stream_fn
        self.convert_to_llm = convert_to_llm
        self.transform_context = transform_context
        self.get_api_key = get_api_key
        self._steering_mode: QueueMode = check_mode("steering_mode", steering_mode)
        self._follow_up_mode: QueueMode = check_mode("follow_up_mode", follow_up_mode)
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
        self._current: RunBook | None = None
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
        self._state.tools = tool_list(tools)

    def replace_messages(self, messages: Iterable[AgentMessage]) -> None:
        """Replace the conversation with a copy of ``messages``."""
        self._state.messages = list(messages)

    def append_message(self, message: AgentMessage) -> None:
        self._state.messages.append(message)

    def clear_messages(self) -> None:
        self._state.messages = []


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
        await self._run(None, resuming=Resumption(suspension, dict(self._decisions), transcript, secrets))

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

    def _config(self, model: Model, skip_initial_steering_poll: bool, run: RunBook) -> AgentLoopConfig:
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
                   taken_from: deque[AgentMessage] | None = None, resuming: Resumption | None = None) -> None:
        state = self._state
        model = state.model
        if model is None:
            raise RuntimeError(NO_MODEL)
        signal = AbortSignal()
        run = RunBook(signal)
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

    async def _pump(self, stream: aio.AgentEventStream, run: RunBook) -> None:
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
