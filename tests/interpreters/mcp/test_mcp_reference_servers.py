"""The reference MCP servers nobody here wrote, run for real: ``@modelcontextprotocol/server-everything``
(npm) over stdio and Streamable HTTP, ``mcp-server-git`` and ``mcp-server-time`` (PyPI), in runs
of both interpreters, recorded, then replayed strictly and through a cassette with every server
stopped."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model
from agentcore.frozen import thaw
from interpreters import Cassette, ScriptedModel
from interpreters.mcp import MCPServer, tools_of
from interpreters.replay import replay
from interpreters.streams.scripted import Reply
from interpreters.transcript import TranscriptRecorder, read_transcript
from tests.support.mcp_servers import (
    everything_command,
    fixture_repository,
    free_port,
    git_command,
    start_everything_http,
    time_command,
)

CONFIG = AgentLoopConfig(model=Model(id="m"))


@pytest.fixture
def everything_url() -> Any:
    port = free_port()
    proc = start_everything_http(port)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


def test_a_two_turn_run_over_three_servers_records_and_replays_with_every_server_stopped(
        flavour: Any, tmp_path: Path, everything_url: str) -> None:
    repo = fixture_repository(tmp_path / "repo")
    command, *args = everything_command()
    git, *git_args = git_command(repo)
    path = tmp_path / "run.jsonl"
    replies = [Reply(text="Checking.", tool_calls=[("s_echo", {"message": "over stdio"}),
                                                   ("h_get-sum", {"a": 20, "b": 22})]),
               Reply(tool_calls=[("git_status", {"repo_path": str(repo)}),
                                 ("git_log", {"repo_path": str(repo), "max_count": 2})]),
               "Two commits, one change."]
    with MCPServer.stdio(command, args, name="stdio") as stdio, MCPServer.http(everything_url, name="http") as http, \
            MCPServer.stdio(git, git_args, name="git") as git_server:
        tools = tools_of(stdio, http, git_server, prefixes={"stdio": "s_", "http": "h_"})
        ctx = AgentContext("You use tools.", [], tools)
        with TranscriptRecorder(path, ctx, CONFIG) as recorder:
            _, recorded = flavour.collect(lambda: flavour.agent_loop("Look around.", ctx, CONFIG, None,
                                                                     ScriptedModel(replies), journal=recorder))
    results = {m.tool_name: m.text for m in recorded if m.role == "toolResult"}
    assert results["s_echo"] == "Echo: over stdio"
    assert "42" in results["h_get-sum"]
    assert "modified:   notes.txt" in results["git_status"]
    assert results["git_log"].count("Commit: ") == 2 and "Add a second line" in results["git_log"]
    assert [m.role for m in recorded].count("assistant") == 3
    origins = read_transcript(path).header["tool_origins"]
    assert {origins[name]["transport"] for name in ("s_echo", "h_echo", "git_status")} == {"stdio", "http"}
    assert origins["git_status"]["name"] == "mcp-git"

    # Every server is stopped: a strict replay needs none, a cassette answers the model and the tools.
    assert replay(path).messages == recorded
    cassette = Cassette(path)
    offline = AgentContext("You use tools.", [], cassette.tools())
    _, again = flavour.collect(lambda: flavour.agent_loop("Look around.", offline, CONFIG, None, cassette))
    assert [(m.role, m.content) for m in again] == [(m.role, m.content) for m in recorded]
    report = cassette.report()
    assert report.labels == ["exact"] * 3 and report.unused == ()
    assert [a.label for a in report.tool_answers] == ["exact"] * 4 and report.unused_tools == ()


def test_server_everything_resources_prompts_progress_sampling_and_elicitation(flavour: Any) -> None:
    command, *args = everything_command()
    asked: list[Any] = []

    def answer(message: str, schema: Any) -> Any:
        asked.append(message)
        return {name: "x" if spec.get("type") == "string" else 1 if spec.get("type") in ("integer", "number")
                else True for name, spec in schema["properties"].items() if name in schema.get("required", ())}

    with MCPServer.stdio(command, args, sampling=ScriptedModel(["A sampled answer."]),
                         sampling_model=Model(id="tiny"), elicitation=answer) as server:
        assert {"simple-prompt", "args-prompt"} <= {p["name"] for p in server.prompts()}
        assert [m.role for m in server.get_prompt("args-prompt", {"city": "Paris"})] == ["user"]
        resource = server.resources()[0]
        contents = server.read_resource(resource["uri"])
        assert contents[0]["uri"] == resource["uri"] and contents[0].get("text")
        calls = [("trigger-long-running-operation", {"duration": 1, "steps": 2}),
                 ("trigger-sampling-request", {"prompt": "hello", "maxTokens": 20}),
                 ("trigger-elicitation-request", {})]
        model = ScriptedModel([Reply(tool_calls=calls), "done"])
        ctx = AgentContext("", [], server.tools())
        events, messages = flavour.collect(lambda: flavour.agent_loop("go", ctx, CONFIG, None, model))
    updates = [e.partial_result.content[0].text for e in events if e.type == "tool_execution_update"]
    assert updates == ["1/2", "2/2"]
    long_run, sampled, elicited = (m for m in messages if m.role == "toolResult")
    assert long_run.text.startswith("Long running operation completed.")
    assert '"text": "A sampled answer."' in sampled.text and '"model": "tiny"' in sampled.text
    assert thaw(sampled.details["sampling"])[0]["reply"] == "A sampled answer."
    assert not elicited.is_error and asked == ["Please provide inputs for the following fields:"]


def test_the_newer_protocol_revision_with_the_time_and_git_servers(tmp_path: Path) -> None:
    repo = fixture_repository(tmp_path / "repo")
    time_cmd, *time_args = time_command()
    git, *git_args = git_command(repo)
    with MCPServer.stdio(time_cmd, time_args, protocol="auto") as clock, \
            MCPServer.stdio(git, git_args, protocol="auto") as git_server:
        assert clock.identity is not None and git_server.identity is not None
        assert (clock.identity.protocol_version, git_server.identity.protocol_version) == ("2026-07-28",
                                                                                            "2026-07-28")
        branch = {t.name: t for t in git_server.tools()}["git_branch"]
        assert "main" in branch.execute("c", {"repo_path": str(repo), "branch_type": "local"}).content[0].text
    with pytest.raises(ValueError, match=r"^protocol must be one of 'legacy', 'auto', not 'new'$"):
        MCPServer.stdio(sys.executable, [], protocol="new")
