"""Evals over transcripts: datasets of cases, scored on each run's whole trajectory, recorded so
that a re-run is free and deterministic, and compared with a baseline in behaviour, not only in
scores.

- :mod:`~interpreters.evals.dataset`: :class:`Case`, :class:`Dataset` (YAML and JSON files);
- :mod:`~interpreters.evals.evaluators`: :class:`Score`, :class:`Trajectory`, the built-in
  evaluators and :func:`evaluator`;
- :mod:`~interpreters.evals.run`: :class:`AgentSpec`, :func:`evaluate` (recording, replaying
  through cassettes);
- :mod:`~interpreters.evals.report`: :class:`EvalReport` (aggregates, table, JSON, comparison),
  :func:`rescore`.
"""

from .dataset import AgentSpec, Case, Dataset
from .evaluators import (
    Contains,
    Equals,
    MaxCost,
    MaxToolCalls,
    MaxTurns,
    NoError,
    Regex,
    Score,
    ToolCalled,
    ToolSequence,
    Trajectory,
    evaluator,
)
from .judge import LLMJudge
from .report import CaseRun, Change, EvalReport, rescore
from .run import aevaluate, evaluate

__all__ = [
    "AgentSpec",
    "Case",
    "CaseRun",
    "Change",
    "Contains",
    "Dataset",
    "Equals",
    "EvalReport",
    "LLMJudge",
    "MaxCost",
    "MaxToolCalls",
    "MaxTurns",
    "NoError",
    "Regex",
    "Score",
    "ToolCalled",
    "ToolSequence",
    "Trajectory",
    "aevaluate",
    "evaluate",
    "evaluator",
    "rescore",
]
