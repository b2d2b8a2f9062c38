"""A deterministic model for tests, examples and demos.

:class:`ScriptedModel` is a stream function (``stream_fn(model, context, options)``) that plays
back replies written in advance, or computed by a function of the context, as real stream
events: ``start``, a thinking block, a text block, tool-call blocks (arguments streamed as JSON
text in chunks), then ``done``, or ``error`` for an error reply. What it returns can be iterated
(sync interpreter) and async-iterated (asyncio interpreter), so one scripted scenario drives
both.

Nothing in it depends on the clock or on chance: tool call ids are ``call_1``, ``call_2``...
(one counter per model, counted on from the highest ``call_<n>`` of the conversation it is
called with, so that a new model object that continues a conversation, a resumed run, does not
repeat an id of it), timestamps come from ``clock`` (default: always 0) and the usage is
computed from character counts. It honours ``options.signal`` before every event, and records
every request it receives in :attr:`ScriptedModel.requests`.

>>> from agentcore.llm import LlmContext
>>> from agentcore.messages import Model, UserMessage
>>> model = ScriptedModel([tool_call("add", {"a": 1, "b": 2}), "It is 3."])
>>> ctx = LlmContext("", [UserMessage("1 + 2?")])
>>> events = list(model(Model(id="m"), ctx, None))
>>> [e.type for e in events]
['start', 'toolcall_start', 'toolcall_delta', 'toolcall_delta', 'toolcall_end', 'done']
>>> events[-1].message.tool_calls
(ToolCall(id='call_1', name='add', arguments=FrozenDict({'a': 1, 'b': 2}), thought_signature=None, invalid_json=None),)
>>> [e.type for e in model(Model(id="m"), ctx, None)]
['start', 'text_start', 'text_delta', 'text_end', 'done']
>>> model.calls
2
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias, cast, final

from agentcore.frozen import thaw
from agentcore.llm import LlmContext
from agentcore.messages import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentcore.stream import DoneEvent, ErrorEvent, PartialAssistantMessage, StartEvent, StreamEvent

__all__ = [
    "Reply",
    "ReplyFunction",
    "Request",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedStream",
    "error",
    "length",
    "text",
    "tool_call",
]

ABORTED_MESSAGE = "Request was aborted"


# --------------------------------------------------------------------------- replies


@final
@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One tool call of a reply. ``arguments`` is a JSON object, or a string streamed as it is
    (to script malformed or truncated JSON). ``id=None`` takes the model's next ``call_{n}``."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


CallLike: TypeAlias = "ScriptedCall | ToolCall | Reply | tuple[Any, ...]"


def _as_call(value: Any) -> ScriptedCall:
    if isinstance(value, ScriptedCall):
        return value
    if isinstance(value, ToolCall):
        return ScriptedCall(value.name, thaw(value.arguments), value.id)
    if isinstance(value, Reply):
        if len(value.calls) != 1:
            raise ValueError(f"expected a reply with exactly one tool call, got {value!r}")
        return value.calls[0]
    if isinstance(value, tuple) and 1 <= len(value) <= 3 and isinstance(value[0], str):
        return ScriptedCall(*value)
    raise TypeError(
        "a tool call is a ScriptedCall, a ToolCall, a tool_call(...) reply or a tuple "
        f"(name, arguments[, id]), not {value!r}"
    )


@final
@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted model reply.

    Blocks stream in this order: ``thinking``, ``text``, ``tool_calls``. A tool call may be
    given as a :class:`ScriptedCall`, a ``tool_call(...)`` reply, an agentcore ``ToolCall`` or a
    ``(name, arguments[, id])`` tuple; they are normalized to ``ScriptedCall``. ``stop_reason``
    defaults to ``toolUse`` when there are tool calls, else ``stop``; ``error`` or ``aborted``
    end the stream with an ``ErrorEvent`` carrying ``error_message`` after the content.
    ``usage`` defaults to a count computed from characters.
    """

    text: str | None = None
    thinking: str | None = None
    tool_calls: Sequence[CallLike] = ()
    stop_reason: StopReason | None = None
    usage: Usage | None = None
    error_message: str | None = None

    def __post_init__(self) -> None:
        calls = self.tool_calls
        if not (isinstance(calls, tuple) and all(isinstance(c, ScriptedCall) for c in calls)):
            object.__setattr__(self, "tool_calls", tuple(_as_call(c) for c in calls))

    @property
    def calls(self) -> tuple[ScriptedCall, ...]:
        """``tool_calls``, normalized: a tuple of :class:`ScriptedCall`."""
        return cast("tuple[ScriptedCall, ...]", self.tool_calls)


