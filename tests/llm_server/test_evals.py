"""An eval against the real llama-server: recorded, then re-run offline from its transcripts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig
from interpreters.evals import AgentSpec, Case, Dataset, MaxTurns, NoError, evaluate

from .helpers import model_for, seeded


def test_an_eval_on_llama_server_is_recorded_and_replayed_offline(chat_server: Any, tmp_path: Path) -> None:
    config = AgentLoopConfig(model=model_for(chat_server, max_tokens=24), on_payload=seeded(11))
    dataset = Dataset([Case(f"talk-{i}", f"Say something about the number {i}.") for i in range(3)],
                      [NoError(), MaxTurns(1)])
    spec = AgentSpec(AgentContext("You are brief."), config)
    recorded = evaluate(dataset, spec, repeat=2, transcripts=tmp_path / "runs", mode="once", concurrency=2)
    assert recorded.passed, recorded.table()
    assert all(r.facts["tokens"] > 0 and r.facts["answer"] for r in recorded.runs)
    # Offline: the agent's stream function would fail the run if it were asked anything.
    offline = evaluate(dataset, AgentSpec(AgentContext("You are brief."), config, stream_fn=_no_model),
                       repeat=2, transcripts=tmp_path / "runs", mode="none")
    assert [(r.case, r.repeat, r.facts) for r in offline.runs] == [(r.case, r.repeat, r.facts) for r in recorded.runs]
    assert [c.verdict for c in offline.compare(recorded)] == ["same"] * 3


def _no_model(*args: Any) -> Any:
    raise AssertionError("an offline re-run must not call the model")
