"""Every phase the core can reach × every input type: ``step`` takes exactly what its table says.

Hypothesis walks random runs with every hook set (answering a random outstanding effect, now
and then with an abort or a hook failure; tools that require approval, decide it by a function
or are deferred make runs suspend, and ``Resumed`` takes them on with random decisions), and at
each state reached feeds every kind of input, with the id of an outstanding effect and with an id
nothing waits for. Each must be either taken (the pair is in ``TRANSITIONS`` and the id is
awaited) or refused with the exact text, the state
untouched. Along the way: ids are never reused and a run that ends emits one ``agent_end``.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import (
    AbortRequested,
    AfterToolCall,
    AfterToolCallDecided,
    AgentContext,
    AgentTool,
    AgentToolResult,
    ApprovalChecked,
    Approve,
    ArgumentsPrepared,
    BeforeToolCall,
    BeforeToolCallDecided,
    BeforeToolCallResult,
    CallLlm,
    CheckApproval,
    ContextConverted,
    ContextTransformed,
    Continued,
    ConvertToLlm,
    DecideToolCall,
    Deny,
    Emit,
    ExecuteTool,
    FollowUpsPolled,
    HookFailed,
    LoopState,
    Model,
    NextTurnPrepared,
    PollFollowUps,
    PollSteering,
    PrepareArguments,
    PrepareNextTurn,
    Resumed,
    RunEnded,
    RunSuspended,
    ShouldStopAfterTurn,
    Started,
    SteeringPolled,
    StopAfterTurnDecided,
    StreamEventReceived,
    StreamFailed,
    TextContent,
    ToolCallDecided,
    ToolFailed,
    ToolFinished,
    ToolOutput,
    ToolSpec,
    ToolTimedOut,
    ToolUpdated,
    TransformContext,
    UserMessage,
    awaits,
    initial_state,
    step,
)
from agentcore.machine import TRANSITIONS
from agentcore.state import Finished, RunningTools, Suspended

from .world import call, reply, stream_events

HOOKS = frozenset({
    "get_steering_messages", "get_follow_up_messages", "transform_context", "convert_to_llm",
    "prepare_next_turn", "should_stop_after_turn", "before_tool_call", "after_tool_call", "decide_tool_call",
})
TOOLS = (ToolSpec("echo", parameters={"type": "object"}),
         ToolSpec("prep", parameters={"type": "object"}, has_prepare_arguments=True, execution_mode="sequential"),
         AgentTool("ask", "ask", "", {"type": "object"}, print, requires_approval=True),
         AgentTool("maybe", "maybe", "", {"type": "object"}, print, requires_approval=bool),
         AgentTool("later", "later", "", {"type": "object"}, print, deferred=True))
NO_FIT = (("nope", Approve()),)
"""The decisions every probe feeds a suspended run: they fit no pending call."""
USER = UserMessage("hi", timestamp=1)
OK = AgentToolResult((TextContent("ok"),))


def every_input(id_: int) -> list[Any]:
    """One input of each kind, answering ``id_`` where the kind answers something."""
    return [
        Started((USER,), 9), Continued(9), AbortRequested(9),
        SteeringPolled(id_, (), 9), FollowUpsPolled(id_, (), 9),
        ContextTransformed(id_, (USER,), 9), ContextConverted(id_, (USER,), 9),
        StreamEventReceived(id_, stream_events(reply("x"))[-1], 9), StreamFailed(id_, "reset", 9),
        ArgumentsPrepared(id_, {}, 9), BeforeToolCallDecided(id_, None, 9), ToolUpdated(id_, 1, 9),
        ToolFinished(id_, OK, 9), ToolFailed(id_, "bad", 9), ToolTimedOut(id_, 5, 9),
        AfterToolCallDecided(id_, None, 9), NextTurnPrepared(id_, None, 9), StopAfterTurnDecided(id_, False, 9),
        HookFailed(id_, "boom", 9), ApprovalChecked(id_, True, 9), ToolCallDecided(id_, None, 9),
        Resumed(NO_FIT, 9),
    ]


def answers(effect: Any, pick: int) -> Any:
    """A legal answer to ``effect`` (``pick`` chooses among the kinds it can have)."""
    id_ = effect.id
    if isinstance(effect, CallLlm):
        replies = [reply("done"), reply(call(f"c{id_}", "echo"), call(f"d{id_}", "prep")),
                   reply(call(f"e{id_}", "echo")),
                   reply(call(f"a{id_}", "ask"), call(f"m{id_}", "maybe"), call(f"l{id_}", "later")),
                   reply(call(f"p{id_}", "prep"), call(f"q{id_}", "ask"))]
        return [StreamEventReceived(id_, ev, 2) for ev in stream_events(replies[pick % 5])]
    if isinstance(effect, DecideToolCall):
        fits = Approve() if effect.pending.waits_for == "approval" else ToolOutput("out")
        return [[ToolCallDecided(id_, None, 2), ToolCallDecided(id_, fits, 2),
                 ToolCallDecided(id_, Deny("no"), 2)][pick % 3]]
    options: dict[type, list[Any]] = {
        PollSteering: [SteeringPolled(id_, (), 2), SteeringPolled(id_, (UserMessage("s"),), 2)],
        PollFollowUps: [FollowUpsPolled(id_, (), 2), FollowUpsPolled(id_, (UserMessage("f"),), 2)],
        TransformContext: [ContextTransformed(id_, getattr(effect, "messages", ()), 2)],
        ConvertToLlm: [ContextConverted(id_, getattr(effect, "messages", ()), 2)],
        PrepareArguments: [ArgumentsPrepared(id_, {}, 2)],
        BeforeToolCall: [BeforeToolCallDecided(id_, None, 2),
                         BeforeToolCallDecided(id_, BeforeToolCallResult(block=True, reason="no"), 2)],
        ExecuteTool: [ToolFinished(id_, OK, 2), ToolFailed(id_, "bad", 2), ToolTimedOut(id_, 5, 2)],
        AfterToolCall: [AfterToolCallDecided(id_, None, 2)],
        CheckApproval: [ApprovalChecked(id_, True, 2), ApprovalChecked(id_, False, 2)],
        PrepareNextTurn: [NextTurnPrepared(id_, None, 2)],
        ShouldStopAfterTurn: [StopAfterTurnDecided(id_, False, 2), StopAfterTurnDecided(id_, True, 2)],
    }
    kinds = options[type(effect)]
    return [kinds[pick % len(kinds)]]


def waiting_ids(s: LoopState, outstanding: dict[int, Any]) -> list[int]:
    return [i for i in sorted(outstanding) if awaits(s, i)]


def expected_refusal(s: LoopState, inp: Any) -> str | None:
    """What the table says about ``inp`` in ``s`` (``None``: it is taken)."""
    phase = s.phase
    if (type(phase), type(inp)) not in TRANSITIONS:
        return f"{inp.type} is not expected while {phase.name}"
    id_ = getattr(inp, "id", None)
    if isinstance(inp, Continued):
        if not s.messages:
            return "Cannot continue: no messages in context"
        return "Cannot continue from message role: assistant" if s.messages[-1].role == "assistant" else None
    if isinstance(inp, Resumed):
        assert isinstance(phase, Suspended)
        missing = [p.tool_call_id for p in phase.pending]
        return (f"Cannot resume: no decision for pending tool call{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)}; no pending tool call nope")
    if id_ is None:
        return None
    if isinstance(phase, RunningTools):
        slot = next((x for x in phase.slots if x.wait_id == id_), None)
        if slot is None:
            return f"no tool call is waiting for an answer with id {id_}"
        return None if slot.step in _STEPS[type(inp)] else \
            f"tool call {slot.call.id} is {slot.step}, it cannot take {inp.type}"
    if getattr(phase, "id", None) != id_:
        return f"expected an answer for id {getattr(phase, 'id', None)}, got id {id_}"
    return None


_STEPS: dict[type, tuple[str, ...]] = {
    ArgumentsPrepared: ("preparing",), BeforeToolCallDecided: ("checking",), ToolUpdated: ("running",),
    ToolFinished: ("running",), ToolFailed: ("running",), ToolTimedOut: ("running",),
    AfterToolCallDecided: ("finishing",), ApprovalChecked: ("approving",), ToolCallDecided: ("deciding",),
    HookFailed: ("preparing", "checking", "approving", "deciding", "finishing"),
}


def probe(s: LoopState, outstanding: dict[int, Any]) -> set[tuple[str, str]]:
    """Feed every input kind to ``s``; returns the (phase, input) pairs that were taken."""
    taken = set()
    ids = waiting_ids(s, outstanding) or [1]
    for id_ in (ids[0], 10_000):
        for inp in every_input(id_):
            result = step(s, inp)
            refusal = expected_refusal(s, inp)
            if refusal is None:
                assert result.__class__.__name__ == "Success", (s.phase.name, inp, result)
                taken.add((s.phase.name, inp.type))
            else:
                rejection = result.failure()
                assert (rejection.reason, rejection.phase, rejection.input) == (refusal, s.phase.name, inp.type)
    if isinstance(s.phase, Suspended):  # and decisions that fit
        assert step(s, decisions(s.phase, 1)).__class__.__name__ == "Success"
        taken.add(("suspended", "resumed"))
    return taken


def decisions(phase: Suspended, pick: int) -> Resumed:
    """Decisions that fit every pending call (``pick`` chooses approve or deny, edits, results)."""
    out = []
    for i, p in enumerate(phase.pending):
        kind = (pick + i) % 3
        if kind == 0:
            out.append((p.tool_call_id, Deny("no" if i % 2 else None)))
        elif p.waits_for == "result":
            out.append((p.tool_call_id, ToolOutput("out", is_error=kind == 2)))
        else:
            out.append((p.tool_call_id, Approve({"edited": True} if kind == 2 else None)))
    return Resumed(tuple(out), 3)


def walk(picks: list[int], mode: str, history: tuple[Any, ...] = ()) -> set[tuple[str, str]]:
    """One random run (``picks`` choose each answer), probed at every state it reaches."""
    s = initial_state(AgentContext("sys", history, TOOLS), model=Model(id="m"), hooks=HOOKS, tool_execution=mode)
    taken = probe(s, {})
    s, effects = step(s, Started((USER,), 1)).unwrap()
    outstanding: dict[int, Any] = {}
    seen_ids: set[int] = set()
    ends = 0

    def take(effects: tuple[Any, ...]) -> None:
        nonlocal ends
        for e in effects:
            if isinstance(e, Emit):
                ends += e.event.type == "agent_end"
                assert e.event.type != "agent_suspended" or e is effects[-2]  # last but the RunSuspended
            elif isinstance(e, RunSuspended):
                assert e is effects[-1] and isinstance(s.phase, Suspended)
            elif not isinstance(e, RunEnded) and e.type != "cancel_llm":
                assert e.id not in seen_ids, f"id {e.id} used twice"
                seen_ids.add(e.id)
                outstanding[e.id] = e

    take(effects)
    for pick in picks:
        if isinstance(s.phase, Finished):
            break
        taken |= probe(s, outstanding)
        ids = waiting_ids(s, outstanding)
        if isinstance(s.phase, Suspended) and pick != 11:
            inputs = [decisions(s.phase, pick)]
        elif pick == 11 or not ids:
            inputs = [AbortRequested(3)]
        elif pick == 10 and not isinstance(outstanding[ids[0]], (CallLlm, ExecuteTool)):
            inputs = [HookFailed(ids[0], "boom", 3)]
        else:
            inputs = answers(outstanding[ids[pick % len(ids)]], pick)
        for inp in inputs:
            if isinstance(s.phase, Finished):
                break
            s, effects = step(s, inp).unwrap()
            take(effects)
    assert ends == (1 if isinstance(s.phase, Finished) else 0)
    if isinstance(s.phase, Finished):
        taken |= probe(s, outstanding)
    return taken


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 11), min_size=1, max_size=60), st.sampled_from(["parallel", "sequential"]),
       st.booleans())
def test_every_reached_phase_takes_exactly_what_the_table_says(picks: list[int], mode: str, history: bool) -> None:
    walk(picks, mode, (USER,) if history else ())


HOOK_ANSWER = ("hook_failed", "abort_requested")
EXPECTED: dict[str, set[str]] = {
    "idle": {"started", "continued", "abort_requested"},
    "awaiting_steering": {"steering_polled", *HOOK_ANSWER},
    "awaiting_follow_ups": {"follow_ups_polled", *HOOK_ANSWER},
    "awaiting_transform": {"context_transformed", *HOOK_ANSWER},
    "awaiting_convert": {"context_converted", *HOOK_ANSWER},
    "streaming": {"stream_event_received", "stream_failed", "abort_requested"},
    "running_tools": {"arguments_prepared", "before_tool_call_decided", "tool_updated", "tool_finished",
                      "tool_failed", "tool_timed_out", "after_tool_call_decided", "approval_checked",
                      "tool_call_decided", *HOOK_ANSWER},
    "awaiting_next_turn": {"next_turn_prepared", *HOOK_ANSWER},
    "awaiting_stop_decision": {"stop_after_turn_decided", *HOOK_ANSWER},
    "suspended": {"resumed", "abort_requested"},
}
"""The loop's table written out: phase → the inputs it takes (with the right id). Finished takes
nothing."""


def test_the_walks_reach_every_phase_and_every_pair_of_the_table() -> None:
    rng = random.Random(15)
    taken: set[tuple[str, str]] = set()
    for _ in range(120):
        picks = [rng.randrange(12) for _ in range(rng.randrange(1, 60))]
        taken |= walk(picks, rng.choice(["parallel", "sequential"]), rng.choice([(), (USER,)]))
    assert taken == {(phase, inp) for phase, inputs in EXPECTED.items() for inp in inputs}
