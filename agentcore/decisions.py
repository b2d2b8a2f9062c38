"""Decisions on a suspended run's pending calls: what each may be, and whether a set of them fits
the suspension (the core checks them before a ``Resumed`` is taken; the interpreters, ``Agent``
and Ray's ``resume_many`` check them before anything runs, with the same texts).

- :func:`decision_problem`: one decision for one pending call (the right kind for what it waits
  for, holding what it may);
- :func:`decisions_problem`: all of them (every pending call decided once, no unknown id);
- :func:`waits_problem`: the pending calls against the tools of the code that resumes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .inputs import Approve, Decision, Deny, ToolOutput
from .texts import (
    bad_decision_text,
    decisions_problem_text,
    decisions_shape_text,
    waits_for_text,
    wrong_decision_text,
)
from .tools import AgentToolResult, PendingCall, ToolPolicy, ToolSpec

__all__ = ["decision_problem", "decisions_problem", "waits_problem"]


def decisions_problem(pending: tuple[PendingCall, ...], decisions: tuple[tuple[str, Decision], ...]) -> str | None:
    """Why ``decisions`` cannot be taken for ``pending`` (``None`` when they fit): decisions that
    are not (tool call id, decision) pairs, or every missing, unknown, repeated or wrong kind of
    decision, by tool call id."""
    shape = _shape_problem(decisions)
    if shape is not None:
        return "Cannot resume: " + shape
    by_id = {p.tool_call_id: p for p in pending}
    given: dict[str, int] = {}
    for call_id, _ in decisions:
        given[call_id] = given.get(call_id, 0) + 1
    missing = [p.tool_call_id for p in pending if p.tool_call_id not in given]
    extra = [call_id for call_id in given if call_id not in by_id]
    repeated = [call_id for call_id, n in given.items() if n > 1]
    wrong = []
    for call_id, decision in decisions:
        p = by_id.get(call_id)
        if p is not None:
            problem = decision_problem(p, decision)
            if problem is not None:
                wrong.append(problem)
    if missing or extra or repeated or wrong:
        return decisions_problem_text(missing, extra, wrong, repeated)
    return None


def waits_problem(pending: tuple[PendingCall, ...], tools: tuple[ToolSpec, ...],
                  policies: Mapping[str, ToolPolicy]) -> str | None:
    """Why the pending calls of a suspended run cannot go on under ``tools`` and ``policies``
    (a resuming code's: ``None`` when they can): a call waits for what its tool, as declared
    there, does not make it wait for. A deferred tool's call waits for a result (it never runs
    here), any other's for an approval; a call of a tool that is not there is not looked at (an
    approval of it gets the "not found" result)."""
    names = {t.name for t in tools}
    for p in pending:
        if p.tool_name in names and (policies.get(p.tool_name) == "deferred") != (p.waits_for == "result"):
            return waits_for_text(p.tool_call_id, p.tool_name, p.waits_for)
    return None


def _shape_problem(decisions: Any) -> str | None:
    """Why ``decisions`` are not a tuple (or list) of (tool call id, decision) pairs."""
    if type(decisions) not in (tuple, list):
        return decisions_shape_text(decisions)
    for i, pair in enumerate(decisions):
        if type(pair) not in (tuple, list) or len(pair) != 2:
            return decisions_shape_text(pair, i)
        if type(pair[0]) is not str:
            return decisions_shape_text(pair[0], i, call_id=True)
    return None


def decision_problem(p: PendingCall, decision: Any) -> str | None:
    """Why ``decision`` cannot be taken for the pending call ``p`` (``None`` when it can): the
    wrong kind for what the call waits for, or a decision holding what it cannot (a ``Deny``
    whose reason is not text, a ``ToolOutput`` whose result is not a result)."""
    if isinstance(decision, Deny):
        if decision.reason is not None and type(decision.reason) is not str:
            return bad_decision_text(p.tool_call_id, "Deny", "reason", decision.reason, "text")
        return None
    if isinstance(decision, Approve) and p.waits_for == "approval":
        return None
    if isinstance(decision, ToolOutput) and p.waits_for == "result":
        if not isinstance(decision.result, AgentToolResult):
            return bad_decision_text(p.tool_call_id, "ToolOutput", "result", decision.result,
                                     "an AgentToolResult or a str")
        if type(decision.is_error) is not bool:
            return bad_decision_text(p.tool_call_id, "ToolOutput", "is_error", decision.is_error, "a bool")
        return None
    return wrong_decision_text(p.tool_call_id, p.waits_for, _kind_name(decision))


def _kind_name(value: Any) -> str:
    if isinstance(value, (Approve, Deny, ToolOutput)):
        return type(value).__name__
    return f"{type(value).__name__} {value!r:.60}"
