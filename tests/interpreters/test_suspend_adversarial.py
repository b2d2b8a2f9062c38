"""Durable suspension and core budgets in the cases between the stated ones, through the public
API, on both interpreters.

The cases sit between the ones tests/interpreters/test_suspend*.py state: mixed batches
(parallel and sequential), hooks around a suspension, abort at a suspension, resuming twice,
decisions that are malformed, budgets at their boundaries, transcripts of suspended runs, the
Agent's conversation across a stored suspension.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    Approve,
    BudgetReachedEvent,
    Cost,
    Deny,
    Model,
    PendingCall,
    Suspension,
    ToolOutput,
    Usage,
)
from agentcore.codec import from_json, to_json
from interpreters import AbortSignal, ScriptedModel, tool
from interpreters.agent import Agent, AgentBusyError
from interpreters.replay import replay
from interpreters.streams.scripted import Reply, tool_call
from interpreters.transcript import TranscriptError, TranscriptRecorder
from tests.support.clocks import clock
from tests.support.events import types
from tests.support.flavours import ASYNCIO, SYNC, Flavour
from tests.support.scripts import script_env
from tests.support.suspending import calls, model

MODEL = Model(id="m")
RAN: list[str] = []


@tool(requires_approval=True)
def rm(path: str) -> str:
    """Remove a file."""
    RAN.append(f"rm {path}")
    return f"removed {path}"


@tool
def ls() -> str:
    """List the files."""
    RAN.append("ls")
    return "a b"


@tool(deferred=True)
def ask(question: str) -> str:
    """Ask a person."""
    raise AssertionError("a deferred tool is never executed")


@tool(requires_approval=lambda args: "no")  # a non-bool: truthy
def picky(x: int) -> str:
    """A tool whose approval function returns a string."""
    RAN.append(f"picky {x}")
    return f"picky {x}"


@tool(requires_approval=lambda args: None)  # a non-bool: falsy
def lax(x: int) -> str:
    """A tool whose approval function returns None."""
    RAN.append(f"lax {x}")
    return f"lax {x}"


TOOLS = [rm, ls, ask, picky, lax]


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()


def context() -> AgentContext:
    return AgentContext("sys", (), TOOLS)


def config(**kw: Any) -> AgentLoopConfig:
    return AgentLoopConfig(model=MODEL, **kw)


# A batch with everything in it: a call that needs nothing, one that waits for approval, an unknown
# tool, a deferred call, invalid arguments to a tool that needs approval, another approval.
MIXED = calls(("ls", {}, "c0"), ("rm", {"path": "a"}, "c1"), ("nosuch", {}, "c2"), ("ask", {"question": "?"}, "c3"),
              ("rm", {"path": 5}, "c4"), ("rm", {"path": "b"}, "c5"))
MIXED_DECISIONS = {"c1": Approve(arguments={"path": 7}), "c3": Deny("nobody knows"), "c5": Deny()}


def run_through(flavour: Flavour, replies: list[Any], decisions: dict[str, Any], cfg: AgentLoopConfig
                ) -> tuple[list[list[Any]], list[Any], list[tuple[str, ...]]]:
    """Suspend, and resume with ``decisions`` (the ones each suspension asks for) until the end:
    the events of each segment, the final messages, the pending ids of each suspension."""
    m = model(*replies)
    events, messages, suspension = flavour.start_suspending("go", context(), cfg, m, clock=clock)
    segments, pendings = [events], []
    while suspension is not None:
        ids = tuple(p.tool_call_id for p in suspension.pending)
        pendings.append(ids)
        events, messages, suspension = flavour.resume(suspension, {i: decisions[i] for i in ids}, context(), cfg, m,
                                                      clock=clock)
        segments.append(events)
    return segments, messages, pendings


def at_once(flavour: Flavour, replies: list[Any], decisions: dict[str, Any], **kw: Any) -> tuple[list[Any], list[Any]]:
    cfg = config(decide_tool_call=lambda pending: decisions[pending.tool_call_id], **kw)
    events, messages, suspension = flavour.start_suspending("go", context(), cfg, model(*replies), clock=clock)
    assert suspension is None
    return events, messages


def results(messages: list[Any]) -> list[tuple[str, str, bool]]:
    return [(m.tool_call_id, m.content[0].text, m.is_error) for m in messages if m.role == "toolResult"]


def assert_every_call_answered_once(messages: list[Any]) -> None:
    asked = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls]
    answered = [m.tool_call_id for m in messages if m.role == "toolResult"]
    assert sorted(asked) == sorted(answered) and len(set(answered)) == len(answered)


VALIDATION_7 = ('Validation failed for tool "rm":\n  - path: 7 is not of type \'string\'\n\nReceived arguments:\n'
                '{\n  "path": 7\n}')
VALIDATION_5 = ('Validation failed for tool "rm":\n  - path: 5 is not of type \'string\'\n\nReceived arguments:\n'
                '{\n  "path": 5\n}')
MIXED_RESULTS = [("c0", "a b", False), ("c1", VALIDATION_7, True), ("c2", "Tool nosuch not found", True),
                 ("c3", "nobody knows", True), ("c4", VALIDATION_5, True), ("c5", "Tool call was denied", True)]


# --------------------------------------------------------------------------- mixed batches


def test_a_parallel_mixed_batch_suspends_once_on_every_waiting_call_and_ends_as_an_uninterrupted_run(
        flavour: Flavour) -> None:
    segments, messages, pendings = run_through(flavour, [MIXED, "Done."], MIXED_DECISIONS, config())
    assert pendings == [("c1", "c3", "c5")]
    assert RAN == ["ls"]  # the edited arguments failed validation: rm never ran
    assert results(messages) == MIXED_RESULTS  # in call order, what the model sees, exactly
    assert_every_call_answered_once(messages)
    _, whole = at_once(flavour, [MIXED, "Done."], MIXED_DECISIONS)
    assert whole == messages


def test_a_sequential_mixed_batch_suspends_per_waiting_call_with_the_exact_events_of_an_uninterrupted_run(
        flavour: Flavour) -> None:
    segments, messages, pendings = run_through(flavour, [MIXED, "Done."], MIXED_DECISIONS,
                                               config(tool_execution="sequential"))
    assert pendings == [("c1",), ("c3",), ("c5",)]
    assert results(messages) == MIXED_RESULTS
    whole_events, whole = at_once(flavour, [MIXED, "Done."], MIXED_DECISIONS, tool_execution="sequential")
    assert whole == messages
    joined = [e for seg in segments for e in seg if e.type != "agent_suspended"]
    assert types(joined) == types(whole_events)  # exact, not sorted
    assert [e for e in joined if e.type != "message_update"] == [e for e in whole_events if e.type != "message_update"]


def test_agent_end_is_never_in_a_suspended_segment_and_exactly_once_at_the_end(flavour: Flavour) -> None:
    segments, _, _ = run_through(flavour, [MIXED, "Done."], MIXED_DECISIONS, config(tool_execution="sequential"))
    for seg in segments[:-1]:
        assert [e.type for e in seg].count("agent_end") == 0 and seg[-1].type == "agent_suspended"
        assert [e.type for e in seg].count("agent_suspended") == 1
    assert [e.type for e in segments[-1]].count("agent_end") == 1 and segments[-1][-1].type == "agent_end"
    assert sum(1 for seg in segments for e in seg if e.type == "agent_start") == 1


def test_a_sequential_suspension_loses_the_results_it_already_emitted_from_result(flavour: Flavour) -> None:
    """``stream.result()`` is "the new messages so far", but in a sequential batch the results of
    the calls before the waiting one have had their ``message_end`` and are not in it."""
    m = model(calls(("ls", {}, "c0"), ("rm", {"path": "a"}, "c1")), "Done.")
    events, messages, suspension = flavour.start_suspending("go", context(), config(tool_execution="sequential"), m,
                                                            clock=clock)
    ended = [e.message.role for e in events if e.type == "message_end"]
    assert ended == ["user", "assistant", "toolResult"]
    assert [msg.role for msg in messages] == ended


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
def test_hooks_around_a_suspension_are_called_exactly_as_in_an_uninterrupted_run(flavour: Flavour, mode: str) -> None:
    seen: Counter[Any] = Counter()
    contexts: list[Any] = []

    def hooks() -> dict[str, Any]:
        def before(ctx: Any) -> None:
            seen["before", ctx.tool_call.id] += 1

        def after(ctx: Any) -> None:
            seen["after", ctx.tool_call.id, ctx.result.content[0].text] += 1

        def prepare(ctx: Any) -> None:
            seen["prepare"] += 1
            contexts.append(("prepare", [m.role for m in ctx.new_messages]))

        def stop(ctx: Any) -> bool:
            seen["stop"] += 1
            return False

        def transform(messages: Any) -> Any:
            seen["transform"] += 1
            contexts.append(("transform", [m.role for m in messages]))
            return messages

        def steering() -> list[Any]:
            seen["steering"] += 1
            return []

        def follow_ups() -> list[Any]:
            seen["follow_ups"] += 1
            return []

        return dict(before_tool_call=before, after_tool_call=after, prepare_next_turn=prepare,
                    should_stop_after_turn=stop, transform_context=transform, get_steering_messages=steering,
                    get_follow_up_messages=follow_ups, tool_execution=mode)

    decisions = {**MIXED_DECISIONS, "c3": ToolOutput("42")}
    _, messages, _ = run_through(flavour, [MIXED, "Done."], decisions, config(**hooks()))
    suspended, suspended_contexts = dict(seen), list(contexts)
    seen.clear()
    contexts.clear()
    _, whole = at_once(flavour, [MIXED, "Done."], decisions, **hooks())
    assert whole == messages
    assert suspended == dict(seen) and suspended_contexts == contexts
    assert suspended[("after", "c3", "42")] == 1  # after_tool_call sees the supplied result, once


# --------------------------------------------------------------------------- malformed decisions


def suspended_on_ask(flavour: Flavour) -> tuple[Suspension, ScriptedModel]:
    m = model(calls(("ask", {"question": "?"}, "q1"), ("rm", {"path": "a"}, "r1")), "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m, clock=clock)
    return suspension, m


def test_tool_output_for_an_approval_is_one_error_naming_the_id_and_nothing_is_lost(flavour: Flavour) -> None:
    suspension, m = suspended_on_ask(flavour)
    with pytest.raises(ValueError) as info:
        flavour.resume(suspension, {"q1": ToolOutput("x"), "r1": ToolOutput("y")}, context(), config(), m)
    assert str(info.value) == ("Cannot resume: tool call r1 waits for an approval (Approve or Deny), not ToolOutput")
    assert RAN == [] and m.calls == 1
    _, messages, _ = flavour.resume(suspension, {"q1": Deny(), "r1": Approve()}, context(), config(), m, clock=clock)
    assert results(messages) == [("q1", "Tool call was denied", True), ("r1", "removed a", False)]


def test_deny_on_a_deferred_call_is_an_error_result_the_model_sees(flavour: Flavour) -> None:
    suspension, m = suspended_on_ask(flavour)
    _, messages, _ = flavour.resume(suspension, {"q1": Deny("no one here"), "r1": Deny("")}, context(), config(), m)
    assert results(messages) == [("q1", "no one here", True), ("r1", "Tool call was denied", True)]
    sent = m.requests[-1].context.messages
    assert [(x.tool_call_id, x.content[0].text) for x in sent if x.role == "toolResult"] == [
        ("q1", "no one here"), ("r1", "Tool call was denied")]


@pytest.mark.parametrize("value", [42, None, {"text": "x"}], ids=["int", "none", "dict"])
def test_a_tool_output_that_is_not_a_result_is_a_clear_error_naming_the_id(flavour: Flavour, value: Any) -> None:
    """``ToolOutput(42)`` is accepted by the constructor and by ``resume_suspended``'s type check,
    then trips a bare ``assert`` inside the core: an ``AssertionError`` with no text (and with
    ``python -O`` a non-result would go into the state)."""
    suspension, m = suspended_on_ask(flavour)
    with pytest.raises((TypeError, ValueError), match="q1"):
        flavour.resume(suspension, {"q1": ToolOutput(value), "r1": Approve()}, context(), config(), m)


def test_a_deny_reason_that_is_not_text_is_refused(flavour: Flavour) -> None:
    """``Deny(123)`` gives a result whose ``TextContent.text`` is the int 123 (the model is sent
    a non-string text)."""
    suspension, m = suspended_on_ask(flavour)
    try:
        _, messages, _ = flavour.resume(suspension, {"q1": Deny(123), "r1": Deny()}, context(), config(), m)
    except (TypeError, ValueError):
        return
    assert all(isinstance(c.text, str) for msg in messages for c in msg.content if hasattr(c, "text"))


def test_edited_arguments_that_are_not_an_object_give_the_validation_error(flavour: Flavour) -> None:
    suspension, m = suspended_on_ask(flavour)
    _, messages, _ = flavour.resume(suspension, {"q1": ToolOutput("x"), "r1": Approve(arguments="a.txt")},
                                    context(), config(), m)
    assert results(messages)[1] == ("r1", 'Validation failed for tool "rm":\n  - root: \'a.txt\' is not of type '
                                    '\'object\'\n\nReceived arguments:\n"a.txt"', True)
    assert RAN == []


def test_requires_approval_functions_returning_non_bools_are_taken_by_truth(flavour: Flavour) -> None:
    m = model(calls(("picky", {"x": 1}, "p1"), ("lax", {"x": 2}, "l1")), "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m, clock=clock)
    assert RAN == ["lax 2"]
    assert suspension.pending == (PendingCall("p1", "picky", {"x": 1}, 'Tool "picky" requires approval', "approval"),)


# --------------------------------------------------------------------------- resuming twice, JSON, other processes


def test_resuming_twice_from_the_same_suspension_gives_the_same_run(flavour: Flavour) -> None:
    suspension, _ = suspended_on_ask(flavour)
    frozen = json.dumps(to_json(suspension))
    outs = []
    for _ in range(2):
        m = model("Done.")
        outs.append(flavour.resume(suspension, {"q1": ToolOutput("x"), "r1": Approve()}, context(), config(), m,
                                   clock=clock)[1])
    assert outs[0] == outs[1] and RAN == ["rm a", "rm a"]
    assert json.dumps(to_json(suspension)) == frozen  # the suspension is a value: unchanged


def test_resuming_a_transcript_twice_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    m = model(tool_call("rm", {"path": "a"}, "r1"), "Done.", "Done again.")
    _, _, suspension = SYNC.start_suspending("go", context(), config(), m, clock=clock,
                                             journal=TranscriptRecorder(path, context(), config()))
    SYNC.resume(suspension, {"r1": Approve()}, context(), config(), m, clock=clock, transcript=path)
    with pytest.raises(TranscriptError, match="this suspension \\(step 7\\) was already resumed at step 8 \\(r1 "
                                              "approved\\); a suspension is resumed at most once per transcript$"):
        SYNC.resume(suspension, {"r1": Approve()}, context(), config(), m, clock=clock, transcript=path)


def test_a_refused_resume_leaves_the_transcript_as_it_was(flavour: Flavour, tmp_path: Path) -> None:
    """"Missing ... decisions raise one ValueError ..., before anything runs (the suspension is
    unchanged: try again)" -- but with ``transcript=`` the file already got a
    ``resumed_suspension`` line for a resume that never happened."""
    path = tmp_path / "run.jsonl"
    m = model(tool_call("rm", {"path": "a"}, "r1"), "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m, clock=clock,
                                                journal=TranscriptRecorder(path, context(), config()))
    before = path.read_text()
    with pytest.raises(ValueError, match="^Cannot resume: no decision for pending tool call r1$"):
        flavour.resume(suspension, {}, context(), config(), m, clock=clock, transcript=path)
    assert path.read_text() == before


def test_a_suspension_from_another_process_resumes_here_on_both_interpreters(tmp_path: Path) -> None:
    script = textwrap.dedent('''
        import asyncio, json
        from agentcore.codec import to_json
        from interpreters import aio
        from tests.interpreters import test_suspend_adversarial as adv
        from tests.support.clocks import clock
        async def main():
            stream = aio.agent_loop("go", adv.context(), adv.config(), stream_fn=adv.model(adv.MIXED, "Done."),
                                    clock=clock)
            async for _ in stream:
                pass
            return stream.suspension
        print(json.dumps(to_json(asyncio.run(main()))))
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=script_env())
    assert done.returncode == 0, done.stderr
    suspension = from_json(json.loads(done.stdout))
    assert [p.tool_call_id for p in suspension.pending] == ["c1", "c3", "c5"]
    _, whole = at_once(SYNC, [MIXED, "Done."], MIXED_DECISIONS)
    for flavour in (SYNC, ASYNCIO):
        m = model("Done.")  # the resumed run asks for the second reply only
        _, messages, _ = flavour.resume(suspension, MIXED_DECISIONS, context(), config(), m, clock=clock)
        assert messages == whole


def test_a_suspension_stored_without_its_version_reads_as_version_1(flavour: Flavour) -> None:
    suspension, m = suspended_on_ask(flavour)
    data = to_json(suspension)
    data.pop("version")
    old = from_json(data)
    assert old.version == 1
    _, messages, _ = flavour.resume(old, {"q1": ToolOutput("x"), "r1": Approve()}, context(), config(), m)
    assert results(messages) == [("q1", "x", False), ("r1", "removed a", False)]


@pytest.mark.parametrize("version", [0, -1, True])
def test_a_suspension_of_an_unknown_version_is_refused(flavour: Flavour, version: Any) -> None:
    suspension, m = suspended_on_ask(flavour)
    data = to_json(suspension)
    data["version"] = version
    with pytest.raises(ValueError, match=f"format version {version!r}"):
        flavour.resume(from_json(data), {"q1": ToolOutput("x"), "r1": Approve()}, context(), config(), m)


# --------------------------------------------------------------------------- abort


def test_an_abort_at_the_resume_answers_every_call_once_and_ends_the_run_once(flavour: Flavour) -> None:
    m = model(MIXED, "Done.")
    _, _, suspension = flavour.start_suspending("go", context(), config(), m, clock=clock)
    signal = AbortSignal()
    signal.abort()
    events, messages, again = flavour.suspending(lambda: flavour.resume_suspended(
        suspension, MIXED_DECISIONS, context=context(), config=config(), signal=signal, stream_fn=m, clock=clock))
    assert again is None and [e.type for e in events].count("agent_end") == 1 and events[-1].type == "agent_end"
    assert m.calls == 1
    assert_every_call_answered_once(messages)


def test_an_abort_while_the_resumed_tools_run_ends_the_run_on_their_results(flavour: Flavour) -> None:
    signal = AbortSignal()

    @tool(requires_approval=True)
    def slow(n: int) -> str:
        """Aborts the run while it runs."""
        signal.abort()
        return f"slow {n}"

    ctx = AgentContext("sys", (), [slow, ls])
    m = model(calls(("slow", {"n": 1}, "s1"), ("ls", {}, "c0")), "Done.")
    _, _, suspension = flavour.start_suspending("go", ctx, config(), m, clock=clock)
    events, messages, again = flavour.suspending(lambda: flavour.resume_suspended(
        suspension, {"s1": Approve()}, context=ctx, config=config(), signal=signal, stream_fn=m, clock=clock))
    assert again is None and events[-1].type == "agent_end" and m.calls == 1
    assert results(messages) == [("s1", "slow 1", False), ("c0", "a b", False)]


def test_an_aborted_run_does_not_say_a_budget_ended_it(flavour: Flavour) -> None:
    """An abort at the resume of a run with ``max_turns=1`` ends with ``budget_reached``: the
    marker "saying which budget ended it" names a budget, but the abort ended it."""
    m = model(tool_call("rm", {"path": "a"}, "r1"), "Done.")
    cfg = config(max_turns=1)
    _, _, suspension = flavour.start_suspending("go", context(), cfg, m, clock=clock)
    signal = AbortSignal()
    signal.abort()
    events, _, _ = flavour.suspending(lambda: flavour.resume_suspended(
        suspension, {"r1": Approve()}, context=context(), config=cfg, signal=signal, stream_fn=m, clock=clock))
    assert events[-1].type == "agent_end"
    assert "budget_reached" not in [e.type for e in events]


# --------------------------------------------------------------------------- budgets


def usage(tokens: int, cost: float) -> Usage:
    return Usage(total_tokens=tokens, cost=Cost(total=cost))


def looping(n: int, tokens: int = 1, cost: float = 0.0, with_usage: bool = True) -> list[Any]:
    return [Reply(tool_calls=[("ls", {}, f"l{i}")], usage=usage(tokens, cost) if with_usage else Usage())
            for i in range(n)]


def test_max_turns_1_ends_after_the_first_turn_even_when_it_asked_for_tools(flavour: Flavour) -> None:
    m = model(*looping(5))
    events, messages, _ = flavour.start_suspending("go", context(), config(max_turns=1), m, clock=clock)
    assert m.calls == 1 and RAN == ["ls"]
    assert types(events)[-3:] == ["turn_end", "budget_reached", "agent_end"]
    assert events[-2] == BudgetReachedEvent("max_turns", 1, 1)
    assert_every_call_answered_once(messages)


def test_a_cost_budget_is_reached_when_the_costs_add_up_to_it(flavour: Flavour) -> None:
    """Ten turns at $0.10 reach ``max_cost_usd=1.0``; the float sum is 0.9999999999999999, so the
    run takes an eleventh turn and reports ``used=1.0999999999999999``."""
    m = model(*looping(20, cost=0.1))
    events, _, _ = flavour.start_suspending("go", context(), config(max_cost_usd=1.0), m, clock=clock)
    assert m.calls == 10
    assert events[-2].budget == "max_cost_usd" and events[-2].used == pytest.approx(1.0)


def test_turns_without_usage_count_as_turns_and_not_as_tokens(flavour: Flavour) -> None:
    # a reply always has a Usage (zero when the provider gave none); tool results may have None
    m = model(*looping(4, with_usage=False), Reply("Done.", usage=Usage()))
    events, _, _ = flavour.start_suspending("go", context(), config(max_total_tokens=1), m, clock=clock)
    assert m.calls == 5 and events[-1].type == "agent_end" and "budget_reached" not in [e.type for e in events]
    m = model(*looping(4, with_usage=False), "Done.")
    events, _, _ = flavour.start_suspending("go", context(), config(max_turns=3), m, clock=clock)
    assert m.calls == 3 and events[-2] == BudgetReachedEvent("max_turns", 3, 3)


def test_a_budget_reached_by_the_suspended_turn_ends_the_run_at_its_resume(flavour: Flavour) -> None:
    m = model(Reply(tool_calls=[("rm", {"path": "a"}, "r1")], usage=usage(10, 0.5)), "never")
    cfg = config(max_turns=1, max_cost_usd=0.5)
    events, _, suspension = flavour.start_suspending("go", context(), cfg, m, clock=clock)
    assert events[-1].type == "agent_suspended" and "budget_reached" not in [e.type for e in events]
    events, messages, again = flavour.resume(suspension, {"r1": Approve()}, context(), cfg, m, clock=clock)
    assert again is None and m.calls == 1
    assert types(events)[-3:] == ["turn_end", "budget_reached", "agent_end"]
    assert events[-2] == BudgetReachedEvent("max_turns", 1, 1)  # the first budget in the documented order
    assert results(messages) == [("r1", "removed a", False)]


def test_a_budget_run_with_a_suspension_replays_strictly_from_its_transcript(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    replies = [Reply(tool_calls=[("ls", {}, "l0"), ("rm", {"path": "a"}, "r1")], usage=usage(10, 0.25)),
               *looping(5, tokens=10, cost=0.25)]
    cfg = config(max_total_tokens=30)
    m = model(*replies)
    first, _, suspension = flavour.start_suspending("go", context(), cfg, m, clock=clock,
                                                    journal=TranscriptRecorder(path, context(), cfg))
    more, messages, _ = flavour.resume(suspension, {"r1": Approve()}, context(), cfg, m, clock=clock, transcript=path)
    assert more[-2] == BudgetReachedEvent("max_total_tokens", 30, 30) and m.calls == 3
    result = replay(path)
    assert result.finished and result.messages == messages and result.events == first + more
    llm = flavour.call(flavour.replay_llm, path, cfg, context().tools)
    assert llm.finished and llm.messages == messages


# --------------------------------------------------------------------------- transcripts: show and html


def test_transcript_show_and_html_name_the_pending_calls_and_the_decisions(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]
                                                                           ) -> None:
    from interpreters.cli import main

    path = tmp_path / "run.jsonl"
    m = model(MIXED, "Done.")
    _, _, suspension = SYNC.start_suspending("go", context(), config(), m, clock=clock,
                                             journal=TranscriptRecorder(path, context(), config()))
    assert main(["transcript", "show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "(suspended)" in shown
    assert shown.count("waits for an approval") == 2 and shown.count("waits for a result") == 1
    SYNC.resume(suspension, MIXED_DECISIONS, context(), config(), m, clock=clock, transcript=path)
    assert main(["transcript", "show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "(finished)" in shown and "nobody knows" in shown
    assert main(["transcript", "html", str(path), "-o", str(tmp_path / "run.html")]) == 0
    page = (tmp_path / "run.html").read_text()
    assert "nobody knows" in page and "c3" in page


# --------------------------------------------------------------------------- the Agent


def text_of(m: Any) -> str:
    if m.role == "assistant":
        return "A"
    return m.content if isinstance(m.content, str) else m.content[0].text


def reply(context: Any, n: int) -> Reply | str:
    last = context.messages[-1]
    if last.role == "user" and text_of(last) == "go":
        return Reply(tool_calls=[("ls", {}, "c0"), ("rm", {"path": "a"}, "c1")])
    return "Seen: " + ", ".join(text_of(m) for m in context.messages[2:])


def agent(**kw: Any) -> Agent:
    return Agent(model=MODEL, tools=TOOLS, stream_fn=ScriptedModel(reply, clock=clock), clock=clock, **kw)


def test_the_agent_refuses_misuse_with_exact_errors() -> None:
    async def main() -> None:
        a = agent()
        with pytest.raises(RuntimeError, match="^Agent is not suspended: no tool call waits for a decision$"):
            await a.resume()
        with pytest.raises(RuntimeError, match="^Agent is not suspended"):
            a.approve("c1")
        await a.prompt("go")
        assert [p.tool_call_id for p in a.pending] == ["c1"]
        with pytest.raises(KeyError, match="no pending tool call zz \\(pending: c1\\)"):
            a.approve("zz")
        with pytest.raises(ValueError, match="^tool call c1 waits for an approval \\(Approve or Deny\\), not "
                                             "ToolOutput$"):
            a.supply("c1", "x")
        with pytest.raises(AgentBusyError, match="Agent is suspended: tool calls wait for decisions \\(c1\\)"):
            await a.prompt("other")
        with pytest.raises(AgentBusyError, match="Agent is suspended"):
            await a.continue_()
        a.abort()  # idle: nothing to abort; the suspension stays
        assert [p.tool_call_id for p in a.pending] == ["c1"]
        with pytest.raises(ValueError, match="^Cannot resume: no decision for pending tool call c1$"):
            await a.resume()
        a.deny("c1", "first")
        a.approve("c1")  # the last decision wins
        assert a.decisions == {"c1": Approve()}
        await a.resume()
        assert a.pending == () and a.state.messages[-1].text == "Seen: a b, removed a"

    asyncio.run(main())


def test_steering_and_follow_ups_queued_while_suspended_reach_the_resumed_run() -> None:
    async def main() -> None:
        a = agent()
        await a.prompt("go")
        a.steer("steer me")
        a.follow_up("and then")
        a.approve("c1")
        await a.resume()
        texts = [text_of(m) if m.role != "assistant" else m.text for m in a.state.messages]
        assert texts[-4:] == ["steer me", "Seen: a b, removed a, steer me", "and then",
                              "Seen: a b, removed a, steer me, A, and then"]
        assert a.steering_queue == () and a.follow_up_queue == ()

    asyncio.run(main())


def test_the_agents_conversation_while_suspended_is_the_suspensions() -> None:
    """``agent.state.suspension`` is "the Suspension to store with the conversation", and
    ``restore`` makes its messages the conversation; after a sequential batch suspended the
    agent has the result of c0 (it saw its ``message_end``), the suspension does not."""

    async def main() -> None:
        a = agent(tool_execution="sequential")
        await a.prompt("go")
        assert list(a.state.messages) == list(a.state.suspension.messages)
        assert [m.role for m in a.state.messages] == ["user", "assistant", "toolResult"]

    asyncio.run(main())


def test_an_agent_restored_from_a_sequential_suspension_has_every_tool_result() -> None:
    """The stored suspension's conversation lacks the results a sequential batch already
    emitted; an agent restored from it ends with a tool call (c0) that has no result in its
    conversation, though the model saw one."""

    async def main() -> None:
        first = agent(tool_execution="sequential")
        await first.prompt("go")
        stored = json.dumps(to_json(first.state.suspension))
        second = agent(tool_execution="sequential")
        second.restore(from_json(json.loads(stored)))
        second.approve("c1")
        await second.resume()
        assert_every_call_answered_once(list(second.state.messages))
        assert second.state.messages[-1].text == "Seen: a b, removed a"

    asyncio.run(main())


def test_agent_supply_with_a_value_that_is_not_a_result_is_refused_at_once() -> None:
    async def main() -> None:
        a = Agent(model=MODEL, tools=TOOLS, clock=clock, stream_fn=ScriptedModel(
            [tool_call("ask", {"question": "?"}, "q1"), "Done."], clock=clock))
        await a.prompt("go")
        with pytest.raises((TypeError, ValueError), match="q1"):
            a.supply("q1", 42)  # type: ignore[arg-type]
            await a.resume()

    asyncio.run(main())


def test_agent_budgets_start_at_zero_for_each_prompt_and_carry_over_a_suspension() -> None:
    def looping_reply(context: Any, n: int) -> Reply:
        return Reply(tool_calls=[("rm" if n == 0 else "ls", {"path": "a"} if n == 0 else {}, f"x{n}")])

    async def main() -> None:
        a = Agent(model=MODEL, tools=TOOLS, clock=clock, max_turns=2,
                  stream_fn=ScriptedModel(looping_reply, clock=clock))
        seen: list[Any] = []
        a.subscribe(lambda e: seen.append(e) if e.type == "budget_reached" else None)
        await a.prompt("go")
        assert [p.tool_call_id for p in a.pending] == ["x0"]
        a.approve("x0")
        await a.resume()
        assert seen == [BudgetReachedEvent("max_turns", 2, 2)]
        await a.prompt("again")
        assert seen[-1] == BudgetReachedEvent("max_turns", 2, 2) and len(seen) == 2

    asyncio.run(main())
