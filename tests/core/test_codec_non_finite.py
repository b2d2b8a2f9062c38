"""The codec writes NaN and the infinities of free-form values (tool arguments, details, any JSON
value an application hands in) as a tagged object and reads them back as the numbers.

``{"type": "float", "value": "NaN"}`` (``"Infinity"``, ``"-Infinity"``) stands for the number; an
object of the application's own that would read as such a tag (or as the escape of one) is
written inside ``{"type": "json", "value": ...}`` and read back as the object it was. Every
JSON text the codec writes stays strict JSON, and JSON data (``to_json``, ``parse``) never holds
a number JSON has no text for.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import pytest

from agentcore import AgentToolResult, ExecuteTool, TextContent, ToolCall, ToolResultMessage, UserMessage
from agentcore.codec import dumps, from_json, json_form, loads, parse, register, to_json
from agentcore.frozen import FrozenDict, freeze, thaw

NAN_TAG = {"type": "float", "value": "NaN"}


def same(a: Any, b: Any) -> bool:
    """Equal as values, NaN equal to NaN, mappings and sequences each of one kind."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, FrozenDict | dict) and isinstance(b, FrozenDict | dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"{name} is not JSON: {text[:200]}")

    return json.loads(text, parse_constant=refuse)


ODD_VALUES: dict[str, Any] = {
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "in a list": [1.0, math.nan, [math.inf, {"deep": -math.inf}]],
    "in an object": {"x": math.nan, "y": {"z": math.inf}},
    "a tuple": (math.nan, 2),
    "the tag itself": dict(NAN_TAG),
    "the tag, keys the other way": {"value": "Infinity", "type": "float"},
    "the escape of the tag": {"type": "json", "value": dict(NAN_TAG)},
    "the escape of the escape": {"type": "json", "value": {"type": "json", "value": dict(NAN_TAG)}},
    "an escape around a number": {"type": "json", "value": math.nan},
    "an escape around a plain value": {"type": "json", "value": 1},
    "a tag with a number": {"type": "float", "value": 1.5},
    "a tag with another text": {"type": "float", "value": "nan"},
    "a tag with a third key": {"type": "float", "value": "NaN", "more": 1},
    "a json schema": {"type": "number", "format": "float"},
    "everything": [math.nan, dict(NAN_TAG), {"type": "json", "value": {"type": "json", "value": math.inf}}],
}


@pytest.mark.parametrize("name", list(ODD_VALUES))
def test_free_form_values_read_back_as_they_were(name: str) -> None:
    value = ODD_VALUES[name]
    frozen = freeze(value)
    for record in (ToolCall("c1", "f", {"v": value}), ToolResultMessage("c1", "f", (TextContent("r"),), details=value),
                   AgentToolResult((TextContent("r"),), details=value),
                   ExecuteTool(3, ToolCall("c1", "f", {}), freeze({"v": value}))):
        text = dumps(record)
        strict(text)
        back = loads(text)
        assert type(back) is type(record)
        assert same(back, record) or same(to_json(back), to_json(record))
        free = back.arguments["v"] if isinstance(back, ToolCall) else back.args["v"] if isinstance(back, ExecuteTool) \
            else back.details
        assert same(free, frozen), (name, free, frozen)
        assert same(from_json(to_json(record)).__getattribute__(
            "arguments" if isinstance(back, ToolCall) else "args" if isinstance(back, ExecuteTool) else "details"),
            back.__getattribute__("arguments" if isinstance(back, ToolCall) else "args" if isinstance(back, ExecuteTool)
                                  else "details"))


def test_nan_is_written_as_its_tag_and_json_data_holds_no_nan() -> None:
    call = ToolCall("c1", "f", {"x": math.nan, "y": math.inf, "z": -math.inf, "w": 1.5})
    assert dumps(call) == ('{"type":"toolCall","id":"c1","name":"f","arguments":{"x":{"type":"float","value":"NaN"},'
                           '"y":{"type":"float","value":"Infinity"},"z":{"type":"float","value":"-Infinity"},'
                           '"w":1.5},"thought_signature":null,"invalid_json":null}')
    assert to_json(call)["arguments"]["x"] == NAN_TAG
    assert math.isnan(json_form(math.nan)) and json_form([math.inf]) == [math.inf]
    assert dumps(json_form({"x": math.nan})) == dumps({"x": math.nan}) == '{"x":{"type":"float","value":"NaN"}}'
    assert to_json(ToolCall("c1", "f", {"v": dict(NAN_TAG)}))["arguments"] == {"v": {"type": "json", "value": NAN_TAG}}


def test_frozen_values_hold_floats_and_thaw_gives_plain_ones() -> None:
    frozen = freeze({"x": math.nan, "t": (math.inf, 1.0)})
    assert isinstance(frozen["x"], float) and math.isnan(frozen["x"]) and frozen["x"] != frozen["x"]
    assert frozen["t"][0] == math.inf and freeze(frozen) is frozen
    plain = thaw(frozen)
    assert type(plain["x"]) is float and math.isnan(plain["x"]) and type(plain["t"][0]) is float


def test_a_text_written_with_nan_literals_reads_nan_back() -> None:
    """What the json module writes (and older transcripts hold): ``NaN``, ``Infinity``."""
    text = json.dumps({"type": "toolCall", "id": "c1", "name": "f", "arguments": {"x": math.nan, "y": -math.inf}})
    assert "NaN" in text
    data = parse(text)
    assert data["arguments"] == {"x": NAN_TAG, "y": {"type": "float", "value": "-Infinity"}}
    back = loads(text)
    assert same(back.arguments, {"x": math.nan, "y": -math.inf})


@dataclass(frozen=True)
class Holder:
    """An application's record with a field of any value (not free-form: prepared by the codec)."""

    payload: Any = None


@pytest.mark.parametrize("name", list(ODD_VALUES))
def test_an_application_record_holding_odd_values_reads_back(name: str) -> None:
    register(Holder, "test_non_finite.holder")
    value = ODD_VALUES[name]
    for held in (value, {"type": "mine", "v": value}, [value]):
        text = dumps(Holder(held))
        strict(text)
        assert same(thaw(loads(text).payload), thaw(freeze(held))), (name, held)


def test_a_message_with_nan_in_a_text_field_of_its_own_is_untouched() -> None:
    m = UserMessage("the word float and NaN, {\"type\":\"float\",\"value\":\"NaN\"}", timestamp=1)
    assert loads(dumps(m)) == m
