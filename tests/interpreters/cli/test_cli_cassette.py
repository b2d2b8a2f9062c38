"""``agentcore transcript match|accept|rerecord``: cassettes on the command line."""

from __future__ import annotations

from pathlib import Path

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, run_agent_loop, tool
from interpreters.streams.scripted import tool_call
from interpreters.transcript import TranscriptRecorder, read_transcript

from .cli_helpers import run_cli


@tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


@tool(name="add")
def add_badly(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b + 1)


def _record(path: Path, tool_: object, system: str = "Be exact.") -> Path:
    context = AgentContext(system, [], [tool_])
    config = AgentLoopConfig(model=Model(id="m"))
    with TranscriptRecorder(path, context, config) as recorder:
        run_agent_loop("1 + 2?", context, config, emit=lambda e: None, journal=recorder,
                       stream_fn=ScriptedModel([tool_call("add", {"a": 1, "b": 2}), "It is 3."]))
    return path


def test_match_labels_every_call_and_exits_0_without_a_miss(tmp_path: Path) -> None:
    recorded = _record(tmp_path / "a.jsonl", add)
    reworded = _record(tmp_path / "b.jsonl", add, system="Be exact and brief.")
    proc = run_cli("transcript", "match", str(recorded), str(reworded))
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines() == [
        f"model call 1: drifted from {recorded} step 1 (model call 1)",
        '    system_prompt: recorded "Be exact.", now "Be exact and brief."',
        f"model call 2: drifted from {recorded} step 8 (model call 2)",
        '    system_prompt: recorded "Be exact.", now "Be exact and brief."']
    strict = run_cli("transcript", "match", "--match", "strict", str(recorded), str(reworded))
    assert strict.returncode == 1
    assert strict.stdout.splitlines()[:2] == [
        f"model call 1: miss from {recorded} step 1 (model call 1)",
        '    system_prompt: recorded "Be exact.", now "Be exact and brief."']


def test_match_exits_1_on_a_miss_naming_the_field(tmp_path: Path) -> None:
    recorded = _record(tmp_path / "a.jsonl", add)
    changed = _record(tmp_path / "b.jsonl", add_badly)
    proc = run_cli("transcript", "match", str(recorded), str(changed))
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"model call 1: exact from {recorded} step 1 (model call 1)",
        f"model call 2: miss from {recorded} step 8 (model call 2)",
        '    messages.2.content.0.text: recorded "3", now "4"',
        "1 recorded call(s) never served:",
        f"    {recorded} step 8 (model call 2)"]


def test_match_of_a_missing_or_damaged_file_is_a_usage_error(tmp_path: Path) -> None:
    recorded = _record(tmp_path / "a.jsonl", add)
    missing = run_cli("transcript", "match", str(tmp_path / "nope.jsonl"), str(recorded))
    assert missing.returncode == 2 and f"{tmp_path / 'nope.jsonl'}: no such transcript or folder" in missing.stderr
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("not json\n")
    proc = run_cli("transcript", "match", str(recorded), str(damaged))
    assert proc.returncode == 2 and "damaged.jsonl" in proc.stderr


def test_accept_promotes_a_candidate_and_refuses_anything_else(tmp_path: Path) -> None:
    original = _record(tmp_path / "run.jsonl", add)
    candidate = _record(tmp_path / "run.candidate.jsonl", add, system="Be brief.")
    wanted = candidate.read_bytes()
    proc = run_cli("transcript", "accept", str(candidate))
    assert proc.returncode == 0 and proc.stdout == f"Accepted {candidate} as {original}\n"
    assert original.read_bytes() == wanted and not candidate.exists()
    refused = run_cli("transcript", "accept", str(original))
    assert refused.returncode == 2
    assert f"{original} is not a candidate (a name ending in .candidate.jsonl" in refused.stderr


def test_rerecord_keeps_the_prefix_and_records_the_rest_into_a_candidate(demo_transcript: Path,
                                                                         tmp_path: Path) -> None:
    source = tmp_path / "demo.jsonl"
    source.write_bytes(demo_transcript.read_bytes())
    before = source.read_bytes()
    middle = read_transcript(source).steps // 2
    proc = run_cli("transcript", "rerecord", str(source), "--from-step", str(middle), env=None)
    assert proc.returncode == 0, proc.stderr
    candidate = tmp_path / "demo.candidate.jsonl"
    assert source.read_bytes() == before
    assert f"Kept steps 1..{middle} of {source} in {candidate}; recording the rest live." in proc.stderr
    assert f"keep it: agentcore transcript accept {candidate}" in proc.stderr
    assert "The trip takes 2.17 hours" in proc.stdout
    assert run_cli("transcript", "replay", str(candidate)).returncode == 0
    matched = run_cli("transcript", "match", str(source), str(candidate))
    assert matched.returncode == 0 and "miss" not in matched.stdout
