"""Resuming a suspended run, as data: the checks of what a resume is given and the input it feeds.

Pure (no I/O): the interpreters' ``resume_suspended`` (sync and asyncio), ``Agent.restore``,
Ray's ``resume_many`` and crash recovery call these before anything runs or is written, so a bad
suspension, decision or config is refused with the same text everywhere.

- :func:`checked_suspension`: a :class:`~agentcore.Suspension` this library can resume as it is.
- :func:`suspended_state`: the state to resume from (checked, with the config's secrets checked).
- :func:`resumed_input`: the decisions as the core's ``Resumed`` input, with the config in force.
- (:mod:`agentcore.settings`: the settings a ``Resumed`` input carries, checked and put in
  force by the core.)
- :func:`refuse_redacted` and :func:`with_config_model`: a config copied from a transcript (which
  writes :data:`REDACTED` instead of a secret) is refused; a run read back goes on with the
  config's model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from .config import AgentLoopConfig
from .decisions import decisions_problem, waits_problem
from .inputs import Approve, Deny, Resumed, ToolOutput
from .records import replace
from .state import SUSPENSION_VERSION, LoopState, Suspension
from .suspension import run_settings
from .texts import suspension_version_text

__all__ = [
    "DECISIONS",
    "REDACTED",
    "checked_suspension",
    "refuse_redacted",
    "resumed_input",
    "suspended_state",
    "with_config_model",
]

REDACTED: Final = "[REDACTED]"
"""The text a transcript writes instead of a secret (``interpreters.secrets.REDACTED``)."""

DECISIONS: Final = (Approve, Deny, ToolOutput)
"""The types of a decision on a pending tool call."""


def _a(name: str) -> str:
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:120] + "..."


def checked_suspension(suspension: Any, fn: str) -> Suspension:
    """``suspension`` if it can be resumed as it is: a :class:`Suspension` (else ``TypeError``)
    of a format this library reads, whose state is suspended, whose fields hold values of their
    types and whose parts agree on what would run (else ``ValueError`` with
    ``Suspension.problem``'s text). ``fn`` names the function that was given it.

    >>> checked_suspension({}, "resume_suspended")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    TypeError: resume_suspended() argument 'suspension' must be a Suspension (decode a stored one with
    agentcore.codec.from_json), not a dict
    """
    if not isinstance(suspension, Suspension):
        raise TypeError(f"{fn}() argument 'suspension' must be a Suspension (decode a stored one with "
                        f"agentcore.codec.from_json), not {_a(type(suspension).__name__)}")
    if type(suspension.version) is not int or not 1 <= suspension.version <= SUSPENSION_VERSION:
        raise ValueError(suspension_version_text(suspension.version, SUSPENSION_VERSION))
    problem = suspension.problem()  # not suspended, or edited: refused before anything runs or is written
    if problem is not None:
        raise ValueError(problem)
    return suspension


def suspended_state(suspension: Any, config: AgentLoopConfig, fn: str) -> LoopState:
    """The state to resume ``suspension`` from: checked (:func:`checked_suspension`), with
    ``config`` checked for the redaction marker (:func:`refuse_redacted`). The config's model,
    hooks and budgets go in force through the ``Resumed`` input (:func:`resumed_input`), so the
    run replays as it ran."""
    state = checked_suspension(suspension, fn).state
    refuse_redacted(config, fn)
    return state


def refuse_redacted(config: AgentLoopConfig, fn: str) -> None:
    """A model or config header, or an API key, that *is* the redaction marker (copied from a
    transcript, which writes it instead of a secret) is refused with ``ValueError``: the
    marker is never sent."""
    model = config.model
    for whose, headers in (("the model's", model.headers), ("the config's", config.headers)):
        for name, value in (headers or {}).items():
            if isinstance(value, str) and REDACTED in value:
                raise ValueError(f"{fn}(): {whose} header {name!r} is {value!r}, the text a transcript writes "
                                 "instead of a secret: give the config's model with its real headers")
    if config.api_key is not None and REDACTED in config.api_key:
        raise ValueError(f"{fn}(): the config's api_key is {config.api_key!r}, the text a transcript writes "
                         "instead of a secret: give the real key")


def with_config_model(state: LoopState, config: AgentLoopConfig, fn: str) -> LoopState:
    """``state`` going on with ``config.model`` (as a crash ``resume`` does): a run read back
    from its transcript holds the recorded model, whose secret headers were written as the
    redaction marker, which is refused in ``config`` (:func:`refuse_redacted`)."""
    refuse_redacted(config, fn)
    if state.run.model == config.model:
        return state
    return replace(state, run=replace(state.run, model=config.model))


def resumed_input(decisions: Any, suspension: Suspension, config: AgentLoopConfig, tools: Sequence[Any] | None,
                  clock: Callable[[], int], fn: str) -> Resumed:
    """``decisions`` (tool call id → ``Approve`` / ``Deny`` / ``ToolOutput``) as the core's
    input, stamped with ``clock()``, in the order of the pending calls (ids nothing waits for
    after them), with the model, hooks, budgets and ``tool_execution`` of ``config`` and the
    specs and policies of ``tools`` in force (:func:`agentcore.suspension.run_settings`). A
    pending call that waits for what its tool, as ``tools`` declare it, does not make it wait
    for is refused (``ValueError``)."""
    if not isinstance(decisions, Mapping):
        raise TypeError(f"{fn}() argument 'decisions' must be a mapping of tool call id to Approve, Deny "
                        f"or ToolOutput, not {_a(type(decisions).__name__)}")
    for call_id, decision in decisions.items():
        if not isinstance(decision, DECISIONS):
            raise TypeError(f"{fn}() decision for {call_id!r} must be Approve, Deny or ToolOutput, not "
                            f"{_a(type(decision).__name__)} ({_shown(decision)})")
    order = [p.tool_call_id for p in suspension.pending]
    ids = [i for i in order if i in decisions] + sorted((i for i in decisions if i not in order), key=str)
    given = tuple((i, decisions[i]) for i in ids)
    settings = run_settings(config, tools)
    problem = None
    if settings.tools is not None and settings.tool_policies is not None:
        problem = waits_problem(suspension.pending, settings.tools, settings.tool_policies)
    problem = problem or decisions_problem(suspension.pending, given)
    if problem is not None:  # refused before anything runs or is written (the core would refuse it too)
        raise ValueError(problem)
    return Resumed(given, clock(), settings)
