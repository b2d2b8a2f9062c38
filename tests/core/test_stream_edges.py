"""Stream events and the partial message at their edges: what ``begin`` and the final events put
in the header, how open blocks read, several blocks open at once, the refusals of the advancing
methods, the exact JSON text of arguments nested too deep, and where the partial-JSON parser cuts
(and when it gives up: after eight failed cuts, which only a number too long for ``int`` causes)."""

from __future__ import annotations

import sys
from collections.abc import ItemsView, Iterator, Mapping
from decimal import Decimal
from typing import Any

import pytest

from agentcore import replace
from agentcore.frozen import MAX_JSON_DEPTH, FrozenDict, freeze
from agentcore.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from agentcore.stream import (
    DoneEvent,
    ErrorEvent,
    PartialAssistantMessage,
    parse_arguments,
    parse_partial_json,
    too_deep_at,
)


def with_text(text: str, **header: Any) -> PartialAssistantMessage:
    """A partial holding one closed text block."""
    partial = PartialAssistantMessage.begin(**header).text_start().partial
    return partial.text_delta(0, text).partial.text_end(0).partial


# --------------------------------------------------------------------------- the header


def test_begin_puts_every_field_in_the_header_and_defaults_to_an_empty_message() -> None:
    assert PartialAssistantMessage.begin().header == AssistantMessage()
    usage = Usage(3, 4, total_tokens=7)
    partial = PartialAssistantMessage.begin(api="a", provider="p", model="m", timestamp=9, usage=usage,
                                            response_id="r1")
    assert partial.header == AssistantMessage((), api="a", provider="p", model="m", usage=usage, response_id="r1",
                                              timestamp=9)
    assert (partial.blocks, partial.chunks, partial.content) == ((), (), ())


def test_with_header_changes_the_header_and_keeps_every_block_open_or_closed() -> None:
    partial = with_text("hi", model="m").toolcall_start("c1", "f").partial.toolcall_delta(1, '{"a": 1').partial
    changed = partial.with_header(model="m2", response_id="r9")
    assert changed.header == replace(partial.header, model="m2", response_id="r9")
    assert partial.model == "m" and partial.response_id is None
    assert changed.content == (TextContent("hi"), ToolCall("c1", "f", freeze({"a": 1})))
    assert changed.block_text(1) == '{"a": 1'
    end = changed.toolcall_delta(1, ', "b": 2}').partial.toolcall_end(1)
    assert end.tool_call == ToolCall("c1", "f", freeze({"a": 1, "b": 2}))
    assert end.partial.to_message() == AssistantMessage((TextContent("hi"), end.tool_call), model="m2",
                                                        response_id="r9")


def test_done_and_error_end_with_their_reason_and_header_changes() -> None:
    partial = with_text("so far", model="m")
    usage = Usage(1, 2, total_tokens=3)
    assert partial.done("length", usage=usage) == DoneEvent(
        "length", AssistantMessage((TextContent("so far"),), model="m", usage=usage, stop_reason="length"))
    assert partial.error("aborted", "cancelled", response_id="r2") == ErrorEvent(
        "aborted", AssistantMessage((TextContent("so far"),), model="m", stop_reason="aborted",
                                    error_message="cancelled", response_id="r2"))
    assert partial.error("error", "boom").error.stop_reason == "error"


def test_partials_are_equal_when_header_and_content_are_and_hash_by_both() -> None:
    first, same = with_text("a", model="m"), with_text("a", model="m")
    assert first == same and hash(first) == hash(same)
    other_text, other_model = with_text("b", model="m"), with_text("a", model="m2")
    assert first != other_text and first != other_model
    assert len({hash(first), hash(other_text), hash(other_model)}) == 3
    # An open block equals the same block closed as it stands.
    open_block = PartialAssistantMessage.begin(model="m").text_start().partial.text_delta(0, "a").partial
    assert open_block == first and hash(open_block) == hash(first)
    assert first.__eq__(first.header) is NotImplemented


# --------------------------------------------------------------------------- reading open blocks


def test_open_blocks_read_as_the_blocks_they_will_close_as() -> None:
    thinking = PartialAssistantMessage.begin().thinking_start().partial.thinking_delta(0, "hm").partial
    assert thinking.content == (ThinkingContent("hm", None, False),)
    redacted = PartialAssistantMessage.begin().thinking_start(redacted=True).partial
    assert redacted.thinking_delta(0, "opaque").partial.content == (ThinkingContent("opaque", None, True),)
    call = PartialAssistantMessage.begin().toolcall_start("c7", "grep").partial
    assert call.content == (ToolCall("c7", "grep", freeze({})),)
    call = call.toolcall_delta(0, '{"path": "/tm').partial.toolcall_delta(0, 'p", "n": [1, 2').partial
    assert call.content == (ToolCall("c7", "grep", freeze({"path": "/tmp", "n": [1, 2]}), None, None),)
    assert call.tool_calls == call.content


