"""``agentcore transcript ...`` on a recorded demo transcript."""

from __future__ import annotations

import json
import re
from pathlib import Path

from interpreters.transcript import read_transcript

from .cli_helpers import run_cli


def test_show_renders_turns_tool_calls_and_usage(demo_transcript: Path) -> None:
    proc = run_cli("transcript", "show", str(demo_transcript))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for expected in ("model:    demo-model", "tools:    calculator, convert_units", "turn 1", "turn 2",
                     "turn 3", "user (queued)", "Also tell me the total distance in kilometres.",
                     "tool call calculator", 'args   │ {"expression": "120 / 80"}', "result │ 120 / 80 = 1.5",
                     "tool call convert_units", "result │ 30 mi = 48.2803 km", "think │ Two legs",
                     "usage: 35 in / 41 out tokens", "turn 2 total: 96 in / 40 out tokens",
                     "Total: 3 turns, 4 tool calls, 278 in / 113 out tokens, $0 (finished)"):
        assert expected in out, expected


def test_replay_is_identical(demo_transcript: Path) -> None:
    proc = run_cli("transcript", "replay", str(demo_transcript))
    assert proc.returncode == 0
    assert re.fullmatch(r"Replay of .+: \d+ steps, identical\n", proc.stdout)


def _tamper(path: Path) -> int:
    """Change what the first tool returned (the recorded input only, as if the tool now
    returned something else); return the step it is in."""
    lines = path.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        data = json.loads(line)
        if data.get("input", {}).get("type") == "tool_finished" and "120 / 80 = 1.5" in line:
            data["input"] = json.loads(json.dumps(data["input"]).replace("120 / 80 = 1.5", "120 / 80 = 1.6"))
            lines[i] = json.dumps(data, separators=(",", ":")) + "\n"
            path.write_text("".join(lines))
            return int(data["step"])
    raise AssertionError("no tool_finished line")


def test_diff_reports_the_first_divergence(demo_transcript: Path, demo_copy: Path) -> None:
    same = run_cli("transcript", "diff", str(demo_transcript), str(demo_copy))
    assert same.returncode == 0 and "identical" in same.stdout
    step = _tamper(demo_copy)
    proc = run_cli("transcript", "diff", str(demo_transcript), str(demo_copy))
    assert proc.returncode == 1
    assert f"first divergence at step {step} (turn 1): the input differs (tool_finished" in proc.stdout
    assert "-" in proc.stdout and '+        "text": "120 / 80 = 1.6"' in proc.stdout
    replayed = run_cli("transcript", "replay", str(demo_copy))
    assert replayed.returncode == 1
    assert f"replay diverged at step {step} (turn 1)" in replayed.stdout


def test_diff_of_a_shorter_transcript(demo_transcript: Path, tmp_path: Path) -> None:
    short = tmp_path / "short.jsonl"
    assert run_cli("transcript", "fork", str(demo_transcript), "--step", "10", "-o", str(short)).returncode == 0
    proc = run_cli("transcript", "diff", str(demo_transcript), str(short))
    assert proc.returncode == 1
    assert f"first divergence at step 11: {short} ends after step 10" in proc.stdout


def test_state_prints_the_state_and_the_llm_request(demo_transcript: Path) -> None:
    t = read_transcript(demo_transcript)
    second_call = [e.step for e in t.entries if any(x.get("type") == "call_llm" for x in e.effects_json)][1]
    proc = run_cli("transcript", "state", str(demo_transcript), "--step", str(second_call))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"state after step {second_call} of {t.steps}" in out
    assert "phase: streaming" in out
    assert "[4] user: Also tell me the total distance in kilometres." in out
    assert "LLM request in force (call_llm id" in out and f"asked at step {second_call})" in out
    request = json.loads(out.split("asked at step", 1)[1].split("\n", 1)[1])
    assert request["type"] == "call_llm"
    assert request["system_prompt"].startswith("You are a careful travel assistant")
    assert [m["type"] for m in request["messages"]] == ["user", "assistant", "toolResult", "toolResult", "user"]
    as_json = run_cli("transcript", "state", str(demo_transcript), "--step", str(second_call), "--json")
    data = json.loads(as_json.stdout)
    assert data["phase"] == "streaming" and data["llm_request"] == request
    initial = run_cli("transcript", "state", str(demo_transcript), "--step", "0")
    assert initial.returncode == 0 and "no model call was made" in initial.stdout


def test_fork_then_resume_completes_the_run(demo_transcript: Path, tmp_path: Path) -> None:
    t = read_transcript(demo_transcript)
    middle = t.steps // 2
    fork = tmp_path / "fork.jsonl"
    proc = run_cli("transcript", "fork", str(demo_transcript), "--step", str(middle), "-o", str(fork))
    assert proc.returncode == 0 and read_transcript(fork).steps == middle
    resumed = run_cli("transcript", "resume", str(fork), env=None)
    assert resumed.returncode == 0, resumed.stderr
    assert "The trip takes 2.17 hours" in resumed.stdout
    assert run_cli("transcript", "replay", str(fork)).returncode == 0
    # The resumed run is the original one (timestamps aside).
    same = run_cli("transcript", "diff", str(demo_transcript), str(fork))
    assert same.returncode == 0, same.stdout
    # With explicit tools and the demo model, and JSON events.
    fork2 = tmp_path / "fork2.jsonl"
    run_cli("transcript", "fork", str(demo_transcript), "--step", str(middle), "-o", str(fork2))
    resumed = run_cli("transcript", "resume", str(fork2), "--model", "demo", "--tools", "interpreters.cli.demo",
                      "--json")
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert events[-1]["type"] == "agent_end"


def test_html_is_self_contained_and_escaped(demo_transcript: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo.html"
    proc = run_cli("transcript", "html", str(demo_transcript), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count('<section class="turn"') == 3
    assert page.count('<details class="tool-call"') == 4 and '<details class="thinking">' in page
    assert "120 / 80 = 1.5" in page and "278 in / 113 out tokens" in page
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)  # no network resource
    assert "<script" not in page and "@import" not in page and "url(" not in page


def test_show_escapes_recorded_terminal_control_sequences(tmp_path: Path) -> None:
    from agentcore import AgentContext, AgentLoopConfig, Model
    from interpreters import ScriptedModel
    from tests.support.flavours import SYNC

    nasty = "ok\x1b[2J\x1b]0;owned\x07\x1b]52;c;cGF5bG9hZA==\x07\u202eevil"
    path = tmp_path / "nasty.jsonl"
    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    SYNC.record(path, nasty, ctx, cfg, ScriptedModel([nasty]))
    proc = run_cli("transcript", "show", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout and "\u202e" not in proc.stdout
    assert "ok\\x1b[2J\\x1b]0;owned\\x07\\x1b]52;c;cGF5bG9hZA==\\x07\\u202eevil" in proc.stdout
