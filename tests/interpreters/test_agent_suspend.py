"""The Agent's side of suspension: ``pending``, ``approve`` / ``deny`` / ``supply``, ``resume()``,
the state saved with its suspension and restored in a new agent, and what it refuses."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model, PendingCall
from agentcore.codec import from_json, to_json
from interpreters import ScriptedModel, SyncAgent, tool
from interpreters.agent import Agent, AgentBusyError
from interpreters.replay import replay
from interpreters.streams.scripted import Reply, ScriptedCall
from interpreters.transcript import TranscriptError, TranscriptRecorder
from tests.support.clocks import clock


@tool(requires_approval=True)
def send(to: str, text: str) -> str:
    """Send an email."""
    return f"sent to {to}"


@tool(deferred=True)
def sign(document: str) -> str:
    """A person signs a document."""
    raise AssertionError("never executed")


def reply(context: Any, n: int) -> Reply | str:
    done = [m for m in context.messages if m.role == "toolResult"]
    if not done:
        return Reply(tool_calls=[ScriptedCall("send", {"to": "bob", "text": "hi"}, "e1"),
                                 ScriptedCall("sign", {"document": "lease"}, "s1")])
    return "Finished: " + ", ".join(m.content[0].text for m in done)


def new_agent(**kw: Any) -> Agent:
    return Agent(model=Model(id="m"), tools=[send, sign], stream_fn=ScriptedModel(reply, clock=clock), clock=clock,
                 **kw)


def test_the_agent_suspends_takes_decisions_and_resumes() -> None:
    async def main() -> None:
        agent = new_agent()
        seen: list[str] = []
        agent.subscribe(lambda event: seen.append(event.type))
        await agent.prompt("Email Bob and get the lease signed.")
        assert seen[-1] == "agent_suspended" and not agent.state.is_streaming and not agent.is_running
        assert [(p.tool_call_id, p.waits_for) for p in agent.pending] == [("e1", "approval"), ("s1", "result")]
        assert [m.role for m in agent.state.messages] == ["user", "assistant"]
        with pytest.raises(AgentBusyError, match=r"Agent is suspended: tool calls wait for decisions \(e1, s1\)"):
            await agent.prompt("something else")
        agent.approve("e1", arguments={"to": "bob@example.com", "text": "hi"})
        with pytest.raises(ValueError, match=r"^Cannot resume: no decision for pending tool call s1$"):
            await agent.resume()
        assert not agent.is_running and agent.pending  # nothing lost
        with pytest.raises(ValueError, match=r"tool call s1 waits for a result \(ToolOutput or Deny\), not Approve"):
            agent.approve("s1")
        with pytest.raises(KeyError, match="no pending tool call x9"):
            agent.deny("x9")
        agent.supply("s1", "signed by Ann")
        await agent.resume()
        assert seen[-1] == "agent_end" and agent.pending == () and agent.state.suspension is None
        assert agent.state.messages[-1].text == "Finished: sent to bob@example.com, signed by Ann"
        with pytest.raises(RuntimeError, match="Agent is not suspended"):
            await agent.resume()

    asyncio.run(main())


def test_the_state_is_saved_with_its_suspension_and_restored_in_another_agent() -> None:
    async def main() -> None:
        first = new_agent()
        await first.prompt("Email Bob and get the lease signed.")
        stored = json.dumps(to_json(first.state.suspension))
        second = new_agent()
        second.restore(from_json(json.loads(stored)))
        assert second.pending == first.pending and second.state.messages == first.state.messages
        second.deny("e1", "not today")
        second.supply("s1", "unsigned", is_error=True)
        await second.resume()
        assert second.state.messages[-1].text == "Finished: not today, unsigned"
        assert [m.is_error for m in second.state.messages if m.role == "toolResult"] == [True, True]

    asyncio.run(main())


def test_reset_forgets_the_suspension() -> None:
    async def main() -> None:
        agent = new_agent()
        await agent.prompt("go")
        agent.reset()
        assert agent.pending == () and agent.state.suspension is None and agent.state.messages == []

    asyncio.run(main())


def test_the_sync_agent_has_the_same_calls() -> None:
    with SyncAgent(new_agent()) as agent:
        agent.prompt("go")
        assert [p.tool_call_id for p in agent.pending] == ["e1", "s1"]
        assert isinstance(agent.pending[0], PendingCall)
        agent.approve("e1")
        agent.supply("s1", "done")
        agent.resume()
        assert agent.state.messages[-1].text == "Finished: sent to bob, done"


def test_decide_tool_call_passes_through_the_agent() -> None:
    from agentcore import Approve, ToolOutput

    def decide(pending: PendingCall) -> Any:
        return Approve() if pending.waits_for == "approval" else ToolOutput("ok")

    async def main() -> None:
        agent = new_agent(decide_tool_call=decide)
        await agent.prompt("go")
        assert agent.pending == () and agent.state.messages[-1].text == "Finished: sent to bob, ok"

    asyncio.run(main())


# --------------------------------------------------------------------------- recording


class Driven:
    """An :class:`Agent` driven from a test, as it is (each call in ``asyncio.run``) or
    through a :class:`SyncAgent`."""

    def __init__(self, kind: str, agent: Agent) -> None:
        self.agent = agent
        self.sync = SyncAgent(agent) if kind == "sync" else None

    def prompt(self, text: str) -> None:
        self.sync.prompt(text) if self.sync is not None else asyncio.run(self.agent.prompt(text))

    def resume(self, **options: Any) -> None:
        self.sync.resume(**options) if self.sync is not None else asyncio.run(self.agent.resume(**options))

    def close(self) -> None:
        if self.sync is not None:
            self.sync.close()


KINDS = ["Agent", "sync"]


def recorder(path: Path) -> TranscriptRecorder:
    return TranscriptRecorder(path, AgentContext(), AgentLoopConfig(model=Model(id="m")), secrets=[PASSWORD])


PASSWORD = "hunter2-hunter2-hunter2"


@tool(requires_approval=True)
def login(user: str) -> str:
    """Log in."""
    return f"{user} logged in with {PASSWORD}"


def login_reply(context: Any, n: int) -> Reply | str:
    if context.messages[-1].role == "toolResult":
        return "Logged in."
    return Reply(tool_calls=[ScriptedCall("login", {"user": "ann"}, "l1")])


def login_agent(**kw: Any) -> Agent:
    return Agent(model=Model(id="m"), tools=[login], stream_fn=ScriptedModel(login_reply, clock=clock), clock=clock,
                 **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_an_agent_with_a_recorder_records_its_run_through_the_suspension(kind: str, tmp_path: Path) -> None:
    """The recorder that recorded the run up to its suspension goes on with it in the same file,
    with its own secrets: one transcript of the whole run."""
    path = tmp_path / "agent.jsonl"
    driven = Driven(kind, login_agent(journal=recorder(path)))
    try:
        driven.prompt("Log Ann in.")
        assert [p.tool_call_id for p in driven.agent.pending] == ["l1"]
        driven.agent.approve("l1")
        driven.resume()
    finally:
        driven.close()
    messages = driven.agent.state.messages
    assert messages[-1].text == "Logged in." and driven.agent.state.error is None
    result = replay(path)
    assert result.finished and len(result.messages) == len(messages) == 4
    assert PASSWORD not in path.read_text() and "ann logged in with [REDACTED]" in path.read_text()


@pytest.mark.parametrize("kind", KINDS)
def test_a_refused_resume_leaves_the_agent_as_it_was(kind: str, tmp_path: Path) -> None:
    path, other = tmp_path / "agent.jsonl", tmp_path / "other.jsonl"
    context, config = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    from interpreters import agent_loop

    agent_loop("hi", context, config, stream_fn=ScriptedModel(["x"]),
               journal=TranscriptRecorder(other, context, config)).result()  # another run's transcript
    driven = Driven(kind, login_agent(journal=recorder(path)))
    try:
        driven.prompt("Log Ann in.")
        driven.agent.approve("l1")
        before = (list(driven.agent.state.messages), driven.agent.pending, driven.agent.decisions, path.read_bytes())
        kept, driven.agent.journal = driven.agent.journal, TranscriptRecorder(other, context, config)
        driven.agent.journal.close()  # a journal that cannot record this run
        with pytest.raises(ValueError, match="the recorder is closed"):
            driven.resume()
        driven.agent.journal = kept
        with pytest.raises(TranscriptError, match="the run it records is not suspended"):
            driven.resume(transcript=other, secrets=[PASSWORD])
        with pytest.raises(ValueError, match="secrets= is for the transcript the run goes on in"):
            driven.resume(secrets=[PASSWORD])
        agent = driven.agent
        assert (agent.state.messages, agent.pending, agent.decisions, path.read_bytes()) == before
        assert agent.state.error is None and not agent.is_running and not agent.state.is_streaming
        driven.resume()  # nothing was lost
    finally:
        driven.close()
    assert [m.role for m in driven.agent.state.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert replay(path).finished


@pytest.mark.parametrize("kind", KINDS)
def test_a_restored_agent_resumes_into_the_transcript(kind: str, tmp_path: Path) -> None:
    """Another process: a new agent takes the stored suspension back and goes on in the file
    that recorded the run (``transcript=``), given the recorder's secrets again."""
    path = tmp_path / "agent.jsonl"
    first = Driven(kind, login_agent(journal=recorder(path)))
    try:
        first.prompt("Log Ann in.")
    finally:
        first.close()
    stored = json.dumps(to_json(first.agent.state.suspension))
    second = Driven(kind, login_agent())
    try:
        second.agent.restore(from_json(json.loads(stored)))
        second.agent.approve("l1")
        second.resume(transcript=path, secrets=[PASSWORD])
    finally:
        second.close()
    assert second.agent.state.messages[-1].text == "Logged in."
    assert replay(path).finished and PASSWORD not in path.read_text()
