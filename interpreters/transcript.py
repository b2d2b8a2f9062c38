"""Transcripts: an append-only JSONL journal of one run, and its reader.

Theory of operation
-------------------

The core is a pure function, so a run is fully described by its initial state and the inputs
fed to it. A transcript stores exactly that, plus the effects the core asked for (so a replay
can tell when the code now behaves differently). The format is described, with examples and a
compatibility promise, in ``docs/transcript-format.md``. In short::

    {"transcript": "agentcore-fx", "version": 4, ..., "initial_state": {...}}     header, line 1
    {"step": 1, "input": {...}, "effects": [{...}, ...]}                            one per step
    {"step": 4, "last": 9, "deltas": {"text": ["Hel", "lo", ...], ...}}               a run of deltas
    {"resumed_from_step": 12, "at": 1700000000000}                                   resume marker

:class:`TranscriptRecorder` implements the driver's ``Journal`` protocol: give it to any
interpreter as ``journal=``. Every line is written whole, with one ``write`` call of the complete
line including its ``"\\n"``: a line without its newline is a torn write from a crash, and
:func:`read_transcript` drops it with a warning.

Consecutive deltas of one content block are held and written as one ``deltas`` line (a "run")
when the block ends, scrubbed as one text; the reader expands a run into its steps.

Two things keep a transcript linear in the size of the run:

- stream events are stored without their partial message (``to_json(..., partials=False)``)
  and an ``emit`` of ``message_update`` is stored as ``{"type": "message_update", "digest":
  ...}`` only: it is the input's own stream event and the partial the core folded from it, and
  the digest (:func:`update_digest`, one per run of deltas) lets a replay check it all the same;
- message histories inside effects (``call_llm.messages``, hook contexts) are stored as a delta
  against the previous history written under the same key: ``{"$seq": "llm", "keep": 41,
  "add": [...]}`` means "the first 41 messages of the previous ``llm`` history, then these".

Secrets never reach the core (API keys are resolved by the interpreter), but text can carry
them (a tool error quoting a key, say): every line is scrubbed of the run's known secrets
(``config.api_key``, header values) and of key-shaped strings before it is written
(:mod:`interpreters.secrets`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import typing
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    Effect,
    Input,
    LoopState,
    __version__,
    initial_state,
)
from agentcore.codec import CodecError, PartialFold, from_json, to_json
from agentcore.codec import encode_raw
from agentcore.config import hooks_set
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
from agentcore.state import RunState
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

from .clock import now_ms
from .driver import Journal, is_message
from .secrets import hinted, known_secrets, merge_secrets, scrub_json

__all__ = [
    "EffectEncoder",
    "Entry",
    "FORMAT",
    "READABLE_VERSIONS",
    "Transcript",
    "TranscriptError",
    "TranscriptRecorder",
    "VERSION",
    "compact_json",
    "delta_run_digest",
    "expand",
    "is_update",
    "read_transcript",
    "record_to",
    "update_digest",
]

FORMAT: Final = "agentcore-fx"
VERSION: Final = 4
READABLE_VERSIONS: Final = (1, 2, 3, 4)
DIGESTS_VERSION: Final = 4
"""The first version whose ``message_update`` effects carry digests (see :func:`update_digest`)."""

FlushMode = Literal["entry", "turn"]


class TranscriptError(ValueError):
    """A file that is not a readable transcript; the message names the line and the problem."""


# --------------------------------------------------------------------------- encoding

compact_json: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
_DELTAS: Final = (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)
_UPDATE: Final = {"type": "emit", "event": {"type": "message_update"}}
_UPDATE_DIGEST: Final = '{"type":"emit","event":{"type":"message_update","digest":"%s"}}'
_DELTA_LINE: Final = ('{"step":%d,"input":{"type":"stream_event_received","id":%d,"event":{"type":"%s",'
                      '"content_index":%d,"delta":%s},"at":%d},"effects":[%s]}\n')
_json_str: Final[Any] = json.encoder.encode_basestring


# --------------------------------------------------------------------------- update digests


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def delta_run_digest(kind: str, index: int, deltas_json: str) -> str:
    """The digest of a run of ``message_update`` effects that each carry one delta of block
    ``index`` (``kind``: ``"text_delta"``, ``"thinking_delta"`` or ``"toolcall_delta"``), given
    the deltas as one JSON list (``compact_json(deltas)``).

    >>> delta_run_digest("text_delta", 0, '["Hel","lo"]')
    '10abb30080e50f0e'
    """
    return _digest('["%s",%d,%s]' % (kind, index, deltas_json))


def update_digest(updates: Sequence[MessageUpdateEvent], secrets: Sequence[str] | None = None) -> str:
    """The digest a transcript keeps for consecutive ``message_update`` effects.

    An update is its stream event and the partial message the core folded it into. The digest
    covers what the transcript can give back: every field of the event but its partial, and the
    partial's header (model, usage, ``response_id``...). Updates that each carry one delta of the
    same block are digested as one run (:func:`delta_run_digest`); any other updates, one by one
    in order. The partial's blocks are not covered: a replay folds them from the same recorded
    events. ``secrets``: scrub the digested text as the recorder scrubs its lines (``None``: it
    is digested as it is, because it was read from a scrubbed transcript).

    >>> from agentcore import MessageUpdateEvent
    >>> from agentcore.stream import PartialAssistantMessage
    >>> opened = PartialAssistantMessage.begin(model="m").text_start()
    >>> a = opened.partial.text_delta(0, "Hel")
    >>> b = a.partial.text_delta(0, "lo")
    >>> update_digest([MessageUpdateEvent(a.partial, a), MessageUpdateEvent(b.partial, b)])
    '10abb30080e50f0e'
    """
    if not updates:
        raise ValueError("no updates to digest")
    events: list[Any] = [u.assistant_message_event for u in updates]
    first = events[0]
    kind = type(first)
    if kind in _DELTAS and all(type(e) is kind and e.content_index == first.content_index for e in events):
        text = '["%s",%d,%s]' % (first.type, first.content_index, compact_json([e.delta for e in events]))
    else:
        text = compact_json([[to_json(e, partials=False), to_json(getattr(u.message, "header", None))]
                             for e, u in zip(events, updates)])
    if secrets is not None and (hinted(text) or any(secret in text for secret in secrets)):
        text = scrub_json(text, secrets)
    return _digest(text)


def encode_input(inp: Input) -> Any:
    """An input as transcript JSON: the codec's, without stream partials (fast path for deltas)."""
    if type(inp) is StreamEventReceived:
        ev = inp.event
        if type(ev) in _DELTAS:
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
# the done input...) and its text is made once (``_Memo.text``, by identity). Compact JSON is
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
        return _json_str(v)  # type: ignore[no-any-return]
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
        return _json_str(v)  # type: ignore[no-any-return]
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


