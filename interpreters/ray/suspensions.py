"""Suspended runs on the cluster: what :func:`interpreters.ray.resume_many` sends to a worker
with a job (:class:`Resumption`), and the checks both sides make.

The decisions are checked with the core's own rule, the one ``resume_suspended`` applies before
it runs anything: the suspension's state is given the decisions as the core's ``Resumed`` input
and the core says whether it takes them (:func:`decisions_problem`). Plain data and pure
functions; nothing here imports Ray.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentcore import AgentLoopConfig, Decision, Model, Resumed, Suspension
from agentcore.resumption import resumed_input, suspended_state

from ..transcript import Transcript, read_transcript

__all__ = ["Resumption", "decisions_problem", "records_decisions_on"]


@dataclass(frozen=True, slots=True)
class Resumption:
    """What a worker needs, besides the job, to go on with a suspended run: the suspension and
    the decisions on its pending calls (tool call id → ``Approve`` / ``Deny`` / ``ToolOutput``)."""

    suspension: Suspension
    decisions: Mapping[str, Decision]


def decisions_problem(suspension: Any, decisions: Any) -> str | None:
    """Why ``resume_suspended(suspension, decisions, ...)`` would refuse to go on (``None``: it
    would not): not a suspension, one of a newer format, decisions that are not a mapping of
    decisions, or missing, unknown, repeated or wrong-kind decisions (the core's text, naming
    every id). Nothing runs and nothing is written."""
    config = AgentLoopConfig(model=Model(id="-"))  # the config does not change which decisions fit
    try:
        suspended_state(suspension, config, "resume_many")
        # the core's check of the decisions
        resumed_input(decisions, suspension, config, None, lambda: 0, "resume_many")
    except (TypeError, ValueError) as exc:
        return str(exc) or type(exc).__name__
    return None


def records_decisions_on(path: str | os.PathLike[str], suspension: Suspension) -> bool:
    """The transcript at ``path`` records decisions on exactly the pending calls of
    ``suspension``: the run it records was resumed from there already."""
    transcript: Transcript = read_transcript(path)
    wanted = {p.tool_call_id for p in suspension.pending}
    return any(type(entry.input) is Resumed and {i for i, _ in entry.input.decisions} == wanted
               for entry in transcript.entries)