def text(s: str) -> Reply:
    """A reply that is just text."""
    return Reply(text=s)


def tool_call(
    name: str,
    args: Mapping[str, Any] | str | None = None,
    id: str | None = None,
    *,
    text: str | None = None,
    thinking: str | None = None,
) -> Reply:
    """A reply that calls one tool (optionally after some text). Combine several with
    ``Reply(tool_calls=[tool_call(...), tool_call(...)])``."""
    call = ScriptedCall(name, {} if args is None else args, id)
    return Reply(text=text, thinking=thinking, tool_calls=(call,))


def error(message: str, text: str | None = None) -> Reply:
    """A reply that fails with ``message`` (after streaming ``text``, when given)."""
    return Reply(text=text, stop_reason="error", error_message=message)


def length(text: str) -> Reply:
    """A reply cut off by the output limit (``stop_reason`` ``length``)."""
    return Reply(text=text, stop_reason="length")


def _as_reply(value: Any) -> Reply:
    if isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return Reply(text=value)
    raise TypeError(f"a scripted reply is a Reply or a str, not {value!r}")


ReplyFunction: TypeAlias = Callable[[LlmContext, int], "Reply | str"]
"""``(context, call_index) -> reply``; ``call_index`` counts from 0."""


@final
@dataclass(frozen=True, slots=True)
class Request:
    """What one call of the model received."""

    model: Any
    context: LlmContext
    options: Any


# --------------------------------------------------------------------------- the stream


@final
class ScriptedStream:
    """The events of one reply: iterate it (sync) or async-iterate it (asyncio).

    The reply, its tool call ids, its usage and its timestamp are fixed when the model is
    called; the events are produced lazily, so an abort requested while streaming is seen at the
    next event.
    """

    __slots__ = ("_begin", "_reply", "_call_ids", "_failure", "_chunk_size", "_delay", "_signal")

    def __init__(
        self,
        begin: PartialAssistantMessage,
        reply: Reply | None,
        call_ids: tuple[str, ...],
        failure: str | None,
        chunk_size: int | None,
        delay: float | None,
        signal: Any,
    ) -> None:
        self._begin = begin
        self._reply = reply
        self._call_ids = call_ids
        self._failure = failure
        self._chunk_size = chunk_size
        self._delay = delay
        self._signal = signal

    def _chunks(self, s: str) -> Iterator[str]:
        n = self._chunk_size
        if not s:
            return
        if not n or n >= len(s):
            yield s
            return
        for i in range(0, len(s), n):
            yield s[i : i + n]

    def events(self) -> Iterator[StreamEvent]:
        """The events, ignoring the signal and the delay."""
        p = self._begin
        reply = self._reply
        if reply is None:
            yield p.error("error", self._failure or "ScriptedModel failed")
            return
        yield StartEvent(p)
        index = 0
        if reply.thinking is not None:
            ev_ts = p.thinking_start()
            yield ev_ts
            p = ev_ts.partial
            for chunk in self._chunks(reply.thinking):
                ev_td = p.thinking_delta(index, chunk)
                yield ev_td
                p = ev_td.partial
            ev_te = p.thinking_end(index)
            yield ev_te
            p = ev_te.partial
            index += 1
        if reply.text is not None:
            ev_s = p.text_start()
            yield ev_s
            p = ev_s.partial
            for chunk in self._chunks(reply.text):
                ev_d = p.text_delta(index, chunk)
                yield ev_d
                p = ev_d.partial
            ev_e = p.text_end(index)
            yield ev_e
            p = ev_e.partial
            index += 1
        for call, call_id in zip(reply.calls, self._call_ids):
            ev_cs = p.toolcall_start(call_id, call.name)
            yield ev_cs
            p = ev_cs.partial
            args = call.arguments
            raw = args if isinstance(args, str) else _dumps(args)
            for chunk in self._chunks(raw):
                ev_cd = p.toolcall_delta(index, chunk)
                yield ev_cd
                p = ev_cd.partial
            ev_ce = p.toolcall_end(index) if isinstance(args, str) else p.toolcall_end(index, args)
            yield ev_ce
            p = ev_ce.partial
            index += 1
        reason = reply.stop_reason
        if reason == "error" or reason == "aborted":
            default = ABORTED_MESSAGE if reason == "aborted" else "Scripted error"
            yield p.error(reason, reply.error_message or default)
        else:
            if reason is None:
                reason = "toolUse" if reply.tool_calls else "stop"
            yield p.done(reason)

    def _aborted(self) -> bool:
        signal = self._signal
        return signal is not None and bool(signal.aborted)

    def __iter__(self) -> Iterator[StreamEvent]:
        delay = self._delay
        if self._signal is None and not delay:
            return self.events()
        return self._iter(delay)

    def _iter(self, delay: float | None) -> Iterator[StreamEvent]:
        p = self._begin
        first = True
        for event in self.events():
            if delay and not first:
                time.sleep(delay)
            first = False
            if self._signal is not None and self._aborted():
                yield p.error("aborted", ABORTED_MESSAGE)
                return
            yield event
            if not isinstance(event, (DoneEvent, ErrorEvent)):
                p = event.partial

    async def _aiter(self) -> AsyncIterator[StreamEvent]:
        delay = self._delay
        p = self._begin
        first = True
        for event in self.events():
            if delay and not first:
                await asyncio.sleep(delay)
            first = False
            if self._signal is not None and self._aborted():
                yield p.error("aborted", ABORTED_MESSAGE)
                return
            yield event
            if not isinstance(event, (DoneEvent, ErrorEvent)):
                p = event.partial

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self._aiter()

    def __repr__(self) -> str:
        return f"ScriptedStream({self._reply!r})"