def test_an_open_tool_call_whose_text_is_not_an_object_reads_as_empty_arguments() -> None:
    call = PartialAssistantMessage.begin().toolcall_start("c1", "f").partial.toolcall_delta(0, "[1, 2").partial
    assert call.content == (ToolCall("c1", "f", FrozenDict()),)
    assert isinstance(call.content[0], ToolCall) and isinstance(call.content[0].arguments, FrozenDict)
    assert parse_arguments("[1, 2") == ({}, "[1, 2")
    assert parse_arguments('"text') == ({}, '"text')


def test_block_text_is_what_each_kind_of_block_received() -> None:
    partial = with_text("hi")
    partial = partial.thinking_start().partial.thinking_delta(1, "hm").partial.thinking_end(1).partial
    partial = partial.toolcall_start("c1", "f").partial.toolcall_end(2, {"b": [1, 2], "a": "é"}).partial
    partial = partial.toolcall_start("c2", "g").partial.toolcall_delta(3, '{"a": 1,').partial.toolcall_end(3).partial
    partial = partial.text_start().partial.text_delta(4, "par").partial.text_delta(4, "tial").partial
    assert [partial.block_text(i) for i in range(5)] == ["hi", "hm", '{"b":[1,2],"a":"\\u00e9"}', '{"a": 1,',
                                                         "partial"]
    assert partial.text_start().partial.block_text(5) == ""


def test_block_text_refuses_a_block_a_reply_cannot_hold() -> None:
    blocks: tuple[Any, ...] = (ImageContent("aGk=", "image/png"),)
    partial = PartialAssistantMessage(AssistantMessage(), blocks, (None,))
    with pytest.raises(TypeError) as info:
        partial.block_text(0)
    assert info.value.args == ("ImageContent",)


# --------------------------------------------------------------------------- several open blocks


def test_deltas_and_ends_reach_any_open_block_not_only_the_last() -> None:
    partial = PartialAssistantMessage.begin().text_start().partial
    partial = partial.thinking_start().partial.toolcall_start("c1", "f").partial
    for index, delta in [(0, "a"), (1, "t"), (2, '{"k":'), (0, "b"), (1, "u"), (2, " 1}"), (1, "v")]:
        if index == 0:
            partial = partial.text_delta(index, delta).partial
        elif index == 1:
            partial = partial.thinking_delta(index, delta).partial
        else:
            partial = partial.toolcall_delta(index, delta).partial
    assert [partial.block_text(i) for i in range(3)] == ["ab", "tuv", '{"k": 1}']
    assert partial.content == (TextContent("ab"), ThinkingContent("tuv"), ToolCall("c1", "f", freeze({"k": 1})))
    first = partial.text_end(0)
    assert first.content == TextContent("ab")
    assert first.partial.content == partial.content and len(first.partial.chunks) == 3
    middle = first.partial.thinking_end(1, signature="sig")
    partial = middle.partial.toolcall_delta(2, " ").partial
    assert partial.content == (TextContent("ab"), ThinkingContent("tuv", "sig"), ToolCall("c1", "f", freeze({"k": 1})))
    assert partial.block_text(2) == '{"k": 1} '
    assert partial.toolcall_end(2).partial.content[2] == ToolCall("c1", "f", freeze({"k": 1}))


def test_a_delta_or_end_for_a_block_that_is_not_open_and_of_its_kind_is_refused() -> None:
    thinking = PartialAssistantMessage.begin().thinking_start().partial
    with pytest.raises(ValueError) as info:
        thinking.text_delta(0, "x")
    assert str(info.value) == "content block 0 is not an open text block"
    closed = thinking.thinking_end(0).partial.text_start().partial
    with pytest.raises(ValueError) as info:
        closed.thinking_delta(0, "x")
    assert str(info.value) == "content block 0 is not an open thinking block"
    with pytest.raises(ValueError) as info:
        closed.toolcall_end(1)
    assert str(info.value) == "content block 1 is not an open toolCall block"


# --------------------------------------------------------------------------- arguments too deep


