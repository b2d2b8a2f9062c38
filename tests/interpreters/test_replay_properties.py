"""Property tests: record then strict-replay is exact; any mutated answer is caught at its step."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import AgentContext, AgentLoopConfig, Model, UserMessage
from interpreters import AbortSignal, ScriptedModel, tool
from interpreters.replay import ReplayDivergence, replay
from interpreters.streams.scripted import Reply, ScriptedCall, error
from interpreters.transcript import read_transcript
from tests.support.clocks import TickingClock
from tests.support.flavours import FLAVOURS, SYNC, Flavour


@tool
def ok(x: int) -> str:
    """Succeeds."""
    return f"ok {x}"


@tool
def boom(x: int) -> str:
    """Fails."""
    raise ValueError(f"boom {x}")


call = st.tuples(st.sampled_from(["ok", "boom", "missing"]), st.integers(0, 9))
reply = st.one_of(
    st.text("abc xyz", min_size=1, max_size=30).map(lambda t: Reply(text=t)),
    st.lists(call, min_size=1, max_size=3).map(
        lambda cs: Reply(text="calling", tool_calls=[ScriptedCall(n, {"x": x}) for n, x in cs])),
    st.just(error("model overloaded")),
)
scenario = st.fixed_dictionaries({
    "replies": st.lists(reply, min_size=1, max_size=5),
    "mode": st.sampled_from(["parallel", "sequential"]),
    "steer_at": st.sets(st.integers(0, 6), max_size=2),
    "follow_up_at": st.sets(st.integers(0, 3), max_size=2),
    "abort_at": st.one_of(st.none(), st.integers(0, 6)),
})


def follow_ups(sc: dict[str, Any]) -> Any:
    """A follow-up queue that hands a message at the chosen polls."""
    polls = itertools.count()

    def poll() -> list[Any]:
        n = next(polls)
        return [UserMessage(f"follow up {n}", timestamp=100 + n)] if n in sc["follow_up_at"] else []

    return poll


def record_scenario(path: Path, sc: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The scenario run on the sync interpreter and recorded: ``(events, messages)``."""
    polls = itertools.count()
    signal = AbortSignal()

    def steering() -> list[Any]:
        n = next(polls)
        if sc["abort_at"] == n:
            signal.abort()
        return [UserMessage(f"steer {n}", timestamp=n)] if n in sc["steer_at"] else []

    ctx = AgentContext("sys", [], [ok, boom])
    cfg = AgentLoopConfig(model=Model(id="m"), tool_execution=sc["mode"], get_steering_messages=steering,
                          get_follow_up_messages=follow_ups(sc))
    replies = sc["replies"] + ["fallback"] * 8
    return SYNC.record(path, "go", ctx, cfg, ScriptedModel(replies), signal, clock=TickingClock(1000))


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(sc=scenario)
def test_record_then_strict_replay_is_identical(tmp_path: Path, sc: dict[str, Any]) -> None:
    path = tmp_path / "p.jsonl"
    events, messages = record_scenario(path, sc)
    result = replay(path)
    assert result.events == events
    assert result.messages == messages
    assert result.finished


def _mutations(path: Path) -> list[tuple[Any, Any]]:
    """(entry, how to mutate its line) for every answer that can be changed."""
    t = read_transcript(path)
    found: list[tuple[Any, Any]] = []
    for i, entry in enumerate(t.entries):
        kind = entry.input_json["type"]
        if kind == "tool_finished":
            def change(o: Any) -> None:
                o["input"]["result"]["content"][0]["text"] += "?"
            found.append((entry, change))
        elif kind == "stream_event_received" and entry.input_json["event"]["type"] == "done":
            content = entry.input_json["event"]["message"]["content"]
            j = next((k for k, c in enumerate(content) if c["type"] == "text"), None)
            if j is not None:
                def change_text(o: Any, j: int = j) -> None:
                    o["input"]["event"]["message"]["content"][j]["text"] += " (edited)"
                found.append((entry, change_text))
        if (i + 1 < len(t.entries) and kind in ("tool_finished", "tool_failed")
                and t.entries[i + 1].input_json["type"] in ("tool_finished", "tool_failed")
                and t.entries[i + 1].input_json["id"] != entry.input_json["id"]):
            found.append((entry, "swap"))
    return found


