"""The model's reply as a machine of its own: what each stream event does to the reply of the
streaming phase (sibling of :mod:`agentcore.batch`, the tool calls' machine).

A reply is a stream: ``start``, then blocks (``text``, ``thinking``, ``toolCall``), each opened,
filled by deltas and closed, then ``done`` or ``error``. :func:`take` checks each event against
the protocol (its type and payload: :func:`stream_event_problem`; its place: a block is opened
once, filled and closed in order), emits ``message_start`` / ``message_update``, keeps which block
is open in the phase, and says what became of the reply: it goes on (``None``), it ended
(:class:`Ended`, with the final message), the stream broke the protocol (:class:`Broken`), or,
after an abort, the stream's last event was no stream event (:data:`DROPPED`). The turn
(:mod:`agentcore.machine`) decides what follows. The deltas of an open block are the hot path:
``transition`` takes them inline, with :data:`DELTA_KIND` and :data:`PARTIAL_TYPES` from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from .draft import Draft
from .events import MessageStartEvent, MessageUpdateEvent
from .messages import AssistantMessage, TextContent, ThinkingContent, ToolCall
from .records import replace
from .state import Streaming
from .stream import (
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
from .texts import (
    NO_ERROR_MESSAGE_TEXT,
    REQUEST_ABORTED_TEXT,
    not_a_stream_event_text,
    stream_field_text,
    stream_order_text,
    stream_payload_text,
)

__all__ = [
    "BLOCK_EVENT",
    "Broken",
    "DELTA_KIND",
    "DROPPED",
    "Dropped",
    "Ended",
    "PARTIAL_TYPES",
    "aborted_reply",
    "error_reply",
    "finished",
    "stream_event_problem",
    "take",
]


# Block event type -> (the kind of block it belongs to, what it does to the block).
BLOCK_EVENT: Final[dict[type, tuple[str, Literal["start", "delta", "end"]]]] = {
    TextStartEvent: ("text", "start"), TextDeltaEvent: ("text", "delta"), TextEndEvent: ("text", "end"),
    ThinkingStartEvent: ("thinking", "start"), ThinkingDeltaEvent: ("thinking", "delta"),
    ThinkingEndEvent: ("thinking", "end"),
    ToolCallStartEvent: ("toolCall", "start"), ToolCallDeltaEvent: ("toolCall", "delta"),
    ToolCallEndEvent: ("toolCall", "end"),
}
DELTA_KIND: Final[dict[type, str]] = {t: kind for t, (kind, role) in BLOCK_EVENT.items() if role == "delta"}
PARTIAL_TYPES: Final = (PartialAssistantMessage, AssistantMessage)
EVENT_TYPES: Final = frozenset(BLOCK_EVENT) | {StartEvent, DoneEvent, ErrorEvent}
EVENT_FIELDS: Final[dict[type, tuple[str, type]]] = {
    TextEndEvent: ("content", TextContent), ThinkingEndEvent: ("content", ThinkingContent),
    ToolCallEndEvent: ("tool_call", ToolCall),
}
"""The block an end event closes, and its type (what the fold of the reply reads from it). A
delta is not looked at here: the deltas of a stream go to the core without a check (it folds
the stream function's own partial)."""


def stream_event_problem(event: Any) -> str | None:
    """What is wrong with ``event`` as a stream event on its own (``None``: nothing).

    Checks its type, the type of the message it carries (``partial``, a done event's
    ``message``, an error event's ``error``) and of the block an end event closes; where it
    stands in the stream is the core's business. Interpreters call this on what a stream function
    yields before feeding it, so a transcript only ever holds real stream events.

    >>> print(stream_event_problem({"type": "text_delta"}))  # doctest: +ELLIPSIS
    Stream protocol error: the stream function yielded a dict ({'type': 'text_delta'}), not a stream event ...
    >>> stream_event_problem(ErrorEvent("error", "rate limited"))[:12]
    'rate limited'
    """
    kind = type(event)
    if kind not in EVENT_TYPES:
        return not_a_stream_event_text(event)
    if kind is DoneEvent:
        if not isinstance(event.message, PARTIAL_TYPES):
            return stream_payload_text("done", "message", event.message)
        return None
    if kind is ErrorEvent:
        if not isinstance(event.error, PARTIAL_TYPES):
            return stream_payload_text("error", "error", event.error)
        return None
    if not isinstance(event.partial, PARTIAL_TYPES):
        return stream_payload_text(event.type, "partial", event.partial)
    if kind is not StartEvent and type(event.content_index) is not int:
        return (f"Stream protocol error: the {event.type} event's content_index was "
                f"{event.content_index!r}; expected the integer index of its content block")
    read = EVENT_FIELDS.get(kind)
    if read is not None and not isinstance(getattr(event, read[0]), read[1]):
        return stream_field_text(event.type, read[0], getattr(event, read[0]), read[1].__name__)
    return None


def finished(partial: PartialAssistantMessage | AssistantMessage, **header: Any) -> AssistantMessage:
    """The reply as it stands, closed with ``header`` changes (either kind of partial)."""
    if type(partial) is PartialAssistantMessage:
        return partial.to_message(**header)
    return replace(partial, **header)


@dataclass(frozen=True, slots=True)
class Ended:
    """The reply ended with ``message`` (``started``: its ``message_start`` was emitted)."""

    message: AssistantMessage
    started: bool


@dataclass(frozen=True, slots=True)
class Broken:
    """The stream broke the protocol: ``text`` says how."""

    text: str


class Dropped:
    """After an abort, the stream's final event was no stream event: drop the stream."""

    __slots__ = ()


DROPPED: Final = Dropped()


def take(s: Draft, event: Any) -> Ended | Broken | Dropped | None:
    """Take one stream event (not the delta of an open block: ``transition`` takes those at
    once) into the reply of the streaming phase: emit the update, keep which blocks are open,
    and say what became of the reply (``None``: it goes on)."""
    phase = s.phase
    assert isinstance(phase, Streaming)
    started = phase.partial is not None
    problem = stream_event_problem(event)
    if s.aborted:  # the abort waits for the stream's final event (the turn lets no other through)
        return DROPPED if problem is not None else Ended(aborted_reply(event), started)
    if problem is not None:
        return Broken(problem)
    kind = type(event)
    if kind is DoneEvent:
        final = event.message
        if type(final) is PartialAssistantMessage:
            final = final.to_message(stop_reason=event.reason if event.reason in ("stop", "length", "toolUse")
                                     else "stop")
        return Ended(final, started)
    if kind is ErrorEvent:
        return Ended(error_reply(event), started)
    if kind is StartEvent:
        if started:
            return Broken(stream_order_text("start", "a second time"))
        s.emit(MessageStartEvent(event.partial))
        s.phase = Streaming(phase.id, event.partial)
        return None
    block, role = BLOCK_EVENT[kind]
    if not started:
        return Broken(stream_order_text(event.type, "before the stream's start event"))
    index, blocks = event.content_index, phase.blocks
    if role == "start":
        if index != len(blocks):
            return Broken(stream_order_text(
                event.type, f"for content block {index}, but the next new block is {len(blocks)}"))
        blocks = blocks + (block,)
    else:
        if not 0 <= index < len(blocks):
            return Broken(stream_order_text(event.type, f"for content block {index}, which was never started"))
        if blocks[index] != block:
            state = "had already ended" if blocks[index] == "" else f"is a {blocks[index]} block"
            return Broken(stream_order_text(event.type, f"for content block {index}, which {state}"))
        if role == "end":
            blocks = blocks[:index] + ("",) + blocks[index + 1:]
    s.emit(MessageUpdateEvent(event.partial, event))
    s.phase = Streaming(phase.id, event.partial, blocks)
    return None


def error_reply(event: ErrorEvent) -> AssistantMessage:
    """The final message of an error event: an error, whatever its message says."""
    error: Any = event.error
    reason: Literal["error", "aborted"] = "aborted" if event.reason == "aborted" else "error"
    if type(error) is PartialAssistantMessage:
        error = error.to_message()
    changes: dict[str, Any] = {}
    if error.stop_reason not in ("error", "aborted"):
        changes["stop_reason"] = reason
    if not error.error_message:
        changes["error_message"] = NO_ERROR_MESSAGE_TEXT
    final: AssistantMessage = replace(error, **changes) if changes else error
    return final


def aborted_reply(event: DoneEvent | ErrorEvent) -> AssistantMessage:
    """The final message of a stream that ended after an abort, as the aborted reply: its
    content, usage and error text (``Request was aborted`` when it gave none) are kept."""
    if isinstance(event, ErrorEvent):
        final = error_reply(event)
        return final if final.stop_reason == "aborted" else replace(final, stop_reason="aborted")
    message: Any = event.message
    return finished(message, stop_reason="aborted", error_message=message.error_message or REQUEST_ABORTED_TEXT)
