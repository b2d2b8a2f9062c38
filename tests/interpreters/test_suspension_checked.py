"""A suspension is resumed as the data it is: matched with its transcript in the transcript's
JSON form, and checked before anything runs.

- An earlier tool result whose ``details`` hold a datetime, a Decimal or a set, or tool
  arguments holding NaN or an infinity (Python's JSON parser takes them), are written to the
  transcript in their JSON form; the run the transcript replays to is still this suspension's,
  so ``resume_suspended(..., transcript=path)`` and ``resume_many`` go on. A transcript of
  another run is refused with what differs.
- A stored suspension whose parts disagree (what ``pending`` shows and what would run) or hold
  values of the wrong type is refused (``ValueError``) before any tool runs: by
  ``resume_suspended``, by ``Agent.resume``, by ``resume_many``.
- A suspension stored at format version 1 resumes as it always did.

On both interpreters; ``resume_many`` over a Ray stand-in that carries the jobs out with the
real worker in this process.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import decimal
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcore import Approve, Suspension, UserMessage
from agentcore.codec import from_json, to_json
from interpreters.agent import Agent
from interpreters.replay import replay
from interpreters.streams.scripted import ScriptedCall
from interpreters.transcript import TranscriptError, TranscriptRecorder
from tests.support import suspension_runs as runs
from tests.support.clocks import clock
from tests.support.flavours import Flavour
from tests.support.suspension_runs import DECISIONS, RAN, config, context, model

DONE = "Done: c1=a room, c3=a.txt b.txt, c2=removed a.txt, c4=the attic"
ADVICE = " (resume a suspension as agentcore.codec.to_json wrote it)"
ODD_DETAILS: dict[str, Any] = {
    "datetime": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    "naive datetime": datetime.datetime(2024, 1, 2, 3, 4, 5),
    "date": datetime.date(2024, 1, 2),
    "Decimal": decimal.Decimal("1.10"),
    "set": {"b", "a", "c"},
    "frozenset": frozenset({3, 1, 2}),
}
ODD_ARGUMENTS = ["NaN", "Infinity", "-Infinity"]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    RAN.clear()
    monkeypatch.setattr(runs, "EXTRA", [])
    yield
    runs.LOOKED[0] = None


def suspend_recording(flavour: Flavour, path: Path, mode: str = "parallel") -> Suspension:
    _, _, suspension = flavour.start_suspending("Tidy up.", context(), config(mode), model(), clock=clock,
                                                journal=TranscriptRecorder(path, context(), config(mode)))
    assert suspension is not None
    return suspension  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- matched in JSON form


@pytest.mark.parametrize("name", list(ODD_DETAILS))
def test_a_suspension_goes_on_in_its_transcript_after_details_json_has_no_type_for(
        flavour: Flavour, tmp_path: Path, name: str) -> None:
    runs.LOOKED[0] = {"value": ODD_DETAILS[name], "note": "kept"}
    path = tmp_path / "run.jsonl"
    suspension = suspend_recording(flavour, path)
    events, messages, again = flavour.resume(suspension, DECISIONS, context(), config(), model(), clock=clock,
                                             transcript=path)
    assert again is None and messages[-1].text == DONE and RAN == ["ls", "rm a.txt"]
    assert events[-1].type == "agent_end"
    whole = replay(path)
    assert whole.finished and [m.text if m.role == "assistant" else None for m in whole.messages][-1] == DONE


@pytest.mark.parametrize("number", ODD_ARGUMENTS)
def test_a_suspension_goes_on_in_its_transcript_when_the_arguments_hold_what_json_has_no_number_for(
        flavour: Flavour, tmp_path: Path, number: str) -> None:
    runs.EXTRA.append(ScriptedCall("scale", f'{{"factor": {number}}}', "c5"))
    path = tmp_path / "run.jsonl"
    suspension = suspend_recording(flavour, path)
    assert [p.tool_call_id for p in suspension.pending] == ["c2", "c4", "c5"]
    factor = float(number.lower().replace("infinity", "inf"))
    assert str(suspension.pending[2].arguments["factor"]) == str(factor)
    _, messages, again = flavour.resume(suspension, {**DECISIONS, "c5": Approve()}, context(), config(), model(),
                                        clock=clock, transcript=path)
    assert again is None and sorted(RAN) == ["ls", "rm a.txt", f"scale {factor}"]  # the calls run in parallel
    assert messages[-1].text == DONE + f", c5=scaled by {factor}"
    assert replay(path).finished


def test_a_transcript_of_another_run_is_refused_with_what_differs(flavour: Flavour, tmp_path: Path) -> None:
    runs.LOOKED[0] = {"when": datetime.date(2024, 1, 2)}
    mine = suspend_recording(flavour, tmp_path / "mine.jsonl")
    runs.LOOKED[0] = {"when": datetime.date(2024, 1, 3)}
    other = tmp_path / "other.jsonl"
    suspend_recording(flavour, other)
    before = other.read_bytes()
    with pytest.raises(TranscriptError) as info:
        flavour.resume(mine, DECISIONS, context(), config(), model(), clock=clock, transcript=other)
    assert str(info.value) == (
        f'{other}: the run it records has another new message 2 (toolResult c1): details.when is "2024-01-03" in '
        f'the transcript, "2024-01-02" in this suspension: not this suspension')
    assert other.read_bytes() == before and RAN == ["ls", "ls"]


def test_a_consistent_edit_of_the_arguments_is_refused_by_the_transcript(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    data = to_json(suspend_recording(flavour, path))
    batch = data["state"]["phase"]["batch"]
    data["state"]["run"]["messages"][batch["message"]]["content"][1]["arguments"]["path"] = "/etc/passwd"
    edited = from_json(data)
    assert edited.problem() is None and edited.pending[0].arguments == {"path": "/etc/passwd"}
    with pytest.raises(TranscriptError) as info:
        flavour.resume(edited, DECISIONS, context(), config(), model(), clock=clock, transcript=path)
    assert str(info.value) == (
        f'{path}: the run it records suspended on c2 with other arguments: arguments.path is "a.txt" in the '
        f'transcript, "/etc/passwd" in this suspension: not this suspension')
    assert RAN == ["ls"]


# --------------------------------------------------------------------------- checked before it runs


def stored(mode: str = "parallel") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((runs.DATA / f"suspension-v1-{mode}.json").read_text())
    return data


def tampered() -> Suspension:
    """The stored suspension with the call c2 set to run on /etc/passwd, its pending entry (what
    an approver is shown) left as it was."""
    data = copy.deepcopy(stored())
    data["state"]["phase"]["batch"]["slots"][1]["args"]["path"] = "/etc/passwd"
    s: Suspension = from_json(data)
    assert s.pending[0].arguments == {"path": "a.txt"}
    return s


TAMPERED = ('Cannot resume: the suspension does not hold together: pending[0].arguments.path is "a.txt" but '
            'state.phase.batch.slots[1].args.path (what would run) is "/etc/passwd"' + ADVICE)


def test_a_suspension_that_shows_one_thing_and_would_run_another_is_refused(flavour: Flavour) -> None:
    with pytest.raises(ValueError) as info:
        flavour.resume(tampered(), DECISIONS, context(), config(), model(), clock=clock)
    assert str(info.value) == TAMPERED and RAN == []


@pytest.mark.parametrize("field, value, text", [
    ("turns", "x", "state.run.turns is a str ('x'), not an int"),
    ("next_id", None, "state.run.next_id is None, not an int"),
    ("cost_usd", "1", "state.run.cost_usd is a str ('1'), not a number"),
    ("max_turns", 2.5, "state.run.max_turns is a float (2.5), not an int or None"),
])
def test_a_counter_of_the_wrong_type_is_refused_before_any_tool_runs(
        flavour: Flavour, field: str, value: Any, text: str) -> None:
    data = copy.deepcopy(stored())
    data["state"]["run"][field] = value
    with pytest.raises(ValueError) as info:
        flavour.resume(from_json(data), DECISIONS, context(), config(), model(), clock=clock)
    assert str(info.value) == f"Cannot resume: in the suspension, {text}" + ADVICE
    assert RAN == []


def _counter_of_the_wrong_type() -> Suspension:
    data = copy.deepcopy(stored())
    data["state"]["run"]["turns"] = "x"
    s: Suspension = from_json(data)
    return s


@pytest.mark.parametrize("kind", ["Agent", "SyncAgent"])
@pytest.mark.parametrize("bad, text", [
    (tampered, TAMPERED),
    (_counter_of_the_wrong_type,
     "Cannot resume: in the suspension, state.run.turns is a str ('x'), not an int" + ADVICE),
], ids=["parts that disagree", "a counter of the wrong type"])
def test_an_agent_refuses_to_restore_a_suspension_that_does_not_hold_together(kind: str, bad: Any, text: str) -> None:
    """The check ``resume()`` makes is made by ``restore()``: the agent is left as it was (its
    conversation, no pending call), and nothing runs."""
    from interpreters import SyncAgent

    sound = runs.suspend()
    RAN.clear()
    agent: Any = (Agent if kind == "Agent" else SyncAgent)(model=config().model, tools=context().tools,
                                                          stream_fn=model())
    try:
        agent.state.messages = [UserMessage("earlier", timestamp=1)]
        before = list(agent.state.messages)
        with pytest.raises(ValueError) as info:
            agent.restore(bad())
        assert str(info.value) == text
        assert agent.state.messages == before and agent.pending == () and agent.state.suspension is None
        with pytest.raises(RuntimeError, match="^Agent is not suspended"):
            agent.resume() if kind == "SyncAgent" else asyncio.run(agent.resume())
        agent.restore(sound)  # a sound one is taken
        assert [p.tool_call_id for p in agent.pending] == ["c2", "c4"]
    finally:
        if kind == "SyncAgent":
            agent.close()
    assert RAN == []


def test_an_agent_refuses_to_restore_what_is_not_a_suspension() -> None:
    agent = Agent(model=config().model, tools=context().tools, stream_fn=model())
    with pytest.raises(TypeError) as info:
        agent.restore(to_json(runs.suspend()))  # type: ignore[arg-type]
    assert str(info.value) == ("restore() argument 'suspension' must be a Suspension (decode a stored one with "
                               "agentcore.codec.from_json), not a dict")


def test_a_stored_version_1_suspension_resumes_as_a_fresh_one(flavour: Flavour) -> None:
    for mode in ("parallel", "sequential"):
        old = from_json(stored(mode))
        assert old.version == 1
        fresh = runs.suspend(mode)
        assert fresh.version == 2 and fresh == from_json(to_json(fresh))
        RAN.clear()
        _, expected, _ = flavour.resume(fresh, DECISIONS if mode == "parallel" else {"c2": Approve()}, context(),
                                        config(mode), model(), clock=clock)
        ran = list(RAN)
        RAN.clear()
        decisions = DECISIONS if mode == "parallel" else {"c2": Approve()}
        _, messages, again = flavour.resume(old, decisions, context(), config(mode), model(), clock=clock)
        assert messages == expected and RAN == ran
        if mode == "sequential":  # it suspends again on c4, the deferred call after c2
            assert again is not None and [p.tool_call_id for p in again.pending] == ["c4"]


# --------------------------------------------------------------------------- resume_many


class _Ref:
    def __init__(self, worker: Any, method: str, args: tuple[Any, ...]) -> None:
        self.worker, self.method, self.args = worker, method, args


class _Method:
    def __init__(self, worker: Any, name: str) -> None:
        self.worker, self.name = worker, name

    def remote(self, *args: Any) -> _Ref:
        return _Ref(self.worker, self.name, args)


class _Actor:
    def __init__(self, worker: Any) -> None:
        self.run = _Method(worker, "run")
        self.status = _Method(worker, "status")


class _ActorClass:
    def __init__(self, cls: type) -> None:
        self.cls = cls

    def options(self, **options: Any) -> _ActorClass:
        return self

    def remote(self, spec: Any, share: int) -> _Actor:
        return _Actor(self.cls(spec, share))


class InProcessRay:
    """Ray as ``run_many`` uses it, one node, the worker actors in this process: a call is
    carried out by the real worker when the driver asks for its result."""

    import ray as _ray

    exceptions = _ray.exceptions
    NODE = "41".ljust(56, "0")

    def __init__(self) -> None:
        self.started = 0

    def remote(self, cls: type) -> _ActorClass:
        return _ActorClass(cls)

    def nodes(self) -> list[dict[str, Any]]:
        return [{"NodeID": self.NODE, "Alive": True, "Resources": {"CPU": 1.0}}]

    def is_initialized(self) -> bool:
        return True

    def wait(self, refs: list[Any], num_returns: int = 1, timeout: float | None = None) -> tuple[list[Any], list[Any]]:
        return list(refs[:num_returns]), list(refs[num_returns:])

    def get(self, ref: _Ref) -> Any:
        self.started += ref.method == "run"
        return asyncio.run(getattr(ref.worker, ref.method)(*ref.args))

    def kill(self, actor: Any, no_restart: bool = True) -> None:
        pass

    def cancel(self, ref: Any, force: bool = False) -> None:
        pass


def _config_factory(job: Any) -> Any:
    return config()


def _stream_fn_factory(job: Any) -> Any:
    return model()


@pytest.fixture
def ray_here(monkeypatch: pytest.MonkeyPatch) -> InProcessRay:
    pytest.importorskip("ray")
    from interpreters.ray import runs as ray_runs

    fake = InProcessRay()
    monkeypatch.setattr(ray_runs, "ensure_ray", lambda address, options: fake)
    return fake


def _options(path: Path) -> dict[str, Any]:
    return {"config_factory": _config_factory, "stream_fn_factory": _stream_fn_factory, "transcripts_dir": path,
            "clock": clock, "progress": False}


@pytest.mark.parametrize("name", ["datetime", "Decimal", "set", "NaN", "Infinity"])
def test_resume_many_goes_on_after_values_json_has_no_type_for(
        ray_here: InProcessRay, tmp_path: Path, name: str) -> None:
    from interpreters.ray import RunJob, resume_many, run_many

    decisions = dict(DECISIONS)
    if name in ODD_DETAILS:
        runs.LOOKED[0] = {"value": ODD_DETAILS[name]}
    else:
        runs.EXTRA.append(ScriptedCall("scale", f'{{"factor": {name}}}', "c5"))
        decisions["c5"] = Approve()
    [first] = list(run_many([RunJob("j", "Tidy up.", context())], **_options(tmp_path)))
    assert first.suspended and [p.tool_call_id for p in first.suspension.pending] == list(decisions)
    [result] = list(resume_many([first], {"j": decisions}, **_options(tmp_path)))
    assert result.error is None and result.ok and not result.resumed
    assert result.messages[-1].text.startswith("Done: c1=a room, c3=a.txt b.txt, c2=removed a.txt, c4=the attic")
    assert ray_here.started == 2 and replay(tmp_path / "j.jsonl").finished


def test_resume_many_refuses_a_suspension_that_does_not_hold_together(ray_here: InProcessRay, tmp_path: Path) -> None:
    from interpreters.ray import RunJob, resume_many

    (tmp_path / "j.jsonl").write_text("")
    with pytest.raises(ValueError) as info:
        list(resume_many([(RunJob("j", "Tidy up.", context()), tampered())], {"j": DECISIONS}, **_options(tmp_path)))
    assert str(info.value) == f"resume_many: nothing was run; 1 problem:\n  job 'j': {TAMPERED}"
    assert ray_here.started == 0 and RAN == []


def test_resume_many_says_how_the_transcript_is_not_at_the_suspension(ray_here: InProcessRay, tmp_path: Path) -> None:
    from interpreters.ray import RunJob, resume_many, run_many

    job = RunJob("j", "Tidy up.", context())
    [first] = list(run_many([job], **_options(tmp_path)))
    data = to_json(first.suspension)
    message = data["state"]["run"]["messages"][data["state"]["phase"]["batch"]["message"]]
    message["content"][1]["arguments"]["path"] = "b"
    [result] = list(resume_many([(job, from_json(data))], {"j": DECISIONS}, **_options(tmp_path)))
    path = tmp_path / "j.jsonl"
    assert result.error == (
        f'TranscriptError: {path} ends at another suspension (the run it records suspended on c2 with other '
        f'arguments: arguments.path is "a.txt" in the transcript, "b" in this suspension), and no decisions on c2, '
        f"c4: not this suspension's run")
    assert RAN == ["ls"] and not replay(path).finished



# --------------------------------------------------------------------------- figures in range


@pytest.mark.parametrize("edit, text", [
    (lambda d: d["state"]["run"].__setitem__("turns", -1), "state.run.turns is -1, not a count (an integer >= 0)"),
    (lambda d: d["state"]["run"].__setitem__("total_tokens", -5),
     "state.run.total_tokens is -5, not a count (an integer >= 0)"),
    (lambda d: d["state"]["run"].__setitem__("cost_usd", float("nan")),
     "state.run.cost_usd is nan, not a cost (a finite number >= 0)"),
    (lambda d: d["state"]["run"].__setitem__("cost_usd", -0.5),
     "state.run.cost_usd is -0.5, not a cost (a finite number >= 0)"),
    (lambda d: d["state"]["run"].__setitem__("max_turns", 0),
     "state.run.max_turns is 0, not a budget (None or an integer >= 1)"),
    (lambda d: d["state"]["run"].__setitem__("max_cost_usd", float("inf")),
     "state.run.max_cost_usd is inf, not a budget (None or a finite number > 0)"),
    (lambda d: d["state"]["run"].__setitem__("next_id", 0),
     "state.run.next_id is 0, not an effect id (an integer >= 1)"),
    (lambda d: d["state"]["run"]["messages"][-1].__setitem__("usage", 0),
     "state.run.messages[3].usage is an int (0), not a Usage"),
    (lambda d: d["state"]["run"]["messages"][-1].__setitem__("stop_reason", "done"),
     "state.run.messages[3].stop_reason is a str ('done'), not one of 'stop', 'length', 'toolUse', 'error', 'aborted'"),
    (lambda d: d["state"]["run"]["messages"][0].__setitem__("timestamp", "today"),
     "state.run.messages[0].timestamp is a str ('today'), not an int"),
], ids=["turns", "tokens", "cost NaN", "cost negative", "max_turns", "max_cost inf", "next_id", "usage",
        "stop_reason", "timestamp"])
def test_a_figure_out_of_its_range_or_a_message_field_of_the_wrong_type_is_refused_before_any_tool_runs(
        flavour: Flavour, edit: Any, text: str) -> None:
    data = copy.deepcopy(stored())
    edit(data)
    with pytest.raises(ValueError) as info:
        flavour.resume(from_json(data), DECISIONS, context(), config(), model(), clock=clock)
    assert str(info.value) == f"Cannot resume: in the suspension, {text}" + ADVICE
    assert RAN == []


@pytest.mark.parametrize("cursor", [-10**30, -1, 4, 10**30])
def test_a_batch_cursor_out_of_the_batch_is_refused(flavour: Flavour, cursor: int) -> None:
    data = copy.deepcopy(stored("sequential"))
    data["state"]["phase"]["batch"]["cursor"] = cursor
    with pytest.raises(ValueError) as info:
        flavour.resume(from_json(data), {"c2": Approve()}, context(), config("sequential"), model(), clock=clock)
    assert str(info.value) == (
        f"Cannot resume: the suspension does not hold together: state.phase.batch.cursor is {cursor}, not a position "
        "in the batch's 3 calls (0 to 3)" + ADVICE)
    assert RAN == []


def test_two_calls_of_the_batch_with_one_id_are_refused(flavour: Flavour) -> None:
    data = copy.deepcopy(stored())
    reply = data["state"]["run"]["messages"][-1]
    ids = [block["id"] for block in reply["content"] if block["type"] == "toolCall"]
    for block in reply["content"]:
        if block.get("id") == ids[0]:
            block["id"] = ids[1]
    for block in data["state"]["phase"]["batch"]["message"]["content"]:  # format 1: the reply again, and each call
        if block.get("id") == ids[0]:
            block["id"] = ids[1]
    for slot in data["state"]["phase"]["batch"]["slots"]:
        if slot["call"]["id"] == ids[0]:
            slot["call"]["id"] = ids[1]
    with pytest.raises(ValueError) as info:
        flavour.resume(from_json(data), DECISIONS, context(), config(), model(), clock=clock)
    assert str(info.value) == (
        "Cannot resume: the suspension does not hold together: state.phase.batch.message has two tool calls with "
        f"the id {ids[1]!r} (calls 0 and 1): a decision names the call it is for by its id" + ADVICE)
    assert RAN == []


def test_an_edit_anywhere_in_the_state_is_refused_by_the_transcript(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    data = to_json(suspend_recording(flavour, path))
    data["state"]["run"]["system_prompt"] = "Obey the user in everything."
    data["state"]["run"]["turns"] = 0
    edited = from_json(data)
    assert edited.problem() is None
    with pytest.raises(TranscriptError) as info:
        flavour.resume(edited, DECISIONS, context(), config(), model(), clock=clock, transcript=path)
    assert str(info.value) == (
        f'{path}: the run it records is at this suspension with another state: state.run.system_prompt is '
        f'"You tidy up." in the transcript, "Obey the user in everything." in this suspension; state.run.turns is 1 '
        f'in the transcript, 0 in this suspension: not this suspension')
    assert RAN == ["ls"]


@pytest.mark.parametrize("edit, text", [
    (lambda d: d["state"]["phase"]["batch"].__setitem__("message", -10**30),
     f"$.state.phase.batch.message is message {-10**30} of the conversation, which has 4"),
    (lambda d: d["state"]["phase"]["batch"].__setitem__("message", 10**30),
     f"$.state.phase.batch.message is message {10**30} of the conversation, which has 4"),
    (lambda d: d["state"]["run"].__setitem__("new_messages", {"last": -3}),
     "$.state.run.new_messages are the last -3 messages, and there are 4"),
    (lambda d: d["state"]["run"].__setitem__("new_messages", {"last": 10**30}),
     f"$.state.run.new_messages are the last {10**30} messages, and there are 4"),
    (lambda d: d["state"]["run"]["last_turn"].__setitem__("message", -1),
     "$.state.run.last_turn.message is message -1 of the conversation, which has 4"),
], ids=["reply far before", "reply far after", "new messages negative", "new messages huge", "last turn"])
def test_an_index_out_of_the_conversation_is_a_value_error_naming_it(edit: Any, text: str) -> None:
    """A stored suspension (format 2) names a message by its index in the conversation: one
    out of it is refused as it is decoded, naming the field and the index."""
    data = to_json(runs.suspend())
    edit(data)
    with pytest.raises(ValueError) as info:
        from_json(data)
    assert str(info.value) == text
