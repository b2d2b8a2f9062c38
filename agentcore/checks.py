"""What an input may be, in the phase the run is in: the checks :func:`~agentcore.machine.step`
makes before any handler runs (a rejected input leaves the state as it was).

- :func:`problem`: why an input cannot be taken now (``None`` when it can): a ``Continued`` on a
  conversation that cannot go on, a ``Resumed`` whose settings or decisions do not fit the
  suspension, an answer to a question not asked (another id), a stream event after an abort that
  is not the stream's end, an answer that holds what the turn cannot take;
- :func:`answer_problem`: the last of these, on its own.
"""

from __future__ import annotations

from typing import Any, Final

from pyrsistent import PVector

from . import batch
from .config import AgentContext, NextTurn
from .decisions import decisions_problem, waits_problem
from .inputs import (
    ContextConverted,
    ContextTransformed,
    Continued,
    FollowUpsPolled,
    Input,
    NextTurnPrepared,
    Resumed,
    Started,
    SteeringPolled,
    StreamEventReceived,
)
from .messages import THINKING_LEVELS, Model
from .settings import settings_problem
from .state import LoopState, RunningTools, Suspended
from .stream import DoneEvent, ErrorEvent
from .texts import (
    CONTINUE_EMPTY_TEXT,
    CONTINUE_FROM_ASSISTANT_TEXT,
    bad_answer_text,
    not_awaited_text,
    stream_closing_text,
)

__all__ = ["answer_problem", "problem"]


def problem(s: LoopState, inp: Input) -> str | None:
    """Why ``inp`` cannot be taken in ``s`` (``None`` when it can)."""
    phase = s.phase
    if isinstance(inp, Continued):
        if len(s.messages) == 0:
            return CONTINUE_EMPTY_TEXT
        last = s.messages[-1]
        if getattr(last, "role", None) == "assistant":
            return CONTINUE_FROM_ASSISTANT_TEXT
        return None
    if isinstance(inp, Resumed):
        assert isinstance(phase, Suspended)
        settings = inp.settings
        return (settings_problem(settings)
                or (waits_problem(phase.pending, settings.tools, settings.tool_policies)
                    if settings is not None and settings.tools is not None and settings.tool_policies is not None
                    else None)
                or decisions_problem(phase.pending, inp.decisions))
    input_id = getattr(inp, "id", None)
    if input_id is None:
        return answer_problem(inp)
    if isinstance(phase, RunningTools):
        return batch.problem(phase, inp)  # type: ignore[arg-type]
    if getattr(phase, "id", None) != input_id:
        return not_awaited_text(getattr(phase, "id", None), input_id)
    if type(inp) is StreamEventReceived and s.run.aborted and type(inp.event) not in (DoneEvent, ErrorEvent):
        return stream_closing_text(getattr(inp.event, "type", type(inp.event).__name__))
    return answer_problem(inp)


_MESSAGES_FIELD: Final[dict[type, str]] = {Started: "prompts", SteeringPolled: "messages", FollowUpsPolled: "messages",
                                           ContextTransformed: "messages", ContextConverted: "messages"}
_NEXT_TURN_FIELDS: Final = (("context", AgentContext, "an AgentContext or None"), ("model", Model, "a Model or None"))


def answer_problem(inp: Input) -> str | None:
    """What an input holds that the turn cannot take: messages that are not a sequence, a next
    turn that is not one (the interpreters check what the user's code returns; this is for
    other drivers and damaged transcripts)."""
    name = _MESSAGES_FIELD.get(type(inp))
    if name is not None:
        messages = getattr(inp, name)
        if not isinstance(messages, (tuple, list, PVector)):
            return bad_answer_text(inp.type, name, messages, "a tuple of messages")
    elif type(inp) is NextTurnPrepared and inp.next_turn is not None:
        nxt: Any = inp.next_turn
        if not isinstance(nxt, NextTurn):
            return bad_answer_text(inp.type, "next_turn", nxt, "a NextTurn or None")
        for field, kind, expected in _NEXT_TURN_FIELDS:
            value = getattr(nxt, field)
            if value is not None and not isinstance(value, kind):
                return bad_answer_text(inp.type, field, value, expected, "next_turn")
        if nxt.thinking_level is not None and nxt.thinking_level not in THINKING_LEVELS:
            return bad_answer_text(inp.type, "thinking_level", nxt.thinking_level,
                                   f"one of {', '.join(THINKING_LEVELS)}, or None", "next_turn")
    return None
