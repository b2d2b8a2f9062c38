"""Encoding for transcripts: inputs and effects as the JSON lines hold them.

:class:`EffectEncoder` gives an effect or an input as transcript JSON data (what a replay
compares with the recording) or, on the recorder's fast path, directly as JSON text.

Two things keep a transcript linear in the size of the run:

- stream events are stored without their partial message (``to_json(..., partials=False)``)
  and an ``emit`` of ``message_update`` as its digest only (:func:`~interpreters.transcript.format.update_digest`);
- message histories inside effects (``call_llm.messages``, hook contexts) are stored as a delta
  against the previous history written under the same key: ``{"$seq": "llm", "keep": 41,
  "add": [...]}`` means "the first 41 messages of the previous ``llm`` history, then these".

The text is built from the JSON text of its parts, each made once per record (:class:`Memo`):
the fast encoders here give exactly ``compact_json(to_json(value, partials=False))`` (tests
compare them with the codec), and leave what they do not expect to the codec.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from agentcore.records import record_fields, replace
from agentcore import AgentContext, Effect, Input
from agentcore.codec import encode_raw, to_json
from agentcore.effects import (
    AfterToolCall,
    BeforeToolCall,
    CallLlm,
    ConvertToLlm,
    Emit,
    ExecuteTool,
    PrepareNextTurn,
    RunEnded,
    ShouldStopAfterTurn,
    TransformContext,
)
from agentcore.events import (
    AgentEndEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from agentcore.inputs import StreamEventReceived, ToolFinished
from agentcore.messages import (
    AssistantMessage,
    Cost,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentcore.stream import (
    DoneEvent,
    ErrorEvent,
    PartialAssistantMessage,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from agentcore.tools import AgentToolResult

from ..secrets import hinted
from .format import (
    DELTAS,
    UPDATE,
    UPDATE_DIGEST,
    UPDATE_TEXT,
    compact_json,
    json_str,
    update_digest,
)

__all__ = [
    "EffectEncoder",
    "Memo",
    "SHAPES_OK",
    "encode_input",
]


def encode_input(inp: Input) -> Any:
    """An input as transcript JSON: the codec's, without stream partials (fast path for deltas)."""
    if type(inp) is StreamEventReceived:
        ev = inp.event
        if type(ev) in DELTAS:
            return {"type": "stream_event_received", "id": inp.id,
                    "event": {"type": ev.type, "content_index": ev.content_index, "delta": ev.delta},  # type: ignore[union-attr]
                    "at": inp.at}
    return to_json(inp, partials=False)


def _common_prefix(items: list[Any], prev: list[Any]) -> int:
    """How many leading items of ``items`` equal (``==``) those of ``prev``.

    One C-speed list comparison in the usual case, a history that grew at its end (identity
    short-circuits each comparison: the items are the very objects of the previous turn).
    Equality rather than identity also keeps a transcript linear when a ``convert_to_llm`` hook
    rebuilds equal messages every turn."""
    n = min(len(items), len(prev))
    if n == 0:
        return 0
    if items[:n] == (prev if len(prev) == n else prev[:n]):
        return n
    return next((i for i in range(n) if items[i] != prev[i]), n)


# -- JSON text, fast
#
# The recorder builds each line as text from the JSON text of its parts instead of dumping a
# dict: a message is written several times per turn (message_end, turn_end, the next call_llm,
# the done input...) and its text is made once (``Memo.text``, by identity). Compact JSON is
# compositional, so splicing the text of a part gives exactly what dumping the whole would.
# The hand-written encoders below give exactly ``compact_json(to_json(value, partials=False))`` (tests
# compare them with the codec); on a value they do not expect (a str subclass, a NaN, a field the
# core added...) they raise ``_Fallback`` and the codec encodes it.


class _Fallback(Exception):
    """A value the fast encoders leave to the codec."""


