"""An incremental Server-Sent Events decoder (WHATWG HTML, "Interpreting an event stream").

Sans-IO: :meth:`SSEDecoder.feed` takes whatever bytes arrived (any split, even inside a UTF-8
character or between the CR and LF of one line end) and returns the events completed by them.

Theory of operation: bytes go through an incremental UTF-8 decoder (invalid sequences become
U+FFFD, as the spec says); the text is cut into lines at LF, CR or CRLF. A CR at the very end of
the text seen so far is held back as a line end already taken, and a LF at the start of the next
chunk is then dropped, so CR|LF split across chunks counts once. Each line is one of:

* empty: dispatch the event being built (if its data buffer is not empty);
* ``:...``: a comment, ignored;
* ``field:value`` (one leading space of the value removed) or ``field`` alone (empty value).

Fields: ``event`` sets the type, ``data`` appends the value plus ``\\n`` to the data buffer (the
last ``\\n`` is removed at dispatch), ``id`` sets the last event id (unless it contains NUL),
``retry`` sets the reconnection time when the value is all ASCII digits; anything else is ignored.
A byte order mark at the start of the stream is skipped.

>>> d = SSEDecoder()
>>> d.feed(b"event: ping\\ndata: a\\r")
[]
>>> d.feed(b"\\ndata: b\\n\\n")
[SSEEvent(event='ping', data='a\\nb', id=None, retry=None)]
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent"]


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event. ``event`` is ``"message"`` when the stream did not name it."""

    event: str
    data: str
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Feed bytes, get :class:`SSEEvent` values. Not thread-safe; one per response body.

    After :meth:`close`, ``truncated`` tells whether the stream ended in the middle of an event
    (data or fields received after the last blank line, which the spec says to discard).
    """

    __slots__ = (
        "_decoder", "_buffer", "_skip_lf", "_started", "_event", "_data", "_has_data",
        "_last_id", "_retry", "_pending_fields", "truncated", "closed",
    )

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""  # text of the current, unfinished line
        self._skip_lf = False  # the previous chunk ended with CR
        self._started = False  # BOM check done
        self._event = ""
        self._data: list[str] = []
        self._has_data = False
        self._last_id: str | None = None
        self._retry: int | None = None
        self._pending_fields = False  # a non-comment line seen since the last dispatch
        self.truncated = False
        self.closed = False

    @property
    def last_event_id(self) -> str | None:
        """The last event id set by the stream (what a reconnect sends as ``Last-Event-ID``)."""
        return self._last_id

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Decode ``data`` and return the events it completed."""
        return self._text(self._decoder.decode(data, False))

    def close(self) -> list[SSEEvent]:
        """End of stream. Flushes the decoder; an unterminated last event is not dispatched but
        sets ``truncated``. Returns any event completed by the flushed bytes (normally none)."""
        if self.closed:
            return []
        events = self._text(self._decoder.decode(b"", True))
        if self._buffer:
            # A last line without its line end: per spec it is not processed, but it means the
            # stream was cut (unless it is only a comment).
            if not self._buffer.startswith(":"):
                self.truncated = True
            self._buffer = ""
        if self._pending_fields and self._has_data:
            self.truncated = True
        self.closed = True
        self._reset_event()
        return events

    # -- internals

    def _text(self, text: str) -> list[SSEEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        events: list[SSEEvent] = []
        start = 0
        n = len(text)
        buffer = self._buffer
        while start < n:
            lf = text.find("\n", start)
            cr = text.find("\r", start)
            if lf < 0 and cr < 0:
                buffer += text[start:]
                break
            if cr < 0 or (0 <= lf < cr):
                end, nxt = lf, lf + 1
            else:
                end = cr
                if cr + 1 < n:
                    nxt = cr + 2 if text[cr + 1] == "\n" else cr + 1
                else:
                    nxt = cr + 1
                    self._skip_lf = True
            line = buffer + text[start:end] if buffer else text[start:end]
            buffer = ""
            ev = self._line(line)
            if ev is not None:
                events.append(ev)
            start = nxt
        self._buffer = buffer
        return events

    def _reset_event(self) -> None:
        self._event = ""
        self._data = []
        self._has_data = False
        self._pending_fields = False

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None
        colon = line.find(":")
        if colon < 0:
            name, value = line, ""
        else:
            name = line[:colon]
            value = line[colon + 1:]
            if value.startswith(" "):
                value = value[1:]
        self._pending_fields = True
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry":
            if value and value.isascii() and value.isdigit():
                self._retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._has_data:
            # Spec: with an empty data buffer, reset the type and do not dispatch.
            self._reset_event()
            return None
        event = SSEEvent(self._event or "message", "\n".join(self._data), self._last_id,
                         self._retry)
        self._reset_event()
        return event
