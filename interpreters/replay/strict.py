"""Strict replay: the pure core run again over a transcript, with no model, no tools and no
clock (:func:`replay`); the state at any step (:func:`state_at`), the model request of a step
(:func:`llm_request_at`) and a transcript cut at a step (:func:`fork`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from returns.result import Failure

from agentcore import (
    AgentEvent,
    AgentMessage,
    CallLlm,
    Emit,
    LoopState,
    RunEnded,
    StepResult,
    StreamEventReceived,
    step,
)
from agentcore.effects import RunSuspended
from agentcore.reply import stream_event_problem
from agentcore.state import Finished

from ..runtime.gc_pause import paused_gc
from ..transcript import (
    Entry,
    TranscriptError,
)
from .compare import Comparator, Divergence, ReplayDivergence, ReplayOptions, ReplayResult, Source, load


def step_recorded(state: LoopState, entry: Entry) -> StepResult:
    """``step`` over a recorded input. The reader checks each line's shape, not every field's
    type; an input damaged inside (a record turned into a plain mapping) that the core cannot
    take is a damaged transcript, named by its line."""
    inp = entry.input
    if type(inp) is StreamEventReceived:
        problem = stream_event_problem(inp.event)  # the recorder only writes real stream events
        if problem is not None:
            raise _damaged(entry, problem)
    try:
        return step(state, inp)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise _damaged(entry, f"{type(exc).__name__}: {exc}") from None


def _damaged(entry: Entry, problem: str) -> TranscriptError:
    return TranscriptError(f"line {entry.line}: the input of step {entry.step} is damaged ({problem})",
                           path=entry.path, line=entry.line)


def replay(source: Source, *, options: ReplayOptions = ReplayOptions(), until: int | None = None,
           check: bool = True) -> ReplayResult:
    """Re-run the core over the recorded inputs (no model, no tools, no clock).

    Returns the events, the run's new messages, the final state and the number of steps
    replayed; raises :class:`ReplayDivergence` at the first effect that differs from the
    recording. ``until`` stops after that step; ``check=False`` skips the comparison.
    """
    t = load(source)
    state = t.initial_state
    cmp = Comparator(t, options)
    events: list[AgentEvent] = []
    messages: list[AgentMessage] = []
    entries = t.entries if until is None else t.entries[:until]
    with paused_gc():  # only the core runs here, and it builds no cycles (see interpreters.runtime.gc_pause)
        for index, entry in enumerate(entries):
            if isinstance(state.phase, Finished):
                raise ReplayDivergence(Divergence(
                    "left_over", entry.step, cmp.turn, entry.input_json, None, "",
                    f"the run ended at step {index}, {len(t.entries) - index} recorded entries remain"), t.version)
            result = step_recorded(state, entry)
            if isinstance(result, Failure):
                raise ReplayDivergence(Divergence(
                    "rejected", entry.step, cmp.turn, entry.input_json, None, "", str(result.failure())), t.version)
            state, effects = result.unwrap()
            if check:
                problem = cmp.check(index, effects)
                if problem is not None:
                    raise ReplayDivergence(problem, t.version)
            for e in effects:
                if type(e) is Emit:
                    events.append(e.event)
                elif type(e) is RunEnded or type(e) is RunSuspended:
                    messages = list(e.messages)
    return ReplayResult(events, messages, state, len(entries), isinstance(state.phase, Finished))


def state_at(transcript: Source, step: int) -> LoopState:
    """The core's state after step ``step`` (0: the initial state)."""
    t = load(transcript)
    if not 0 <= step <= t.steps:
        raise IndexError(f"step {step} is not in this transcript (it has steps 0..{t.steps})")
    return replay(t, until=step, check=False).state


def llm_request_at(transcript: Source, step: int) -> CallLlm | None:
    """The model call in force at step ``step``: the last ``CallLlm`` asked for at or before it."""
    found = llm_request_step(transcript, step)
    return found[1] if found is not None else None


def llm_request_step(transcript: Source, step: int) -> tuple[int, CallLlm] | None:
    """:func:`llm_request_at` with the step that asked for the call."""
    t = load(transcript)
    for entry in reversed(t.entries[:step]):
        for i in range(len(entry.effects_json) - 1, -1, -1):
            if entry.effects_json[i].get("type") == "call_llm":
                effect = entry.effects[i]
                assert isinstance(effect, CallLlm)
                return entry.step, effect
    return None


def fork(transcript: Source, step: int, out_path: str | os.PathLike[str]) -> Path:
    """Write a new transcript with the header and the first ``step`` steps (its one history)."""
    t = load(transcript)
    if not 0 <= step <= t.steps:
        raise IndexError(f"step {step} is not in this transcript (it has steps 0..{t.steps})")
    out = Path(out_path)
    lines = [json.dumps(dict(t.header), ensure_ascii=False, separators=(",", ":"))]
    lines += [e.text for e in t.entries[:step]]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


# --------------------------------------------------------------------------- LLM-only replay