def _text_content(c: Any, memo: _Memo) -> str:
    return '{"type":"text","text":%s,"text_signature":%s}' % (_s(c.text), _s(c.text_signature))


def _thinking_content(c: Any, memo: _Memo) -> str:
    return '{"type":"thinking","thinking":%s,"thinking_signature":%s,"redacted":%s}' % (
        _s(c.thinking), _s(c.thinking_signature), _sc(c.redacted))


def _image_content(c: Any, memo: _Memo) -> str:
    return '{"type":"image","data":%s,"mime_type":%s}' % (_s(c.data), _s(c.mime_type))


def _tool_call(c: Any, memo: _Memo) -> str:
    return '{"type":"toolCall","id":%s,"name":%s,"arguments":%s,"thought_signature":%s,"invalid_json":%s}' % (
        _s(c.id), _s(c.name), _raw(c.arguments), _s(c.thought_signature), _s(c.invalid_json))


def _blocks(content: Any, memo: _Memo) -> str:
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


def _usage_record(u: Any, memo: _Memo) -> str:
    return _usage(u)


def _cost_record(c: Any, memo: _Memo) -> str:
    return _cost(c)


def _assistant(h: Any, content: Any, memo: _Memo) -> str:
    """An assistant message with header ``h`` and ``content``."""
    return ('{"type":"assistant","content":%s,"api":%s,"provider":%s,"model":%s,"usage":%s,"stop_reason":%s,'
            '"error_message":%s,"response_id":%s,"timestamp":%s}') % (
        _blocks(content, memo), _s(h.api), _s(h.provider), _s(h.model), memo.usage(h.usage), _s(h.stop_reason),
        _s(h.error_message), _s(h.response_id), _sc(h.timestamp))


def _assistant_message(m: Any, memo: _Memo) -> str:
    return _assistant(m, m.content, memo)


def _partial(p: Any, memo: _Memo) -> str:
    # The codec writes ``p.to_message()``: the header with the content (no need to build it).
    if type(p.header) is not AssistantMessage:
        raise _Fallback
    return '{"type":"partial_assistant","message":%s}' % _assistant(p.header, p.content, memo)


def _user_message(m: Any, memo: _Memo) -> str:
    c = m.content
    return '{"type":"user","content":%s,"timestamp":%s}' % (
        _json_str(c) if type(c) is str else _blocks(c, memo), _sc(m.timestamp))


def _tool_result_message(m: Any, memo: _Memo) -> str:
    return ('{"type":"toolResult","tool_call_id":%s,"tool_name":%s,"content":%s,"details":%s,"is_error":%s,'
            '"usage":%s,"added_tool_names":%s,"timestamp":%s}') % (
        _s(m.tool_call_id), _s(m.tool_name), _blocks(m.content, memo), _raw(m.details), _sc(m.is_error),
        _usage(m.usage), _strs(m.added_tool_names), _sc(m.timestamp))


