"""Tool call ids stay unique, and the same, across a suspension, a crash and a replay.

The id a tool is handed is its idempotency key (docs/approvals.md). A run that suspends is
resumed from stored data, maybe in another process, with another model object; a crashed run
resumes from its transcript. The model there may repeat an id of the conversation (a provider
that says ``"0"`` every turn) or, scripted, count its ids from 1 again: the calls still get
ids of their own, and a strict replay of the transcript gives the same ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Approve, AssistantMessage, Model
from agentcore.codec import from_json, to_json
from interpreters import ScriptedModel, ToolContext, agent_loop, tool
from interpreters.replay import fork, replay, resume
from interpreters.streams.scripted import Reply
from interpreters.transcript import TranscriptRecorder, read_transcript
from tests.support.clocks import clock
from tests.support.flavours import Flavour

CHARGED: list[tuple[str, int]] = []


@tool(requires_approval=True)
def charge(amount: int, ctx: ToolContext) -> str:
    """Charge the card (once per call id)."""
    if any(key == ctx.tool_call_id for key, _ in CHARGED):
        return f"already charged ({ctx.tool_call_id})"
    CHARGED.append((ctx.tool_call_id, amount))
    return f"charged {amount}"


@tool
def note(text: str, ctx: ToolContext) -> str:
    """Write a note (once per call id)."""
    if any(key == ctx.tool_call_id for key, _ in CHARGED):
        return f"already noted ({ctx.tool_call_id})"
    CHARGED.append((ctx.tool_call_id, len(text)))
    return "noted"


CONTEXT = AgentContext(tools=(charge, note))
CONFIG = AgentLoopConfig(model=Model(id="m"))


def call_ids(messages: Any) -> list[str]:
    return [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]


def test_a_resumed_run_repeating_an_id_gets_keys_of_its_own(flavour: Flavour, tmp_path: Path) -> None:
    """The suspension is stored as JSON and resumed with another model object, twice; the
    model says "0" every time."""
    CHARGED.clear()
    path = tmp_path / "run.jsonl"
    first = ScriptedModel([Reply(tool_calls=[("charge", {"amount": 10}, "0")])], clock=clock)
    _, _, suspension = flavour.start_suspending("Charge 10 then 20", CONTEXT, CONFIG, first,
                                                journal=TranscriptRecorder(path, CONTEXT, CONFIG), clock=clock)
    assert [p.tool_call_id for p in suspension.pending] == ["0"]
    stored = from_json(to_json(suspension))

    second = ScriptedModel([Reply(tool_calls=[("charge", {"amount": 20}, "0")])], clock=clock)
    _, _, again = flavour.resume(stored, {"0": Approve()}, CONTEXT, CONFIG, second, transcript=path, clock=clock)
    assert [p.tool_call_id for p in again.pending] == ["0_2"]
    assert CHARGED == [("0", 10)]

    third = ScriptedModel(["done"], clock=clock)
    _, messages, end = flavour.resume(from_json(to_json(again)), {"0_2": Approve()}, CONTEXT, CONFIG, third,
                                      transcript=path, clock=clock)
    assert end is None
    assert CHARGED == [("0", 10), ("0_2", 20)]
    assert call_ids(messages) == ["0", "0_2"]  # the run's messages, from before the first suspension
    result = replay(path)
    assert result.finished and call_ids(result.messages) == ["0", "0_2"]


def test_a_scripted_model_counts_on_from_the_conversation(flavour: Flavour) -> None:
    """A new ScriptedModel object after a suspension numbers its calls after the calls of the
    conversation it is called with (call_2, not call_1 again)."""
    CHARGED.clear()
    first = ScriptedModel([Reply(tool_calls=[("charge", {"amount": 10})])], clock=clock)
    _, _, suspension = flavour.start_suspending("Charge", CONTEXT, CONFIG, first, clock=clock)
    assert [p.tool_call_id for p in suspension.pending] == ["call_1"]
    second = ScriptedModel([Reply(tool_calls=[("note", {"text": "x"}), ("note", {"text": "yy"})]), "done"],
                           clock=clock)
    _, messages, end = flavour.resume(suspension, {"call_1": Approve()}, CONTEXT, CONFIG, second, clock=clock)
    assert end is None
    assert call_ids(messages) == ["call_1", "call_2", "call_3"]
    assert CHARGED == [("call_1", 10), ("call_2", 1), ("call_3", 2)]


def says_zero(context: Any, index: int) -> Any:
    """A model that calls ``note`` three times, with the id "0" every time, then is done (its
    reply depends on the conversation alone: a new object answers a resumed run alike)."""
    done = sum(1 for m in context.messages if m.role == "toolResult")
    return Reply(tool_calls=[("note", {"text": "a" * (done + 1)}, "0")]) if done < 3 else "done"


def test_a_crashed_run_resumes_with_the_ids_it_would_have_had(tmp_path: Path) -> None:
    """The transcript cut after every step (a crash there), resumed with a new model object."""
    full = tmp_path / "full.jsonl"
    context = AgentContext(tools=(note,))
    CHARGED.clear()
    expected = agent_loop("Note three times", context, CONFIG, stream_fn=ScriptedModel(says_zero, clock=clock),
                          journal=TranscriptRecorder(full, context, CONFIG), clock=clock).result()
    assert call_ids(expected) == ["0", "0_2", "0_3"]
    for n in range(1, read_transcript(full).steps + 1):
        cut = fork(full, n, tmp_path / f"cut{n}.jsonl")
        CHARGED.clear()  # (a tool the crash interrupted would find its key, the same, in its ledger)
        messages = resume(cut, CONFIG, (note,), stream_fn=ScriptedModel(says_zero, clock=clock), clock=clock).result()
        assert messages == expected, f"resumed after step {n}"
        assert replay(cut).messages == expected
