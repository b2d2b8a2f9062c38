"""Properties of cassettes over generated runs: a recorded run always replays exactly through its
cassette (sync and asyncio alike), and a request's key does not depend on what the canonical form
leaves out (tool-call ids, timestamps, usage)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import AgentContext, AgentLoopConfig, Model, replace
from interpreters import Cassette, ScriptedModel, tool
from interpreters.streams.cassette import MatchPolicy
from interpreters.streams.cassette.request import Canonicalizer
from interpreters.streams.scripted import Reply
from interpreters.transcript import TranscriptRecorder
from tests.support.flavours import FLAVOURS

CONFIG = AgentLoopConfig(model=Model(id="m"))


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


CONTEXT = AgentContext("Be exact.", [], [add])

turns = st.lists(st.lists(st.tuples(st.integers(-50, 50), st.integers(-50, 50)), min_size=1, max_size=3),
                 max_size=4)
texts = st.text(alphabet="abc xyz.", min_size=1, max_size=12)


def script(calls: list[list[tuple[int, int]]], final: str) -> list[Any]:
    return [Reply(tool_calls=[("add", {"a": a, "b": b}) for a, b in turn]) for turn in calls] + [final]


def messages_of(flavour: Any, stream_fn: Any, journal: Any = None) -> list[Any]:
    _, messages = flavour.collect(lambda: flavour.agent_loop("Sum.", CONTEXT, CONFIG, None, stream_fn,
                                                             **({"journal": journal} if journal else {})))
    return messages


def without_timestamps(messages: list[Any]) -> list[Any]:
    return [replace(m, timestamp=0) for m in messages]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=turns, final=texts, recorder=st.sampled_from(FLAVOURS), replayer=st.sampled_from(FLAVOURS))
def test_a_recorded_run_replays_exactly_through_its_cassette(calls: Any, final: str, recorder: Any,
                                                             replayer: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.jsonl"
        with TranscriptRecorder(path, CONTEXT, CONFIG) as journal:
            recorded = messages_of(recorder, ScriptedModel(script(calls, final)), journal)
        cassette = Cassette(path)
        replayed = messages_of(replayer, cassette)
        assert without_timestamps(replayed) == without_timestamps(recorded)
        report = cassette.report()
        assert report.labels == ["exact"] * (len(calls) + 1) and report.unused == ()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=turns, final=texts, suffix=st.text(alphabet="xyz0123", min_size=1, max_size=6),
       stamp=st.integers(0, 2**40))
def test_the_key_ignores_call_ids_timestamps_and_usage(calls: Any, final: str, suffix: str, stamp: int) -> None:
    from tests.support.flavours import SYNC

    messages = messages_of(SYNC, ScriptedModel(script(calls, final)))
    renamed = []
    for m in messages:
        m = replace(m, timestamp=stamp)
        if m.role == "assistant":
            m = replace(m, usage=replace(m.usage, input=stamp % 1000), content=tuple(
                replace(c, id=c.id + suffix) if c.type == "toolCall" else c for c in m.content))
        elif m.role == "toolResult":
            m = replace(m, tool_call_id=m.tool_call_id + suffix)
        renamed.append(m)
    for preset in ("strict", "forgiving", "structural"):
        canonical = Canonicalizer(MatchPolicy(preset))
        a = canonical.request({"system_prompt": "x"}, messages)
        b = Canonicalizer(MatchPolicy(preset)).request({"system_prompt": "x"}, renamed)
        assert (a.key, a.checked, a.position) == (b.key, b.checked, b.position)