def _agent_tool_result(r: Any, memo: _Memo) -> str:
    return '{"type":"AgentToolResult","content":%s,"details":%s,"usage":%s,"added_tool_names":%s,"terminate":%s}' % (
        _blocks(r.content, memo), _raw(r.details), _usage(r.usage), _strs(r.added_tool_names), _sc(r.terminate))


_FAST: Final[dict[type, Callable[[Any, _Memo], str]]] = {
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
# core grew one) makes the recorder fall back to the codec for everything (see ``_SHAPES_OK``).
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
_SHAPES_OK: Final = all(tuple(f.name for f in dataclasses.fields(cls)) == names for cls, names in _SHAPES.items())

_MAX_MEMO: Final = 512
_MAX_HISTORY_CHARS: Final = 32_000_000


class _Memo:
    """to_json of recently seen records, and their JSON text, by identity (a message is encoded
    once, not once per event that carries it).

    ``text`` only keeps text with no key hint (see :func:`interpreters.secrets.hinted`); text with one sets ``dirty``,
    which tells the recorder the line must go through :func:`scrub`.
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
_UPDATE_TEXT: Final = '{"type":"emit","event":{"type":"message_update"}}'
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
    memo: _Memo = field(default_factory=_Memo)
    digests: bool = True
    """Give each ``message_update`` its digest (:func:`update_digest`): from version 4 on."""
    secrets: Sequence[str] = ()
    """What the digests are scrubbed of (the recorder's secrets)."""

    def copy(self) -> EffectEncoder:
        return EffectEncoder(dict(self.previous), self.memo, self.digests, self.secrets)

    def update(self, update: MessageUpdateEvent) -> Any:
        """A ``message_update`` effect as the transcript keeps it."""
        if not self.digests:
            return _UPDATE
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
                    return _UPDATE_TEXT
                return _UPDATE_DIGEST % update_digest([e.event], self.secrets)
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
            elif t in _DELTAS:
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


# --------------------------------------------------------------------------- the recorder


def _header(state: LoopState, config: AgentLoopConfig | None, interpreter: str, created_at: int) -> dict[str, Any]:
    hooks = sorted(hooks_set(config)) if config is not None else sorted(state.hooks)
    return {
        "transcript": FORMAT,
        "version": VERSION,
        "library_version": __version__,
        "created_at": created_at,
        "model": to_json(state.model),
        "system_prompt": state.system_prompt,
        "tools": to_json(state.tools),
        "hooks": hooks,
        "interpreter": interpreter,
        "initial_state": to_json(state),
    }


def _which_interpreter() -> str:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "sync"
    return "asyncio"


_RUN_LINE: Final = ('{"step":%d,"last":%d,"deltas":{"id":%d,"type":"%s","content_index":%d,"text":%s,"at":%s%s}}'
                   '\n')


class _DeltaRun:
    """Consecutive stream deltas of one content block, each answered by one ``message_update``
    (``header``: the header of the partial their events carry)."""

    __slots__ = ("step", "id", "kind", "index", "header", "texts", "ats")

    def __init__(self, step: int, id: int, kind: type, index: int, header: Any, texts: list[str],
                 ats: list[int]) -> None:
        self.step = step
        self.id = id
        self.kind: Any = kind
        self.index = index
        self.header = header
        self.texts = texts
        self.ats = ats


class TranscriptRecorder(Journal):
    """Writes a run's transcript; pass it as ``journal=`` to any interpreter.

    >>> import tempfile, os
    >>> from agentcore import AgentContext, AgentLoopConfig, Model
    >>> from interpreters import ScriptedModel, run_agent_loop
    >>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    >>> _ = run_agent_loop("hi", ctx, cfg, emit=lambda e: None,
    ...                    stream_fn=ScriptedModel(["Hello!"]), journal=TranscriptRecorder(path, ctx, cfg))
    >>> read_transcript(path).steps > 0
    True

    ``context`` and ``config`` must be the ones given to the run: they give the header (model,
    system prompt, tools, hooks, initial state) and the secrets to scrub. The header is written on
    the first step, when the recorder also sees which interpreter runs it. ``flush="entry"``
    writes each step as it happens, except the deltas of the block being streamed, which are
    held and written as one line when the block ends (a crash loses only them, and ``resume``
    asks for an interrupted reply again anyway); ``flush="turn"`` holds the lines of a turn and
    writes them with one call at its end (a crash loses at most the current turn). ``fsync=True``
    also forces each write to disk. ``secrets`` adds strings that must never be written.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        context: AgentContext | None = None,
        config: AgentLoopConfig | None = None,
        *,
        state: LoopState | None = None,
        flush: FlushMode = "entry",
        fsync: bool = False,
        interpreter: str | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        if flush not in ("entry", "turn"):
            raise ValueError(f"flush must be 'entry' or 'turn', not {flush!r}")
        if state is None:
            if context is None or config is None:
                raise TypeError("TranscriptRecorder needs the run's context and config (or state=)")
            state = initial_state(context, config)
        self.path = Path(path)
        self.flush_mode: FlushMode = flush
        self.fsync = fsync
        self.interpreter = interpreter
        self.secrets = known_secrets(config, secrets)
        self.encoder = EffectEncoder(secrets=self.secrets)
        self._steps = 0
        self._state: LoopState | None = state
        self._config = config
        self._file: Any = None
        self._buffer: list[str] = []
        self._offset = 0
        self._fast = _SHAPES_OK
        self._run: _DeltaRun | None = None
        self._runs = True
        self._size = 0
        self._closed = False
        self._header: Any = None
        """The header of the partial the stream's events carry: a block event whose partial
        has another one records it (a stream function may change usage or ``response_id``
        between events, and the core reads the partial's header when a reply is cut)."""

    @classmethod
    def appending(cls, path: str | os.PathLike[str], config: AgentLoopConfig | None, *, base_step: int,
                   encoder: EffectEncoder, marker: dict[str, Any], version: int = VERSION,
                   flush: FlushMode = "entry", fsync: bool = False, secrets: Sequence[str] = ()) -> TranscriptRecorder:
        """A recorder that goes on writing an existing transcript after ``base_step`` (what
        :func:`interpreters.replay.resume` records with), in the transcript's own ``version`` (a
        version-1 file gets no ``deltas`` lines): it writes ``marker`` (the resume line) at once,
        and goes on with ``encoder``, the one that replayed the transcript's first ``base_step``
        steps (it remembers the histories the next lines are written against)."""
        self = cls.__new__(cls)
        self.path = Path(path)
        self.flush_mode = flush
        self.fsync = fsync
        self.interpreter = None
        self.secrets = known_secrets(config, secrets)
        self.encoder = encoder
        encoder.secrets, encoder.digests = self.secrets, version >= DIGESTS_VERSION
        self._steps = base_step
        self._state = None
        self._config = config
        self._file = _locked(self.path, truncate=False)
        self._file.seek(0, os.SEEK_END)
        self._buffer = []
        self._offset = base_step
        self._header = None
        self._fast = _SHAPES_OK
        self._run = None
        self._runs = version >= 2
        self._size = os.fstat(self._file.fileno()).st_size
        self._closed = False
        self._write(compact_json(marker) + "\n", now=True)
        return self

    # -- the Journal protocol

    def record(self, step: int, input: Input, effects: Sequence[Effect]) -> None:
        run = self._run
        if run is not None and type(input) is StreamEventReceived and len(effects) == 1:
            # The hot path of a streamed reply: the next delta of the run being held, whose
            # update is the event itself and its partial (then the run's digest holds).
            ev: Any = input.event
            if (type(ev) is run.kind and ev.content_index == run.index and input.id == run.id
                    and type(input.at) is int and getattr(ev.partial, "header", None) is run.header):
                e0: Any = effects[0]
                delta, partial = ev.delta, ev.partial
                if (type(e0) is Emit and type(e0.event) is MessageUpdateEvent
                        and e0.event.message is partial and e0.event.assistant_message_event is ev):
                    run.texts.append(delta)
                    run.ats.append(input.at)
                    return
        if self._closed:
            raise ValueError(f"{self.path}: the recorder is closed (a run recorded after close())")
        header = None
        if type(input) is StreamEventReceived:
            partial = getattr(input.event, "partial", None)
            if type(partial) is PartialAssistantMessage:
                if type(input.event) is StartEvent:
                    self._header = partial.header
                elif partial.header is not self._header:
                    header = self._header = partial.header
        if (header is None and type(input) is StreamEventReceived and len(effects) == 1
                and type(input.event) in _DELTAS and type(input.at) is int and self._runs):
            e0 = effects[0]
            ev = input.event
            # The update must be the event itself and its partial: then the run's digest holds.
            own = type(e0) is Emit and type(e0.event) is MessageUpdateEvent and (
                e0.event.message is ev.partial and e0.event.assistant_message_event is ev)
            if own:
                run = self._run
                if run is not None and type(ev) is run.kind and ev.content_index == run.index and input.id == run.id:
                    run.texts.append(ev.delta)  # (a partial whose header is not one: see the hot path)
                    run.ats.append(input.at)
                else:
                    self._start_run(self._offset + step, input)
                return
        if self._file is None:
            self._open()
        held = self._end_run() if self._run is not None else ""  # written with this step's line
        n = self._steps = self._offset + step
        if self._fast:
            encoder = self.encoder
            memo = encoder.memo
            memo.dirty = False
            enc = encoder.effect_text
            line = '{"step":%d,"input":%s,"effects":[%s]}\n' % (
                n, encoder.input_text(input, header), ",".join([enc(e) for e in effects]))
            # Every part of the line was checked for key hints once, when its text was made
            # (``memo.dirty``); a hint cannot straddle two parts (they meet at JSON punctuation),
            # so a clean line is one ``scrub`` would leave as it is, unless it holds a known secret.
            if memo.dirty or self._holds_secret(line):
                line = scrub_json(line, self.secrets)
        else:
            line = scrub_json(self._reference_line(n, input, effects, header), self.secrets)
        end_of_turn = False
        if self.flush_mode == "turn":
            for e in effects:
                if type(e) is RunEnded or (type(e) is Emit and type(e.event) is TurnEndEvent):
                    end_of_turn = True
                    break
        self._put(held + line, now=end_of_turn)

    def add_secrets(self, values: Sequence[str]) -> None:
        """Never write these either (the interpreter reports each API key a run resolves:
        ``get_api_key``'s answer, the provider's environment variable)."""
        self.secrets = self.encoder.secrets = merge_secrets(self.secrets, values)

    @property
    def steps(self) -> int:
        """How many steps the transcript holds (some may still be held back: see :meth:`flush`)."""
        run = self._run
        return self._steps if run is None else run.step + len(run.texts) - 1

    def _start_run(self, n: int, input: Any) -> None:
        """Hold the delta of step ``n`` as the start of a new run (ending the current one). While
        the run is open, :meth:`record` appends its next deltas on its first lines (the hot path
        of a streamed reply); any other step ends it."""
        if self._file is None:
            self._open()
        if self._run is not None:
            self._put(self._end_run(), now=False)
        self._steps = n
        ev = input.event
        self._run = _DeltaRun(n, input.id, type(ev), ev.content_index, self._header, [ev.delta], [input.at])

    def _end_run(self) -> str:
        """End the run of deltas held so far and give its line: a step line for a lone delta,
        else a ``deltas`` line. The run's text is scrubbed as a whole, so a secret streamed back
        in pieces is found; its scrubbed text then goes in the first delta, the others are
        empty."""
        run = self._run
        assert run is not None
        self._run = None
        texts, ats = run.texts, run.ats
        self._steps = run.step + len(texts) - 1
        joined = texts[0] if len(texts) == 1 else "".join(texts)
        written = _json_str(joined)  # the text is scrubbed as the step lines would write it
        if hinted(written) or self._holds_secret(written):
            clean = scrub_json(written, self.secrets)
            if clean != written:
                written, joined = clean, json.loads(clean)
                texts = [joined] + [""] * (len(texts) - 1)
        listed = compact_json(texts)
        if len(texts) == 1:
            update = (_UPDATE_DIGEST % delta_run_digest(run.kind.type, run.index, listed)
                      if self.encoder.digests else _UPDATE_TEXT)
            line = _DELTA_LINE % (run.step, run.id, run.kind.type, run.index, written, ats[0], update)
        else:
            at = str(ats[0]) if ats.count(ats[0]) == len(ats) else compact_json(ats)
            digest = (',"digest":"%s"' % delta_run_digest(run.kind.type, run.index, listed)
                      if self.encoder.digests else "")
            line = _RUN_LINE % (run.step, run.step + len(texts) - 1, run.id, run.kind.type, run.index,
                                listed, at, digest)
        return line

    def _reference_line(self, n: int, input: Input, effects: Sequence[Effect], header: Any = None) -> str:
        """A step line built the plain way: the codec's JSON data, dumped whole (the fast path
        must give exactly this)."""
        enc = self.encoder.encode
        return '{"step":%d,"input":%s,"effects":%s}\n' % (
            n, compact_json(self.encoder.input(input, header)), compact_json([enc(e) for e in effects]))

    def _holds_secret(self, line: str) -> bool:
        for secret in self.secrets:
            if secret in line:
                return True
        return False

    def _open(self) -> None:
        assert self._state is not None
        interpreter = self.interpreter or _which_interpreter()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = _locked(self.path, truncate=True)
        header = _header(self._state, self._config, interpreter, now_ms())
        self._write(compact_json(header) + "\n", now=True)

    def _write(self, line: str, *, now: bool) -> None:
        self._put(scrub_json(line, self.secrets), now=now)

    def _put(self, line: str, *, now: bool) -> None:
        """Write a scrubbed line (``now=False``: held until the turn ends with ``flush="turn"``)."""
        if self.flush_mode == "turn" and not now:
            self._buffer.append(line)
            return
        if self._buffer:
            self._buffer.append(line)
            line = "".join(self._buffer)
            self._buffer.clear()
        self._write_bytes(line.encode("utf-8"))

    def _write_bytes(self, data: bytes) -> None:
        done = self._file.write(data)
        while done < len(data):  # a short write (rare on a file): write the rest
            done += self._file.write(data[done:])
        self._size += len(data)
        if self.fsync:
            os.fsync(self._file.fileno())

    def flush(self) -> None:
        """Write what is held back: the current run of deltas, and the turn with ``flush="turn"``.

        If the file was written by someone else since this recorder's last write (a ``resume``
        of an abandoned run went on in it), what is held is dropped with a warning instead:
        appended now it would break the transcript's order."""
        if self._run is not None:
            self._buffer.append(self._end_run())
        if not self._buffer or self._file is None:
            return
        data = "".join(self._buffer).encode("utf-8")
        self._buffer.clear()
        if os.fstat(self._file.fileno()).st_size != self._size:
            held = data.count(b"\n")
            warnings.warn(f"{self.path} was written by another writer since this recorder's last line; "
                          f"its {held} held line(s) are dropped", RuntimeWarning, stacklevel=2)
            return
        self._write_bytes(data)

    def close(self) -> None:
        """Write what is held back and close the file (recording after this is an error)."""
        self.flush()
        self._closed = True
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> TranscriptRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _locked(path: Path, *, truncate: bool) -> Any:
    """The transcript file, opened for writing (unbuffered) with an exclusive lock, so that two
    processes (workers, pytest-xdist) never write one file. A POSIX record lock: owned by the
    process, so a resume in the process that left a run open still goes on. Checked before
    anything is truncated or written; the lock goes with the process."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        try:
            import fcntl
        except ImportError:  # no advisory locks on this platform
            pass
        else:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise RuntimeError(
                    f"{path}: another process is writing this transcript (a second worker, or "
                    "pytest-xdist running the same test twice?); give each run its own path") from None
        if truncate:
            os.ftruncate(fd, 0)
        return open(fd, "wb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def record_to(path: str | os.PathLike[str], context: AgentContext, config: AgentLoopConfig,
              **options: Any) -> TranscriptRecorder:
    """``TranscriptRecorder(path, context, config, **options)``: reads well in a call."""
    return TranscriptRecorder(path, context, config, **options)


# --------------------------------------------------------------------------- reading


@dataclass(eq=False)
class Entry:
    """One recorded step: its input (decoded) and its effects (JSON as written; see :func:`expand`)."""

    step: int
    line: int
    input: Input
    input_json: Any
    effects_json: list[Any]
    text: str
    seqs: Mapping[str, list[Any]]
    _effects: tuple[Effect, ...] | None = None

    @property
    def effects(self) -> tuple[Effect, ...]:
        """The recorded effects, decoded (``message_update`` emits come back as the input's event)."""
        if self._effects is None:
            try:
                self._effects = tuple(_decode_effect(e, self.input) for e in self.effects_json)
            except _DECODE_ERRORS as exc:
                raise _fail(self.line, f"cannot decode the effects: {exc}") from None
        return self._effects


class SeqDelta(dict[str, Any]):
    """A ``{"$seq": key, "keep": n, "add": [...]}`` delta as read back; ``full`` is the whole
    history it stands for (compares equal to the plain JSON object)."""

    full: list[Any]


def expand(value: Any) -> Any:
    """Recorded effect JSON with every ``$seq`` delta replaced by the whole history."""
    if isinstance(value, dict):
        if "$seq" in value:
            full = getattr(value, "full", None)
            if full is None:
                raise ValueError("a $seq delta that was not read by read_transcript")
            return list(full)
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    return value


def is_update(data: Any) -> bool:
    """Whether recorded effect JSON is a ``message_update`` emit (with or without its digest)."""
    return data is _UPDATE or (type(data) is dict and data.get("type") == "emit" and type(data.get("event")) is dict
                               and data["event"].get("type") == "message_update")


def _decode_effect(data: Any, inp: Input) -> Effect:
    if is_update(data):
        ev = getattr(inp, "event", None)
        return Emit(MessageUpdateEvent(getattr(ev, "partial", None), ev))  # type: ignore[arg-type]
    full = expand(data)
    effect: Effect = from_json(full)
    return effect


@dataclass
class Transcript:
    """A transcript read back: the header and the entries of its one linear history."""

    path: Path | None
    header: Mapping[str, Any]
    entries: list[Entry]
    torn: bool = False
    resumed_from: tuple[int, ...] = ()
    size: int = 0
    """Bytes of the intact prefix (everything but a torn last line)."""
    _initial: LoopState | None = field(default=None, repr=False)

    @property
    def version(self) -> int:
        return int(self.header["version"])

    @property
    def steps(self) -> int:
        return len(self.entries)

    @property
    def initial_state(self) -> LoopState:
        if self._initial is None:
            self._initial = decode_state(self.header["initial_state"])
        return self._initial

    @property
    def inputs(self) -> list[Input]:
        return [e.input for e in self.entries]

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def decode_state(data: Mapping[str, Any]) -> LoopState:
    """``from_json`` for a ``LoopState``, checked."""
    decoded = from_json(data)
    if not isinstance(decoded, LoopState):
        raise CodecError(f"a {type(decoded).__name__}, not a LoopState")
    if not isinstance(decoded.run, RunState):
        raise CodecError(f"its run is a {type(decoded.run).__name__}, not a RunState")
    for i, message in enumerate(decoded.run.messages):
        if not is_message(message):
            raise CodecError(f"its message {i} is a {type(message).__name__}, not a message")
    return decoded


_INPUTS: Final = typing.get_args(Input)
_DECODE_ERRORS: Final = (CodecError, TypeError, KeyError, IndexError, AttributeError, ValueError)
"""What decoding damaged JSON can raise (a missing type tag leaves a plain mapping, say)."""


def _fail(line: int, problem: str) -> TranscriptError:
    return TranscriptError(f"line {line}: {problem}")


def read_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read a transcript file.

    A last line without its newline (a write torn by a crash) is dropped with a warning; a
    damaged line anywhere else, an unknown version or a file that is not a transcript raises
    :class:`TranscriptError` naming the line.
    """
    p = Path(path)
    data = p.read_bytes()
    return parse_transcript(data, p)


def parse_transcript(data: bytes, path: Path | None = None) -> Transcript:
    lines = data.split(b"\n")
    torn = False
    size = len(data)
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        torn = True
        size -= len(lines[-1])
        warnings.warn(
            f"{path or 'transcript'}: line {len(lines)} is torn (no newline at the end: the run "
            "stopped while writing it); it is ignored", RuntimeWarning, stacklevel=3)
        lines.pop()
    if not lines:
        raise _fail(1, "empty file: not an agentcore-fx transcript")
    try:
        header = json.loads(lines[0])
    except ValueError:
        raise _fail(1, "not an agentcore-fx transcript (the header is not JSON)") from None
    if not isinstance(header, dict) or header.get("transcript") != FORMAT:
        raise _fail(1, "not an agentcore-fx transcript (no {\"transcript\": \"agentcore-fx\"} header)")
    version = header.get("version")
    if version not in READABLE_VERSIONS or type(version) is not int:
        raise _fail(1, f"unsupported transcript version {version!r} (this reader reads versions "
                        f"{READABLE_VERSIONS[0]} to {READABLE_VERSIONS[-1]})")
    if "initial_state" not in header:
        raise _fail(1, "the header has no initial_state")
    try:
        initial = decode_state(header["initial_state"])
    except _DECODE_ERRORS as exc:
        raise _fail(1, f"the header's initial_state does not decode: {exc}") from None
    entries: list[Entry] = []
    seqs: dict[str, list[Any]] = {}
    folds: dict[int, PartialFold] = {}
    resumed: list[int] = []
    for index in range(1, len(lines)):
        lineno = index + 1
        raw = lines[index]
        try:
            text = raw.decode("utf-8")
            obj = json.loads(text)
        except ValueError as exc:
            raise _fail(lineno, f"damaged line (not JSON: {exc})") from None
        if not isinstance(obj, dict):
            raise _fail(lineno, "damaged line (not a JSON object)")
        if obj.get("transcript") == FORMAT:
            raise _fail(lineno, "a second header: two recorders wrote this file (spliced); it cannot be replayed")
        if "resumed_from_step" in obj:
            n = obj["resumed_from_step"]
            if not isinstance(n, int) or not 0 <= n <= len(entries):
                raise _fail(lineno, f"resumed_from_step {n!r} is not a recorded step")
            del entries[n:]
            seqs = dict(entries[-1].seqs) if entries else {}
            folds.clear()
            resumed.append(n)
            continue
        if "step" not in obj:
            continue  # a line kind from a newer minor revision: ignored
        n = obj["step"]
        if type(n) is not int or n != len(entries) + 1:
            raise _fail(lineno, f"step {n!r} out of order (expected step {len(entries) + 1})")
        if "deltas" in obj:
            _expand_run(obj, lineno, entries, seqs, folds)
            continue
        inp_json = obj.get("input")
        effects = obj.get("effects", [])
        if not isinstance(inp_json, dict) or not isinstance(effects, list):
            raise _fail(lineno, "damaged step (input must be an object and effects a list)")
        for i, e in enumerate(effects):
            if not (isinstance(e, dict) and type(e.get("type")) is str
                    and (e["type"] != "emit" or (isinstance(e.get("event"), dict)
                                                 and type(e["event"].get("type")) is str))):
                raise _fail(lineno, f"damaged step (effect {i} is not an effect object with a type)")
        try:
            inp = from_json(inp_json)
            if not isinstance(inp, _INPUTS):
                raise CodecError(f"not an input: {inp_json.get('type')!r}")
            if type(inp) is StreamEventReceived:
                fold = folds.get(inp.id)
                if fold is None:
                    fold = folds[inp.id] = PartialFold()
                changed = inp_json["event"].get("header") if isinstance(inp_json.get("event"), dict) else None
                if changed is not None:
                    changed = from_json(changed)
                    if not isinstance(changed, AssistantMessage):
                        raise CodecError(f"the event's header is a {type(changed).__name__}, not an assistant message")
                event = fold.apply(inp.event, changed, strict=False)
                if event is not inp.event:
                    inp = StreamEventReceived(inp.id, event, inp.at)
        except _DECODE_ERRORS as exc:
            raise _fail(lineno, f"cannot decode the input: {exc}") from None
        try:
            seqs = _resolve(effects, seqs)
        except (KeyError, TypeError, ValueError) as exc:
            raise _fail(lineno, f"damaged history delta: {exc}") from None
        entries.append(Entry(n, lineno, inp, inp_json, effects, text, seqs))
    return Transcript(path, header, entries, torn, tuple(resumed), size, initial)


_DELTA_KINDS: Final[dict[str, type]] = {cls.type: cls for cls in _DELTAS}


def _expand_run(obj: dict[str, Any], lineno: int, entries: list[Entry], seqs: dict[str, list[Any]],
                folds: dict[int, PartialFold]) -> None:
    """Append the steps of a ``deltas`` line (a run of stream deltas) to ``entries``."""
    run = obj["deltas"]
    first = obj["step"]
    try:
        if not isinstance(run, dict):
            raise ValueError("deltas must be an object")
        sid, kind, index, texts, at = run["id"], run["type"], run["content_index"], run["text"], run["at"]
        cls = _DELTA_KINDS.get(kind)
        if cls is None:
            raise ValueError(f"unknown delta type {kind!r}")
        if (type(sid) is not int or type(index) is not int or index < 0 or not isinstance(texts, list) or not texts
                or not all(type(t) is str for t in texts)):
            raise ValueError("id and content_index must be integers (content_index >= 0) and text a list of strings")
        if type(obj.get("last")) is not int or obj["last"] != first + len(texts) - 1:
            raise ValueError(f"last is {obj.get('last')!r} but {len(texts)} deltas from step {first} end at "
                             f"step {first + len(texts) - 1}")
        ats = [at] * len(texts) if type(at) is int else at
        if not isinstance(ats, list) or len(ats) != len(texts) or not all(type(a) is int for a in ats):
            raise ValueError("at must be an integer or one integer per delta")
        digest = run.get("digest")
        if digest is not None and type(digest) is not str:
            raise ValueError("digest must be a string")
    except (KeyError, ValueError) as exc:
        raise _fail(lineno, f"damaged deltas line ({exc})") from None
    fold = folds.get(sid)
    if fold is None:
        fold = folds[sid] = PartialFold()
    try:
        last = len(texts) - 1
        for offset, (delta, ms) in enumerate(zip(texts, ats)):
            n = first + offset
            event = fold.apply(cls(index, delta, None))
            update: dict[str, Any] = {"type": "message_update"}
            if offset == last and digest is not None:
                update["digest"] = digest  # the run's digest, on its last step
            text = _DELTA_LINE % (n, sid, kind, index, _json_str(delta), ms, compact_json({"type": "emit", "event": update}))
            inp_json = {"type": "stream_event_received", "id": sid,
                        "event": {"type": kind, "content_index": index, "delta": delta}, "at": ms}
            effects = [{"type": "emit", "event": update}]
            entries.append(Entry(n, lineno, StreamEventReceived(sid, event, ms), inp_json, effects, text[:-1], seqs))
    except IndexError:
        raise _fail(lineno, f"cannot decode the input: content_index {index} names no block of the reply") from None
    except _DECODE_ERRORS as exc:
        raise _fail(lineno, f"cannot decode the input: {exc}") from None


def _resolve(value: list[Any], seqs: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Replace each ``$seq`` delta by a :class:`SeqDelta` knowing its whole history, in order;
    returns the new last-history-per-key map (copied on write: each entry keeps its own)."""
    copied = False

    def delta(v: dict[str, Any]) -> SeqDelta:
        nonlocal seqs, copied
        key, keep, add = v["$seq"], v["keep"], v["add"]
        prev = seqs.get(key, [])
        if not isinstance(keep, int) or not 0 <= keep <= len(prev) or not isinstance(add, list):
            raise ValueError(f"keeps {keep!r} items of a {key} history of {len(prev)}")
        out = SeqDelta(v)
        out.full = prev[:keep] + add
        if not copied:
            seqs = dict(seqs)
            copied = True
        seqs[key] = out.full
        return out

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, dict) and "$seq" in x:
                    v[k] = delta(x)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for item in value:
        if isinstance(item, dict) and item.get("type") != "emit":
            walk(item)
    return seqs
