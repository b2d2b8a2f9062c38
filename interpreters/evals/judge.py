"""``LLMJudge``: a model scores a run against a rubric, and its own model calls are recorded beside
the run, so that a re-run or a rescoring asks no model again.

The judge is given the rubric (its system prompt) and the run (the prompt, each tool call with its
arguments and result, the final answer) and must answer with a first line ``PASS`` or ``FAIL``,
then its reason. Its call is recorded to ``<transcript>.judge-<key>.jsonl`` (``key``: a digest of
the rubric and the model); when that file exists the judge answers from it through a cassette,
and a judge whose rubric changed has another key, so it asks again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Model

from .evaluators import EVALUATORS, Evaluator, Score, Trajectory

__all__ = ["LLMJudge"]


class LLMJudge(Evaluator):
    """A model's verdict on the run against ``rubric``: ``model`` (a ``Model``) answers through
    ``stream_fn`` (default: its HTTP provider). Offline (``offline=True``), a judge with no
    recording fails its score, saying so, instead of calling a model."""

    name = "LLMJudge"

    def __init__(self, rubric: str, model: Model | str | None = None, stream_fn: Callable[..., Any] | None = None,
                 offline: bool = False) -> None:
        self.rubric = rubric
        self._model = Model(id=model) if isinstance(model, str) else model or Model(id="judge")
        self.model_id = self._model.id
        self._stream_fn = stream_fn
        self._offline = offline

    @property
    def arguments(self) -> dict[str, Any]:
        return {"rubric": self.rubric, "model": self.model_id}

    def recording(self, transcript: Path) -> Path:
        """Where this judge's call on the run recorded at ``transcript`` is kept."""
        key = hashlib.blake2b(f"{self.rubric}\0{self.model_id}".encode(), digest_size=6).hexdigest()
        return transcript.with_name(f"{transcript.stem}.judge-{key}.jsonl")

    def __call__(self, run: Trajectory) -> Score:
        from .. import run_agent_loop
        from ..streams.cassette import Cassette
        from ..transcript import TranscriptRecorder

        context = AgentContext(self.rubric + "\n\nAnswer with PASS or FAIL on the first line, then your reason.")
        config = AgentLoopConfig(model=self._model)
        prompt = _shown_run(run)
        path = self.recording(run.transcript) if run.transcript is not None else None
        if path is not None and path.exists():
            messages = run_agent_loop(prompt, context, config, emit=lambda e: None, stream_fn=Cassette(path))
        elif self._offline:
            return Score(0.0, False, f"no recorded verdict of this judge at {path} (offline)")
        else:
            recorder = TranscriptRecorder(path, context, config) if path is not None else None
            messages = run_agent_loop(prompt, context, config, emit=lambda e: None, stream_fn=self._stream_fn,
                                      journal=recorder)
        text = messages[-1].text.strip() if messages else ""
        first, _, reason = text.partition("\n")
        verdict = first.strip().upper().rstrip(".")
        if verdict not in ("PASS", "FAIL"):
            return Score(0.0, False, f"the judge did not answer PASS or FAIL: {text[:200]!r}")
        return Score(1.0 if verdict == "PASS" else 0.0, verdict == "PASS", reason.strip())


EVALUATORS["LLMJudge"] = LLMJudge


def _shown_run(run: Trajectory) -> str:
    lines = []
    for message in run.messages:
        role = getattr(message, "role", "")
        if role == "user":
            lines.append(f"USER: {message.text}")
        elif role == "assistant":
            for call in message.tool_calls:
                lines.append(f"TOOL CALL {call.name} {dict(call.arguments)}")
            if message.text:
                lines.append(f"ASSISTANT: {message.text}")
        elif role == "toolResult":
            lines.append(f"TOOL RESULT {message.tool_name}: {message.text}")
    return "Judge this run:\n\n" + "\n".join(lines)