def _sc(v: Any) -> str:
    """A scalar field as the codec + ``compact_json`` write it."""
    t = type(v)
    if t is str:
        return json_str(v)  # type: ignore[no-any-return]
    if t is int:
        return int.__repr__(v)
    if v is None:
        return "null"
    if t is bool:
        return "true" if v else "false"
    if t is float:
        r = float.__repr__(v)
        if r[-1] in "fn":  # inf, -inf, nan: the json module's own spelling
            raise _Fallback
        return r
    raise _Fallback


def _n(v: Any) -> str:
    """A number field of an event or input (never a string: the skeleton of a line is not
    checked for key hints, only the text spliced into it)."""
    if type(v) is int:
        return int.__repr__(v)
    if type(v) is str:
        raise _Fallback
    return _sc(v)


def _s(v: Any) -> str:
    """A ``str`` (or ``str | None``) field."""
    if type(v) is str:
        return json_str(v)  # type: ignore[no-any-return]
    if v is None:
        return "null"
    raise _Fallback


def _raw(v: Any) -> str:
    """A free-form JSON field (the codec's ``raw`` kind: tool arguments, details)."""
    if type(v) in _PLAIN:
        return _sc(v)
    return compact_json(encode_raw(v))


_PLAIN: Final = frozenset({str, int, float, bool, type(None)})


def _strs(v: Any) -> str:
    """A ``tuple[str, ...] | None`` field."""
    if v is None:
        return "null"
    if type(v) is not tuple:
        raise _Fallback
    return "[" + ",".join([_sc(x) for x in v]) + "]"


def _text_content(c: Any, memo: Memo) -> str:
    return '{"type":"text","text":%s,"text_signature":%s}' % (_s(c.text), _s(c.text_signature))


def _thinking_content(c: Any, memo: Memo) -> str:
    return '{"type":"thinking","thinking":%s,"thinking_signature":%s,"redacted":%s}' % (
        _s(c.thinking), _s(c.thinking_signature), _sc(c.redacted))


def _image_content(c: Any, memo: Memo) -> str:
    return '{"type":"image","data":%s,"mime_type":%s}' % (_s(c.data), _s(c.mime_type))


def _tool_call(c: Any, memo: Memo) -> str:
    return '{"type":"toolCall","id":%s,"name":%s,"arguments":%s,"thought_signature":%s,"invalid_json":%s}' % (
        _s(c.id), _s(c.name), _raw(c.arguments), _s(c.thought_signature), _s(c.invalid_json))


def _blocks(content: Any, memo: Memo) -> str:
    if type(content) is not tuple:
        raise _Fallback
    if not content:
        return "[]"
    parts = []
    for b in content:
        t = type(b)
        if t is TextContent:
            parts.append(_text_content(b, memo))
        elif t is ToolCall:
            parts.append(memo.text(b))  # also written alone: toolcall_end, execute_tool
        else:
            enc = _FAST.get(t)
            if enc is None:
                raise _Fallback
            parts.append(enc(b, memo))
    return "[" + ",".join(parts) + "]"


_USAGE: Final = ('{"type":"Usage","input":%s,"output":%s,"cache_read":%s,"cache_write":%s,"total_tokens":%s,'
                 '"cost":%s}')


def _cost(c: Any) -> str:
    if type(c) is not Cost:
        raise _Fallback
    return '{"type":"Cost","input":%s,"output":%s,"cache_read":%s,"cache_write":%s,"total":%s}' % (
        _n(c.input), _n(c.output), _n(c.cache_read), _n(c.cache_write), _n(c.total))


def _usage(u: Any) -> str:
    if u is None:
        return "null"
    if type(u) is not Usage:
        raise _Fallback
    a, b, c, d, e = u.input, u.output, u.cache_read, u.cache_write, u.total_tokens
    if type(a) is int and type(b) is int and type(c) is int and type(d) is int and type(e) is int:
        return _USAGE % (a, b, c, d, e, _cost(u.cost))  # an int's %s is its repr
    return _USAGE % (_n(a), _n(b), _n(c), _n(d), _n(e), _cost(u.cost))


def _usage_record(u: Any, memo: Memo) -> str:
    return _usage(u)


