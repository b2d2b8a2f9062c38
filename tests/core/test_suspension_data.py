"""A suspension as data: its JSON holds each value once, it is compared with a recorded run in
that JSON form, and a stored one is checked before anything runs.

The suspensions here are made by driving ``step`` (no interpreter); the stored version-1 ones
in tests/data were written by the format-1 codec (tests/support/suspension_runs.py made them).
"""

from __future__ import annotations

import copy
import datetime
import decimal
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyrsistent import pvector

from agentcore import (
    SUSPENSION_VERSION,
    AgentContext,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    ExecuteTool,
    FrozenDict,
    Model,
    PendingCall,
    Started,
    StreamEventReceived,
    TextContent,
    ToolFinished,
    UserMessage,
    initial_state,
    replace,
    step,
)
from agentcore.codec import dumps, from_json, to_json
from agentcore.state import LoopState, Suspended, Suspension

from .world import call, reply, stream_events

DATA = Path(__file__).parents[1] / "data"
GATED = AgentTool("gated", "gated", "", {"type": "object"}, print, requires_approval=True)
FREE = AgentTool("free", "free", "", {"type": "object"}, print)
LATER = AgentTool("later", "later", "", {"type": "object"}, print, deferred=True)
BIG = "x" * 900_000
ADVICE = " (resume a suspension as agentcore.codec.to_json wrote it)"


def ok(text: str = "ok", details: Any = None) -> AgentToolResult:
    return AgentToolResult((TextContent(text),), details)


def drive(*replies: AssistantMessage, results: Callable[[str], AgentToolResult] = lambda _: ok(),
          **options: Any) -> Suspension:
    """A run of ``replies`` (free calls answered by ``results(call id)``) to its suspension."""
    s = initial_state(AgentContext("", (), (GATED, FREE, LATER)), model=Model(id="m"), **options)
    s, effects = step(s, Started((UserMessage("go", timestamp=1),), 1)).unwrap()
    todo = list(replies)
    while not isinstance(s.phase, Suspended):
        llm = [e for e in effects if e.type == "call_llm"]
        executes = [e for e in effects if isinstance(e, ExecuteTool)]
        if llm:
            for event in stream_events(todo.pop(0)):
                s, effects = step(s, StreamEventReceived(llm[0].id, event, 2)).unwrap()
        else:
            assert executes, effects
            for e in executes:
                s, more = step(s, ToolFinished(e.id, results(e.tool_call.id), 3)).unwrap()
            effects = more
    return Suspension(s, s.phase.pending)


def parallel() -> Suspension:
    """Turn one calls ``free`` (f1); turn two calls gated g1, free f2 and later l1."""
    return drive(reply("look", call("f1", "free")),
                 reply(call("g1", "gated", path="a.txt"), call("f2", "free"), call("l1", "later", q="where?")))


def sequential() -> Suspension:
    """As :func:`parallel`, one call at a time: f2 first (its result is emitted), then g1 waits."""
    return drive(reply("look", call("f1", "free")),
                 reply(call("f2", "free"), call("g1", "gated", path="a.txt"), call("l1", "later", q="where?")),
                 tool_execution="sequential")


def stored(mode: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"suspension-v1-{mode}.json").read_text())
    return data


def run_of(s: Suspension, **changes: Any) -> Suspension:
    return replace(s, state=replace(s.state, run=replace(s.state.run, **changes)))


def batch_of(s: Suspension, **changes: Any) -> Suspension:
    phase = s.state.phase
    assert isinstance(phase, Suspended)
    return replace(s, state=replace(s.state, phase=replace(phase, batch=replace(phase.batch, **changes))))


def slot_of(s: Suspension, index: int, **changes: Any) -> Suspension:
    phase = s.state.phase
    assert isinstance(phase, Suspended)
    slots = list(phase.batch.slots)
    slots[index] = replace(slots[index], **changes)
    return batch_of(s, slots=tuple(slots))


def round_trip(s: Suspension) -> Suspension:
    back: Suspension = from_json(json.loads(dumps(s)))
    return back


# --------------------------------------------------------------------------- each value once


def test_the_json_of_a_suspension_holds_a_big_argument_once() -> None:
    s = drive(reply(call("g1", "gated", text=BIG)))
    text = dumps(s)
    assert text.count(BIG) == 1
    assert len(text.encode()) < 2 * len(BIG)
    assert round_trip(s) == s


