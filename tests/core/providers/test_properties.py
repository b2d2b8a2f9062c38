"""Hypothesis: any split of a recorded stream decodes to the same events; random bytes never
raise and end in an ErrorEvent."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore.stream import ErrorEvent
from tests.support.corpus import all_files, corpus_dir, load

from .helpers import DECODERS, check_shape, decode, summary


@cache
def _recorded() -> list[tuple[str, bytes]]:
    out = []
    for f in all_files():
        folder = f.split("/")[0]
        if folder not in DECODERS:
            continue
        for it in load(f):
            if it.status == 200:
                out.append((folder, it.body))
    return out


@pytest.mark.skipif(corpus_dir() is None, reason="recorded corpus not found")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_split_of_a_recorded_stream_decodes_identically(data: st.DataObject) -> None:
    streams = _recorded()
    folder, body = data.draw(st.sampled_from(streams), label="stream")
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=40), label="cuts")
    points = sorted(set(cuts))
    sizes = [b - a for a, b in zip([0] + points, points)]
    assert summary(decode(folder, body, sizes)) == summary(decode(folder, body))


@pytest.mark.skipif(corpus_dir() is None, reason="recorded corpus not found")
@pytest.mark.parametrize("folder", sorted(set(DECODERS)))
def test_byte_by_byte(folder: str) -> None:
    for f, body in _recorded():
        if f == folder:
            assert summary(decode(folder, body, [1] * len(body))) == summary(decode(folder, body))
            break


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DECODERS)), st.binary(max_size=400), st.lists(st.integers(1, 50)))
def test_random_bytes_never_raise(folder: str, body: bytes, sizes: list[int]) -> None:
    events = decode(folder, body, sizes)
    check_shape(events)
    assert isinstance(events[-1], ErrorEvent)


PREFIXES = [b"data: ", b"data: {", b'data: {"choices":[{"index":0,"delta":{"tool_calls":[',
            b"[", b"{", b"event: error\ndata: ", b'data: {"type":"content_block_start","index":']


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(DECODERS)), st.sampled_from(PREFIXES),
       st.text(max_size=120), st.booleans())
def test_structured_garbage_never_raises(folder: str, prefix: bytes, tail: str,
                                         terminate: bool) -> None:
    body = prefix + tail.encode() + (b"\n\n" if terminate else b"")
    check_shape(decode(folder, body))
