"""One type check and one JSON comparison serve every reader.

A damaged field is worded alike wherever stored data is checked (a transcript header's initial
state, a stored suspension): ``agentcore.records.type_problem``. Two JSON values are compared by
``agentcore.json_diff`` wherever the library says how they differ (a replay's divergence, a
suspension's match with its recording, the check of what it shows against what would run).
"""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from agentcore import FrozenDict, Model, Usage
from agentcore.codec import CodecError, from_json, to_json
from agentcore.json_diff import MISSING, Difference, differences, first_difference
from agentcore.records import Message, messages_problem, path_key, type_problem
from agentcore.state import Suspension
from interpreters.transcript import decode_state

from .test_suspension_data import ADVICE, parallel

# --------------------------------------------------------------------------- one wording

DAMAGES = [
    (["run", "turns"], "x", "run.turns is a str ('x'), not an int"),
    (["run", "cost_usd"], "0", "run.cost_usd is a str ('0'), not a number"),
    (["run", "thinking_level"], "max", "run.thinking_level is a str ('max'), not one of 'off', 'minimal', 'low', "
                                       "'medium', 'high', 'xhigh'"),
    (["run", "hooks"], ["before_tool_call", 3], "an item of run.hooks is an int (3), not a str"),
    (["run", "tool_policies"], {"gated": "maybe"}, "run.tool_policies.gated is a str ('maybe'), not one of "
                                                   "'approval', 'check_approval', 'deferred'"),
    (["run", "tool_policies"], {"a tool": 3}, "run.tool_policies['a tool'] is an int (3), not one of 'approval', "
                                              "'check_approval', 'deferred'"),
    (["run", "messages", 0], {"role": "user"}, "run.messages[0] is a FrozenDict (an object with no type tag), not a "
                                               "message (a record with a role: UserMessage, AssistantMessage, "
                                               "ToolResultMessage, ...)"),
    (["run", "model"], {"id": "m"}, "run.model is a FrozenDict (an object with no type tag), not a Model"),
]


def damaged(data: dict[str, Any], where: list[Any], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    here = data
    for key in where[:-1]:
        here = here[key]
    here[where[-1]] = value
    return data


@pytest.mark.parametrize("where, value, text", DAMAGES, ids=[".".join(map(str, w)) for w, _, _ in DAMAGES])
def test_a_header_and_a_suspension_word_a_damaged_field_alike(where: list[Any], value: Any, text: str) -> None:
    s = parallel()
    state = to_json(s.state)
    with pytest.raises(CodecError) as info:
        decode_state(damaged(state, where, value))
    assert str(info.value) == ("$." + text if not text.startswith("an item of ") else
                               text.replace("an item of ", "an item of $."))
    full = to_json(s)
    full["state"] = damaged(full["state"], where, value)
    stored: Suspension = from_json(full)
    shown = text.replace("an item of ", "an item of state.") if text.startswith("an item of ") else "state." + text
    assert stored.problem() == f"Cannot resume: in the suspension, {shown}" + ADVICE


def test_an_item_of_a_set_is_named_by_the_set() -> None:
    """A set has no order: its items are not named by an index (which would change from one
    process to the next)."""
    assert type_problem(frozenset({"a", "b", 3}), frozenset[str], "$.hooks") == (
        "an item of $.hooks is an int (3), not a str")
    assert type_problem({"a": 3}, dict[str, str], "") == "a is an int (3), not a str"
    assert type_problem(3, str, "") == "it is an int (3), not a str"
    assert path_key("", "x") == ".x" and path_key("$", "$seq") == "$['$seq']"


def test_opaque_records_are_checked_for_their_class_only() -> None:
    usage = Usage(input="3")  # type: ignore[arg-type]
    assert type_problem(usage, Usage) == "$.input is a str ('3'), not an int"
    assert type_problem(usage, Usage, opaque=(Usage,)) is None
    assert type_problem(Model(id="m"), Usage, opaque=(Usage,)) == "$ is a Model, not a Usage"
    assert type_problem(Model(id="m", headers={"a": "b"}), Model) is None  # type: ignore[arg-type]
    assert messages_problem([object()], "m") == ("m[0] is an object, not a message (a record with a role: "
                                                 "UserMessage, AssistantMessage, ToolResultMessage, ...)")
    assert issubclass(type(parallel().state.run.messages[0]), Message)


# --------------------------------------------------------------------------- one comparison


def test_json_values_differ_where_a_walk_finds_them() -> None:
    assert differences({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2]}) == []
    assert first_difference({"n": math.nan, "l": [math.inf]}, {"n": math.nan, "l": [math.inf]}) is None
    assert differences([1, 2, 3], [1, 5], "$") == [Difference("$[1]", 2, 5), Difference("$", 3, 2, True)]
    assert differences({"a": 1}, {"a": 1.0, "b": True}, "e") == [
        Difference("e.a", 1, 1.0), Difference("e.b", MISSING, True)]
    assert differences({"x": [1, 2], "y": 1, "z": 2}, {"x": [], "y": 2, "z": 3}, limit=2) == [
        Difference(".x", 2, 0, True), Difference(".y", 1, 2)]
    assert first_difference({"a-b": {"c": 1}}, {"a-b": {"c": 2}}, "args") == Difference("args['a-b'].c", 1, 2)
    assert first_difference(True, 1) == Difference("", True, 1)
    assert first_difference(FrozenDict({"a": 1}), {"a": 1}) == Difference("", FrozenDict({"a": 1}), {"a": 1})
