"""What runs after a resume is decided by the resuming code's tools and config, never by what a
stored suspension says about them (it is data anyone may have edited, and code changes between
a suspension and its resume).

- An approved call runs only with arguments its tool, as the resuming code declares it, takes:
  they are checked against its schema again (an error result otherwise, as for any call); a
  call of a tool the resuming code does not have gets the usual "not found" result (an
  ``Approve`` with edited arguments included).
- What a pending call waits for must be what its tool's declaration in the resuming code makes
  it wait for (a deferred tool's call waits for a result and never runs here; any other waits
  for an approval): a suspension that says otherwise is refused before anything runs.
- The resuming config's ``tool_execution`` is in force for the rest of the run, and a batch the
  resuming code runs one call at a time (its config, or a tool declared sequential) runs the
  calls approved at the resume one at a time.

Through the public API, on both interpreters.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import tests.support.suspension_runs as runs
from agentcore import AgentContext, AgentLoopConfig, AgentTool, AgentToolResult, Approve, Model, TextContent, ToolOutput
from agentcore.codec import from_json, to_json
from interpreters import tool
from interpreters.agent import Agent
from tests.support.clocks import clock
from tests.support.flavours import Flavour
from tests.support.suspending import calls, model

MODEL = Model(id="m")
RAN: list[Any] = []
ADVICE = " (resume a suspension as agentcore.codec.to_json wrote it, with the tools of the run that suspended)"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()
    runs.RAN.clear()


def _remove(_id: str, args: Any, *_: Any) -> AgentToolResult:
    RAN.append(dict(args))
    return AgentToolResult([TextContent(f"removed {args['path']}")])


# A tool of its own (not @tool, which checks its arguments itself): what it gets is what runs.
RM = AgentTool("rm", "rm", "Remove a file.",
               {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
                "additionalProperties": False}, _remove, requires_approval=True)


def results(messages: list[Any]) -> list[tuple[str, str, bool]]:
    return [(m.tool_call_id, m.content[0].text, m.is_error) for m in messages if m.role == "toolResult"]


def suspended_on_rm(flavour: Flavour) -> dict[str, Any]:
    """A run suspended on ``rm a.txt`` (c1), as JSON."""
    ctx = AgentContext("sys", (), [RM])
    _, _, suspension = flavour.start_suspending("go", ctx, AgentLoopConfig(model=MODEL),
                                                model(calls(("rm", {"path": "a.txt"}, "c1")), "Done."), clock=clock)
    assert suspension is not None
    data: dict[str, Any] = to_json(suspension)
    return data


def reply_call(data: dict[str, Any], call_id: str) -> dict[str, Any]:
    """The tool call ``call_id`` of the batch's reply, in the conversation of a suspension's JSON."""
    reply = data["state"]["run"]["messages"][data["state"]["phase"]["batch"]["message"]]
    block: dict[str, Any] = next(b for b in reply["content"] if b.get("id") == call_id)
    return block


# --------------------------------------------------------------------------- the tool's schema, now


def test_an_approved_call_runs_only_with_arguments_its_tool_takes(flavour: Flavour) -> None:
    """A suspension edited so that the call an approver is shown, and would approve, has
    arguments the tool does not take: the approval does not run the tool on them."""
    data = suspended_on_rm(flavour)
    reply_call(data, "c1")["arguments"] = {"path": 5}
    edited = from_json(data)
    assert edited.problem() is None and edited.pending[0].arguments == {"path": 5}
    _, messages, again = flavour.resume(edited, {"c1": Approve()}, AgentContext("sys", (), [RM]),
                                        AgentLoopConfig(model=MODEL), model("Done."), clock=clock)
    assert again is None and RAN == []
    assert results(messages) == [("c1", 'Validation failed for tool "rm":\n  - path: 5 is not of type \'string\'\n\n'
                                        'Received arguments:\n{\n  "path": 5\n}', True)]


def test_the_schema_checked_at_the_resume_is_the_resuming_code_s(flavour: Flavour) -> None:
    """The code that resumes declares ``rm`` with a schema that no longer takes the argument the
    call was suspended with (a deploy between the suspension and its resume)."""
    data = suspended_on_rm(flavour)
    strict = AgentTool("rm", "rm", "Remove a file.",
                       {"type": "object", "properties": {"path": {"type": "string", "pattern": "^/tmp/"}},
                        "required": ["path"]}, _remove, requires_approval=True)
    _, messages, _ = flavour.resume(from_json(data), {"c1": Approve()}, AgentContext("sys", (), [strict]),
                                    AgentLoopConfig(model=MODEL), model("Done."), clock=clock)
    assert RAN == []
    assert results(messages) == [("c1", 'Validation failed for tool "rm":\n  - path: \'a.txt\' does not match '
                                        '\'^/tmp/\'\n\nReceived arguments:\n{\n  "path": "a.txt"\n}', True)]


@pytest.mark.parametrize("decision", [Approve(), Approve(arguments={"path": "b.txt"})], ids=["as shown", "edited"])
def test_an_approved_call_of_a_tool_the_resuming_code_lacks_is_not_found(flavour: Flavour, decision: Approve) -> None:
    data = suspended_on_rm(flavour)
    _, messages, again = flavour.resume(from_json(data), {"c1": decision}, AgentContext("sys", (), []),
                                        AgentLoopConfig(model=MODEL), model("Done."), clock=clock)
    assert again is None and RAN == [] and results(messages) == [("c1", "Tool rm not found", True)]


def test_a_call_switched_to_another_tool_is_checked_against_that_tool(flavour: Flavour) -> None:
    """``rm a.txt`` edited into a call of ``ls`` (which runs at once, takes no arguments): the
    approver is shown ``ls``, and ``ls`` does not run on arguments it does not take."""
    @tool
    def ls() -> str:
        """List the files."""
        RAN.append("ls")
        return "a.txt"

    data = suspended_on_rm(flavour)
    reply_call(data, "c1")["name"] = "ls"
    edited = from_json(data)
    assert edited.problem() is None and edited.pending[0].tool_name == "ls"
    _, messages, _ = flavour.resume(edited, {"c1": Approve()}, AgentContext("sys", (), [RM, ls]),
                                    AgentLoopConfig(model=MODEL), model("Done."), clock=clock)
    assert RAN == []
    assert results(messages) == [("c1", 'Validation failed for tool "ls":\n  - root: Additional properties are not '
                                        'allowed (\'path\' was unexpected)\n\nReceived arguments:\n{\n  "path": '
                                        '"a.txt"\n}', True)]


# --------------------------------------------------------------------------- what a call waits for


def stored_parallel() -> dict[str, Any]:
    """The run of tests/suspension_runs.py suspended on c2 (rm: an approval) and c4 (ask: deferred)."""
    data: dict[str, Any] = to_json(runs.suspend())
    runs.RAN.clear()  # ls ran before the suspension
    return data


def _slot(data: dict[str, Any], i: int) -> dict[str, Any]:
    slot: dict[str, Any] = data["state"]["phase"]["batch"]["slots"][i]
    return slot


DEFERRED_APPROVED = ("Cannot resume: the suspension shows tool call c4 waiting for an approval, but ask is a deferred "
                     "tool in the resuming code's tools: its result comes from outside the run, it never runs here"
                     + ADVICE)
APPROVAL_GIVEN = ("Cannot resume: the suspension shows tool call c2 waiting for a result, but rm is not a "
                  "deferred tool "
                  "in the resuming code's tools: its calls run here" + ADVICE)


@pytest.mark.parametrize("slot, decisions, text", [
    (2, {"c2": Approve(), "c4": Approve()}, DEFERRED_APPROVED),
    (1, {"c2": ToolOutput("removed a.txt"), "c4": ToolOutput("the attic")}, APPROVAL_GIVEN),
], ids=["deferred shown as waiting for an approval", "approval shown as waiting for a result"])
def test_a_pending_call_that_waits_for_what_its_tool_does_not_is_refused_before_anything_runs(
        flavour: Flavour, slot: int, decisions: dict[str, Any], text: str) -> None:
    data = stored_parallel()
    pending = _slot(data, slot)["pending"]
    pending["waits_for"] = "approval" if pending["waits_for"] == "result" else "result"
    edited = from_json(data)
    assert edited.problem() is None
    with pytest.raises(ValueError) as info:
        flavour.resume(edited, decisions, runs.context(), runs.config(), runs.model(), clock=clock)
    assert str(info.value) == text and runs.RAN == []


@pytest.mark.parametrize("kind", ["Agent", "SyncAgent"])
def test_an_agent_refuses_such_a_suspension_too(kind: str) -> None:
    from interpreters import SyncAgent

    data = stored_parallel()
    _slot(data, 2)["pending"]["waits_for"] = "approval"
    agent: Any = (Agent if kind == "Agent" else SyncAgent)(model=runs.config().model, tools=runs.context().tools,
                                                          stream_fn=runs.model())
    try:
        agent.restore(from_json(data))
        agent.approve("c2")
        agent.approve("c4")
        with pytest.raises(ValueError) as info:
            agent.resume() if kind == "SyncAgent" else asyncio.run(agent.resume())
    finally:
        if kind == "SyncAgent":
            agent.close()
    assert str(info.value) == DEFERRED_APPROVED and runs.RAN == []


# --------------------------------------------------------------------------- one at a time


def _timed(name: str, flavour: Flavour, **options: Any) -> AgentTool:
    """A tool that says when it starts and ends, taking a while (async under asyncio, so that
    calls run at once there can overlap)."""
    if flavour.is_async:
        async def run_async(path: str) -> str:
            RAN.append(f"start {path}")
            await asyncio.sleep(0.05)
            RAN.append(f"end {path}")
            return path

        run_async.__name__, run_async.__doc__ = name, "Work on a path."
        return tool(**options)(run_async)  # type: ignore[no-any-return]

    def run(path: str) -> str:
        RAN.append(f"start {path}")
        time.sleep(0.05)
        RAN.append(f"end {path}")
        return path

    run.__name__, run.__doc__ = name, "Work on a path."
    return tool(**options)(run)  # type: ignore[no-any-return]


ONE_AT_A_TIME = ["start a", "end a", "start b", "end b"]


def test_the_resuming_config_s_tool_execution_is_in_force_for_the_next_batches(flavour: Flavour) -> None:
    """Suspended under a config that runs calls in parallel (or a suspension edited to say so),
    resumed by code whose config runs them one at a time: the next batch runs one at a time."""
    gate, work = _timed("gate", flavour, requires_approval=True), _timed("work", flavour)
    ctx = AgentContext("sys", (), [gate, work])
    m = model(calls(("gate", {"path": "g"}, "c0")), calls(("work", {"path": "a"}, "c1"), ("work", {"path": "b"}, "c2")),
              "Done.")
    _, _, suspension = flavour.start_suspending("go", ctx, AgentLoopConfig(model=MODEL), m, clock=clock)
    RAN.clear()
    _, messages, again = flavour.resume(suspension, {"c0": Approve()}, ctx,
                                        AgentLoopConfig(model=MODEL, tool_execution="sequential"), m, clock=clock)
    assert again is None and RAN == ["start g", "end g", *ONE_AT_A_TIME]


@pytest.mark.parametrize("how", ["config", "tool"])
def test_calls_approved_at_a_resume_run_one_at_a_time_when_the_resuming_code_says_so(flavour: Flavour,
                                                                                      how: str) -> None:
    """A parallel batch suspended on two calls (or a suspension edited from a sequential one);
    the resuming code runs them one at a time (its config, or the tool declared sequential)."""
    ctx = AgentContext("sys", (), [_timed("gate", flavour, requires_approval=True)])
    m = model(calls(("gate", {"path": "a"}, "c1"), ("gate", {"path": "b"}, "c2")), "Done.")
    _, _, suspension = flavour.start_suspending("go", ctx, AgentLoopConfig(model=MODEL), m, clock=clock)
    assert [p.tool_call_id for p in suspension.pending] == ["c1", "c2"]
    if how == "tool":
        resuming, cfg = AgentContext("sys", (), [_timed("gate", flavour, requires_approval=True,
                                                        execution_mode="sequential")]), AgentLoopConfig(model=MODEL)
    else:
        resuming, cfg = ctx, AgentLoopConfig(model=MODEL, tool_execution="sequential")
    events, messages, again = flavour.resume(suspension, {"c1": Approve(), "c2": Approve()}, resuming, cfg, m,
                                             clock=clock)
    assert again is None and RAN == ONE_AT_A_TIME
    assert results(messages) == [("c1", "a", False), ("c2", "b", False)]
    assert [(e.type, getattr(e, "tool_call_id", None)) for e in events if e.type.startswith("tool_execution")] == [
        ("tool_execution_end", "c1"), ("tool_execution_end", "c2")]


def test_calls_approved_at_a_resume_of_a_parallel_run_still_run_at_once(flavour: Flavour) -> None:
    ctx = AgentContext("sys", (), [_timed("gate", flavour, requires_approval=True)])
    m = model(calls(("gate", {"path": "a"}, "c1"), ("gate", {"path": "b"}, "c2")), "Done.")
    _, _, suspension = flavour.start_suspending("go", ctx, AgentLoopConfig(model=MODEL), m, clock=clock)
    flavour.resume(suspension, {"c1": Approve(), "c2": Approve()}, ctx, AgentLoopConfig(model=MODEL), m, clock=clock)
    assert RAN[:2] == ["start a", "start b"]


def test_an_edited_tool_execution_in_a_suspension_is_not_in_force(flavour: Flavour) -> None:
    """The stored ``tool_execution`` of a run suspended under a sequential config, edited to
    ``parallel``: the resuming config (sequential) is what runs the next batch."""
    gate, work = _timed("gate", flavour, requires_approval=True), _timed("work", flavour)
    ctx = AgentContext("sys", (), [gate, work])
    sequential = AgentLoopConfig(model=MODEL, tool_execution="sequential")
    m = model(calls(("gate", {"path": "g"}, "c0")), calls(("work", {"path": "a"}, "c1"), ("work", {"path": "b"}, "c2")),
              "Done.")
    _, _, suspension = flavour.start_suspending("go", ctx, sequential, m, clock=clock)
    data = to_json(suspension)
    assert data["state"]["run"]["tool_execution"] == "sequential"
    data["state"]["run"]["tool_execution"] = "parallel"
    edited = from_json(data)
    assert edited.problem() is None
    RAN.clear()
    flavour.resume(edited, {"c0": Approve()}, ctx, sequential, m, clock=clock)
    assert RAN == ["start g", "end g", *ONE_AT_A_TIME]

