"""Cassettes: model calls answered from recordings by what they ask (interpreters.Cassette).

Each run here is recorded for real (a ScriptedModel behind a TranscriptRecorder, into a file),
then run again with changes through a Cassette, under both interpreters."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import Cassette, CassetteMiss, MatchPolicy, ScriptedModel, tool
from interpreters.replay import replay
from interpreters.streams.cassette import CassetteReport
from interpreters.streams.cassette.request import Canonicalizer
from interpreters.streams.scripted import Reply, error, tool_call
from interpreters.transcript import TranscriptError, TranscriptRecorder

MODEL = Model(id="m")
CONFIG = AgentLoopConfig(model=MODEL)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="add")
def add_wrong(a: int, b: int) -> int:
    """Add two integers."""
    return a + b + 1


@tool(name="add")
def add_described(a: int, b: int) -> int:
    """Add two whole numbers and return the sum."""
    return a + b


def tool_replies() -> list[Any]:
    return [tool_call("add", {"a": 2, "b": 3}), tool_call("add", {"a": 5, "b": 4}), "2 + 3 + 4 = 9."]


def context(system: str = "Be exact.", tools: Any = (add,)) -> AgentContext:
    return AgentContext(system_prompt=system, tools=list(tools))


def record(flavour: Any, path: Path, replies: list[Any], prompt: str = "2 + 3 + 4?", ctx: AgentContext | None = None,
           config: AgentLoopConfig = CONFIG) -> list[Any]:
    ctx = ctx or context()
    with TranscriptRecorder(path, ctx, config) as recorder:
        _, messages = flavour.collect(lambda: flavour.agent_loop(prompt, ctx, config, None, ScriptedModel(replies),
                                                                 journal=recorder))
    return messages


def run(flavour: Any, cassette: Any, prompt: str = "2 + 3 + 4?", ctx: AgentContext | None = None,
        config: AgentLoopConfig = CONFIG, **options: Any) -> list[Any]:
    ctx = ctx or context()
    _, messages = flavour.collect(lambda: flavour.agent_loop(prompt, ctx, config, None, cassette, **options))
    return messages


@pytest.fixture
def recorded(tmp_path: Path, flavour: Any) -> Path:
    path = tmp_path / "run.jsonl"
    record(flavour, path, tool_replies())
    return path


# -- what must show ------------------------------------------------------------------------------


def test_an_unchanged_run_is_answered_exactly(recorded: Path, flavour: Any) -> None:
    cassette = Cassette(recorded)
    assert run(flavour, cassette)[-1].text == "2 + 3 + 4 = 9."
    report = cassette.report()
    assert report.labels == ["exact", "exact", "exact"]
    assert [(a.call, a.recording.call, a.differences) for a in report.answers] == [(1, 1, ()), (2, 2, ()), (3, 3, ())]
    assert report.unused == ()


def test_a_reworded_system_prompt_still_replays_drifted(recorded: Path, flavour: Any) -> None:
    cassette = Cassette(recorded)
    assert run(flavour, cassette, ctx=context("Be exact and brief."))[-1].text == "2 + 3 + 4 = 9."
    report = cassette.report()
    assert report.labels == ["drifted"] * 3
    assert [str(d) for d in report.answers[0].differences] == [
        'system_prompt: recorded "Be exact.", now "Be exact and brief."']
    assert all(a.differences == report.answers[0].differences for a in report.answers)


def test_a_changed_tool_description_still_replays_drifted(recorded: Path, flavour: Any) -> None:
    cassette = Cassette(recorded)
    run(flavour, cassette, ctx=context(tools=[add_described]))
    report = cassette.report()
    assert report.labels == ["drifted"] * 3
    assert [str(d) for d in report.answers[2].differences] == [
        'tools.add.description: recorded "Add two integers.", now "Add two whole numbers and return the sum."']


def test_a_changed_tool_result_is_a_miss_naming_the_field(recorded: Path, flavour: Any) -> None:
    cassette = Cassette(recorded)
    with pytest.raises(CassetteMiss) as caught:
        run(flavour, cassette, ctx=context(tools=[add_wrong]))
    assert str(caught.value) == (
        "model call 2 has no recording (policy 'forgiving').\n"
        f"  nearest recorded request: {recorded} step 8 (model call 2)\n"
        "  first differing key field: messages.2.content.0.text\n"
        '    recorded: "5"\n'
        '    now:      "6"')
    assert (caught.value.call, caught.value.nearest.call, caught.value.difference.path) == (
        2, 2, "messages.2.content.0.text")
    assert isinstance(caught.value, AssertionError)
    assert cassette.report().labels == ["exact"]


def test_strict_makes_a_reworded_prompt_a_miss(recorded: Path, flavour: Any) -> None:
    with pytest.raises(CassetteMiss, match=r"model call 1 has no recording \(policy 'strict'\)") as caught:
        run(flavour, Cassette(recorded, match="strict"), ctx=context("Be exact and brief."))
    assert (caught.value.difference.path, caught.value.difference.recorded, caught.value.difference.now) == (
        "system_prompt", "Be exact.", "Be exact and brief.")


def test_structural_forgives_a_changed_prompt_text(recorded: Path, flavour: Any) -> None:
    cassette = Cassette(recorded, match="structural")
    run(flavour, cassette, prompt="What is 2 + 3 + 4?")
    report = cassette.report()
    assert report.labels == ["drifted"] * 3
    assert [d.path for d in report.answers[0].differences] == ["messages.0.content"]


def test_a_policy_overrides_one_field(recorded: Path, flavour: Any) -> None:
    policy = MatchPolicy("forgiving", {"system_prompt": "ignored"})
    cassette = Cassette(recorded, match=policy)
    run(flavour, cassette, ctx=context("Be exact and brief."))
    assert cassette.report().labels == ["exact"] * 3


def test_on_miss_live_costs_only_the_changed_suffix(recorded: Path, tmp_path: Path, flavour: Any) -> None:
    live = ScriptedModel(["2 + 3 + 1 + 4 + 1 = 11."])
    cassette = Cassette(recorded, on_miss="live", live=live)
    new = tmp_path / "new.jsonl"
    ctx = context(tools=[add_wrong])
    with TranscriptRecorder(new, ctx, CONFIG) as recorder:
        messages = run(flavour, cassette, ctx=ctx, journal=recorder)
    assert messages[-1].text == "2 + 3 + 1 + 4 + 1 = 11."
    assert cassette.report().labels == ["exact", "live"]
    assert live.calls == 1
    assert len(live.requests[0].context.messages) == 3  # asked from the first miss on, never before
    replayed = replay(new)  # strictly: every recorded effect again, or ReplayDivergence
    assert replayed.finished and replayed.messages[-1].text == "2 + 3 + 1 + 4 + 1 = 11."


def test_on_miss_live_stays_live_for_the_rest_of_the_run(recorded: Path, flavour: Any) -> None:
    live = ScriptedModel([tool_call("add", {"a": 1, "b": 1}), "done"])
    cassette = Cassette(recorded, on_miss="live", live=live)
    run(flavour, cassette, prompt="1 + 1?")
    assert cassette.report().labels == ["live", "live"]
    assert live.calls == 2


def test_a_stub_answers_one_miss(recorded: Path, flavour: Any) -> None:
    stub = ScriptedModel(["I cannot tell."])
    cassette = Cassette(recorded, on_miss=stub)
    assert run(flavour, cassette, prompt="Who are you?")[-1].text == "I cannot tell."
    assert cassette.report().labels == ["stub"]
    assert [r.call for r in cassette.report().unused] == [1, 2, 3]


def test_on_miss_live_needs_live() -> None:
    with pytest.raises(ValueError) as caught:
        Cassette("x.jsonl", on_miss="live")
    assert str(caught.value) == ("on_miss='live' needs live=: the stream function that answers from the first miss "
                                 "on (for example an HTTP provider)")
    with pytest.raises(ValueError, match="on_miss must be 'fail', 'live' or a stream function"):
        Cassette("x.jsonl", on_miss="ask")


# -- labels ------------------------------------------------------------------------------------------


def test_unused_lists_the_calls_never_served(recorded: Path, flavour: Any) -> None:
    cassette = Cassette(recorded, on_miss=ScriptedModel(["?"]))
    run(flavour, cassette, prompt="Hi")
    assert [str(r) for r in cassette.report().unused] == [
        f"{recorded} step 1 (model call 1)", f"{recorded} step 8 (model call 2)", f"{recorded} step 15 (model call 3)"]


def test_a_folder_answers_each_run_from_its_own_transcript(tmp_path: Path, flavour: Any) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    record(flavour, folder / "a.jsonl", tool_replies())
    record(flavour, folder / "b.jsonl", [tool_call("add", {"a": 1, "b": 1}), "2."], prompt="1 + 1?")
    cassette = Cassette(folder)
    assert run(flavour, cassette, prompt="1 + 1?")[-1].text == "2."
    assert run(flavour, cassette)[-1].text == "2 + 3 + 4 = 9."
    report = cassette.report()
    assert report.labels == ["exact"] * 5
    assert [Path(a.recording.path).name for a in report.answers] == ["b.jsonl"] * 2 + ["a.jsonl"] * 3


def test_repeats_are_answered_in_turn_then_miss(tmp_path: Path, flavour: Any) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    record(flavour, folder / "1.jsonl", ["Heads."], prompt="Toss a coin.")
    record(flavour, folder / "2.jsonl", ["Tails."], prompt="Toss a coin.")
    cassette = Cassette(folder)
    assert [run(flavour, cassette, prompt="Toss a coin.")[-1].text for _ in range(2)] == ["Heads.", "Tails."]
    with pytest.raises(CassetteMiss) as caught:
        run(flavour, cassette, prompt="Toss a coin.")
    assert str(caught.value) == (
        f"model call 3 matches 2 recording(s), each already served: {folder / '1.jsonl'} step 1 (model call 1), "
        f"{folder / '2.jsonl'} step 1 (model call 1). A recording answers once; record the run again to answer it "
        "more often.")


def test_a_call_answered_from_another_transcript_is_reordered(tmp_path: Path, flavour: Any) -> None:
    # a.jsonl answers the first call; its second is a recording of b.jsonl's run only.
    record(flavour, tmp_path / "a.jsonl", [tool_call("add", {"a": 2, "b": 3}), "Five."], prompt="2 + 3?")
    record(flavour, tmp_path / "b.jsonl", [tool_call("add", {"a": 2, "b": 3}), "It is 5."], prompt="2 + 3?")
    cassette = Cassette([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    assert run(flavour, cassette, prompt="2 + 3?")[-1].text == "Five."
    assert run(flavour, cassette, prompt="2 + 3?")[-1].text == "It is 5."
    labels = [(a.label, Path(a.recording.path).name) for a in cassette.report().answers]
    assert labels == [("exact", "a.jsonl"), ("exact", "a.jsonl"), ("exact", "b.jsonl"), ("exact", "b.jsonl")]


def test_the_same_request_from_another_position_is_reordered(tmp_path: Path, flavour: Any) -> None:
    path = tmp_path / "a.jsonl"
    record(flavour, path, [tool_call("add", {"a": 2, "b": 3}), "Five."], prompt="2 + 3?")
    # A new run whose first request is the recording's second (the history handed in up front).
    first = run(flavour, Cassette(path), prompt="2 + 3?")
    cassette = Cassette(path)
    ctx = AgentContext(system_prompt="Be exact.", tools=[add], messages=first[:3])
    _, messages = flavour.collect(lambda: flavour.agent_loop_continue(ctx, CONFIG, None, cassette))
    assert messages[-1].text == "Five."
    assert [(a.label, a.recording.call) for a in cassette.report().answers] == [("exact", 2)]


# -- replayed as recorded ----------------------------------------------------------------------------


def test_a_recorded_error_replays_as_recorded(tmp_path: Path, flavour: Any) -> None:
    path = tmp_path / "a.jsonl"
    recorded = record(flavour, path, [error("overloaded", text="Let me")], prompt="Hi")
    again = run(flavour, Cassette(path), prompt="Hi")
    assert (again[-1].stop_reason, again[-1].error_message, again[-1].text) == ("error", "overloaded", "Let me")
    assert again[-1].content == recorded[-1].content


def test_a_recorded_stream_failure_fails_again(tmp_path: Path, flavour: Any) -> None:
    def broken(model: Any, ctx: Any, options: Any = None) -> Any:
        raise ConnectionError("connection reset")

    path = tmp_path / "a.jsonl"
    ctx = context()
    with TranscriptRecorder(path, ctx, CONFIG) as recorder:
        flavour.collect(lambda: flavour.agent_loop("Hi", ctx, CONFIG, None, broken, journal=recorder))
    again = run(flavour, Cassette(path), prompt="Hi")
    assert again[-1].stop_reason == "error"
    assert "connection reset" in again[-1].error_message


def test_parallel_results_in_another_order_still_match(tmp_path: Path, flavour: Any) -> None:
    import time

    @tool(name="add")
    def slow_first(a: int, b: int) -> int:
        """Add two integers."""
        time.sleep(0.05 if a == 1 else 0)
        return a + b

    replies = [Reply(tool_calls=[("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 2})]), "2 and 4."]
    path = tmp_path / "a.jsonl"
    record(flavour, path, replies, prompt="Both?", ctx=context(tools=[slow_first]))
    cassette = Cassette(path)
    run(flavour, cassette, prompt="Both?", ctx=context(tools=[add]))
    assert cassette.report().labels == ["exact", "exact"]


def test_more_calls_than_recorded_is_a_miss(tmp_path: Path, flavour: Any) -> None:
    path = tmp_path / "a.jsonl"
    record(flavour, path, [tool_call("add", {"a": 2, "b": 3}), "Five."], prompt="2 + 3?")
    cassette = Cassette(path)
    ctx = context()
    _, first = flavour.collect(lambda: flavour.agent_loop("2 + 3?", ctx, CONFIG, None, cassette))
    with pytest.raises(CassetteMiss) as caught:
        flavour.collect(lambda: flavour.agent_loop("And 4 more?", AgentContext(
            system_prompt="Be exact.", tools=[add], messages=first), CONFIG, None, cassette))
    assert str(caught.value.difference) == "messages.3.role: recorded (absent), now \"assistant\""


# -- bad input ---------------------------------------------------------------------------------------


def test_an_empty_transcript_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(TranscriptError, match="empty.jsonl"):
        Cassette(path)


def test_a_damaged_transcript_is_refused_naming_the_line(recorded: Path) -> None:
    lines = recorded.read_text().splitlines(keepends=True)
    lines[3] = '{"step": 3, "input": {"type": "nonsense"}, "effects": []}\n'
    recorded.write_text("".join(lines))
    with pytest.raises(TranscriptError, match=r"line 4"):
        Cassette(recorded)


def test_a_folder_without_transcripts_and_a_missing_path_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as caught:
        Cassette(tmp_path)
    assert str(caught.value) == f"{tmp_path}: the folder holds no transcripts (*.jsonl)"
    with pytest.raises(FileNotFoundError) as missing:
        Cassette(tmp_path / "nope.jsonl")
    assert str(missing.value) == f"{tmp_path / 'nope.jsonl'}: no such transcript or folder"


def test_transcripts_of_different_models_in_one_cassette(tmp_path: Path, flavour: Any) -> None:
    other = AgentLoopConfig(model=Model(id="other"))
    record(flavour, tmp_path / "m.jsonl", ["From m."], prompt="Hi")
    record(flavour, tmp_path / "other.jsonl", ["From other."], prompt="Hi", config=other)
    cassette = Cassette(tmp_path)
    assert run(flavour, cassette, prompt="Hi", config=other)[-1].text == "From other."
    assert run(flavour, cassette, prompt="Hi")[-1].text == "From m."
    assert cassette.report().labels == ["exact", "exact"]


def test_secrets_scrubbed_from_the_recording_do_not_miss(tmp_path: Path, flavour: Any) -> None:
    key = "sekrit-key-0123456789"

    @tool
    def whoami() -> str:
        """Who am I?"""
        return f"you are {key}"

    config = AgentLoopConfig(model=MODEL, api_key=key)
    ctx = context(tools=[whoami])
    path = tmp_path / "a.jsonl"
    record(flavour, path, [tool_call("whoami"), "Known."], prompt="Who?", ctx=ctx, config=config)
    assert key not in path.read_text()
    cassette = Cassette(path)
    assert run(flavour, cassette, prompt="Who?", ctx=ctx, config=config)[-1].text == "Known."
    assert cassette.report().labels == ["exact", "exact"]


# -- shared -------------------------------------------------------------------------------------------


def test_a_cassette_shared_by_threads_serves_each_recording_once(tmp_path: Path) -> None:
    from tests.support.flavours import SYNC

    for i in range(4):
        record(SYNC, tmp_path / f"{i}.jsonl", [tool_call("add", {"a": 2, "b": 3}), f"Five ({i})."], prompt="2 + 3?")
    cassette = Cassette(tmp_path)
    answers: list[str] = []
    threads = [threading.Thread(target=lambda: answers.append(run(SYNC, cassette, prompt="2 + 3?")[-1].text))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [f"Five ({i})." for i in range(4)]
    report = cassette.report()
    assert len({(a.recording.path, a.recording.step) for a in report.answers}) == 8
    assert report.unused == ()


def test_a_cassette_shared_by_asyncio_tasks_serves_each_recording_once(tmp_path: Path) -> None:
    from interpreters import aio
    from tests.support.flavours import SYNC

    for i in range(4):
        record(SYNC, tmp_path / f"{i}.jsonl", [tool_call("add", {"a": 2, "b": 3}), f"Five ({i})."], prompt="2 + 3?")
    cassette = Cassette(tmp_path)

    async def one() -> str:
        return (await aio.run_agent_loop("2 + 3?", context(), CONFIG, lambda e: None, stream_fn=cassette))[-1].text

    async def main() -> list[str]:
        return list(await asyncio.gather(*(one() for _ in range(4))))

    assert sorted(asyncio.run(main())) == [f"Five ({i})." for i in range(4)]
    assert cassette.report().unused == ()


def test_an_agent_runs_on_a_cassette(recorded: Path) -> None:
    from interpreters import SyncAgent

    cassette = Cassette(recorded)
    agent = SyncAgent(system_prompt="Be exact.", model=MODEL, tools=[add], stream_fn=cassette)
    agent.prompt("2 + 3 + 4?")
    assert agent.state.messages[-1].text == "2 + 3 + 4 = 9."
    assert cassette.report().labels == ["exact"] * 3


# -- the canonical form --------------------------------------------------------------------------------


def test_tool_call_ids_are_positional_aliases(recorded: Path, flavour: Any) -> None:
    messages = run(flavour, Cassette(recorded))
    canonical = Canonicalizer(MatchPolicy("strict"))
    head = {"system_prompt": "x"}
    a = canonical.request(head, messages[:3])
    renamed = [messages[0], _with_ids(messages[1], "zz"), _with_ids(messages[2], "zz")]
    assert canonical.request(head, renamed).key == a.key  # other ids, the same pairing
    unpaired = [messages[0], _with_ids(messages[1], "zz"), _with_ids(messages[2], "other")]
    assert canonical.request(head, unpaired).key != a.key  # a result that answers another call


def _with_ids(message: Any, new: str) -> Any:
    from agentcore import replace

    if message.role == "assistant":
        return replace(message, content=tuple(replace(c, id=new) if c.type == "toolCall" else c
                                              for c in message.content))
    return replace(message, tool_call_id=new)


def test_a_report_prints_every_answer(recorded: Path, flavour: Any) -> None:
    cassette = Cassette(recorded)
    run(flavour, cassette, ctx=context("Be exact and brief."))
    text = str(cassette.report())
    assert text.splitlines() == [
        f"model call 1: drifted from {recorded} step 1 (model call 1)",
        '    system_prompt: recorded "Be exact.", now "Be exact and brief."',
        f"model call 2: drifted from {recorded} step 8 (model call 2)",
        '    system_prompt: recorded "Be exact.", now "Be exact and brief."',
        f"model call 3: drifted from {recorded} step 15 (model call 3)",
        '    system_prompt: recorded "Be exact.", now "Be exact and brief."']
    assert isinstance(cassette.report(), CassetteReport)


# -- tools --------------------------------------------------------------------------------------------

WEATHER_CALLS: list[str] = []


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    WEATHER_CALLS.append(city)
    if city == "Atlantis":
        raise LookupError("no such city: Atlantis")
    return f"Sunny in {city}."


def weather_run(flavour: Any, path: Path, cities: list[str], final: str = "Done.") -> list[Any]:
    replies = [Reply(tool_calls=[("weather", {"city": c}) for c in cities]), final]
    return record(flavour, path, replies, prompt="Weather?", ctx=context(tools=[weather]))


def test_recorded_tools_replay_with_no_network(tmp_path: Path, flavour: Any) -> None:
    path = tmp_path / "w.jsonl"
    recorded = weather_run(flavour, path, ["Paris", "Atlantis"])
    WEATHER_CALLS.clear()
    cassette = Cassette(path)
    tools = cassette.tools()
    assert [(t.name, t.description, t.parameters) for t in tools] == [
        ("weather", weather.description, weather.parameters)]
    again = run(flavour, cassette, prompt="Weather?", ctx=context(tools=tools))
    assert WEATHER_CALLS == []
    assert [m.content for m in again[2:4]] == [m.content for m in recorded[2:4]]
    assert (again[3].is_error, again[3].text) == (True, "no such city: Atlantis")
    report = cassette.report()
    assert [(a.name, a.label) for a in report.tool_answers] == [("weather", "exact"), ("weather", "exact")]
    assert report.unused_tools == ()


def test_a_tool_call_with_other_arguments_is_a_miss(tmp_path: Path, flavour: Any) -> None:
    path = tmp_path / "w.jsonl"
    weather_run(flavour, path, ["Paris"])
    cassette = Cassette(path, on_miss=ScriptedModel([Reply(tool_calls=[("weather", {"city": "Lyon"})]), "x"]))
    with pytest.raises(CassetteMiss) as caught:
        run(flavour, cassette, prompt="Lyon?", ctx=context(tools=cassette.tools()))
    assert str(caught.value) == (
        'tool call 1 (weather with {"city":"Lyon"}) has no recording.\n'
        f"  nearest recorded call: {path} step 7 (weather)\n"
        "  first differing argument: arguments.city\n"
        '    recorded: "Paris"\n'
        '    now:      "Lyon"')


def test_a_live_tool_answers_a_tool_miss(tmp_path: Path, flavour: Any) -> None:
    path = tmp_path / "w.jsonl"
    weather_run(flavour, path, ["Paris"])
    WEATHER_CALLS.clear()
    cassette = Cassette(path, on_miss=ScriptedModel([Reply(tool_calls=[("weather", {"city": "Lyon"})]), "x"]))
    messages = run(flavour, cassette, prompt="Lyon?", ctx=context(tools=cassette.tools(live=[weather])))
    assert messages[2].text == "Sunny in Lyon."
    assert WEATHER_CALLS == ["Lyon"]
    assert [a.label for a in cassette.report().tool_answers] == ["live"]


def test_tool_calls_answered_out_of_recorded_order_are_reordered(tmp_path: Path, flavour: Any) -> None:
    path = tmp_path / "w.jsonl"
    weather_run(flavour, path, ["Paris", "Rome"])
    cassette = Cassette(path, on_miss=ScriptedModel([Reply(tool_calls=[("weather", {"city": "Rome"}),
                                                                        ("weather", {"city": "Paris"})]), "x"]))
    config = AgentLoopConfig(model=MODEL, tool_execution="sequential")
    run(flavour, cassette, prompt="Rome and Paris?", ctx=context(tools=cassette.tools()), config=config)
    assert [(a.label, a.recording.step) for a in cassette.report().tool_answers] == [
        ("reordered", 11), ("exact", 11)]


def test_tools_names_must_be_recorded(recorded: Path) -> None:
    with pytest.raises(ValueError) as caught:
        Cassette(recorded).tools(["search"])
    assert str(caught.value) == "the cassette's transcripts declare no tool 'search' (they declare 'add')"


def test_a_miss_stops_the_run_which_still_ends(recorded: Path, flavour: Any) -> None:
    events: list[Any] = []
    cassette = Cassette(recorded)
    ctx = context(tools=[add_wrong])
    with pytest.raises(CassetteMiss):
        flavour.collect(lambda: flavour.agent_loop("2 + 3 + 4?", ctx, CONFIG, None, cassette),
                        on_event=events.append)
    assert [e.type for e in events].count("agent_end") == 1 and events[-1].type == "agent_end"
    assert events[-1].messages[-1].stop_reason == "aborted"



def test_a_recorded_abort_mid_stream_replays_as_recorded(tmp_path: Path, flavour: Any) -> None:
    path = tmp_path / "aborted.jsonl"
    ctx = context()
    with TranscriptRecorder(path, ctx, CONFIG) as recorder:
        model = ScriptedModel(["A long answer that is cut short."], chunk_size=4)
        box: list[Any] = []

        def start() -> Any:
            box.append(flavour.agent_loop("Talk.", ctx, CONFIG, None, model, journal=recorder))
            return box[0]

        def stop_at_the_second_delta(event: Any) -> None:
            if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
                box[0].signal.abort("user")

        _, recorded = flavour.collect(start, on_event=stop_at_the_second_delta)
    assert recorded[-1].stop_reason == "aborted" and recorded[-1].text
    again = run(flavour, Cassette(path), prompt="Talk.")
    assert (again[-1].stop_reason, again[-1].content) == ("aborted", recorded[-1].content)


def test_a_bad_match_policy_is_refused_naming_the_problem() -> None:
    with pytest.raises(ValueError) as preset:
        MatchPolicy("lenient")
    assert str(preset.value) == "unknown match preset 'lenient': use one of 'strict', 'forgiving', 'structural'"
    with pytest.raises(ValueError) as cls:
        MatchPolicy("strict", {"system_prompt": "maybe"})  # type: ignore[dict-item]
    assert str(cls.value) == ("field pattern 'system_prompt': the class must be one of 'key', 'checked', 'ignored', "
                              "not 'maybe'")
    with pytest.raises(ValueError) as pattern:
        MatchPolicy("strict", {"messages..content": "key"})
    assert str(pattern.value) == ("a field pattern is a dot-separated path such as 'tools.*.description', not "
                                  "'messages..content'")
    with pytest.raises(TypeError, match=r"^match must be a preset name \('strict', 'forgiving', 'structural'\) "
                                        r"or a MatchPolicy, not int$"):
        Cassette("x.jsonl", match=3)  # type: ignore[arg-type]


def test_two_identical_recordings_answer_two_runs_exactly_each(tmp_path: Path, flavour: Any) -> None:
    for name in ("a.jsonl", "b.jsonl"):
        record(flavour, tmp_path / name, [tool_call("add", {"a": 2, "b": 3}), "Five."], prompt="2 + 3?")
    cassette = Cassette(tmp_path)
    run(flavour, cassette, prompt="2 + 3?")
    run(flavour, cassette, prompt="2 + 3?")
    report = cassette.report()
    assert report.labels == ["exact"] * 4 and report.unused == ()
    assert [Path(a.recording.path).name for a in report.answers] == ["a.jsonl", "a.jsonl", "b.jsonl", "b.jsonl"]


def test_patterns_with_an_index_and_double_stars(recorded: Path, flavour: Any) -> None:
    # The first message (the prompt) is only checked; any other message text stays a key.
    policy = MatchPolicy("forgiving", {"messages.0.content": "checked", "tools.**": "ignored"})
    cassette = Cassette(recorded, match=policy)
    run(flavour, cassette, prompt="2 + 3 + 4, please?", ctx=context(tools=[add_described]))
    assert cassette.report().labels == ["drifted", "drifted", "drifted"]
    assert [d.path for d in cassette.report().answers[0].differences] == ["messages.0.content"]
