"""Folding a reply's stream back into its partial message, event by event: what a transcript
reader and an interpreter do with stream events written without their ``partial`` (the codec's
``partials=False``). :class:`PartialFold` is also ``agentcore.codec.PartialFold``.
"""

from __future__ import annotations

from typing import Any, Final

from . import messages as _messages
from . import stream as _stream
from .records import CodecError, replace

__all__ = ["PartialFold"]

_BLOCK_EVENTS: Final = _stream.BLOCK_EVENTS


_DELTA_EVENTS: Final[dict[type, Any]] = {
    _stream.TextDeltaEvent: _stream.PartialAssistantMessage.text_delta,
    _stream.ThinkingDeltaEvent: _stream.PartialAssistantMessage.thinking_delta,
    _stream.ToolCallDeltaEvent: _stream.PartialAssistantMessage.toolcall_delta,
}


class PartialFold:
    """Rebuilds the ``partial`` of stream events decoded with ``partials=False``.

    Feed the events of one reply in order; each comes back with its partial, built by the same
    O(1)-per-event fold the stream functions use. A stream function may change the partial's
    header (usage, ``response_id``) without an event of its own: a recorded event then carries
    that ``header``, given here, and the fold takes it before the event. ``strict=False``
    accepts an event the fold cannot place (before the start, for a block that is not open):
    it keeps the partial as it stands, as the core, which refuses such an event, reads nothing
    from it.

    :meth:`adopt` turns an event whose partial is an ``AssistantMessage`` (as pi-ai writes
    them) into the same event with the library's partial.
    """

    __slots__ = ("partial",)

    def __init__(self) -> None:
        self.partial: _stream.PartialAssistantMessage | None = None

    def apply(self, event: Any, header: Any = None, *, strict: bool = True) -> Any:
        if isinstance(event, _stream.StartEvent):
            if not isinstance(event.partial, _stream.PartialAssistantMessage):
                raise CodecError(f"the start event's partial is a {type(event.partial).__name__}, "
                                 "not a partial assistant message")
            self.partial = event.partial
            return event
        if not isinstance(event, _BLOCK_EVENTS) or event.partial is not None:
            if isinstance(event, _BLOCK_EVENTS):
                self.partial = event.partial
            return event
        p = self.partial
        if p is None:
            if strict:
                raise CodecError(f"{event.type} event before the stream's start event")
            return replace(event, partial=_EMPTY_PARTIAL)
        if header is not None and header is not p.header:
            p = _stream.PartialAssistantMessage(header, p.blocks, p.chunks)
        try:
            rebuilt = self._rebuild(p, event)
        except (ValueError, IndexError, TypeError, AttributeError):
            if strict:
                raise
            return replace(event, partial=p)
        self.partial = rebuilt.partial
        return rebuilt

    @staticmethod
    def _rebuild(p: _stream.PartialAssistantMessage, event: Any) -> Any:
        kind = type(event)
        if kind in _DELTA_EVENTS:
            # The rebuilt delta event has exactly the recorded fields: it is the event itself.
            return _DELTA_EVENTS[kind](p, event.content_index, event.delta)
        rebuilt: Any
        if isinstance(event, _stream.TextStartEvent):
            rebuilt = p.text_start()
        elif isinstance(event, _stream.TextEndEvent):
            rebuilt = p.text_end(event.content_index, event.content.text_signature, event.content.text)
        elif isinstance(event, _stream.ThinkingStartEvent):
            rebuilt = p.thinking_start(event.redacted)
        elif isinstance(event, _stream.ThinkingEndEvent):
            c = event.content
            rebuilt = p.thinking_end(event.content_index, c.thinking_signature, c.thinking)
        elif isinstance(event, _stream.ToolCallStartEvent):
            rebuilt = p.toolcall_start(event.id, event.name)
        else:
            call = event.tool_call
            rebuilt = p.toolcall_end(event.content_index, call.arguments, id=call.id, name=call.name,
                                     thought_signature=call.thought_signature)
        if rebuilt.content_index != event.content_index:
            raise ValueError(f"{event.type} for block {event.content_index}, the next block is {rebuilt.content_index}")
        # Keep the recorded event's own fields; take only the rebuilt partial.
        return replace(event, partial=rebuilt.partial)

    def adopt(self, event: Any) -> Any:
        """``event`` with the library's partial instead of its ``AssistantMessage`` one: the
        content folded from the events' own fields, the header taken from the message. An event
        the fold cannot place is given back as it is (the core will say what is wrong with it)."""
        message = getattr(event, "partial", None)
        if not isinstance(message, _messages.AssistantMessage):
            return event  # nothing to adopt (a done or error event, the library's partial)
        header = replace(message, content=())
        if isinstance(event, _stream.StartEvent):
            blocks = tuple(message.content)
            self.partial = _stream.PartialAssistantMessage(header, blocks, (None,) * len(blocks))
            return _stream.StartEvent(self.partial)
        p = self.partial
        if p is None or type(event) not in _BLOCK_EVENT_TYPES:
            return event
        if header != p.header:
            p = self.partial = _stream.PartialAssistantMessage(header, p.blocks, p.chunks)
        try:
            rebuilt = self._rebuild(p, replace(event, partial=None))
        except (ValueError, IndexError, TypeError, AttributeError):
            return event
        self.partial = rebuilt.partial
        return rebuilt


_EMPTY_PARTIAL: Final = _stream.PartialAssistantMessage.begin()
_BLOCK_EVENT_TYPES: Final = frozenset(_BLOCK_EVENTS)
