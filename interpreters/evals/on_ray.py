"""Evals on a Ray cluster: every case and repeat one job of :func:`interpreters.ray.run_many`, the
agent made on the worker from the case, the run answered there from its recording (modes ``none``
and ``once``) or run live; the transcripts end up where a local eval puts them
(``DIR/<case>/<repeat>.jsonl``) and the runs are scored on the driver, so the report is the same
as a local eval's."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .dataset import AgentSpec, Case, Dataset
from .evaluators import Evaluator, Trajectory
from .report import CaseRun, EvalReport, score_run

__all__ = ["evaluate_on_ray"]


@dataclass(frozen=True)
class _Factories:
    """What a worker makes of a job (picklable: the agent factory by reference)."""

    agent: Any
    root: str
    match: str

    def case(self, job: Any) -> Case:
        name, prompt, expected, metadata, _ = job.data
        return Case(name, prompt, expected, metadata)

    def spec(self, job: Any) -> Any:
        spec = self.agent if isinstance(self.agent, AgentSpec) else self.agent(self.case(job))
        return spec

    def config(self, job: Any) -> Any:
        return self.spec(job).config

    def tools(self, job: Any) -> Sequence[Any]:
        return list(self.spec(job).context.tools)

    def stream_fn(self, job: Any) -> Any:
        from ..streams.cassette import Cassette

        name, _, _, _, (repeat, replaying) = job.data
        if replaying:
            return Cassette(Path(self.root) / name / f"{repeat}.jsonl", match=self.match)
        return self.spec(job).stream_fn


def evaluate_on_ray(dataset: Dataset, agent: Any, *, repeat: int, transcripts: str | os.PathLike[str], mode: str,
                    match: str, address: str | None = None) -> EvalReport:
    """:func:`~interpreters.evals.evaluate` with ``executor="ray"``."""
    from ..ray import RunJob, run_many

    root = Path(transcripts).resolve()
    jobs: list[Any] = []
    planned: dict[str, tuple[Case, int, bool, list[Evaluator]]] = {}
    missing: list[CaseRun] = []
    for case in dataset.cases:
        evaluators: list[Evaluator] = [*dataset.evaluators, *case.evaluators]
        for n in range(1, repeat + 1):
            path = root / case.name / f"{n}.jsonl"
            recorded = path.exists()
            if mode == "none" and not recorded:
                run = Trajectory([], case, error=f"no recorded transcript at {path} (mode 'none')", transcript=path)
                missing.append(score_run(case, n, run, path, evaluators))
                continue
            replaying = mode in ("none", "once") and recorded
            job_id = f"{len(jobs):06d}"
            spec = agent if not callable(agent) else None
            context = (spec.context if spec is not None else agent(case).context)
            jobs.append(RunJob(job_id, case.prompts(), type(context)(context.system_prompt, context.messages, []),
                               data=(case.name, case.prompt, case.expected, case.metadata, (n, replaying))))
            planned[job_id] = (case, n, replaying, evaluators)
    factories = _Factories(agent, str(root), match)
    runs: list[CaseRun] = list(missing)
    with tempfile.TemporaryDirectory() as scratch:
        for result in run_many(jobs, config_factory=factories.config, stream_fn_factory=factories.stream_fn,
                               tools_factory=factories.tools, transcripts_dir=scratch, progress=False,
                               address=address, existing="overwrite"):
            case, n, replaying, evaluators = planned[result.job_id]
            target = root / case.name / (f"{n}.candidate.jsonl" if mode == "refresh" else f"{n}.jsonl")
            if not replaying:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(result.transcript, target)
            error = result.error or ("the run suspended: tool calls wait for decisions (an eval's agent must "
                                     "not ask)" if result.suspension is not None else None)
            run = Trajectory(list(result.messages), case, error=error, transcript=target)  # no duration on Ray
            runs.append(score_run(case, n, run, target, evaluators))
    order = {(c.name, n): (i, n) for i, c in enumerate(dataset.cases) for n in range(1, repeat + 1)}
    runs.sort(key=lambda r: order[(r.case, r.repeat)])
    return EvalReport(runs, mode=mode)

