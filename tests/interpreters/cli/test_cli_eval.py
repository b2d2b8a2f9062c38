"""``agentcore eval DATASET --agent MODULE:FACTORY``."""

from __future__ import annotations

import json
from pathlib import Path

from .cli_helpers import run_cli

AGENT = '''
from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, tool
from interpreters.evals import AgentSpec
from interpreters.streams.scripted import tool_call

@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

def agent(case):
    i = int(case.name.split("-")[1])
    model = ScriptedModel([tool_call("add", {"a": i, "b": 1}), ANSWER.format(i + 1)])
    return AgentSpec(AgentContext("You add.", [], [add]), AgentLoopConfig(model=Model(id="m")), model)

ANSWER = "It is {}."
'''

DATASET = """evaluators: [NoError, {ToolCalled: {tool: add}}]
cases:
  - name: sum-1
    prompt: "1 + 1?"
    evaluators: [{Contains: {text: "2"}}]
  - name: sum-2
    prompt: "2 + 1?"
    evaluators: [{Contains: {text: "3"}}]
"""


def test_eval_records_replays_and_compares(tmp_path: Path) -> None:
    (tmp_path / "agent_file.py").write_text(AGENT)
    (tmp_path / "sums.yaml").write_text(DATASET)
    first = run_cli("eval", "sums.yaml", "--agent", "agent_file.py:agent", "--repeat", "2", "--out", "base.json",
                    "--html", "base.html", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[:3] == ["case   passed  turns  tools  cost $  failure",
                                             "sum-1  100%    2      1      0.0000",
                                             "sum-2  100%    2      1      0.0000"]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "sums-runs").glob("*/*.jsonl")) == [
        "sums-runs/sum-1/1.jsonl", "sums-runs/sum-1/2.jsonl", "sums-runs/sum-2/1.jsonl", "sums-runs/sum-2/2.jsonl"]
    assert len(json.loads((tmp_path / "base.json").read_text())["runs"]) == 4
    assert 'href="sums-runs/sum-2/2.html"' in (tmp_path / "base.html").read_text()
    again = run_cli("eval", "sums.yaml", "--agent", "agent_file.py:agent", "--repeat", "2", "--mode", "none",
                    "--baseline", "base.json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "sum-1: same" in again.stdout and "sum-2: same" in again.stdout
    (tmp_path / "agent_file.py").write_text(AGENT.replace('ANSWER = "It is {}."', 'ANSWER = "No idea."'))
    worse = run_cli("eval", "sums.yaml", "--agent", "agent_file.py:agent", "--repeat", "2", "--mode", "all",
                    "--transcripts", "runs-2", "--baseline", "base.json", cwd=tmp_path)
    assert worse.returncode == 1
    assert "sum-1: regressed" in worse.stdout
    assert worse.stderr.endswith("agentcore: the eval failed\n")


def test_a_bad_dataset_or_agent_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("cases:\n  - name: a\n    prompt: x\n    evaluators: [Nope]\n")
    (tmp_path / "agent_file.py").write_text(AGENT)
    bad = run_cli("eval", "bad.yaml", "--agent", "agent_file.py:agent", cwd=tmp_path)
    assert bad.returncode == 2 and "case a: unknown evaluator 'Nope'" in bad.stderr
    (tmp_path / "sums.yaml").write_text(DATASET)
    missing = run_cli("eval", "sums.yaml", "--agent", "agent_file.py:nobody", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr == "agentcore: --agent agent_file.py:nobody: agent_file.py has no attribute 'nobody'\n"