def _dumps(args: Mapping[str, Any]) -> str:
    return json.dumps(thaw(args), ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------- usage


_CALL_NUMBER = re.compile(r"call_([0-9]{1,18})")


def _call_number(message: AssistantMessage) -> int:
    """The highest ``n`` of the ``call_<n>`` tool call ids of ``message`` (0 when it has none)."""
    highest = 0
    for block in message.content:
        if isinstance(block, ToolCall) and (m := _CALL_NUMBER.fullmatch(block.id)) is not None:
            highest = max(highest, int(m.group(1)))
    return highest


def _message_chars(message: Any) -> int:
    """Characters of one context message, as the model would read them."""
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return len(message.content)
        return sum(len(b.text) if isinstance(b, TextContent) else 0 for b in message.content)
    if isinstance(message, (AssistantMessage, PartialAssistantMessage)):
        total = 0
        for b in message.content:
            if isinstance(b, TextContent):
                total += len(b.text)
            elif isinstance(b, ThinkingContent):
                total += len(b.thinking)
            elif isinstance(b, ToolCall):
                total += len(b.name) + len(_dumps(b.arguments))
        return total
    if isinstance(message, ToolResultMessage):
        return sum(len(b.text) for b in message.content if isinstance(b, TextContent))
    if isinstance(message, BashExecutionMessage):
        return len(message.command) + len(message.output)
    if isinstance(message, (CompactionSummaryMessage, BranchSummaryMessage)):
        return len(message.summary)
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return len(content)
    if isinstance(content, (tuple, list)):
        return sum(len(b.text) for b in content if isinstance(b, TextContent))
    return 0


def _reply_chars(reply: Reply) -> int:
    total = len(reply.text or "") + len(reply.thinking or "")
    for call in reply.calls:
        args = call.arguments
        total += len(call.name) + len(args if isinstance(args, str) else _dumps(args))
    return total


def _usage(input_chars: int, reply: Reply) -> Usage:
    if reply.usage is not None:
        return reply.usage
    inp = input_chars // 4
    out = _reply_chars(reply) // 4
    return Usage(input=inp, output=out, total_tokens=inp + out)


# --------------------------------------------------------------------------- the model


@final
class ScriptedModel:
    """A stream function that plays back scripted replies.

    ``replies`` is a sequence of :class:`Reply` (or strings, for text replies), used one per
    call, or a function ``(context, call_index) -> Reply | str``. ``chunk_size`` is the number
    of characters per delta (``0``/``None``: one delta per block); ``delay`` the seconds to wait
    between events; ``clock()`` gives the messages' timestamp in ms (default: 0).

    It returns at once (it only builds the reply), so the asyncio interpreter calls it in the
    run's task rather than on a worker thread (:attr:`blocking`); a reply function is called
    there too and should not block.
    """

    blocking: ClassVar[bool] = False
    """A call of the model does not block (the asyncio interpreter calls a sync stream function
    on a worker thread unless it says so)."""

    def __init__(
        self,
        replies: Sequence[Reply | str] | ReplyFunction,
        *,
        chunk_size: int | None = 8,
        delay: float | None = None,
        clock: Callable[[], int] | None = None,
    ) -> None:
        if chunk_size is not None and chunk_size < 0:
            raise ValueError(f"chunk_size must be >= 0 or None, not {chunk_size}")
        if callable(replies):
            self._function: ReplyFunction | None = replies
            self._replies: tuple[Reply, ...] = ()
        else:
            if isinstance(replies, (str, Reply)):
                raise TypeError("ScriptedModel takes a list of replies (or a function), not one")
            self._function = None
            self._replies = tuple(_as_reply(r) for r in replies)
        self.chunk_size = chunk_size
        self.delay = delay
        self.clock = clock
        self.requests: list[Request] = []
        self._next_call_id = 1
        self._lock = threading.RLock()
        # What was read of the last context seen (its first message, length, last message,
        # input characters, highest call_<n>): an append-only history is read incrementally.
        self._counted: tuple[Any, int, Any, int, int] | None = None

    @property
    def calls(self) -> int:
        """How many times the model was called."""
        return len(self.requests)

    @property
    def replies(self) -> tuple[Reply, ...]:
        """The scripted replies (empty when a function gives them)."""
        return self._replies

    def __call__(self, model: Any, context: LlmContext, options: Any = None) -> ScriptedStream:
        with self._lock:
            index = len(self.requests)
            self.requests.append(Request(model, context, options))
            reply: Reply | None
            failure: str | None = None
            if self._function is not None:
                reply = _as_reply(self._function(context, index))
            elif index < len(self._replies):
                reply = self._replies[index]
            else:
                reply = None
                n = len(self._replies)
                failure = (
                    f"ScriptedModel has no reply left for call {index + 1} "
                    f"(it was given {n} {'reply' if n == 1 else 'replies'})"
                )
            chars, highest = self._read(context)
            # counted on from the conversation: a new model object that continues one does not
            # repeat its ids
            self._next_call_id = max(self._next_call_id, highest + 1)
            call_ids: list[str] = []
            if reply is not None:
                for call in reply.calls:
                    if call.id is None:
                        call_ids.append(f"call_{self._next_call_id}")
                        self._next_call_id += 1
                    else:
                        call_ids.append(call.id)
            usage = _usage(chars, reply) if reply is not None else Usage()
        begin = PartialAssistantMessage.begin(
            api="scripted",
            provider="scripted",
            model=str(getattr(model, "id", model)),
            timestamp=self.clock() if self.clock is not None else 0,
            usage=usage,
        )
        signal = getattr(options, "signal", None)
        return ScriptedStream(
            begin, reply, tuple(call_ids), failure, self.chunk_size, self.delay, signal
        )

    def _read(self, context: LlmContext) -> tuple[int, int]:
        """The input character count of ``context`` and the highest ``n`` of a ``call_<n>`` tool
        call id in it. An append-only history is read incrementally: a long run does not reread
        every message on every turn."""
        messages = context.messages
        n = len(messages)
        counted = self._counted
        start, total, highest = 0, 0, 0
        if counted is not None:
            first, count, last, chars, top = counted
            if 0 < count <= n and messages[0] is first and messages[count - 1] is last:
                start, total, highest = count, chars, top
        for i in range(start, n):
            message = messages[i]
            total += _message_chars(message)
            if isinstance(message, AssistantMessage):
                highest = max(highest, _call_number(message))
        if n:
            self._counted = (messages[0], n, messages[n - 1], total, highest)
        return total + len(context.system_prompt), highest

    def __repr__(self) -> str:
        source = "function" if self._function is not None else f"{len(self._replies)} replies"
        return f"ScriptedModel({source}, calls={self.calls})"
