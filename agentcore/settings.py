"""A resumed run's settings (``Resumed.settings``, an :class:`~agentcore.inputs.RunSettings`):
checked (:func:`settings_problem`) and put in force on the run (:func:`put_in_force`): the
model, hooks, budgets, tools and tool execution mode of the code that resumes it.
"""

from __future__ import annotations

import math
from typing import Any, Final

from . import hooks
from .draft import Draft
from .inputs import RunSettings
from .records import type_problem
from .state import index_tools, llm_view

__all__ = ["put_in_force", "settings_problem"]


_CONVERTING: Final = frozenset({hooks.CONVERT_TO_LLM.name, hooks.TRANSFORM_CONTEXT.name})


def put_in_force(s: Draft, settings: RunSettings) -> None:
    """The model, hooks, budgets, tools and tool execution mode of a resumed run; what it used so
    far is kept. The kept LLM view of the conversation goes or comes back with the hooks that do
    the conversion."""
    if settings.hooks != s.hooks:
        if bool(settings.hooks & _CONVERTING) != bool(s.hooks & _CONVERTING):
            s.llm_messages = llm_view(s.messages, settings.hooks)
        s.hooks = settings.hooks
    if settings.model != s.model:
        s.model = settings.model
    s.max_turns = settings.max_turns
    s.max_total_tokens = settings.max_total_tokens
    s.max_cost_usd = settings.max_cost_usd
    if settings.tools is not None:
        s.tools = settings.tools
        s.tool_index = index_tools(settings.tools)
    if settings.tool_policies is not None:
        s.tool_policies = settings.tool_policies
    if settings.tool_execution is not None:
        s.tool_execution = settings.tool_execution


def settings_problem(settings: Any) -> str | None:
    """What makes ``Resumed.settings`` not settings a run can go on with (``None``: nothing)."""
    problem = type_problem(settings, RunSettings | None, "Resumed's settings")
    if problem is not None or settings is None:
        return problem
    unknown = sorted(h for h in settings.hooks if h not in hooks.ASKED_BY_CORE)
    if unknown:
        return (f"Resumed's settings name hooks the core does not ask ({', '.join(map(repr, unknown))}): "
                f"the hooks are among {', '.join(hooks.ASKED_BY_CORE)}")
    for name in ("max_turns", "max_total_tokens"):
        limit = getattr(settings, name)
        if limit is not None and limit < 1:
            return f"Resumed's settings.{name} is {limit!r}: a budget is None or an integer >= 1"
    cost = settings.max_cost_usd
    if cost is not None and not (math.isfinite(cost) and cost > 0):
        return f"Resumed's settings.max_cost_usd is {cost!r}: a budget is None or a finite number > 0"
    return None
