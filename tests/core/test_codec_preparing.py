"""What the codec prepares before the encoder writes it: every item of a list or tuple, whatever
the items before it are, and a class registered again with fields to skip (no longer written as it
stands, though it was before).

Written against the survivors of the mutation sample (docs/mutation.md)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import MessageStartEvent, PartialAssistantMessage, UserMessage
from agentcore.codec import from_json, prepared, register, to_json
from agentcore.frozen import FrozenDict
from agentcore.records import Record

PARTIAL = PartialAssistantMessage.begin(model="m").text_start().partial
AS_MESSAGE = {"type": "partial_assistant", "message": to_json(PARTIAL.to_message())}


@pytest.mark.parametrize(("items", "written"), [
    (("x", PARTIAL), ["x", AS_MESSAGE]),
    ([1, None, True, PARTIAL, 2.5, PARTIAL], [1, None, True, AS_MESSAGE, 2.5, AS_MESSAGE]),
    ((UserMessage("hi", timestamp=1), MessageStartEvent(PARTIAL)),
     [{"type": "user", "content": "hi", "timestamp": 1}, {"type": "message_start", "message": AS_MESSAGE}]),
    ([0, FrozenDict({"type": "mine"})], [0, {"type": "json", "value": {"type": "mine"}}]),
    (["a", frozenset({"b", "a"})], ["a", ["a", "b"]]),
])
def test_every_item_of_a_sequence_is_prepared_whatever_comes_before_it(items: Any, written: list[Any]) -> None:
    assert to_json(items) == written
    assert to_json(list(reversed(items))) == list(reversed(written))
    back = from_json(written)
    assert back[0] == items[0] and len(back) == len(items)


def test_a_sequence_that_needs_no_preparing_is_given_back_as_it_is() -> None:
    items = ("x", 1, UserMessage("hi"))
    assert prepared(items) is items


class Point(Record, frozen=True, tag="test_codec_preparing.point"):
    x: int
    y: int = 0


def test_a_class_registered_again_with_fields_to_skip_is_written_without_them() -> None:
    register(Point)
    assert to_json(Point(1, 2)) == {"type": "test_codec_preparing.point", "x": 1, "y": 2}
    assert prepared(Point(1, 2)) == Point(1, 2)  # written as it stands
    register(Point, skip=("y",), rebuild=lambda fields: {**fields, "y": -1})
    assert to_json(Point(1, 2)) == {"type": "test_codec_preparing.point", "x": 1}
    assert from_json({"type": "test_codec_preparing.point", "x": 1, "y": 2}) == Point(1, -1)