def _cost_record(c: Any, memo: Memo) -> str:
    return _cost(c)


def _assistant(h: Any, content: Any, memo: Memo) -> str:
    """An assistant message with header ``h`` and ``content``."""
    return ('{"type":"assistant","content":%s,"api":%s,"provider":%s,"model":%s,"usage":%s,"stop_reason":%s,'
            '"error_message":%s,"response_id":%s,"timestamp":%s}') % (
        _blocks(content, memo), _s(h.api), _s(h.provider), _s(h.model), memo.usage(h.usage), _s(h.stop_reason),
        _s(h.error_message), _s(h.response_id), _sc(h.timestamp))


def _assistant_message(m: Any, memo: Memo) -> str:
    return _assistant(m, m.content, memo)


def _partial(p: Any, memo: Memo) -> str:
    # The codec writes ``p.to_message()``: the header with the content (no need to build it).
    if type(p.header) is not AssistantMessage:
        raise _Fallback
    return '{"type":"partial_assistant","message":%s}' % _assistant(p.header, p.content, memo)


def _user_message(m: Any, memo: Memo) -> str:
    c = m.content
    return '{"type":"user","content":%s,"timestamp":%s}' % (
        json_str(c) if type(c) is str else _blocks(c, memo), _sc(m.timestamp))


def _tool_result_message(m: Any, memo: Memo) -> str:
    return ('{"type":"toolResult","tool_call_id":%s,"tool_name":%s,"content":%s,"details":%s,"is_error":%s,'
            '"usage":%s,"added_tool_names":%s,"timestamp":%s}') % (
        _s(m.tool_call_id), _s(m.tool_name), _blocks(m.content, memo), _raw(m.details), _sc(m.is_error),
        _usage(m.usage), _strs(m.added_tool_names), _sc(m.timestamp))


def _agent_tool_result(r: Any, memo: Memo) -> str:
    return '{"type":"AgentToolResult","content":%s,"details":%s,"usage":%s,"added_tool_names":%s,"terminate":%s}' % (
        _blocks(r.content, memo), _raw(r.details), _usage(r.usage), _strs(r.added_tool_names), _sc(r.terminate))


_FAST: Final[dict[type, Callable[[Any, Memo], str]]] = {
    TextContent: _text_content,
    ThinkingContent: _thinking_content,
    ImageContent: _image_content,
    ToolCall: _tool_call,
    Cost: _cost_record,
    Usage: _usage_record,
    AssistantMessage: _assistant_message,
    PartialAssistantMessage: _partial,
    UserMessage: _user_message,
    ToolResultMessage: _tool_result_message,
    AgentToolResult: _agent_tool_result,
}

