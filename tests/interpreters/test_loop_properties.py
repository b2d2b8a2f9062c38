"""Property: whatever user code does, a run ends cleanly, and both interpreters agree.

A *scenario* is plain data: per model call, a script of stream items (well-formed events built
with :class:`PartialAssistantMessage`, objects that are not stream events, events out of order,
exceptions of many types, aborts); per tool call, what the tool and the tool hooks do; per call of
each loop hook, what it does (return, raise, return garbage, abort); the steering and follow-up
queues; and listener actions at given events. Every abort is triggered from inside user code at
a point fixed by the scenario, so the same scenario runs on the sync and the asyncio interpreter
and both runs can be compared.

For every scenario, on both interpreters:

- the run ends within a bound, with exactly one ``agent_end``, as its last event;
- events are well nested (turns, messages, tool executions); every ``tool_execution_start`` has
  exactly one ``tool_execution_end`` with the same id;
- every tool call of a reply that went on to run tools has exactly one result, right after it;
- the result is ``agent_end.messages``, and is exactly the messages of the ``message_end`` events;
- every message a queue handed out is in the result (the queues hand out nothing else);
- sync and asyncio give the same events and the same messages (timestamps aside).

A second, smaller property has a hook or a tool block until it is aborted (from a timer) and
compares outcomes, not timings.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentcore import (
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallResult,
    DoneEvent,
    ErrorEvent,
    Model,
    NextTurn,
    PartialAssistantMessage,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingEndEvent,
    ToolCallDeltaEvent,
    ToolResultMessage,
    UserMessage,
    replace,
)
from agentcore.codec import to_json
from interpreters import AbortSignal
from interpreters.runtime.run import Run
from tests.support.clocks import TickingClock
from tests.support.flavours import FLAVOURS, Flavour

MODEL = Model(id="m", api="fake", provider="fake")
BOUND = 10.0
"""Seconds a run may take before the test calls it a hang (a run here takes milliseconds)."""


# --------------------------------------------------------------------------- exceptions


class Meltdown(BaseException):
    """A BaseException that is not an Exception, raised by user code."""


EXCEPTIONS: dict[str, Callable[[], BaseException]] = {
    "ValueError": lambda: ValueError("bad value"),
    "KeyError": lambda: KeyError("missing"),
    "StopIteration": lambda: StopIteration("stopped"),
    "RuntimeError": lambda: RuntimeError("kaput"),
    "Meltdown": lambda: Meltdown("core breach"),
    "SystemExit": lambda: SystemExit(3),
    "CancelledError": lambda: asyncio.CancelledError(),
}


def make_exception(name: str) -> BaseException:
    return EXCEPTIONS[name]() if name != "Unprintable" else Unprintable()


class Unprintable(Exception):
    """An exception whose text cannot be had: its ``__str__`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ failed")


# --------------------------------------------------------------------------- the scenario as data

ARGUMENTS: dict[str, str] = {
    "ok": '{"x": 1}',
    "empty": "{}",
    "blank": "",
    "wrong_type": '{"x": "one"}',
    "prepare_raises": '{"p": "raise"}',
    "prepare_garbage": '{"p": "garbage"}',
    "not_json": "{x: 1",
    "array": "[1, 2]",
    "truncated": '{"x": 1, "y": "ab',
    "too_deep": '{"a": ' + "[" * 120 + "]" * 120 + "}",
}
"""The JSON text a tool call streams as its arguments."""


@dataclass(frozen=True)
class Call:
    """One tool call a reply streams, with what happens when it is handled."""

    name: str  # "t0", "t1" (async when the scenario's user code is) or "nope" (no such tool)
    args: str  # a key of ARGUMENTS
    chunks: int = 1  # deltas the argument text is streamed in
    closed: bool = True  # whether toolcall_end is sent
    outcome: str = "text"  # what the tool does (see World.execute)
    before: str = "ok"  # what before_tool_call does for this call (when it is set)
    after: str = "ok"  # what after_tool_call does for this call (when it is set)


@dataclass(frozen=True)
class Reply:
    """The stream of one model call: items in order (see ``play``), or a failure of the call."""

    items: tuple[Any, ...]
    raise_on_call: str | None = None
    shape: str = "iterator"  # what the stream function returns (see World.stream_fn)


DEFAULT_REPLY = Reply((("start",), ("text", 1, True, False), ("done", "stop")))
"""What the model streams once the scenario's replies are used up."""

LOOP_HOOKS = ("transform_context", "convert_to_llm", "get_api_key", "prepare_next_turn",
              "should_stop_after_turn", "get_steering_messages", "get_follow_up_messages")


@dataclass(frozen=True)
class Scenario:
    mode: str = "parallel"
    replies: tuple[Reply, ...] = ()
    hooks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (loop hook, what it does on each call)
    before_set: bool = False
    after_set: bool = False
    steering: tuple[tuple[str, ...], ...] = ()  # batches of message texts, in queue order
    follow_ups: tuple[tuple[str, ...], ...] = ()
    listener: tuple[tuple[str, int, str], ...] = ()  # (event type, n-th occurrence, action)
    async_code: bool = False  # hooks and tool t1 are ``async def``
    quiet_tools: bool = False  # the tools say they report no progress (a lone call may run inline)
    async_stream: bool = False  # the asyncio run streams through an async generator
    abort_via: str = "caller"  # "caller": the signal given to the run; "run": the one user code gets
    resume: bool = False  # agent_loop_continue from a context holding the prompt

    def hook(self, name: str) -> tuple[str, ...] | None:
        for hook, behaviours in self.hooks:
            if hook == name:
                return behaviours
        return None

    def calls(self) -> Iterator[Call]:
        for reply in self.replies:
            for item in reply.items:
                if isinstance(item, Call):
                    yield item


ABORTING = ("abort", "abort_raise", "raise:SystemExit")
"""Outcomes and hook behaviours that abort the run (SystemExit from user code aborts it too)."""


def aborts_in_tool_phase(s: Scenario) -> bool:
    """Whether an abort can land between a reply with tool calls and the end of its batch (from
    a tool, a tool hook, or a listener at an event of that phase)."""
    if any(x in ABORTING for c in s.calls() for x in (c.outcome, c.before, c.after)):
        return True
    return any(action.startswith("abort") and kind not in ("turn_start", "turn_end", "message_update")
               for kind, _, action in s.listener)


def racy(s: Scenario) -> bool:
    """Whether the outcome may depend on thread scheduling: an abort that lands while the calls
    of a parallel batch run (whether the other calls had started is a race)."""
    if s.mode != "parallel":
        return False
    calls = list(s.calls())
    return any(c.outcome in ABORTING for c in calls) or (
        s.after_set and any(c.after in ABORTING for c in calls))


# --------------------------------------------------------------------------- strategies

exception_names = st.sampled_from(sorted(EXCEPTIONS) + ["Unprintable"])


def mostly(common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any], weight: int = 3
           ) -> st.SearchStrategy[Any]:
    """``common`` about ``weight`` times out of ``weight + 1`` (and what shrinking goes to)."""
    return st.integers(0, weight).flatmap(lambda n: rare if n == weight else common)


def behaviours(*normal: str, garbage: tuple[str, ...] = (), weight: int = 4, aborts: bool = True
               ) -> st.SearchStrategy[str]:
    """What a hook does on one call: usually its job, else abort, raise or return garbage."""
    return mostly(
        st.sampled_from(("ok",) * 2 + normal),
        st.one_of(st.sampled_from(("abort",) if aborts else ("ok",)),
                  exception_names.map(lambda e: f"raise:{e}"),
                  st.sampled_from(garbage or ("garbage:str",))),
        weight=weight,
    )


HOOK_BEHAVIOURS: dict[str, st.SearchStrategy[str]] = {
    "transform_context": behaviours("drop", garbage=("garbage:none", "garbage:str", "garbage:int")),
    "convert_to_llm": behaviours(garbage=("garbage:none", "garbage:dict", "garbage:list_of_str")),
    "get_api_key": behaviours("no_key", garbage=("garbage:int", "garbage:dict")),
    "prepare_next_turn": behaviours("next", "new_context", garbage=("garbage:str", "garbage:next_turn_class")),
    "should_stop_after_turn": behaviours("stop", garbage=("garbage:str", "garbage:empty")),
    "get_steering_messages": behaviours("abort_empty", garbage=(
        "garbage:dict", "garbage:str", "garbage:single", "garbage:int", "garbage:list_of_str")),
    "get_follow_up_messages": behaviours("abort_empty", garbage=(
        "garbage:dict", "garbage:str", "garbage:single", "garbage:int", "garbage:list_of_str")),
}

tool_outcomes = mostly(
    st.sampled_from(("text", "result", "terminate")),
    st.one_of(st.sampled_from(("garbage", "abort", "abort_raise")),
              exception_names.map(lambda e: f"raise:{e}"),
              st.integers(1, 3).map(lambda n: f"progress:{n}")),
    weight=3,
)

calls = st.builds(
    Call,
    name=mostly(st.sampled_from(("t0", "t1")), st.just("nope"), weight=8),
    args=mostly(st.sampled_from(("ok", "empty")), st.sampled_from(sorted(ARGUMENTS)), weight=4),
    chunks=st.integers(1, 3),
    closed=mostly(st.just(True), st.just(False)),
    outcome=tool_outcomes,
    before=behaviours("block", "block_default", "block_terminate", garbage=("garbage:str",), weight=6),
    after=behaviours("patch", garbage=("garbage:str",), weight=6),
)

blocks = mostly(calls, st.one_of(
    st.tuples(st.just("text"), st.integers(0, 3), st.booleans(), st.booleans()),  # chunks, closed, as message
    st.tuples(st.just("thinking"), st.integers(0, 2), st.booleans(), st.booleans()),  # chunks, closed, redacted
), weight=2)

BAD_ITEMS = ("dict", "none", "str", "int", "start_again", "delta_unstarted", "end_ended", "start_wrong_index",
             "index_str", "wrong_kind", "done_garbage", "done_error_message", "partial_garbage",
             "message_as_start")

finals = mostly(
    mostly(st.just(("done", "toolUse")), st.tuples(st.just("done"), st.sampled_from(("stop", "length")))),
    st.one_of(st.tuples(st.just("error"),
                        st.sampled_from(("error", "aborted", "str", "no_message", "done_partial"))),
              st.none()),
    weight=4,
)

mutations = st.one_of(
    st.tuples(st.just("bad"), st.sampled_from(BAD_ITEMS)),
    st.tuples(st.just("raise"), exception_names),
    st.tuples(st.just("abort")),
    st.tuples(st.just("drop")),
)


@st.composite
def replies(draw: st.DrawFn) -> Reply:
    items: list[Any] = [("start",), *draw(st.lists(blocks, min_size=1, max_size=3))]
    final = draw(finals)
    if final is not None:
        items.append(final)
    for mutation in draw(mostly(st.just([]), st.lists(mutations, min_size=1, max_size=2), weight=2)):
        at = draw(st.integers(0, len(items)))
        if mutation[0] == "drop":
            if items:
                del items[min(at, len(items) - 1)]
        else:
            items.insert(at, mutation)
    raise_on_call = draw(mostly(st.none(), exception_names, weight=9))
    shape = draw(mostly(st.just("iterator"), st.sampled_from(("generator", "list", "none", "int")), weight=3))
    return Reply(tuple(items), raise_on_call, shape)


queue_batches = st.lists(st.integers(1, 2), max_size=2).map(
    lambda sizes: tuple(tuple(f"q{b}.{i}" for i in range(n)) for b, n in enumerate(sizes)))

LISTENER_EVENTS = ("agent_start", "agent_end", "turn_start", "message_start", "message_update", "message_end",
                   "tool_execution_start", "turn_end")
"""Events whose order does not depend on thread scheduling, in either mode (progress updates and
the ends of a parallel batch arrive as their calls finish)."""


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    mode = draw(st.sampled_from(("parallel", "sequential")))
    hooks = []
    for name in LOOP_HOOKS:
        if draw(mostly(st.just(False), st.just(True), weight=2)):
            hooks.append((name, tuple(draw(st.lists(HOOK_BEHAVIOURS[name], max_size=3)))))
    kinds = LISTENER_EVENTS + (("tool_execution_update", "tool_execution_end") if mode == "sequential" else ())
    actions = st.sampled_from(("abort", "abort_run", "raise"))
    listener = draw(mostly(st.just([]), st.lists(st.tuples(st.sampled_from(kinds), st.integers(1, 3), actions),
                                                 min_size=1, max_size=2)))
    s = Scenario(
        mode=mode,
        replies=tuple(draw(st.lists(replies(), min_size=1, max_size=4))),
        hooks=tuple(hooks),
        before_set=draw(st.booleans()),
        after_set=draw(st.booleans()),
        steering=draw(queue_batches),
        follow_ups=draw(queue_batches),
        listener=tuple(listener),
        async_code=draw(st.booleans()),
        quiet_tools=draw(st.booleans()),
        async_stream=draw(st.booleans()),
        abort_via=draw(st.sampled_from(("caller", "run"))),
        resume=draw(mostly(st.just(False), st.just(True))),
    )
    return s


# --------------------------------------------------------------------------- playing a scenario


def play(reply: Reply, number: int) -> list[tuple[str, Any]]:
    """The actions of one stream: ``("yield", item)``, ``("raise", name)`` or ``("abort", None)``.

    Blocks are built with ``PartialAssistantMessage``; tool call ids are ``r{number}c{k}``."""
    partial = PartialAssistantMessage.begin(api="fake", provider="fake", model="m")
    out: list[tuple[str, Any]] = []
    closed_blocks: list[int] = []
    ncalls = 0

    def give(event: Any) -> None:
        nonlocal partial
        out.append(("yield", event))
        partial = event.partial

    for item in reply.items:
        if isinstance(item, Call):
            start = partial.toolcall_start(f"r{number}c{ncalls}", item.name)
            ncalls += 1
            index = start.content_index
            give(start)
            text = ARGUMENTS[item.args]
            size = max(1, -(-len(text) // item.chunks))
            for piece in [text[i:i + size] for i in range(0, len(text), size)]:
                give(partial.toolcall_delta(index, piece))
            if item.closed:
                give(partial.toolcall_end(index))
                closed_blocks.append(index)
            continue
        tag = item[0]
        if tag == "start":
            out.append(("yield", StartEvent(partial)))
        elif tag in ("text", "thinking"):
            _, chunks, closed, flag = item
            as_message = tag == "text" and flag
            start = partial.text_start() if tag == "text" else partial.thinking_start(redacted=flag)
            index = start.content_index
            events = [start]
            partial = start.partial
            for i in range(chunks):
                ev = (partial.text_delta(index, f"w{i} ") if tag == "text"
                      else partial.thinking_delta(index, f"h{i} "))
                events.append(ev)
                partial = ev.partial
            if closed:
                ev = partial.text_end(index) if tag == "text" else partial.thinking_end(index, signature="sig")
                events.append(ev)
                partial = ev.partial
                closed_blocks.append(index)
            for ev in events:  # pi-ai style: the partial is an AssistantMessage
                out.append(("yield", replace(ev, partial=ev.partial.to_message()) if as_message else ev))
        elif tag == "bad":
            out.append(("yield", bad_item(item[1], partial, closed_blocks)))
        elif tag == "raise":
            out.append(("raise", item[1]))
        elif tag == "abort":
            out.append(("abort", None))
        elif tag == "block":  # (the blocking property's stream waits here)
            out.append(("yield", "block"))
        elif tag == "done":
            out.append(("yield", partial.done(item[1])))
        elif tag == "error":
            kind = item[1]
            if kind == "str":
                event: Any = ErrorEvent("error", "rate limited")  # a str where the message belongs
            elif kind == "no_message":
                event = ErrorEvent("error", partial.to_message(stop_reason="error"))
            elif kind == "done_partial":
                event = DoneEvent("stop", partial)  # (a partial is accepted as the final message)
            else:
                event = partial.error(kind, "overloaded" if kind == "error" else "stopped upstream")
            out.append(("yield", event))
    return out


def bad_item(kind: str, partial: PartialAssistantMessage, closed_blocks: list[int]) -> Any:
    """Something a broken stream function yields."""
    nblocks = len(partial.blocks)
    if kind == "dict":
        return {"type": "text_delta", "content_index": 0, "delta": "x"}
    if kind == "none":
        return None
    if kind == "str":
        return "data: {}"
    if kind == "int":
        return 7
    if kind == "start_again":
        return StartEvent(partial)
    if kind == "delta_unstarted":
        return TextDeltaEvent(nblocks + 2, "x", partial)
    if kind == "end_ended":
        return (TextEndEvent(closed_blocks[0], TextContent(""), partial) if closed_blocks
                else ThinkingEndEvent(nblocks, ThinkingContent(""), partial))
    if kind == "start_wrong_index":
        return TextStartEvent(nblocks + 1, partial)
    if kind == "index_str":
        return TextDeltaEvent("0", "x", partial)  # type: ignore[arg-type]
    if kind == "wrong_kind":
        return ToolCallDeltaEvent(0, "{", partial)
    if kind == "done_garbage":
        return DoneEvent("stop", {"role": "assistant", "content": []})  # type: ignore[arg-type]
    if kind == "done_error_message":
        return DoneEvent("stop", partial.to_message(stop_reason="error", error_message="error inside done"))
    if kind == "partial_garbage":
        return TextDeltaEvent(0, "x", "not a partial")  # type: ignore[arg-type]
    if kind == "message_as_start":
        return StartEvent(AssistantMessage((), api="fake", provider="fake", model="m"))  # type: ignore[arg-type]
    raise AssertionError(kind)


class Stream:
    """A sync stream: the actions of ``play`` (``StopIteration`` raised here ends it, as it would)."""

    def __init__(self, actions: list[tuple[str, Any]], abort: Callable[[], None]) -> None:
        self.actions = iter(actions)
        self.abort = abort

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> Any:
        for kind, value in self.actions:
            if kind == "abort":
                self.abort()
            elif kind == "raise":
                raise make_exception(value)
            else:
                return value
        raise StopIteration


def generator_stream(actions: list[tuple[str, Any]], abort: Callable[[], None]) -> Iterator[Any]:
    """A generator (a StopIteration raised inside it reaches the reader as a RuntimeError)."""
    for kind, value in actions:
        if kind == "abort":
            abort()
        elif kind == "raise":
            raise make_exception(value)
        else:
            yield value


async def async_stream(actions: list[tuple[str, Any]], abort: Callable[[], None]) -> Any:
    for kind, value in actions:
        if kind == "abort":
            abort()
        elif kind == "raise":
            if value == "StopIteration":
                return  # what StopIteration means to a sync iterator: the end
            raise make_exception(value)
        else:
            yield value


GARBAGE: dict[str, Callable[[], Any]] = {
    "none": lambda: None,
    "str": lambda: "not what was asked for",
    "int": lambda: 42,
    "dict": lambda: {"role": "user", "content": "a dict, not a message"},
    "empty": lambda: [],
    "single": lambda: UserMessage("one message, not a list"),
    "list_of_str": lambda: ["hello"],
    "next_turn_class": lambda: NextTurn,
}


class World:
    """Everything one run of a scenario needs, fresh for each run: signal, queues, tools, hooks,
    stream function, listener, and what they saw."""

    def __init__(self, s: Scenario, flavour: Flavour) -> None:
        self.s = s
        self.flavour = flavour
        self.signal = AbortSignal()
        self.clock = TickingClock(1000)
        self.lock = threading.Lock()
        self.events: list[Any] = []
        self.seen: dict[str, int] = {}
        self.handed_out: list[Any] = []
        self.queues = {
            "get_steering_messages": deque([UserMessage(t) for t in batch] for batch in s.steering),
            "get_follow_up_messages": deque([UserMessage(t) for t in batch] for batch in s.follow_ups),
        }
        self.hook_calls: dict[str, int] = {}
        self.model_calls = 0
        self.calls_at_abort: int | None = None  # model calls made when user code first aborted
        self.tool_log: list[str] = []
        self.by_id = {f"r{r}c{k}": call for r, reply in enumerate(s.replies)
                      for k, call in enumerate(c for c in reply.items if isinstance(c, Call))}

    def abort(self, given: Any = None) -> None:
        target = given if self.s.abort_via == "run" and given is not None else self.signal
        self.aborting()
        target.abort("scripted abort")

    def aborting(self) -> None:
        with self.lock:
            if self.calls_at_abort is None:
                self.calls_at_abort = self.model_calls

    # -- the model

    def stream_fn(self, model: Any, context: Any, options: Any) -> Any:
        number = self.model_calls
        self.model_calls += 1
        reply = self.s.replies[number] if number < len(self.s.replies) else DEFAULT_REPLY
        if reply.raise_on_call is not None:
            raise make_exception(reply.raise_on_call)
        if reply.shape == "none":
            return None
        if reply.shape == "int":
            return 42
        actions = play(reply, number)
        if reply.shape == "list":  # read in one go: the events up to the first raise or abort
            kinds = [kind for kind, _ in actions]
            cut = min((kinds.index(k) for k in ("raise", "abort") if k in kinds), default=len(actions))
            return [value for _, value in actions[:cut]]
        abort = lambda: self.abort(options.signal)  # noqa: E731
        if self.flavour.is_async and self.s.async_stream:
            return async_stream(actions, abort)
        if reply.shape == "generator":
            return generator_stream(actions, abort)
        return Stream(actions, abort)

    # -- the listener

    def listen(self, event: Any, signal: Any) -> None:
        self.events.append(event)
        n = self.seen[event.type] = self.seen.get(event.type, 0) + 1
        for kind, nth, action in self.s.listener:
            if kind == event.type and nth == n:
                if action == "abort":
                    self.aborting()
                    self.signal.abort("listener")
                elif action == "abort_run":
                    self.aborting()
                    signal.abort("listener")
                else:
                    raise ValueError("a listener that raises")

    # -- hooks

    def next_behaviour(self, name: str) -> str:
        behaviours = self.s.hook(name) or ()
        i = self.hook_calls.get(name, 0)
        self.hook_calls[name] = i + 1
        return behaviours[i] if i < len(behaviours) else "ok"

    def act(self, behaviour: str, signal: Any, normal: Callable[[], Any]) -> Any:
        """What every hook does for the behaviours they share."""
        if behaviour.startswith("raise:"):
            raise make_exception(behaviour[6:])
        if behaviour.startswith("garbage:"):
            return GARBAGE[behaviour[8:]]()
        if behaviour == "abort":
            value = normal()
            self.abort(signal)
            return value
        return normal()

    def loop_hook(self, name: str) -> Callable[..., Any]:
        def run(arg: Any, signal: Any) -> Any:
            behaviour = self.next_behaviour(name)
            if name in ("transform_context", "convert_to_llm"):
                if behaviour == "drop":
                    return []
                return self.act(behaviour, signal, lambda: list(arg))
            if name == "get_api_key":
                return self.act(behaviour, signal, lambda: None if behaviour == "no_key" else "secret")
            if name == "prepare_next_turn":
                if behaviour == "new_context":  # t1 is gone from the next turn on
                    ctx = arg.context
                    return NextTurn(context=AgentContext("new prompt", ctx.messages, ctx.tools[:1]))
                return self.act(behaviour, signal,
                                lambda: NextTurn(thinking_level="high") if behaviour == "next" else None)
            if name == "should_stop_after_turn":
                return self.act(behaviour, signal, lambda: behaviour == "stop")
            queue = self.queues[name]
            if behaviour == "abort_empty":
                self.abort(signal)
                return []

            def take() -> list[Any]:
                batch = queue.popleft() if queue else []
                self.handed_out.extend(batch)
                return batch

            return self.act(behaviour, signal, take)

        return self.wrap(run, takes_arg=name not in ("get_steering_messages", "get_follow_up_messages"))

    def wrap(self, run: Callable[[Any, Any], Any], takes_arg: bool = True) -> Callable[..., Any]:
        """The hook as user code writes it: sync or ``async def``, taking the signal by keyword."""
        if self.s.async_code:
            if takes_arg:
                async def hook(arg: Any, *, signal: Any = None) -> Any:
                    return run(arg, signal)
            else:
                async def hook(*, signal: Any = None) -> Any:  # type: ignore[misc]
                    return run(None, signal)
        elif takes_arg:
            def hook(arg: Any, *, signal: Any = None) -> Any:  # type: ignore[misc]
                return run(arg, signal)
        else:
            def hook(*, signal: Any = None) -> Any:  # type: ignore[misc]
                return run(None, signal)
        return hook

    def before(self, ctx: Any, signal: Any) -> Any:
        call = self.by_id.get(ctx.tool_call.id, Call("?", "ok"))
        b = call.before
        if b == "block":
            return BeforeToolCallResult(block=True, reason="blocked by policy")
        if b == "block_default":
            return BeforeToolCallResult(block=True)
        if b == "block_terminate":
            return BeforeToolCallResult(block=True, reason="blocked, stop", terminate=True)
        return self.act(b, signal, lambda: None)

    def after(self, ctx: Any, signal: Any) -> Any:
        call = self.by_id.get(ctx.tool_call.id, Call("?", "ok"))
        if call.after == "patch":
            return AfterToolCallResult(content=(TextContent("patched"),), is_error=False, terminate=True)
        return self.act(call.after, signal, lambda: None)

    # -- tools

    def execute(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        with self.lock:
            self.tool_log.append(tool_call_id)
        outcome = self.by_id[tool_call_id].outcome
        if outcome.startswith("raise:"):
            raise make_exception(outcome[6:])
        if outcome.startswith("progress:"):
            for i in range(int(outcome[9:])):
                on_update({"step": i})
            return f"progressed {tool_call_id}"
        if outcome == "result":
            return AgentToolResult((TextContent(f"result {tool_call_id}"),), details={"id": tool_call_id})
        if outcome == "terminate":
            return AgentToolResult((TextContent("last"),), terminate=True)
        if outcome == "garbage":
            return 42
        if outcome == "abort":
            self.abort(signal)
            return f"aborted myself {tool_call_id}"
        if outcome == "abort_raise":
            self.abort(signal)
            raise RuntimeError("aborted, then failed")
        return f"ran {tool_call_id}"

    def tools(self) -> list[AgentTool]:
        schema = {"type": "object", "properties": {"x": {"type": "integer"}}}

        def prepare(args: Any) -> Any:
            if isinstance(args, dict) and args.get("p") == "raise":
                raise ValueError("prepare_arguments failed")
            if isinstance(args, dict) and args.get("p") == "garbage":
                return "not an object"
            return args

        def first(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
            return self.execute(tool_call_id, args, signal, on_update)

        async def first_async(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
            return self.execute(tool_call_id, args, signal, on_update)

        second = first_async if self.s.async_code else first
        if self.s.quiet_tools:
            first.reports_progress = False  # type: ignore[attr-defined]
            first_async.reports_progress = False  # type: ignore[attr-defined]
        return [AgentTool("t0", "t0", "a tool", schema, first, prepare_arguments=prepare),
                AgentTool("t1", "t1", "another tool", schema, second)]

    def config(self) -> AgentLoopConfig:
        s = self.s
        hooks = {name: self.loop_hook(name) for name, _ in s.hooks}
        if s.before_set:
            hooks["before_tool_call"] = self.wrap(self.before)
        if s.after_set:
            hooks["after_tool_call"] = self.wrap(self.after)
        return AgentLoopConfig(model=MODEL, tool_execution=s.mode, **hooks)  # type: ignore[arg-type]


@dataclass
class Outcome:
    flavour: Flavour
    events: list[Any]
    result: list[Any] | None
    raised: BaseException | None
    world: World
    seconds: float = 0.0


@contextlib.contextmanager
def grace(hook: float | None = None, tool: float | None = None) -> Iterator[None]:
    """Set the runs' grace periods for the duration (the test's own knobs, restored after)."""
    saved = Run.hook_grace, Run.abort_grace
    try:
        if hook is not None:
            Run.hook_grace = hook
        if tool is not None:
            Run.abort_grace = tool
        yield
    finally:
        Run.hook_grace, Run.abort_grace = saved


def run_scenario(s: Scenario, flavour: Flavour, world: World | None = None, bound: float = BOUND) -> Outcome:
    """Run ``s`` on one interpreter in a worker thread; fail if it has not ended within ``bound``."""
    world = world or World(s, flavour)
    box: dict[str, Any] = {}
    context = AgentContext("be helpful", [UserMessage("go")] if s.resume else [], world.tools())
    config = world.config()
    args: tuple[Any, ...] = (context, config, world.listen, world.signal, world.stream_fn)

    def target() -> None:
        try:
            if s.resume:
                box["result"] = flavour.call(flavour.run_agent_loop_continue, *args, clock=world.clock)
            else:
                box["result"] = flavour.call(flavour.run_agent_loop, "go", *args, clock=world.clock)
        except BaseException as exc:  # what reaches the caller (SystemExit from user code does)
            box["raised"] = exc

    thread = threading.Thread(target=target, name=f"scenario-{flavour}", daemon=True)
    t0 = time.monotonic()
    thread.start()
    thread.join(bound)
    if thread.is_alive():
        pytest.fail(f"{flavour}: the run did not end within {bound} s; events so far: "
                    f"{[e.type for e in list(world.events)]}\nscenario: {s}")
    return Outcome(flavour, world.events, box.get("result"), box.get("raised"), world, time.monotonic() - t0)


# --------------------------------------------------------------------------- what must hold


def check(o: Outcome) -> None:
    """The invariants of one run."""
    events, where = o.events, o.flavour
    kinds = [e.type for e in events]
    assert kinds.count("agent_end") == 1, f"{where}: {kinds.count('agent_end')} agent_end events: {kinds}"
    assert kinds[-1] == "agent_end", f"{where}: the last event is {kinds[-1]}: {kinds}"
    assert kinds[0] == "agent_start" and kinds.count("agent_start") == 1, f"{where}: {kinds}"
    if o.raised is not None:  # only SystemExit from user code may reach the caller
        assert isinstance(o.raised, SystemExit), f"{where}: the run raised {o.raised!r}"
    end = events[-1]
    result = o.result if o.result is not None else list(end.messages)
    assert list(end.messages) == result, f"{where}: agent_end.messages is not the result"

    # nesting: turns hold messages and tool executions; messages do not overlap
    in_turn, open_message = False, None
    running: set[str] = set()
    started: list[str] = []
    for i, e in enumerate(events):
        t = e.type
        context = f"{where}: event {i} ({t}) in {kinds}"
        if t == "turn_start":
            assert not in_turn and open_message is None, context
            in_turn = True
        elif t == "turn_end":
            assert in_turn and open_message is None and not running, context
            in_turn = False
        elif t == "message_start":
            assert in_turn and open_message is None, context
            open_message = e.message
        elif t == "message_update":
            assert open_message is not None and open_message.role == "assistant", context
        elif t == "message_end":
            assert open_message is not None and open_message.role == e.message.role, context
            open_message = None
        elif t == "tool_execution_start":
            assert in_turn and open_message is None and e.tool_call_id not in started, context
            running.add(e.tool_call_id)
            started.append(e.tool_call_id)
        elif t == "tool_execution_update":
            assert open_message is None and e.tool_call_id in running, context
        elif t == "tool_execution_end":
            assert open_message is None and e.tool_call_id in running, context
            running.discard(e.tool_call_id)
        elif t == "agent_end":
            assert not in_turn and open_message is None, context
    ended = [e.tool_call_id for e in events if e.type == "tool_execution_end"]
    assert sorted(ended) == sorted(started), f"{where}: tool starts {started} vs ends {ended}"

    # the result is the messages of the message_end events, in order
    ends = [e.message for e in events if e.type == "message_end"]
    assert len(ends) == len(result) and all(a is b for a, b in zip(ends, result)), (
        f"{where}: message_end messages differ from the result")

    # every call of a reply that ran tools has exactly one result, right after the reply
    answered: list[str] = []
    for i, m in enumerate(result):
        if isinstance(m, AssistantMessage) and m.tool_calls and m.stop_reason not in ("error", "aborted"):
            ids = [c.id for c in m.tool_calls]
            following = result[i + 1:i + 1 + len(ids)]
            assert [getattr(r, "tool_call_id", None) for r in following] == ids, (
                f"{where}: the calls {ids} of a reply are answered by {following}")
            assert all(isinstance(r, ToolResultMessage) for r in following)
            answered.extend(ids)
    results = [m.tool_call_id for m in result if isinstance(m, ToolResultMessage)]
    assert results == answered, f"{where}: tool results {results} for the calls {answered}"
    assert sorted(started) == sorted(answered), f"{where}: executions {started} for the calls {answered}"

    # no queued message is lost
    for m in o.world.handed_out:
        assert any(m is r for r in result), f"{where}: {m} was taken from its queue and lost"

    # once aborted, the model is not called again
    if o.world.calls_at_abort is not None:
        assert o.world.model_calls == o.world.calls_at_abort, f"{where}: a model call after the abort"


def normalised(values: list[Any]) -> list[Any]:
    """JSON of events or messages without timestamps (the clock is called a different number of
    times by each interpreter)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("timestamp", "at")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [strip(to_json(v)) for v in values]


TOOL_EVENTS = ("tool_execution_start", "tool_execution_update", "tool_execution_end")
_PHASE = {"tool_execution_start": 0, "tool_execution_update": 1, "tool_execution_end": 2}


def canonical(events: list[Any], parallel: bool) -> list[Any]:
    """The events to compare: in a parallel batch, updates and ends come as calls finish, so each
    run of tool events is put in call order (each call's own events keep their order)."""
    out = normalised(events)
    if not parallel:
        return out
    result: list[Any] = []
    i = 0
    while i < len(out):
        if out[i]["type"] not in TOOL_EVENTS:
            result.append(out[i])
            i += 1
            continue
        j = i
        while j < len(out) and out[j]["type"] in TOOL_EVENTS:
            j += 1
        run = out[i:j]
        order = {e["tool_call_id"]: k for k, e in reversed(list(enumerate(run)))}
        result.extend(sorted(run, key=lambda e: (order[e["tool_call_id"]], _PHASE[e["type"]])))
        i = j
    return result


def compare(a: Outcome, b: Outcome, s: Scenario) -> None:
    """The two interpreters did the same thing."""
    ra = a.result if a.result is not None else list(a.events[-1].messages)
    rb = b.result if b.result is not None else list(b.events[-1].messages)
    assert normalised(ra) == normalised(rb), "sync and asyncio give different messages"
    assert canonical(a.events, s.mode == "parallel") == canonical(b.events, s.mode == "parallel"), (
        "sync and asyncio give different events")
    assert type(a.raised) is type(b.raised), f"sync raised {a.raised!r}, asyncio {b.raised!r}"
    assert sorted(a.world.tool_log) == sorted(b.world.tool_log), "the tools ran differently"
    assert a.world.model_calls == b.world.model_calls, "the model was called differently"
    assert {k: len(q) for k, q in a.world.queues.items()} == {k: len(q) for k, q in b.world.queues.items()}


# --------------------------------------------------------------------------- the property


def check_scenario(s: Scenario) -> None:
    with grace(hook=5.0):  # a hook that aborts and then answers: its answer is always in time
        outcomes = [run_scenario(s, flavour) for flavour in FLAVOURS]
    for o in outcomes:
        check(o)
    if not racy(s):
        compare(outcomes[0], outcomes[1], s)


NASTY = [
    # a stream that yields None where its start belongs; then one that raises a BaseException
    # that is not an Exception in the middle of a block
    Scenario(replies=(Reply((("bad", "none"), ("start",), ("done", "stop"))),)),
    Scenario(replies=(Reply((("start",), ("text", 2, False, False), ("raise", "Meltdown"))),)),
    # every hook fails in its own way, the tool raises StopIteration, a listener raises
    Scenario(
        mode="sequential",
        replies=(Reply((("start",), Call("t0", "ok", outcome="raise:StopIteration", before="garbage:str"),
                        Call("t1", "truncated", 2, outcome="raise:KeyError"), ("done", "toolUse"))),),
        hooks=(("transform_context", ("ok", "garbage:int")), ("should_stop_after_turn", ("garbage:str",))),
        before_set=True, listener=(("tool_execution_start", 1, "raise"),), async_code=True,
    ),
    # the steering poll hands over messages and aborts; the follow-up queue stays full
    Scenario(
        replies=(Reply((("start",), Call("t0", "ok"), ("done", "toolUse"))),),
        hooks=(("get_steering_messages", ("ok", "abort")), ("get_follow_up_messages", ("ok",))),
        steering=(("q0.0", "q0.1"),), follow_ups=(("q1.0",),), abort_via="run",
    ),
    # out-of-order block events, an error event with a str, a stream function that raises on call
    Scenario(replies=(Reply((("start",), ("bad", "end_ended"), ("text", 2, True, True))),
                      Reply((("start",), ("error", "str"))),
                      Reply((), raise_on_call="CancelledError"))),
    # SystemExit from a tool: the run aborts, ends, and SystemExit reaches the caller
    Scenario(mode="sequential", replies=(Reply((("start",), Call("t0", "ok", outcome="raise:SystemExit"),
                                                Call("t0", "empty"), ("done", "toolUse"))),)),
    # an abort from a listener while the reply streams, with prepare_next_turn raising afterwards
    Scenario(replies=(Reply((("start",), ("text", 3, True, False), ("done", "stop"))),),
             hooks=(("prepare_next_turn", ("raise:Meltdown",)),), listener=(("message_update", 2, "abort"),)),
]


def with_examples(cases: list[Any]) -> Callable[[Any], Any]:
    """``@example`` for each case."""

    def decorate(test: Any) -> Any:
        for case in reversed(cases):
            test = example(case)(test)
        return test

    return decorate


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@with_examples(NASTY)
@given(scenarios())
def test_every_run_ends_cleanly_and_both_interpreters_agree(s: Scenario) -> None:
    check_scenario(s)


# --------------------------------------------------------------------------- blocking, then aborted


@dataclass(frozen=True)
class Blocking:
    """One place that blocks until the run is aborted (by a timer it starts as it blocks)."""

    where: str  # a hook name, "tool" (t0) or "stream" (between two events)
    honours: bool  # it returns once the signal fires; else it blocks until the run has ended
    mode: str = "parallel"
    calls: int = 1  # tool calls in the first reply
    async_code: bool = False


BLOCKING_PLACES = ("tool", "stream", "transform_context", "convert_to_llm", "get_api_key", "before_tool_call",
                   "after_tool_call", "prepare_next_turn", "should_stop_after_turn", "get_steering_messages",
                   "get_follow_up_messages")

blockings = st.builds(
    Blocking,
    where=st.sampled_from(BLOCKING_PLACES),
    honours=st.booleans(),
    mode=st.sampled_from(("parallel", "sequential")),
    calls=st.integers(1, 2),
    async_code=st.booleans(),
).filter(
    # a sync stream blocked in next() cannot be interrupted (it is given the signal to honour)
    lambda b: b.honours or b.where != "stream"
).filter(
    # Under asyncio an ``async def`` hook is cancelled at the abort, while the sync interpreter
    # (which runs it on a worker thread) takes an answer given within ``hook_grace``: by design
    # (docs/interpreters.md, Abort); so a hook that answers once aborted is a sync function here.
    lambda b: not (b.honours and b.async_code and b.where not in ("tool", "stream"))
)


class BlockingWorld(World):
    """A healthy run (one reply with tool calls, then a text reply) where one place blocks."""

    def __init__(self, b: Blocking, flavour: Flavour) -> None:
        calls = tuple(Call("t0", "ok") for _ in range(b.calls))
        first = Reply((("start",), *calls, ("done", "toolUse")))
        streamed = Reply((("start",), ("text", 2, True, False), ("block",), ("text", 1, True, False),
                          ("done", "stop")))
        hooks = tuple((name, ()) for name in LOOP_HOOKS)
        super().__init__(Scenario(mode=b.mode, replies=(streamed if b.where == "stream" else first, first),
                                  hooks=hooks, before_set=True, async_code=b.async_code,
                                  # (only there: an abort while tools run hangs a run that sets it,
                                  # test_an_abort_while_a_tool_runs_with_after_tool_call_set_ends_the_run)
                                  after_set=b.where == "after_tool_call",
                                  steering=(("q0.0",),), follow_ups=(("q1.0",),)), flavour)
        self.b = b
        self.release = threading.Event()
        self.aborted_at: float | None = None
        self.ended_at: float | None = None
        self.blocked = 0

    def listen(self, event: Any, signal: Any) -> None:
        super().listen(event, signal)
        if event.type == "agent_end":
            self.ended_at = time.monotonic()
            self.release.set()  # what still blocks may return now (its answer is not wanted)

    def block(self, signal: Any) -> bool:
        """Block here if this is the place (once): until the abort, or until the run has ended.
        True when it blocked."""
        with self.lock:
            self.blocked += 1
            if self.blocked > 1:
                return False

        def fire() -> None:
            self.aborted_at = time.monotonic()
            self.aborting()
            self.signal.abort("the user pressed stop")

        threading.Timer(0.05, fire).start()
        if self.b.honours:
            assert signal.wait(BOUND), "the signal never fired"
        else:
            self.release.wait(BOUND)
        return True

    async def block_async(self, signal: Any) -> bool:
        return await asyncio.to_thread(self.block, signal)

    def loop_hook(self, name: str) -> Callable[..., Any]:
        plain = super().loop_hook(name)
        if name != self.b.where:
            return plain
        if self.s.async_code:
            async def hook(*args: Any, signal: Any = None) -> Any:
                if await self.block_async(signal):
                    return plain_answer(name, args)
                return await plain(*args, signal=signal)
        else:
            def hook(*args: Any, signal: Any = None) -> Any:  # type: ignore[misc]
                if self.block(signal):
                    return plain_answer(name, args)
                return plain(*args, signal=signal)
        return hook

    def config(self) -> AgentLoopConfig:
        config = super().config()
        if self.b.where not in ("before_tool_call", "after_tool_call"):
            return config
        if self.s.async_code:  # (an async hook that blocked its event loop could not be interrupted)
            async def hook(ctx: Any, *, signal: Any = None) -> Any:
                await self.block_async(signal)
        else:
            def hook(ctx: Any, *, signal: Any = None) -> Any:  # type: ignore[misc]
                self.block(signal)
        return replace(config, **{self.b.where: hook})  # type: ignore[arg-type]

    def execute(self, tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        if self.b.where == "tool" and self.block(signal):
            if self.b.honours:
                raise RuntimeError("interrupted by the abort")
            return "too late"
        return super().execute(tool_call_id, args, signal, on_update)

    def stream_fn(self, model: Any, context: Any, options: Any) -> Any:
        stream = super().stream_fn(model, context, options)
        signal = options.signal

        def wait_then(items: Any) -> Iterator[Any]:
            for item in items:
                if isinstance(item, str) and item == "block":
                    self.block(signal)
                else:
                    yield item

        return wait_then(stream)


def plain_answer(name: str, args: tuple[Any, ...]) -> Any:
    """The answer of a hook that was blocked (taken only if it came within the hook grace); a
    queue hook hands out nothing once the run was aborted."""
    if name in ("get_steering_messages", "get_follow_up_messages"):
        return []
    if name in ("transform_context", "convert_to_llm"):
        return list(args[0])
    if name == "should_stop_after_turn":
        return False
    return None


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(blockings)
@example(Blocking("get_steering_messages", honours=False))
@example(Blocking("tool", honours=False, mode="parallel", calls=2))
@example(Blocking("after_tool_call", honours=True, mode="sequential", calls=2))
@example(Blocking("get_follow_up_messages", honours=False, async_code=True))
def test_a_run_blocked_in_user_code_ends_soon_after_the_abort(b: Blocking) -> None:
    outcomes = []
    # Answers given as the abort lands are kept (a long hook grace); a tool that ignores the abort
    # is given up on quickly (a short tool grace).
    with grace(hook=5.0 if b.honours else 0.05, tool=0.3):
        for flavour in FLAVOURS:
            world = BlockingWorld(b, flavour)
            try:
                outcome = run_scenario(world.s, flavour, world=world)
            finally:
                world.release.set()
            assert world.aborted_at is not None, f"{flavour}: {b.where} was never reached"
            assert world.ended_at is not None
            took = world.ended_at - world.aborted_at
            assert took < 3.0, f"{flavour}: agent_end came {took:.2f} s after the abort"
            check(outcome)
            outcomes.append(outcome)
    compare(outcomes[0], outcomes[1], outcomes[0].world.s)


# --------------------------------------------------------------------------- known bugs (minimal cases)

HANG_BOUND = 1.0
"""Seconds before a known hang is called one (the run takes milliseconds when it works)."""


def ended_cleanly(o: Outcome) -> None:
    kinds = [e.type for e in o.events]
    assert kinds and kinds[-1] == "agent_end" and kinds.count("agent_end") == 1, f"{o.flavour}: {kinds}"


@pytest.mark.parametrize("trigger", ["the tool aborts", "before_tool_call aborts"])
def test_an_abort_while_a_tool_runs_with_after_tool_call_set_ends_the_run(flavour: Flavour, trigger: str) -> None:
    call = Call("t0", "ok", outcome="abort") if trigger == "the tool aborts" else Call("t0", "ok", before="abort")
    s = Scenario(replies=(Reply((("start",), call, ("done", "toolUse"))),), before_set=True, after_set=True)
    with grace(hook=5.0):
        o = run_scenario(s, flavour, bound=HANG_BOUND)
    ended_cleanly(o)
    check(o)
    assert [m.tool_call_id for m in o.result or [] if isinstance(m, ToolResultMessage)] == ["r0c0"]


def test_no_model_call_starts_once_get_api_key_saw_the_abort(flavour: Flavour) -> None:
    s = Scenario(replies=(DEFAULT_REPLY,), hooks=(("get_api_key", ("abort",)),))
    o = run_scenario(s, flavour)  # default hook_grace: the key comes back at once
    ended_cleanly(o)
    assert o.result is not None and o.result[-1].stop_reason == "aborted"
    assert o.world.model_calls == 0, "stream_fn was called after the abort"


@pytest.mark.parametrize("exception", ["SystemExit", "Meltdown"])
def test_a_listener_that_raises_a_base_exception_still_gets_agent_end(flavour: Flavour, exception: str) -> None:
    class Raising(World):
        def listen(self, event: Any, signal: Any) -> None:
            super().listen(event, signal)
            if event.type == "message_update":
                raise make_exception(exception)

    s = Scenario(replies=(DEFAULT_REPLY,))
    o = run_scenario(s, flavour, world=Raising(s, flavour))
    # SystemExit stops the run, which still ends, then reaches the caller; another BaseException
    # of a listener is logged like any exception and the run goes on.
    assert (type(o.raised).__name__ if o.raised is not None else None) == (
        "SystemExit" if exception == "SystemExit" else None)
    ended_cleanly(o)


@pytest.mark.parametrize("where", ["tool", "transform_context", "stream"])
def test_an_exception_that_cannot_be_shown_still_ends_the_run(flavour: Flavour, where: str) -> None:
    if where == "tool":
        s = Scenario(replies=(Reply((("start",), Call("t0", "ok", outcome="raise:Unprintable"),
                                     ("done", "toolUse"))),))
    elif where == "stream":
        s = Scenario(replies=(Reply((("start",), ("raise", "Unprintable"))),))
    else:
        s = Scenario(hooks=((where, ("raise:Unprintable",)),))
    o = run_scenario(s, flavour, bound=HANG_BOUND)
    assert o.raised is None, f"{flavour}: {o.raised!r} reached the caller"
    ended_cleanly(o)
    check(o)


def test_a_system_exit_raised_as_the_stream_aborts_reaches_the_caller() -> None:
    s = Scenario(replies=(Reply((("start",), ("abort",), ("raise", "SystemExit"))),))
    outcomes = [run_scenario(s, flavour) for flavour in FLAVOURS]
    for o in outcomes:
        ended_cleanly(o)
        check(o)
    assert [type(o.raised).__name__ for o in outcomes] == ["SystemExit", "SystemExit"]
