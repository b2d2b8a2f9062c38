"""Encoding for transcripts: inputs and effects as the JSON lines hold them.

Every line is written by the codec's one encoder (:func:`agentcore.codec.encode_bytes`, msgspec's,
in C). What this module adds is what keeps a transcript linear in the size of the run:

- stream events are stored without their partial message (``partials=False``) and an ``emit``
  of ``message_update`` as its digest only (:func:`~interpreters.transcript.format.update_digest`);
- message histories inside effects (``call_llm.messages``, hook contexts) are stored as a delta
  against the previous history written under the same key: ``{"$seq": "llm", "keep": 41,
  "add": [...]}`` means "the first 41 messages of the previous ``llm`` history, then these".

A message is written several times per turn (``message_end``, ``turn_end``, the next
``call_llm``, the ``done`` input...); its JSON text is made once and spliced into each line
(:class:`Memo`, by identity, as a ``msgspec.Raw``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from agentcore import AgentContext, Effect, Input
from agentcore.codec import encode_bytes, parse, prepared, to_json
from agentcore.effects import (
    AfterToolCall,
    BeforeToolCall,
    CallLlm,
    ConvertToLlm,
    Emit,
    PrepareNextTurn,
    RunEnded,
    ShouldStopAfterTurn,
    TransformContext,
)
from agentcore.events import (
    AgentEndEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    TurnEndEvent,
)
from agentcore.inputs import StreamEventReceived
from agentcore.records import replace
from agentcore.stream import DoneEvent

from .format import UPDATE, VERSION, update_digest

__all__ = [
    "EffectEncoder",
    "Memo",
    "encode_input",
]

def encode_input(inp: Input) -> Any:
    """An input as transcript JSON data: the codec's, without stream partials."""
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


_MAX_MEMO: Final = 512
_MAX_HISTORY_BYTES: Final = 32_000_000


class Memo:
    """The JSON text of recently seen records, by identity, ready to splice into a line.

    :meth:`raw` keeps the last few hundred (a message, a model, a tool result: what one turn
    writes again); :meth:`history` keeps a history's messages for the whole run (the history
    holds them anyway), so the ``agent_end`` and ``run_ended`` of a long run, which list every
    message, reuse the text written when each message was new.

    >>> from agentcore import UserMessage
    >>> m = UserMessage("hi", timestamp=1)
    >>> bytes(Memo().raw(m))
    b'{"type":"user","content":"hi","timestamp":1}'
    """

    __slots__ = ("recent", "kept", "kept_bytes")

    def __init__(self) -> None:
        self.recent: dict[int, tuple[Any, msgspec.Raw]] = {}
        self.kept: dict[int, tuple[Any, msgspec.Raw]] = {}
        self.kept_bytes = 0

    def raw(self, value: Any) -> msgspec.Raw:
        """``value``'s JSON text (stream partials left out), made once per value."""
        hit = self.recent.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        hit = self.kept.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        text = msgspec.Raw(encode_bytes(prepared(value, partials=False)))
        if len(self.recent) > _MAX_MEMO:
            self.recent.clear()
        self.recent[id(value)] = (value, text)
        return text

    def history(self, value: Any) -> msgspec.Raw:
        """:meth:`raw` for a message of a history, kept for the whole run."""
        hit = self.kept.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        text = self.raw(value)
        self.kept_bytes += len(text)
        if self.kept_bytes > _MAX_HISTORY_BYTES:
            self.kept.clear()
            self.kept_bytes = len(text)
        self.kept[id(value)] = (value, text)
        return text


_MESSAGE_EVENTS: Final = (MessageStartEvent, MessageEndEvent)


