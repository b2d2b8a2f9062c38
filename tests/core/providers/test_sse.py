"""The SSE decoder against the WHATWG "interpreting an event stream" rules."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore.providers.sse import SSEDecoder, SSEEvent


def decode(*chunks: bytes) -> tuple[list[SSEEvent], SSEDecoder]:
    d = SSEDecoder()
    out: list[SSEEvent] = []
    for c in chunks:
        out += d.feed(c)
    out += d.close()
    return out, d


def test_line_endings_lf_cr_crlf() -> None:
    for eol in (b"\n", b"\r", b"\r\n"):
        events, d = decode(b"data: a" + eol + b"data: b" + eol + eol)
        assert events == [SSEEvent("message", "a\nb")]
        assert not d.truncated


def test_cr_lf_split_across_chunks_is_one_line_end() -> None:
    events, _ = decode(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n")
    assert events == [SSEEvent("message", "a\nb")]
    # a lone CR followed by a non-LF chunk is still a line end
    events, _ = decode(b"data: a\r", b"\r")
    assert events == [SSEEvent("message", "a")]


def test_multiline_data_event_id_retry() -> None:
    events, d = decode(b"event: update\nid: 7\nretry: 1500\ndata: x\ndata:\ndata: y\n\n")
    assert events == [SSEEvent("update", "x\n\ny", "7", 1500)]
    assert d.last_event_id == "7"
    # event type resets after dispatch; id persists
    events2, _ = decode(b"event: a\ndata: 1\n\ndata: 2\n\n")
    assert [e.event for e in events2] == ["a", "message"]


def test_comments_and_field_without_colon() -> None:
    events, _ = decode(b": keep-alive\n: OPENROUTER PROCESSING\n\ndata\n\n")
    assert events == [SSEEvent("message", "")]  # "data" alone: empty value, still dispatched
    events, _ = decode(b"event\ndata: z\n\n")
    assert events == [SSEEvent("message", "z")]


def test_only_one_leading_space_is_stripped() -> None:
    events, _ = decode(b"data:  two\ndata:none\n\n")
    assert events == [SSEEvent("message", " two\nnone")]


def test_bad_retry_and_id_with_nul_ignored() -> None:
    events, _ = decode(b"retry: 12a\nid: a\x00b\ndata: q\n\n")
    assert events == [SSEEvent("message", "q", None, None)]


def test_unknown_fields_ignored_and_empty_data_not_dispatched() -> None:
    events, _ = decode(b"foo: bar\n\nevent: x\n\n")
    assert events == []


def test_bom_stripped_only_at_start() -> None:
    events, _ = decode(b"\xef\xbb", b"\xbfdata: a\n\n")
    assert events == [SSEEvent("message", "a")]
    events, _ = decode(b"data: a\n\n\xef\xbb\xbfdata: b\n\n")
    # a BOM later in the stream is part of the field name, so the line is an unknown field
    assert events == [SSEEvent("message", "a")]


def test_utf8_split_across_chunks() -> None:
    body = "data: héllo → 😀\n\n".encode()
    for i in range(len(body) + 1):
        events, _ = decode(body[:i], body[i:])
        assert events == [SSEEvent("message", "héllo → 😀")]


def test_invalid_utf8_replaced() -> None:
    events, _ = decode(b"data: \xff\xfe\n\n")
    assert events == [SSEEvent("message", "\ufffd\ufffd")]


def test_truncated_last_event_not_dispatched_but_reported() -> None:
    events, d = decode(b"data: a\n\ndata: partial")
    assert events == [SSEEvent("message", "a")] and d.truncated
    events, d = decode(b"data: a\n\ndata: b\n")  # line ended, but no blank line
    assert events == [SSEEvent("message", "a")] and d.truncated
    events, d = decode(b"data: a\n\n: trailing comment")
    assert not d.truncated
    events, d = decode(b"data: a\n\n")
    assert not d.truncated and d.close() == []


BODY = (b"\xef\xbb\xbf: comment\r\nevent: one\r\ndata: {\"x\": \"\xc3\xa9\"}\r\n\r\n"
        b"id: 3\rdata: a\rdata: b\r\rretry: 10\ndata: c\n\n")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=12))
def test_any_split_gives_the_same_events(cuts: list[int]) -> None:
    whole, _ = decode(BODY)
    points = sorted(set(cuts))
    chunks = [BODY[a:b] for a, b in zip([0] + points, points + [len(BODY)])]
    split, _ = decode(*chunks)
    assert split == whole
    assert whole == [SSEEvent("one", '{"x": "é"}'), SSEEvent("message", "a\nb", "3"),
                     SSEEvent("message", "c", "3", 10)]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_never_raise(data: bytes) -> None:
    decode(data)
    decode(data[: len(data) // 2], data[len(data) // 2:])