# The fields the fast encoders know, in the codec's order. A record whose fields changed (the
# core grew one) makes the recorder fall back to the codec for everything (see ``SHAPES_OK``).
_SHAPES: Final[dict[type, tuple[str, ...]]] = {
    TextContent: ("text", "text_signature"),
    ThinkingContent: ("thinking", "thinking_signature", "redacted"),
    ImageContent: ("data", "mime_type"),
    ToolCall: ("id", "name", "arguments", "thought_signature", "invalid_json"),
    Cost: ("input", "output", "cache_read", "cache_write", "total"),
    Usage: ("input", "output", "cache_read", "cache_write", "total_tokens", "cost"),
    AssistantMessage: ("content", "api", "provider", "model", "usage", "stop_reason", "error_message",
                       "response_id", "timestamp"),
    PartialAssistantMessage: ("header", "blocks", "chunks", "_content"),
    UserMessage: ("content", "timestamp"),
    ToolResultMessage: ("tool_call_id", "tool_name", "content", "details", "is_error", "usage",
                        "added_tool_names", "timestamp"),
    AgentToolResult: ("content", "details", "usage", "added_tool_names", "terminate"),
    Emit: ("event",),
    CallLlm: ("id", "model", "thinking_level", "system_prompt", "messages", "tools"),
    ExecuteTool: ("id", "tool_call", "args"),
    RunEnded: ("messages",),
    AgentStartEvent: (),
    TurnStartEvent: (),
    MessageStartEvent: ("message",),
    MessageEndEvent: ("message",),
    TurnEndEvent: ("message", "tool_results"),
    AgentEndEvent: ("messages",),
    ToolExecutionStartEvent: ("tool_call_id", "tool_name", "args"),
    ToolExecutionEndEvent: ("tool_call_id", "tool_name", "result", "is_error"),
    StreamEventReceived: ("id", "event", "at"),
    ToolFinished: ("id", "result", "at"),
    StartEvent: ("partial",),
    TextStartEvent: ("content_index", "partial"),
    ThinkingStartEvent: ("content_index", "partial", "redacted"),
    TextDeltaEvent: ("content_index", "delta", "partial"),
    ThinkingDeltaEvent: ("content_index", "delta", "partial"),
    ToolCallDeltaEvent: ("content_index", "delta", "partial"),
    TextEndEvent: ("content_index", "content", "partial"),
    ThinkingEndEvent: ("content_index", "content", "partial"),
    ToolCallStartEvent: ("content_index", "partial", "id", "name"),
    ToolCallEndEvent: ("content_index", "tool_call", "partial"),
    DoneEvent: ("reason", "message"),
    ErrorEvent: ("reason", "error"),
}
SHAPES_OK: Final = all(record_fields(cls) == names for cls, names in _SHAPES.items())

_MAX_MEMO: Final = 512
_MAX_HISTORY_CHARS: Final = 32_000_000


class Memo:
    """to_json of recently seen records, and their JSON text, by identity (a message is encoded
    once, not once per event that carries it).

    ``text`` only keeps text with no key hint (see :func:`interpreters.secrets.hinted`); text with one sets ``dirty``,
    which tells the recorder the line must go through :func:`interpreters.secrets.scrub`.
    """

    __slots__ = ("cache", "texts", "raws", "strs", "history", "history_chars", "dirty")

    def __init__(self) -> None:
        self.cache: dict[int, tuple[Any, Any]] = {}
        self.texts: dict[int, tuple[Any, str]] = {}
        self.raws: dict[int, tuple[Any, str]] = {}
        self.strs: dict[str, str] = {}
        self.history: dict[int, tuple[Any, str]] = {}
        self.history_chars = 0
        self.dirty = False

    def __call__(self, value: Any) -> Any:
        hit = self.cache.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        data = to_json(value, partials=False)
        if len(self.cache) > _MAX_MEMO:
            self.cache.clear()
        self.cache[id(value)] = (value, data)
        return data

    def text(self, value: Any) -> str:
        """``compact_json(to_json(value, partials=False))``, made once per value."""
        hit = self.texts.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        return self._keep(self.texts, value, self._make(value))

    def history_text(self, value: Any) -> str:
        """:meth:`text` for a message of a history: kept for the whole run (the history holds the
        message anyway), so the ``agent_end`` and ``run_ended`` of a long run, which list every
        message, reuse the text written when each message was new."""
        hit = self.history.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        hit = self.texts.get(id(value))
        if hit is not None and hit[0] is value:
            text = hit[1]
        else:
            text = self._make(value)
            if hinted(text):
                self.dirty = True
                return text
        self.history_chars += len(text)
        if self.history_chars > _MAX_HISTORY_CHARS:
            self.history.clear()
            self.history_chars = len(text)
        self.history[id(value)] = (value, text)
        return text

    def _make(self, value: Any) -> str:
        enc = _FAST.get(type(value))
        if enc is not None:
            try:
                return enc(value, self)
            except _Fallback:
                pass
        return compact_json(to_json(value, partials=False))

    def usage(self, value: Any) -> str:
        """A ``Usage`` (or ``None``), made once per value (a reply's partial and its message share
        one). Its text is numbers only: nothing to check for key hints."""
        if value is None:
            return "null"
        hit = self.texts.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        text = _usage(value)
        if len(self.texts) > _MAX_MEMO:
            self.texts.clear()
        self.texts[id(value)] = (value, text)
        return text

    def raw(self, value: Any) -> str:
        """A free-form JSON field (tool arguments) as text, made once per value."""
        if type(value) in _PLAIN:
            return self.checked(_sc(value))
        hit = self.raws.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        return self._keep(self.raws, value, compact_json(encode_raw(value)))

    def string(self, value: Any) -> str:
        """A string field as JSON text (ids, names: written again and again)."""
        text = self.strs.get(value)
        if text is None:
            text = _s(value)
            if hinted(text):
                self.dirty = True
            else:
                if len(self.strs) > _MAX_MEMO:
                    self.strs.clear()
                self.strs[value] = text
        return text

    def checked(self, text: str) -> str:
        """``text``, noting whether it holds a key hint."""
        if hinted(text):
            self.dirty = True
        return text

    def _keep(self, cache: dict[int, tuple[Any, str]], value: Any, text: str) -> str:
        if hinted(text):
            self.dirty = True  # not kept: every line that holds it is scrubbed
            return text
        if len(cache) > _MAX_MEMO:
            cache.clear()
        cache[id(value)] = (value, text)
        return text


