"""Transcripts of older format versions: read as before; replayed by today's loop, which tells
why a run recorded with the old turn order no longer replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel
from interpreters.replay import ReplayDivergence, replay
from interpreters.transcript import VERSION, read_transcript, update_digest
from tests.support.flavours import SYNC

DATA = Path(__file__).parents[2] / "data"


def test_this_library_writes_version_6(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    SYNC.record(path, "hi", ctx, cfg, ScriptedModel(["hello"]))
    assert VERSION == 6 and read_transcript(path).version == 6


def test_a_version_4_run_replays_identically_with_its_json_module_digests() -> None:
    # Recorded by agentcore-fx 0.4.0: streamed thinking, text and a tool call with usage whose
    # costs the json module writes as 1.5e-05 (the codec as 0.000015); its update digests hash
    # the json module's text.
    t = read_transcript(DATA / "v4-streamed-tools-with-costs.jsonl")
    assert t.version == 4 and t.header["library_version"] == "0.4.0"
    digested = [(entry, i) for entry in t for i, e in enumerate(entry.effects_json)
                if e.get("event", {}).get("type") == "message_update" and "digest" in e["event"]]
    assert len(digested) == 12
    result = replay(t)
    assert result.finished and result.messages[-1].text == "2 + 3 = 5"
    assert result.messages[1].usage.cost.input == 1.5e-05  # type: ignore[union-attr]
    # Hashed as version 5 does, the digest of an update whose header carries those costs differs.
    entry, i = next((entry, i) for entry, i in digested if entry.input.event.type == "toolcall_end")
    update = entry.effects[i].event  # type: ignore[attr-defined]
    recorded = entry.effects_json[i]["event"]["digest"]
    assert update_digest([update], version=4) == recorded != update_digest([update], version=5)


def test_a_version_2_run_the_turn_order_does_not_touch_replays_identically() -> None:
    # Recorded by agentcore-fx 0.1.0: two tool turns, should_stop_after_turn set.
    t = read_transcript(DATA / "v2-tools.jsonl")
    assert t.version == 2
    result = replay(t)
    assert result.finished and result.messages[-1].text == "2 + 3 = 5"


def test_a_version_2_run_with_steering_and_prepare_next_turn_says_why_it_diverges() -> None:
    # Recorded by agentcore-fx 0.1.0, whose loop polled steering twice between two turns.
    t = read_transcript(DATA / "v2-steering-and-prepare.jsonl")
    assert t.version == 2 and t.steps == 18
    with pytest.raises(ReplayDivergence) as info:
        replay(t)
    lines = str(info.value).splitlines()
    assert lines[0] == "replay diverged at step 9 (turn 1), effect 4: recorded poll_steering, now prepare_next_turn"
    assert lines[1] == (
        "note: this transcript has format version 2: it was recorded by a library whose loop ran "
        "prepare_next_turn after should_stop_after_turn and polled steering again before each turn. "
        "Today's loop (format version 3 on) runs prepare_next_turn right after turn_end and polls steering "
        "once per turn, so a run that used those hooks, or a thinking level with a model that does "
        "not reason, replays differently. Record it again with this version.")
    assert info.value.report.recorded_version == 2


def test_a_version_3_divergence_has_no_such_note(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    SYNC.record(path, "hi", ctx, cfg, ScriptedModel(["hello"]))
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1] + [lines[-1].replace('"hello"', '"HELLO"', 1)]) + "\n")
    with pytest.raises(ReplayDivergence) as info:
        replay(path)
    assert "note: this transcript has format version" not in str(info.value)


@pytest.mark.parametrize("damage", ["messages are a string", "run missing", "unknown model tag"])
def test_a_damaged_initial_state_names_the_header_line(tmp_path: Path, damage: str) -> None:
    import json

    from interpreters.replay import replay_llm
    from interpreters.transcript import TranscriptError

    path = tmp_path / "run.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    SYNC.record(path, "hi", ctx, cfg, ScriptedModel(["hello"]))
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    state = header["initial_state"]
    if damage == "messages are a string":
        state["run"]["messages"] = "oops"
    elif damage == "run missing":
        del state["run"]
    else:
        state["run"]["model"]["type"] = "nope"
    path.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    for attempt in (lambda: replay(path), lambda: replay_llm(path, cfg)):
        with pytest.raises(TranscriptError) as info:
            attempt()
        assert str(info.value).startswith(f"{path}: line 1: the header's initial_state does not decode: ")


def test_a_version_3_run_replays_identically_without_update_digests() -> None:
    # Recorded by agentcore-fx 0.2.0: streamed thinking, text and a tool call, then an answer.
    t = read_transcript(DATA / "v3-streamed-tools.jsonl")
    assert t.version == 3 and t.header["library_version"] == "0.2.0"
    updates = [e for entry in t for e in entry.effects_json if e.get("event", {}).get("type") == "message_update"]
    assert updates and all(e == {"type": "emit", "event": {"type": "message_update"}} for e in updates)
    result = replay(t)
    assert result.finished and result.messages[-1].text == "2 + 3 = 5"