def test_every_big_value_of_a_two_turn_sequential_run_is_written_once() -> None:
    first, result, second, emitted = "a" * 300_000, "b" * 300_000, "c" * 300_000, "d" * 300_000
    s = drive(reply(call("f1", "free", text=first)),
              reply(call("f2", "free"), call("g1", "gated", text=second)),
              results=lambda call_id: ok(result) if call_id == "f1" else ok(emitted, {"copy": "e" * 1000}),
              tool_execution="sequential")
    assert s.messages[-1].content[0].text == emitted  # the emitted result of the paused batch
    text = dumps(s)
    assert [text.count(big) for big in (first, result, second, emitted)] == [1, 1, 1, 1]
    assert text.count("e" * 1000) == 1
    assert len(text) < 1_250_000
    assert round_trip(s) == s


def test_the_format_2_form_leaves_out_what_the_rest_gives() -> None:
    s = parallel()
    data = to_json(s)
    assert data["version"] == SUSPENSION_VERSION == 2
    assert "pending" not in data
    run = data["state"]["run"]
    assert "llm_messages" not in run and run["new_messages"] == {"last": 4}
    assert run["last_turn"] == {"type": "CompletedTurn", "message": 1, "tool_results": [2]}
    batch = data["state"]["phase"]["batch"]
    assert "pending" not in data["state"]["phase"] and batch["message"] == 3
    assert [sorted(slot) for slot in batch["slots"]] == [
        ["at", "is_error", "pending", "result", "step", "type", "wait_id"],
        ["at", "is_error", "result", "step", "type", "wait_id"],
        ["at", "is_error", "pending", "result", "step", "type", "wait_id"],
    ]
    assert batch["slots"][0]["pending"] == {"reason": 'Tool "gated" requires approval', "waits_for": "approval"}
    seq = to_json(sequential())["state"]["phase"]["batch"]["slots"]
    assert [slot.get("message") for slot in seq] == ["$result", None, None]


def _variants() -> dict[str, Suspension]:
    """Suspensions whose parts the format-2 form cannot leave out: each is written in full."""
    s, seq = parallel(), sequential()
    run = s.state.run
    phase = s.state.phase
    assert isinstance(phase, Suspended)
    other = PendingCall("g1", "gated", {"path": "b.txt"}, "shown", "approval")
    return {
        "parallel": s,
        "sequential": seq,
        "version 1": replace(s, version=1),
        "a converting hook": run_of(s, hooks=frozenset({"convert_to_llm"}), llm_messages=None),
        "llm messages of their own": run_of(s, llm_messages=run.llm_messages.append(UserMessage("extra"))),
        "new messages that are not the last ones": run_of(s, new_messages=pvector([UserMessage("other")])),
        "no new messages": run_of(s, new_messages=pvector()),
        "a last turn not in the messages": run_of(
            s, last_turn=replace(run.last_turn, message=replace(run.last_turn.message, timestamp=9))),
        "no last turn": run_of(s, last_turn=None),
        "a batch message not in the messages": batch_of(s, message=replace(phase.batch.message, timestamp=9)),
        "a slot call of its own": slot_of(s, 1, call=call("f9", "free")),
        "arguments that are not the call's": slot_of(s, 0, args={"path": "/etc/passwd"}),
        "arguments that are the call's in another type": slot_of(s, 0, args={"path": "a.txt", "n": 1.0}),
        "a slot pending call of its own": slot_of(s, 0, pending=other),
        "a slot message of its own": slot_of(seq, 0, message=UserMessage("not a result")),
        "a phase pending of its own": replace(s, state=replace(s.state, phase=replace(phase, pending=(other,)))),
        "a pending of its own": replace(s, pending=(other,)),
        "no pending": replace(s, pending=()),
        "a state that is not suspended": replace(s, state=replace(s.state, phase=phase.batch)),
        "a state that is not a state": replace(s, state=FrozenDict({"phase": "suspended"})),
        "a slot that is not a slot": batch_of(s, slots=(FrozenDict({"step": "done"}),) + phase.batch.slots[1:]),
        "a version of its own": replace(s, version=7),
        "values that look like what format 2 leaves out": slot_of(
            run_of(seq, last_turn=replace(seq.state.run.last_turn, message=1)), 0,
            message="$result", pending=FrozenDict({"reason": "r", "waits_for": "approval"})),
        "a batch message that looks like an index": batch_of(s, message=0),
    }


