"""Upgrading from records that were dataclasses (up to 0.3): the dataclasses functions say what
to use instead, and nothing else that asks whether a record is a dataclass is disturbed."""

from __future__ import annotations

import dataclasses
import pprint
from typing import Any

import msgspec
import pytest

from agentcore import AgentContext, Cost, TextContent, Usage, UserMessage, replace
from agentcore.codec import to_json
from agentcore.records import record_fields

SINCE = "records are msgspec structs (since agentcore-fx 0.4.0), not dataclasses"


@pytest.mark.parametrize(("call", "message"), [
    (lambda: dataclasses.replace(AgentContext("Be brief."), system_prompt="Be exact."),
     f"dataclasses.replace() does not take an AgentContext: {SINCE}; use agentcore.replace(record, field=value) "
     "(it takes records and dataclasses alike)"),
    (lambda: dataclasses.replace(TextContent("a"), text="b"),
     f"dataclasses.replace() does not take a TextContent: {SINCE}; use agentcore.replace(record, field=value) "
     "(it takes records and dataclasses alike)"),
    (lambda: dataclasses.asdict(Usage(input=3)),
     f"dataclasses.asdict() does not take a Usage: {SINCE}; use msgspec.structs.asdict(record) (its fields, "
     "one level) or agentcore.codec.to_json(record) (JSON data, nested records too)"),
    (lambda: dataclasses.astuple(Usage(input=3)),
     f"dataclasses.astuple() does not take a Usage: {SINCE}; use msgspec.structs.astuple(record)"),
    (lambda: dataclasses.fields(UserMessage),
     f"dataclasses.fields() does not take a UserMessage: {SINCE}; use agentcore.records.record_fields(cls) "
     "(the names) or msgspec.structs.fields(cls)"),
])
def test_the_dataclasses_functions_say_what_to_use_instead(call: Any, message: str) -> None:
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == message


def test_fields_of_an_instance_keeps_pythons_own_message() -> None:
    """``dataclasses.fields(record)`` looks on the instance, where no hook can answer; the text
    is Python's (the changelog names the replacement)."""
    with pytest.raises(TypeError, match="^must be called with a dataclass type or instance$"):
        dataclasses.fields(Usage())


def test_a_record_is_still_not_a_dataclass_to_anyone_who_asks() -> None:
    usage = Usage(input=3)
    assert not dataclasses.is_dataclass(usage) and not dataclasses.is_dataclass(Usage)
    assert not hasattr(Usage, "__dataclass_fields__") and getattr(Usage, "__dataclass_fields__", None) is None
    assert not hasattr(usage, "__dataclass_fields__")
    assert pprint.pformat(usage) == repr(usage)
    with pytest.raises(AttributeError):
        Usage.__dataclass_fields__  # noqa: B018 - the attribute lookup is the test


def test_a_dataclass_holding_a_record_converts_as_before() -> None:
    """``asdict`` copies what is not a dataclass as it is: a record inside an application's
    dataclass is copied, not refused."""

    @dataclasses.dataclass
    class Turn:
        usage: Usage
        note: str = ""

    turn = Turn(Usage(input=3, cost=Cost(total=0.5)))
    assert dataclasses.asdict(turn) == {"usage": Usage(input=3, cost=Cost(total=0.5)), "note": ""}
    assert dataclasses.replace(turn, note="x").usage is turn.usage


def test_what_to_use_instead_does_what_the_dataclasses_functions_did() -> None:
    context = AgentContext("Be brief.")
    assert replace(context, system_prompt="Be exact.").system_prompt == "Be exact."
    usage = Usage(input=3, cost=Cost(total=0.5))
    assert msgspec.structs.asdict(usage) == {"input": 3, "output": 0, "cache_read": 0, "cache_write": 0,
                                             "total_tokens": 0, "cost": Cost(total=0.5)}
    assert to_json(usage)["cost"] == {"type": "Cost", "input": 0.0, "output": 0.0, "cache_read": 0.0,
                                      "cache_write": 0.0, "total": 0.5}
    assert msgspec.structs.astuple(Usage(input=3)) == (3, 0, 0, 0, 0, Cost())
    assert record_fields(UserMessage) == ("content", "timestamp")