@dataclass
class EffectEncoder:
    """Encodes effects and inputs for a transcript, delta-encoding the message histories they carry.

    It remembers the last history written under each key, so the same encoder must see the
    effects in transcript order (a replay uses its own one, fed in the same order).
    :meth:`effect` and :meth:`input` give what a line holds, ready for the encoder (records, the
    memo's text, plain data); :meth:`line` gives a whole step line as text; :meth:`encode` gives
    an effect as JSON data (what a replay compares with the recording).
    """

    previous: dict[str, list[Any]] = field(default_factory=dict)
    memo: Memo = field(default_factory=Memo)
    digests: bool = True
    """Give each ``message_update`` its digest (:func:`update_digest`): from version 4 on."""
    secrets: Sequence[str] = ()
    """What the digests are scrubbed of (the recorder's secrets)."""
    version: int = VERSION
    """The format version of the transcript written (it says how digests are made)."""

    def copy(self) -> EffectEncoder:
        return EffectEncoder(dict(self.previous), self.memo, self.digests, self.secrets, self.version)

    def update(self, update: MessageUpdateEvent) -> Any:
        """A ``message_update`` effect as the transcript keeps it."""
        if not self.digests:
            return UPDATE
        digest = update_digest([update], self.secrets, version=self.version)
        return {"type": "emit", "event": {"type": "message_update", "digest": digest}}

    def event(self, event: Any) -> Any:
        kind = type(event)
        m = self.memo
        if kind in _MESSAGE_EVENTS:
            return {"type": event.type, "message": m.raw(event.message)}
        if kind is TurnEndEvent:
            return {"type": "turn_end", "message": m.raw(event.message),
                    "tool_results": [m.history(r) for r in event.tool_results]}
        if kind is AgentEndEvent:
            return {"type": "agent_end", "messages": [m.history(x) for x in event.messages]}
        return prepared(event, partials=False)

    def input(self, inp: Input, header: Any = None) -> Any:
        """``header``: the partial's new header, for a stream event whose partial changed it."""
        if type(inp) is not StreamEventReceived:
            return prepared(inp, partials=False)
        ev = inp.event
        if type(ev) is DoneEvent:
            event: Any = {"type": "done", "reason": ev.reason, "message": self.memo.raw(ev.message)}
        else:
            event = prepared(ev, partials=False)
            if header is not None:
                event = dict(event)
                event["header"] = self.memo.raw(header)
        return {"type": "stream_event_received", "id": inp.id, "event": event, "at": inp.at}

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
        m = self.memo.history
        return {"$seq": key, "keep": keep, "add": [m(x) for x in items[keep:]]}

    def context(self, ctx: AgentContext) -> Any:
        return {"type": "AgentContext", "system_prompt": ctx.system_prompt,
                "messages": self.seq("ctx", ctx.messages), "tools": self.seq("ctx_tools", ctx.tools)}

    def effect(self, effect: Effect) -> Any:
        """``effect`` as a line holds it, ready for the encoder."""
        kind = type(effect)
        e: Any = effect
        if kind is Emit:
            if type(e.event) is MessageUpdateEvent:
                return self.update(e.event)
            return {"type": "emit", "event": self.event(e.event)}
        if kind is CallLlm:
            return {"type": "call_llm", "id": e.id, "model": self.memo.raw(e.model), "thinking_level": e.thinking_level,
                    "system_prompt": e.system_prompt, "messages": self.seq("llm", e.messages),
                    "tools": self.seq("tools", e.tools)}
        if kind is TransformContext or kind is ConvertToLlm:
            return {"type": e.type, "id": e.id, "messages": self.seq("ctx", e.messages)}
        if kind is BeforeToolCall or kind is AfterToolCall:
            out = to_json(replace(e.context, context=_EMPTY_CONTEXT))
            out["context"] = self.context(e.context.context)
            return {"type": e.type, "id": e.id, "context": out}
        if kind is PrepareNextTurn or kind is ShouldStopAfterTurn:
            p = e.context
            return {"type": e.type, "id": e.id, "context": {
                "type": "PrepareNextTurnContext", "message": self.memo.raw(p.message),
                "tool_results": [self.memo.raw(r) for r in p.tool_results], "context": self.context(p.context),
                "new_messages": self.seq("new", p.new_messages)}}
        if kind is RunEnded:
            return {"type": "run_ended", "messages": [self.memo.history(x) for x in e.messages]}
        return prepared(effect, partials=False)

    def encode(self, effect: Effect) -> Any:
        """``effect`` as JSON data, as a line holds it."""
        return parse(encode_bytes(self.effect(effect)))

    def line(self, step: int, inp: Input, effects: Sequence[Effect], header: Any = None) -> str:
        """The step line of ``inp`` and its ``effects`` (with its newline)."""
        enc = self.effect
        data = encode_bytes({"step": step, "input": self.input(inp, header), "effects": [enc(e) for e in effects]})
        return data.decode("utf-8") + "\n"


_EMPTY_CONTEXT: Final = AgentContext()