@pytest.mark.parametrize("name", list(_variants()))
def test_to_json_and_from_json_round_trip_every_suspension(name: str) -> None:
    s = _variants()[name]
    back = round_trip(s)
    assert back == s
    assert to_json(back) == to_json(s)


def test_a_suspension_of_format_1_is_written_in_the_format_1_form() -> None:
    s = parallel()
    data = to_json(replace(s, version=1))
    assert data["version"] == 1 and data["pending"] == to_json(s.pending)
    assert data["state"] == to_json(s.state)


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
def test_a_stored_version_1_suspension_reads_back_and_holds_together(mode: str) -> None:
    from agentcore.state import suspension_problem

    data = stored(mode)
    s = from_json(data)
    assert isinstance(s, Suspension) and s.version == 1
    assert s.problem() is None and suspension_problem(s) is None
    # 0.5.0 kept tool call ids as the model gave them: the state reads back saying so, and is
    # written with the flag spelled out (agentcore.call_ids).
    assert s.state.run.unique_call_ids is False
    written = to_json(s)
    assert written["state"]["run"].pop("unique_call_ids") is False
    assert written == data
    assert [p.tool_call_id for p in s.pending] == (["c2", "c4"] if mode == "parallel" else ["c2"])
    now = replace(s, version=SUSPENSION_VERSION)
    assert round_trip(now) == now and len(dumps(now)) < len(json.dumps(data, separators=(",", ":")))


# --------------------------------------------------------------------------- compared in JSON form

ODD_VALUES: dict[str, Any] = {
    "datetime": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    "date": datetime.date(2024, 1, 2),
    "Decimal": decimal.Decimal("1.10"),
    "set": {3, 1, 2},
    "frozenset": frozenset({"b", "a"}),
}
ODD_ARGUMENTS: dict[str, Any] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


@pytest.mark.parametrize("name", list(ODD_VALUES))
def test_a_suspension_is_at_its_state_read_back_from_json_whatever_the_details_hold(name: str) -> None:
    s = drive(reply(call("f1", "free")), reply(call("g1", "gated", path="a.txt")),
              results=lambda _: ok("found", {"value": ODD_VALUES[name]}))
    back: LoopState = from_json(to_json(s.state))
    assert s.is_at(back) and s.difference(back) is None
    assert round_trip(s).is_at(s.state)


@pytest.mark.parametrize("name", list(ODD_ARGUMENTS))
def test_a_suspension_is_at_its_state_read_back_from_json_whatever_the_arguments_hold(name: str) -> None:
    s = drive(reply(call("f1", "free", n=ODD_ARGUMENTS[name])), reply(call("g1", "gated", n=ODD_ARGUMENTS[name])))
    assert isinstance(s.pending[0].arguments["n"], float)
    back: LoopState = from_json(to_json(s.state))
    assert s.is_at(back) and s.difference(back) is None


def test_what_differs_from_the_state_is_named() -> None:
    s = parallel()
    state = s.state
    phase = state.phase
    assert isinstance(phase, Suspended)
    other = drive(reply("look", call("f1", "free")), reply(call("g2", "gated", path="a.txt")))
    assert s.difference(other.state, "the transcript") == "suspended on other tool calls (g2)"
    edited = replace(phase.pending[0], arguments={"path": "b.txt", "mode": [1, 2]})
    there = replace(state, phase=replace(phase, pending=(edited, phase.pending[1])))
    assert not s.is_at(there)
    assert s.difference(there, "the transcript") == (
        'suspended on g1 with other arguments: arguments.path is "b.txt" in the transcript, "a.txt" in this '
        'suspension; arguments.mode is [1,2] in the transcript, absent in this suspension')
    renamed = replace(phase.pending[1], reason="later")
    there = replace(state, phase=replace(phase, pending=(phase.pending[0], renamed)))
    assert s.difference(there, "the transcript") == (
        "suspended on l1 with another reason: reason is \"later\" in the transcript, \"Tool \\\"later\\\" is "
        "deferred: its result comes from outside the run\" in this suspension")
    messages = list(state.run.new_messages)
    messages[2] = replace(messages[2], details={"when": "2024-01-02", "tags": ["a"]})
    there = replace(state, run=replace(state.run, new_messages=pvector(messages)))
    assert s.difference(there) == (
        "has another new message 2 (toolResult f1): details is {\"when\":\"2024-01-02\",\"tags\":[\"a\"]} in "
        "the state, null in this suspension")
    messages[2] = replace(messages[2], details={"when": "2024-01-03", "tags": ["a", "b"]})
    mine = run_of(s, new_messages=pvector(messages[:2] + [replace(messages[2], details={"when": "2024-01-02",
                                                                                        "tags": ["a"]})]
                                          + messages[3:]))
    there = replace(state, run=replace(state.run, new_messages=pvector(messages)))
    assert mine.difference(there) == (
        'has another new message 2 (toolResult f1): details.when is "2024-01-03" in the state, "2024-01-02" in '
        'this suspension; details.tags has 2 items in the state, 1 in this suspension')
    there = replace(state, run=replace(state.run, new_messages=state.run.new_messages.append(UserMessage("more"))))
    assert s.difference(there) == "has 5 new messages, this suspension 4"
    assert s.difference(replace(state, phase=phase.batch)) == "is not suspended (phase running_tools)"