@SETTINGS
@given(sc=scenario, pick=st.integers(0, 1000))
def test_a_mutated_answer_is_caught_at_its_step(tmp_path: Path, sc: dict[str, Any], pick: int) -> None:
    path = tmp_path / "m.jsonl"
    record_scenario(path, sc)
    mutations = _mutations(path)
    if not mutations:
        return
    entry, how = mutations[pick % len(mutations)]
    step, at = entry.step, entry.line - 1  # tool results and done events have lines of their own
    lines = path.read_text().splitlines()
    if how == "swap":
        a, b = json.loads(lines[at]), json.loads(lines[at + 1])
        a["input"], b["input"] = b["input"], a["input"]
        lines[at], lines[at + 1] = json.dumps(a), json.dumps(b)
    else:
        obj = json.loads(lines[at])
        how(obj)
        lines[at] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n")
    try:
        replay(path)
    except ReplayDivergence as exc:
        assert exc.report.step == step, str(exc)
        assert exc.report.kind in ("effect", "rejected")
    else:
        raise AssertionError(f"mutation at step {step} ({how}) was not detected")


@SETTINGS
@given(sc=scenario, flavour=st.sampled_from(FLAVOURS))
def test_llm_only_replay_reproduces_the_recorded_aborts(tmp_path: Path, sc: dict[str, Any], flavour: Flavour) -> None:
    """Tools and hooks run live; the live steering hook steers like the recorded one but never
    aborts: each recorded abort must come from the replay itself, at the recorded step."""
    path = tmp_path / "p.jsonl"
    events, messages = record_scenario(path, sc)
    polls = itertools.count()

    def steering() -> list[Any]:
        n = next(polls)
        return [UserMessage(f"steer {n}", timestamp=n)] if n in sc["steer_at"] else []

    cfg = AgentLoopConfig(model=Model(id="m"), tool_execution=sc["mode"], get_steering_messages=steering,
                          get_follow_up_messages=follow_ups(sc))
    result = flavour.call(flavour.replay_llm, path, cfg, [ok, boom])
    assert result.events == events
    assert result.messages == messages


KEY = "key-" + "Q7" * 10


@tool
def leak(x: int) -> str:
    """Prints secrets: the config's key and a key-shaped one."""
    if x % 2:
        raise RuntimeError(f"401 with {KEY}")
    return f"token {KEY} and sk-proj-{'z' * 24} for {x}"


@SETTINGS
@given(calls=st.lists(st.lists(st.tuples(st.sampled_from(["ok", "leak"]), st.integers(0, 9)), min_size=1, max_size=3),
                      min_size=1, max_size=4),
       mode=st.sampled_from(["parallel", "sequential"]), flavour=st.sampled_from(FLAVOURS))
def test_a_scrubbed_recording_replays_strictly_and_llm_only(
        tmp_path: Path, calls: list[list[tuple[str, int]]], mode: str, flavour: Flavour) -> None:
    path = tmp_path / "s.jsonl"
    ctx = AgentContext("sys", [], [ok, leak])
    cfg = AgentLoopConfig(model=Model(id="m"), tool_execution=mode, api_key=KEY)
    replies = [Reply(text="calling", tool_calls=[ScriptedCall(n, {"x": x}) for n, x in batch]) for batch in calls]
    events, messages = SYNC.record(path, "go", ctx, cfg, ScriptedModel(replies + ["done"]))
    written = path.read_text()
    assert KEY not in written and "sk-proj-" + "z" * 24 not in written
    assert replay(path).finished
    result = flavour.call(flavour.replay_llm, path, cfg, [ok, leak])
    assert result.events == events and result.messages == messages


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sc=scenario, data=st.data())
def test_a_damaged_transcript_is_a_transcript_error_or_replays(tmp_path: Path, sc: dict[str, Any], data: Any) -> None:
    """One byte changed or the file cut anywhere: reading (and what readers touch: the initial
    state, every entry's effects, a strict replay) raises nothing but TranscriptError or
    ReplayDivergence (a cut last line is a RuntimeWarning, documented)."""
    import warnings

    from interpreters.transcript import TranscriptError

    path = tmp_path / "d.jsonl"
    record_scenario(path, sc)
    raw = path.read_bytes()
    how = data.draw(st.sampled_from(["cut", "byte", "type key", "type tag"]))
    if how in ("type key", "type tag"):  # where damage turns a record into a plain mapping
        marks = [i for i in range(len(raw)) if raw.startswith(b'"type":"', i)]
        at = data.draw(st.sampled_from(marks)) + (4 if how == "type key" else 8)
    else:
        at = data.draw(st.integers(0, len(raw) - 1))
    if how == "cut":
        damaged = raw[:at]
    else:
        damaged = raw[:at] + data.draw(st.sampled_from(list(b'azAZ09_-{}[]:,"nt \\'))).to_bytes(1, "big") + raw[at + 1:]
    path.write_bytes(damaged)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            t = read_transcript(path)
            _ = t.initial_state
            for entry in t:
                _ = entry.effects
            replay(t)
        except (TranscriptError, ReplayDivergence):
            pass