_MESSAGE_EVENTS: Final = ("message_start", "message_end")
_BLOCK_ENDS: Final = (TextEndEvent, ThinkingEndEvent)


@dataclass
class EffectEncoder:
    """Encodes effects for a transcript, delta-encoding the message histories they carry.

    It remembers the last history written under each key, so the same encoder must see the
    effects in transcript order (a replay uses its own one, fed in the same order). ``encode``
    and ``input`` give JSON data (replay compares them with the recording); ``effect_text`` and
    ``input_text`` give the same as JSON text (the recorder writes them).
    """

    previous: dict[str, list[Any]] = field(default_factory=dict)
    memo: Memo = field(default_factory=Memo)
    digests: bool = True
    """Give each ``message_update`` its digest (:func:`update_digest`): from version 4 on."""
    secrets: Sequence[str] = ()
    """What the digests are scrubbed of (the recorder's secrets)."""

    def copy(self) -> EffectEncoder:
        return EffectEncoder(dict(self.previous), self.memo, self.digests, self.secrets)

    def update(self, update: MessageUpdateEvent) -> Any:
        """A ``message_update`` effect as the transcript keeps it."""
        if not self.digests:
            return UPDATE
        return {"type": "emit", "event": {"type": "message_update", "digest": update_digest([update], self.secrets)}}

    def event(self, event: Any) -> Any:
        kind = event.type
        m = self.memo
        if kind in _MESSAGE_EVENTS:
            return {"type": kind, "message": m(event.message)}
        if kind == "turn_end":
            return {"type": kind, "message": m(event.message), "tool_results": [m(r) for r in event.tool_results]}
        if kind == "agent_end":
            return {"type": kind, "messages": [m(x) for x in event.messages]}
        return to_json(event, partials=False)

    def input(self, inp: Input, header: Any = None) -> Any:
        """``header``: the partial's new header, for a stream event whose partial changed it."""
        if type(inp) is StreamEventReceived:
            ev = inp.event
            if type(ev) is DoneEvent:
                return {"type": "stream_event_received", "id": inp.id,
                        "event": {"type": "done", "reason": ev.reason, "message": self.memo(ev.message)},
                        "at": inp.at}
        data = encode_input(inp)
        if header is not None:
            data["event"]["header"] = self.memo(header)
        return data

    def _delta(self, key: str, messages: Sequence[Any]) -> tuple[int, list[Any]]:
        """How many leading items of ``messages`` the previous history under ``key`` has (they
        are kept), and ``messages`` as a list (remembered as the new previous history)."""
        tolist = getattr(messages, "tolist", None)  # a pvector
        items: list[Any] = tolist() if tolist is not None else list(messages)
        prev = self.previous.get(key)
        self.previous[key] = items
        return (_common_prefix(items, prev) if prev else 0), items

    def seq(self, key: str, messages: Sequence[Any]) -> Any:
        keep, items = self._delta(key, messages)
        m = self.memo
        return {"$seq": key, "keep": keep, "add": [m(x) for x in items[keep:]]}

    def context(self, ctx: AgentContext) -> Any:
        return {"type": "AgentContext", "system_prompt": ctx.system_prompt,
                "messages": self.seq("ctx", ctx.messages), "tools": self.seq("ctx_tools", ctx.tools)}

    def encode(self, effect: Effect) -> Any:
        kind = type(effect)
        e: Any = effect
        if kind is Emit:
            if type(e.event) is MessageUpdateEvent:
                return self.update(e.event)
            return {"type": "emit", "event": self.event(e.event)}
        if kind is CallLlm:
            return {"type": "call_llm", "id": e.id, "model": self.memo(e.model), "thinking_level": e.thinking_level,
                    "system_prompt": e.system_prompt, "messages": self.seq("llm", e.messages),
                    "tools": self.seq("tools", e.tools)}
        if kind is TransformContext or kind is ConvertToLlm:
            return {"type": e.type, "id": e.id, "messages": self.seq("ctx", e.messages)}
        if kind is BeforeToolCall or kind is AfterToolCall:
            out = to_json(_without_context(e.context))
            out["context"] = self.context(e.context.context)
            return {"type": e.type, "id": e.id, "context": out}
        if kind is PrepareNextTurn or kind is ShouldStopAfterTurn:
            p = e.context
            return {"type": e.type, "id": e.id, "context": {
                "type": "PrepareNextTurnContext", "message": to_json(p.message),
                "tool_results": to_json(p.tool_results), "context": self.context(p.context),
                "new_messages": self.seq("new", p.new_messages)}}
        return to_json(effect, partials=False)

    # -- the same as JSON text (the recorder's fast path)

    def _list_text(self, values: Any) -> str:
        if type(values) is not tuple and type(values) is not list:
            raise _Fallback
        t = self.memo.history_text
        return "[" + ",".join([t(x) for x in values]) + "]"

    def seq_text(self, key: str, messages: Sequence[Any]) -> str:
        keep, items = self._delta(key, messages)
        t = self.memo.history_text
        return '{"$seq":"%s","keep":%d,"add":[%s]}' % (key, keep, ",".join([t(x) for x in items[keep:]]))

    def event_text(self, event: Any) -> str:
        kind = type(event)
        m = self.memo
        if kind is MessageStartEvent:
            return '{"type":"message_start","message":%s}' % m.text(event.message)
        if kind is MessageEndEvent:
            return '{"type":"message_end","message":%s}' % m.text(event.message)
        if kind is TurnEndEvent:
            return '{"type":"turn_end","message":%s,"tool_results":%s}' % (
                m.text(event.message), self._list_text(event.tool_results))
        if kind is ToolExecutionStartEvent:
            return '{"type":"tool_execution_start","tool_call_id":%s,"tool_name":%s,"args":%s}' % (
                m.string(event.tool_call_id), m.string(event.tool_name), m.raw(event.args))
        if kind is ToolExecutionEndEvent:
            return '{"type":"tool_execution_end","tool_call_id":%s,"tool_name":%s,"result":%s,"is_error":%s}' % (
                m.string(event.tool_call_id), m.string(event.tool_name), m.text(event.result), _n(event.is_error))
        if kind is TurnStartEvent:
            return '{"type":"turn_start"}'
        if kind is AgentStartEvent:
            return '{"type":"agent_start"}'
        if kind is AgentEndEvent:
            return '{"type":"agent_end","messages":%s}' % self._list_text(event.messages)
        return m.checked(compact_json(self.event(event)))

    def effect_text(self, effect: Effect) -> str:
        """``compact_json(self.encode(effect))``, built from the memo's text of its parts."""
        try:
            return self._effect_text(effect)
        except _Fallback:  # raised before any history was remembered: encode it the slow way
            return self.memo.checked(compact_json(self.encode(effect)))

    def _effect_text(self, effect: Effect) -> str:
        kind = type(effect)
        e: Any = effect
        if kind is Emit:
            if type(e.event) is MessageUpdateEvent:
                if not self.digests:
                    return UPDATE_TEXT
                return UPDATE_DIGEST % update_digest([e.event], self.secrets)
            return '{"type":"emit","event":%s}' % self.event_text(e.event)
        m = self.memo
        if kind is CallLlm:
            return ('{"type":"call_llm","id":%s,"model":%s,"thinking_level":%s,"system_prompt":%s,"messages":%s,'
                    '"tools":%s}') % (_n(e.id), m.text(e.model), m.string(e.thinking_level), m.string(e.system_prompt),
                                      self.seq_text("llm", e.messages), self.seq_text("tools", e.tools))
        if kind is ExecuteTool:
            return '{"type":"execute_tool","id":%s,"tool_call":%s,"args":%s}' % (
                _n(e.id), m.text(e.tool_call), m.raw(e.args))
        if kind is RunEnded:
            return '{"type":"run_ended","messages":%s}' % self._list_text(e.messages)
        return m.checked(compact_json(self.encode(effect)))

    def input_text(self, inp: Input, header: Any = None) -> str:
        """``compact_json(self.input(inp, header))``, built from the memo's text of its parts."""
        if header is not None:
            return self.memo.checked(compact_json(self.input(inp, header)))
        try:
            return self._input_text(inp)
        except _Fallback:
            return self.memo.checked(compact_json(self.input(inp)))

    def _input_text(self, inp: Input) -> str:
        kind = type(inp)
        m = self.memo
        if kind is StreamEventReceived:
            ev: Any = inp.event  # type: ignore[union-attr]
            t = type(ev)
            if t is StartEvent:
                event = '{"type":"start","partial":%s}' % m.text(ev.partial)
            elif t is DoneEvent:
                event = '{"type":"done","reason":%s,"message":%s}' % (m.string(ev.reason), m.text(ev.message))
            elif t is ToolCallEndEvent:
                event = '{"type":"toolcall_end","content_index":%s,"tool_call":%s}' % (
                    _n(ev.content_index), m.text(ev.tool_call))
            elif t is ToolCallStartEvent:
                event = '{"type":"toolcall_start","content_index":%s,"id":%s,"name":%s}' % (
                    _n(ev.content_index), m.string(ev.id), m.string(ev.name))
            elif t in DELTAS:
                event = '{"type":"%s","content_index":%s,"delta":%s}' % (
                    ev.type, _n(ev.content_index), m.checked(_s(ev.delta)))
            elif t is TextStartEvent:
                event = '{"type":"text_start","content_index":%s}' % _n(ev.content_index)
            elif t is ThinkingStartEvent:
                event = '{"type":"thinking_start","content_index":%s,"redacted":%s}' % (
                    _n(ev.content_index), _sc(ev.redacted))
            elif t in _BLOCK_ENDS:
                event = '{"type":"%s","content_index":%s,"content":%s}' % (
                    ev.type, _n(ev.content_index), m.text(ev.content))
            elif t is ErrorEvent:
                event = '{"type":"error","reason":%s,"error":%s}' % (m.string(ev.reason), m.text(ev.error))
            else:
                return m.checked(compact_json(self.input(inp)))
            return '{"type":"stream_event_received","id":%s,"event":%s,"at":%s}' % (
                _n(inp.id), event, _n(inp.at))  # type: ignore[union-attr]
        if kind is ToolFinished:
            return '{"type":"tool_finished","id":%s,"result":%s,"at":%s}' % (
                _n(inp.id), m.text(inp.result), _n(inp.at))  # type: ignore[union-attr]
        return m.checked(compact_json(self.input(inp)))


def _without_context(ctx: Any) -> Any:
    """A hook context with an empty ``context`` (the encoder writes that one as a delta)."""
    return replace(ctx, context=_EMPTY_CONTEXT)


_EMPTY_CONTEXT: Final = AgentContext()