# --------------------------------------------------------------------------- checked before it runs


def _at(data: dict[str, Any], path: str) -> tuple[Any, str]:
    """The container of ``path`` (dots and [i]) in ``data``, and its last key."""
    parts: list[Any] = []
    for piece in path.replace("[", ".[").split("."):
        parts.append(int(piece[1:-1]) if piece.startswith("[") else piece)
    here: Any = data
    for key in parts[:-1]:
        here = here[key]
    return here, parts[-1]


def edited(mode: str, path: str, value: Any) -> Suspension:
    data = copy.deepcopy(stored(mode))
    where, key = _at(data, path)
    where[key] = value
    s: Suspension = from_json(data)
    return s


TYPE_CASES = [
    ("state.run.turns", "x", "state.run.turns is a str ('x'), not an int"),
    ("state.run.turns", True, "state.run.turns is a bool (True), not an int"),
    ("state.run.next_id", 2.5, "state.run.next_id is a float (2.5), not an int"),
    ("state.run.total_tokens", None, "state.run.total_tokens is None, not an int"),
    ("state.run.cost_usd", "0", "state.run.cost_usd is a str ('0'), not a number"),
    ("state.run.max_turns", "3", "state.run.max_turns is a str ('3'), not an int or None"),
    ("state.run.turn_open", 1, "state.run.turn_open is an int (1), not a bool"),
    ("state.run.thinking_level", "max", "state.run.thinking_level is a str ('max'), not one of 'off', 'minimal', "
                                        "'low', 'medium', 'high', 'xhigh'"),
    ("state.run.hooks", ["before_tool_call", 3], "an item of state.run.hooks is an int (3), not a str"),
    ("state.run.tool_policies.rm", "maybe", "state.run.tool_policies.rm is a str ('maybe'), not one of "
                                            "'approval', 'check_approval', 'deferred'"),
    ("state.phase.batch.cursor", "0", "state.phase.batch.cursor is a str ('0'), not an int"),
    ("state.phase.batch.sequential", "no", "state.phase.batch.sequential is a str ('no'), not a bool"),
    ("state.phase.batch.slots[1].step", "later", "state.phase.batch.slots[1].step is a str ('later'), not one of "
                                                 "'waiting', 'preparing', 'checking', 'approving', 'deciding', "
                                                 "'pending', 'ready', 'running', 'finishing', 'done'"),
    ("state.phase.batch.slots[0].at", "1000", "state.phase.batch.slots[0].at is a str ('1000'), not an int"),
    ("state.phase.batch.slots[0].is_error", None, "state.phase.batch.slots[0].is_error is None, not a bool"),
    ("state.phase.batch.slots[1].call.id", 2, "state.phase.batch.slots[1].call.id is an int (2), not a str"),
    ("state.phase.batch.slots[1].pending.waits_for", "you", "state.phase.batch.slots[1].pending.waits_for is a "
                                                             "str ('you'), not one of 'approval', 'result'"),
    ("pending[0].reason", 7, "pending[0].reason is an int (7), not a str"),
    ("version", "1", "version is a str ('1'), not an int"),
]


@pytest.mark.parametrize("path, value, text", TYPE_CASES, ids=[f"{p}={v!r}" for p, v, _ in TYPE_CASES])
def test_a_field_of_the_wrong_type_is_named(path: str, value: Any, text: str) -> None:
    s = edited("parallel", path, value)
    assert s.problem() == f"Cannot resume: in the suspension, {text}" + ADVICE