def test_arguments_nested_too_deep_are_kept_as_their_compact_json_text() -> None:
    deep: Any = [1, 2]
    for _ in range(MAX_JSON_DEPTH):
        deep = {"d": deep}
    shared = ["s", 1]
    arguments = {"é": ["ü", ("y", 2.5), [], {}, [[3]]], "n": None, "t": True, "dec": Decimal("1.5"),
                 "a": shared, "b": shared, "frozen": FrozenDict({"k": (1,)}), "deep": deep}
    end = PartialAssistantMessage.begin().toolcall_start("c1", "f").partial.toolcall_end(0, arguments)
    text = ('{"é":["ü",["y",2.5],[],{},[[3]]],"n":null,"t":true,"dec":"1.5","a":["s",1],"b":["s",1],'
            '"frozen":{"k":[1]},"deep":' + '{"d":' * MAX_JSON_DEPTH + "[1,2]" + "}" * MAX_JSON_DEPTH + "}")
    assert end.tool_call == ToolCall("c1", "f", FrozenDict(), None, text)
    assert end.partial.block_text(0) == text
    top: list[Any] = [[7, 8]]
    for _ in range(MAX_JSON_DEPTH):
        top = [top]
    end = PartialAssistantMessage.begin().toolcall_start("c2", "g").partial.toolcall_end(0, top)
    assert end.tool_call.invalid_json == "[" * (MAX_JSON_DEPTH + 1) + "[7,8]" + "]" * (MAX_JSON_DEPTH + 1)


class Guarded(Mapping[str, Any]):
    """A mapping of one key, ``"k"``, that counts how often its items are walked and refuses after
    a hundred: a walk that misses a cycle through it fails fast instead of running forever."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.walks = 0

    def __getitem__(self, key: str) -> Any:
        if key != "k":
            raise KeyError(key)
        return self.value

    def __iter__(self) -> Iterator[str]:
        return iter(("k",))

    def __len__(self) -> int:
        return 1

    def items(self) -> ItemsView[str, Any]:
        self.walks += 1
        if self.walks > 100:
            raise RuntimeError("walked round the cycle")
        return super().items()


def test_arguments_that_contain_themselves_are_refused() -> None:
    loop: list[Any] = []
    loop.append(Guarded(loop))
    start = PartialAssistantMessage.begin().toolcall_start("c1", "f")
    with pytest.raises(ValueError) as info:
        start.partial.toolcall_end(0, {"top": loop})
    assert str(info.value) == "cannot encode a list that contains itself"


# --------------------------------------------------------------------------- partial JSON


@pytest.mark.parametrize(("text", "value"), [
    ('["ab"', ["ab"]),                          # just after a string
    ('{"k": "v"', {"k": "v"}),
    ('[[]', [[]]),                              # just after an empty container
    ('{"a": {}', {"a": {}}),
    ('[""', [""]),                              # the first string is empty
    ('["", "ab', ["", "ab"]),                   # inside a string
    ('{"a": [1, 2], "b": {', {"a": [1, 2], "b": {}}),
    ('{"a": [[[[[[[[1]]]]]]]]', {"a": [[[[[[[[1]]]]]]]]}),  # after eight closing brackets
])
def test_partial_json_keeps_what_is_complete_at_each_kind_of_cut(text: str, value: Any) -> None:
    assert parse_partial_json(text) == value


def test_too_deep_at_counts_a_closing_bracket_as_one_level() -> None:
    assert too_deep_at("[[],[[]]]", 2) == 5
    assert too_deep_at("[[],[[]]]", 3) == -1
    assert too_deep_at('{"a":[]}[[[', 2) == 10


@pytest.fixture
def int_digits() -> Iterator[int]:
    """Python's limit on the digits of an ``int`` read from text, set to its default (4300)."""
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    try:
        yield 4300
    finally:
        sys.set_int_max_str_digits(before)


@pytest.mark.parametrize(("tail", "kept"), [
    ("1" * 6, True),     # seven cuts fail (too many digits each), the eighth keeps as many as int reads
    ("1" * 7, False),    # eight cuts fail: the parser gives up
    ("]" * 6, True),     # six after a bracket and one after the last digit fail, the eighth cut is kept
    ("]" * 7, False),
    ("X" * 6, True),     # what follows the number is cut away, a failed try a character
    ("X" * 7, False),
])
def test_partial_json_gives_up_after_eight_failed_cuts(int_digits: int, tail: str, kept: bool) -> None:
    """A number with more digits than ``int`` reads makes every cut that keeps all of it fail (the
    only way to make cuts fail in a row); a cut within the budget keeps as many digits as it reads."""
    text = "[" + "1" * (int_digits + 1) + tail
    assert parse_partial_json(text) == ([int("1" * int_digits)] if kept else {})