def test_a_slot_that_is_not_a_slot_and_a_phase_that_is_not_one_are_named() -> None:
    s = edited("parallel", "state.phase.batch.slots[0]", {"a": 1})
    assert s.problem() == ("Cannot resume: in the suspension, state.phase.batch.slots[0] is a FrozenDict "
                           "(an object with no type tag), not a ToolSlot" + ADVICE)
    s = edited("parallel", "state.phase.batch", None)
    assert s.problem() == "Cannot resume: in the suspension, state.phase.batch is None, not a RunningTools" + ADVICE


MISMATCH = "Cannot resume: the suspension does not hold together: "
MISMATCH_CASES = [
    ("parallel", "state.phase.batch.slots[1].args", {"path": "/etc/passwd"},
     'pending[0].arguments.path is "a.txt" but state.phase.batch.slots[1].args.path (what would run) is '
     '"/etc/passwd"'),
    ("sequential", "state.phase.batch.slots[1].args.path", "/etc/passwd",
     'pending[0].arguments.path is "a.txt" but state.phase.batch.slots[1].args.path (what would run) is '
     '"/etc/passwd"'),
    ("parallel", "pending[0].arguments.path", "b.txt",
     'pending[0].arguments.path is "b.txt" but state.phase.pending[0].arguments.path (what the run waits on) is '
     '"a.txt"'),
    ("parallel", "pending", [],
     "pending names (none) but state.phase.pending (what the run waits on) names c2, c4"),
    ("parallel", "state.phase.batch.slots[1].pending.reason", "shown",
     'state.phase.pending[0].reason is "Tool \\"rm\\" requires approval" but state.phase.batch.slots[1].pending.reason '
     '(what the batch holds) is "shown"'),
    ("parallel", "state.phase.batch.slots[1].call.name", "ls",
     'pending[0].tool_name is "rm" but state.phase.batch.slots[1].call.name (what would run) is "ls"'),
    ("parallel", "state.phase.batch.slots[1].call.arguments.path", "/etc/passwd",
     'state.phase.batch.message.content[1].arguments.path is "a.txt" but '
     'state.phase.batch.slots[1].call.arguments.path (what would run) is "/etc/passwd"'),
    ("parallel", "state.phase.batch.slots[1].step", "done",
     "state.phase.pending names c2, c4 but the batch's pending slots (what would run) name c4"),
    ("parallel", "state.phase.batch.slots[0].step", "running",
     "state.phase.batch.slots[0].step is 'running': the calls of a suspended parallel batch are pending or done"),
    ("sequential", "state.phase.batch.cursor", 0,
     "state.phase.batch.slots[0].step is 'done': in a suspended sequential batch the calls before the cursor (0) "
     "are done, the one at it is pending, the ones after it are waiting"),
    ("parallel", "state.phase.batch.slots[0].result", None,
     "state.phase.batch.slots[0].result is None: a call that is done has its result"),
    ("parallel", "state.phase.batch.slots", [],
     "state.phase.batch.slots has 0 calls, state.phase.batch.message has 3"),
    ("parallel", "state.run.messages[3].content[1].arguments.path", "/etc/passwd",
     'state.run.messages[3].content[1].arguments.path is "/etc/passwd" but '
     'state.phase.batch.message.content[1].arguments.path (what would run) is "a.txt"'),
    ("parallel", "state.run.llm_messages[3].content[1].arguments.path", "/etc/passwd",
     'the default conversion of state.run.messages[3].content[1].arguments.path is "a.txt" but '
     'state.run.llm_messages[3].content[1].arguments.path (what the model would be sent) is "/etc/passwd"'),
]


@pytest.mark.parametrize("mode, path, value, text", MISMATCH_CASES,
                         ids=[f"{m}:{p}" for m, p, _, _ in MISMATCH_CASES])
def test_what_the_suspension_shows_is_what_would_run(mode: str, path: str, value: Any, text: str) -> None:
    assert edited(mode, path, value).problem() == MISMATCH + text + ADVICE


def test_a_model_given_with_a_list_and_a_dict_is_of_its_type() -> None:
    s = drive(reply(call("g1", "gated", path="a.txt")))
    model = Model(id="m", input=["text", "image"], headers={"X-Team": "a"})  # kept as given
    s = run_of(s, model=model)
    assert isinstance(s.state.run.model.input, list) and s.problem() is None
    back = round_trip(s)
    assert back.problem() is None and back.state.run.model.input == ("text", "image")


def test_a_live_suspension_and_every_variant_that_holds_together_has_no_problem() -> None:
    for s in (parallel(), sequential(), replace(parallel(), version=1)):
        assert s.problem() is None and round_trip(s).problem() is None
