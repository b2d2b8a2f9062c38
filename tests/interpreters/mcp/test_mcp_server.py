"""MCP servers as tools (interpreters.mcp), against real servers: the reference servers from npm
and PyPI and a probe server written with the SDK (tests/support/mcp_probe.py), under both
interpreters."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model
from agentcore.frozen import thaw
from interpreters import ScriptedModel
from interpreters.mcp import MCPServer, MCPServerError, tools_of
from interpreters.streams.scripted import Reply, tool_call
from tests.support.mcp_probe import PNG, PROBE
from tests.support.mcp_servers import (
    everything_command,
    free_port,
    probe_command,
    start_everything_http,
    time_command,
)

CONFIG = AgentLoopConfig(model=Model(id="m"))


def run_with(flavour: Any, tools: list[Any], *calls: tuple[str, dict[str, Any]], config: AgentLoopConfig = CONFIG,
             on_event: Any = None) -> tuple[list[Any], list[Any]]:
    model = ScriptedModel([Reply(tool_calls=list(calls)), "done"])
    ctx = AgentContext("", [], tools)
    return flavour.collect(lambda: flavour.agent_loop("go", ctx, config, None, model), on_event=on_event)


def results(messages: list[Any]) -> list[tuple[str, bool, Any]]:
    return [(m.text, m.is_error, m.details) for m in messages if m.role == "toolResult"]


# -- tools and results ---------------------------------------------------------------------------


def test_a_server_s_tools_are_agent_tools(flavour: Any) -> None:
    with MCPServer.in_process(PROBE) as server:
        tools = server.tools()
        assert [t.name for t in tools][:3] == ["add", "blocks", "fail"]
        add = tools[0]
        assert (add.description, add.parameters["properties"]) == (
            "Add two integers.", {"a": {"title": "A", "type": "integer"}, "b": {"title": "B", "type": "integer"}})
        _, messages = run_with(flavour, tools, ("add", {"a": 2, "b": 3}))
    assert results(messages) == [("5", False, {"structured_content": {"result": 5}})]
    assert server.identity is not None
    assert (server.identity.name, server.identity.version, server.identity.transport) == ("probe", "1.2.3",
                                                                                          "in_process")


def test_every_kind_of_block_maps_onto_the_result(flavour: Any) -> None:
    with MCPServer.in_process(PROBE) as server:
        _, messages = run_with(flavour, server.tools(), ("blocks", {}))
    result = messages[2]
    assert [c.type for c in result.content] == ["text", "image", "text", "text", "text"]
    assert (result.content[0].text, result.content[1].data, result.content[1].mime_type) == ("hello", PNG,
                                                                                             "image/png")
    assert [c.text for c in result.content[2:]] == [
        "[audio: audio/wav, 8 bytes]", "[resource link: file:///notes.txt (notes)]", "file:///a.txt:\nalpha"]
    assert [b["type"] for b in result.details["blocks"]] == ["audio", "resource_link"]
    assert result.details["blocks"][1]["uri"] == "file:///notes.txt"


def test_an_error_result_is_an_error_the_model_sees(flavour: Any) -> None:
    with MCPServer.in_process(PROBE) as server:
        _, messages = run_with(flavour, server.tools(), ("fail", {}), ("add", {"a": 1, "b": 1}))
    assert [(text, err) for text, err, _ in results(messages)] == [("Error executing tool fail", True), ("2", False)]
    assert messages[-1].text == "done"


def test_progress_becomes_tool_execution_updates(flavour: Any) -> None:
    with MCPServer.in_process(PROBE) as server:
        events, _ = run_with(flavour, server.tools(), ("slow", {"steps": 3}))
    updates = [e.partial_result for e in events if e.type == "tool_execution_update"]
    assert [u.content[0].text for u in updates] == ["step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"]
    assert updates[0].details == {"progress": 1, "total": 3, "message": "step 1"}


def test_prompts_and_resources() -> None:
    with MCPServer.in_process(PROBE) as server:
        assert [p["name"] for p in server.prompts()] == ["greet"]
        assert [(m.role, m.text) for m in server.get_prompt("greet", {"name": "Ada"})] == [
            ("user", "Say hello to Ada.")]
        assert [r["uri"] for r in server.resources()] == ["probe://motto"]
        assert [(c["uri"], c["text"]) for c in server.read_resource("probe://motto")] == [
            ("probe://motto", "Nothing is hidden.")]


def test_clashing_tool_names_across_servers_are_refused_unless_prefixed() -> None:
    with MCPServer.in_process(PROBE, name="one") as one, MCPServer.in_process(PROBE, name="two") as two:
        with pytest.raises(ValueError) as caught:
            tools_of(one, two)
        assert str(caught.value) == ("the MCP servers one and two both have a tool named 'add': give one of them a "
                                     "prefix (prefixes={'two': 'x_'})")
        names = [t.name for t in tools_of(one, two, prefixes={"two": "two_"})]
    assert names[:2] == ["add", "blocks"] and "two_add" in names and len(names) == len(set(names))


# -- real servers ----------------------------------------------------------------------------------


def test_the_reference_time_server_over_stdio(flavour: Any) -> None:
    command, *args = time_command()
    with MCPServer.stdio(command, args, name="time") as server:
        assert {t.name for t in server.tools()} == {"get_current_time", "convert_time"}
        _, messages = run_with(flavour, server.tools(),
                               ("convert_time", {"source_timezone": "Europe/Paris", "time": "12:00",
                                                 "target_timezone": "Asia/Tokyo"}))
    text, is_error, _ = results(messages)[0]
    answer = json.loads(text)
    assert not is_error
    assert (answer["source"]["timezone"], answer["target"]["timezone"]) == ("Europe/Paris", "Asia/Tokyo")
    assert answer["source"]["datetime"].split("T")[1].startswith("12:00")
    assert server.identity is not None and server.identity.transport == "stdio"


def test_the_reference_everything_server_over_stdio(flavour: Any) -> None:
    command, *args = everything_command()
    with MCPServer.stdio(command, args, name="everything") as server:
        assert server.identity is not None and server.identity.name == "mcp-servers/everything"
        tools = server.tools(prefix="e_")
        assert {"e_echo", "e_get-sum", "e_get-tiny-image"} <= {t.name for t in tools}
        events, messages = run_with(flavour, tools, ("e_echo", {"message": "hi"}), ("e_get-sum", {"a": 2, "b": 40}),
                                    ("e_get-tiny-image", {}))
    echo, total, image = messages[2:5]
    assert (echo.text, echo.is_error) == ("Echo: hi", False)
    assert "42" in total.text
    assert "image" in [c.type for c in image.content]


def test_the_reference_everything_server_over_streamable_http(flavour: Any) -> None:
    port = free_port()
    proc = start_everything_http(port)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        with MCPServer.http(url, headers={"Authorization": "Bearer not-a-real-token"}) as server:
            assert server.identity is not None and server.identity.transport == "http"
            _, messages = run_with(flavour, server.tools(), ("echo", {"message": "over HTTP"}))
        assert results(messages)[0][:2] == ("Echo: over HTTP", False)
        with MCPServer.http(url, name="plain") as server:
            assert server.tools()[0].execute("c", {"message": "x"}).content[0].text == "Echo: x"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_an_unreachable_http_server_is_an_error_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(MCPServerError, match=rf"^MCP server {url} could not be reached: "):
        MCPServer.http(url).open()
    with pytest.raises(ValueError, match=r"^MCPServer.http needs an http:// or https:// URL, not 'ftp://x'$"):
        MCPServer.http("ftp://x")


# -- faults ----------------------------------------------------------------------------------------


def test_a_server_that_fails_to_start_gives_an_error_naming_it() -> None:
    command, *args = probe_command("--fail-at-start")
    with pytest.raises(MCPServerError, match=r"^MCP server probe could not be started: "):
        MCPServer.stdio(command, args, name="probe").open()


def test_a_crash_mid_call_is_an_error_result_and_the_next_call_restarts_the_server(flavour: Any) -> None:
    command, *args = probe_command()
    with MCPServer.stdio(command, args, name="probe") as server:
        tools = server.tools()
        _, first = run_with(flavour, tools, ("pid", {}))
        _, crashed = run_with(flavour, tools, ("crash", {}))
        _, after = run_with(flavour, tools, ("pid", {}))
    text, is_error, _ = results(crashed)[0]
    assert is_error and text.startswith("MCP server probe failed: ") and text.endswith(
        "; it is restarted for the next call")
    assert crashed[-1].text == "done"  # the run went on
    assert results(after)[0][0] != results(first)[0][0]  # another process answered


def test_garbage_on_stdout_is_an_error_result(flavour: Any) -> None:
    command, *args = probe_command()
    with MCPServer.stdio(command, args, name="probe") as server:
        _, messages = run_with(flavour, server.tools(), ("garbage", {}))
        _, again = run_with(flavour, server.tools(), ("add", {"a": 1, "b": 2}))
    assert results(messages)[0][1] is True and results(messages)[0][0].startswith("MCP server probe failed: ")
    assert results(again)[0][:2] == ("3", False)


def test_a_hanging_server_times_out_and_the_run_goes_on(flavour: Any) -> None:
    command, *args = probe_command()
    with MCPServer.stdio(command, args, name="probe", timeout=0.5) as server:
        started = time.monotonic()
        _, messages = run_with(flavour, server.tools(), ("sleep", {"seconds": 30}))
        took = time.monotonic() - started
        _, again = run_with(flavour, server.tools(), ("add", {"a": 1, "b": 2}))
    assert results(messages)[0][:2] == ("MCP server probe did not answer within 0.5 s", True)
    assert took < 10
    assert results(again)[0][:2] == ("3", False)


def test_an_abort_cancels_the_call_in_flight(flavour: Any) -> None:
    with MCPServer.in_process(PROBE) as server:
        box: list[Any] = []
        model = ScriptedModel([tool_call("sleep", {"seconds": 30}), "done"])
        ctx = AgentContext("", [], server.tools())

        def start() -> Any:
            box.append(flavour.agent_loop("go", ctx, CONFIG, None, model))
            return box[0]

        def abort_when_started(event: Any) -> None:
            if event.type == "tool_execution_start":
                box[0].signal.abort("user")

        started = time.monotonic()
        events, messages = flavour.collect(start, on_event=abort_when_started)
        took = time.monotonic() - started
        _, again = run_with(flavour, server.tools(), ("add", {"a": 1, "b": 2}))
    assert took < 5 and events[-1].type == "agent_end"
    assert [(m.role, m.is_error) for m in messages if m.role == "toolResult"] == [("toolResult", True)]
    assert [m.role for m in messages] == ["user", "assistant", "toolResult"]  # no model call after the abort
    assert results(again)[0][:2] == ("3", False)  # the session is still usable


def test_after_100_runs_and_10_crashes_no_zombie_and_no_leaked_descriptor() -> None:
    from interpreters import run_agent_loop

    command, *args = probe_command()
    fds = lambda: len(os.listdir("/proc/self/fd"))  # noqa: E731
    before = fds()
    pids = set()
    with MCPServer.stdio(command, args, name="probe") as server:
        tools = server.tools()
        for n in range(100):
            calls = [("crash", {})] if n % 10 == 9 else [("pid", {})]
            messages = run_agent_loop("go", AgentContext("", [], tools), CONFIG, emit=lambda e: None,
                                      stream_fn=ScriptedModel([Reply(tool_calls=calls), "done"]))
            if n % 10 != 9:
                pids.add(messages[2].text)
    assert len(pids) == 10 and all(pid.isdigit() for pid in pids)  # restarted after each crash
    assert fds() <= before + 2
    zombies = [line for line in os.popen(f"ps -o pid=,stat= --ppid {os.getpid()}").read().splitlines()
               if line.split()[-1].startswith("Z")]
    assert zombies == []


def test_the_run_s_tool_time_limit_cancels_the_call(flavour: Any) -> None:
    config = AgentLoopConfig(model=Model(id="m"), tool_timeout_ms=300)
    with MCPServer.in_process(PROBE) as server:
        started = time.monotonic()
        _, messages = run_with(flavour, server.tools(), ("sleep", {"seconds": 30}), config=config)
        took = time.monotonic() - started
        _, again = run_with(flavour, server.tools(), ("add", {"a": 1, "b": 2}))
    assert took < 5
    assert messages[2].is_error and messages[-1].text == "done"
    assert results(again)[0][:2] == ("3", False)


def test_without_the_sdk_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(ImportError) as caught:
        MCPServer.stdio("x")
    assert str(caught.value) == ("interpreters.mcp needs the MCP SDK (the package 'mcp', version 2): install it "
                                 "with pip install 'agentcore-fx[mcp]'")


# -- recorded and replayed ---------------------------------------------------------------------------


def test_a_recorded_mcp_run_names_its_server_and_replays_with_no_server(flavour: Any, tmp_path: Any) -> None:
    from interpreters import Cassette
    from interpreters.replay import replay
    from interpreters.transcript import TranscriptRecorder, read_transcript

    path = tmp_path / "mcp.jsonl"
    with MCPServer.in_process(PROBE, name="probe") as server:
        ctx = AgentContext("", [], server.tools())
        model = ScriptedModel([Reply(tool_calls=[("add", {"a": 2, "b": 3}), ("blocks", {})]), "done"])
        with TranscriptRecorder(path, ctx, CONFIG) as recorder:
            _, recorded = flavour.collect(lambda: flavour.agent_loop("go", ctx, CONFIG, None, model, journal=recorder))
    origins = read_transcript(path).header["tool_origins"]
    assert origins["add"] == {"mcp_server": "probe", "tool": "add", "name": "probe", "version": "1.2.3",
                              "protocol_version": "2025-11-25", "transport": "in_process"}
    assert set(origins) == {t["name"] for t in read_transcript(path).header["tools"]}
    assert replay(path).messages == recorded  # strict replay: no server
    cassette = Cassette(path)  # LLM and tools answered offline
    offline = AgentContext("", [], cassette.tools())
    _, again = flavour.collect(lambda: flavour.agent_loop("go", offline, CONFIG, None, cassette))
    assert [m.content for m in again[2:4]] == [m.content for m in recorded[2:4]]
    assert cassette.report().labels == ["exact", "exact"]


# -- what a server asks ---------------------------------------------------------------------------------


def test_sampling_is_answered_by_the_stream_function_given_and_kept_in_the_result(flavour: Any) -> None:
    answerer = ScriptedModel(["A short text."])
    with MCPServer.in_process(PROBE, sampling=answerer, sampling_model=Model(id="small")) as server:
        _, messages = run_with(flavour, server.tools(), ("summarize", {"text": "a long text"}))
    result = messages[2]
    assert (result.text, result.is_error) == ("summary: A short text. (by small)", False)
    assert thaw(result.details["sampling"]) == [{"system_prompt": "One line.", "messages": ["Summarize: a long text"],
                                           "reply": "A short text.", "model": "small"}]
    request = answerer.requests[0]
    assert (request.context.system_prompt, request.options.max_tokens) == ("One line.", 50)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_elicitation_is_answered_by_the_function_given(flavour: Any, kind: str) -> None:
    asked: list[Any] = []

    def answer(message: str, schema: Any) -> Any:
        asked.append((message, sorted(schema["properties"])))
        return {"colour": "teal"}

    async def aanswer(message: str, schema: Any) -> Any:
        return answer(message, schema)

    with MCPServer.in_process(PROBE, elicitation=answer if kind == "sync" else aanswer) as server:
        _, messages = run_with(flavour, server.tools(), ("pick_colour", {}))
    assert messages[2].text == "accept: teal"
    assert asked == [("Which colour?", ["colour"])]


def test_an_elicitation_is_declined_when_no_function_answers_it_or_it_returns_none(flavour: Any) -> None:
    with MCPServer.in_process(PROBE, elicitation=lambda message, schema: None) as server:
        _, declined = run_with(flavour, server.tools(), ("pick_colour", {}))
    assert declined[2].text == "decline"
    with MCPServer.in_process(PROBE) as server:
        _, unanswered = run_with(flavour, server.tools(), ("pick_colour", {}))
    assert (unanswered[2].text, unanswered[2].is_error) == ("decline", False)


# -- a changed tool list -------------------------------------------------------------------------------


def test_a_changed_tool_list_reaches_the_next_turn(flavour: Any) -> None:
    from interpreters.mcp import refreshing
    from interpreters.streams.scripted import tool_call as call

    command, *args = probe_command()
    with MCPServer.stdio(command, args, name="probe") as server:
        assert "secret" not in {t.name for t in server.tools()}
        config = AgentLoopConfig(model=Model(id="m"), prepare_next_turn=refreshing(server))
        model = ScriptedModel([call("unlock", {}), call("secret", {}), "The secret is 42."])
        ctx = AgentContext("", [], server.tools())
        _, messages = flavour.collect(lambda: flavour.agent_loop("go", ctx, config, None, model))
        assert not server.tools_changed
    assert [(m.role, m.text) for m in messages if m.role == "toolResult"] == [("toolResult", "unlocked"),
                                                                              ("toolResult", "42")]
    assert "secret" in {t.name for t in model.requests[2].context.tools}
    assert "secret" not in {t.name for t in model.requests[0].context.tools}


def test_a_changed_server_tool_list_is_named_when_a_cassette_replays(flavour: Any, tmp_path: Any) -> None:
    from mcp.server.mcpserver import MCPServer as SDKServer

    from interpreters import Cassette, CassetteMiss
    from interpreters.transcript import TranscriptRecorder

    def server_with(description: str, extra: bool = False) -> Any:
        sdk = SDKServer("calc", version="1")

        @sdk.tool(description=description)
        def add(a: int, b: int) -> int:
            return a + b

        if extra:
            @sdk.tool()
            def sub(a: int, b: int) -> int:
                """Subtract."""
                return a - b
        return sdk

    path = tmp_path / "calc.jsonl"
    model = ScriptedModel([tool_call("add", {"a": 1, "b": 2}), "3"])
    with MCPServer.in_process(server_with("Add two integers.")) as server:
        ctx = AgentContext("", [], server.tools())
        with TranscriptRecorder(path, ctx, CONFIG) as recorder:
            flavour.collect(lambda: flavour.agent_loop("1 + 2?", ctx, CONFIG, None, model, journal=recorder))
    with MCPServer.in_process(server_with("Add two whole numbers.")) as changed:
        cassette = Cassette(path)
        _, messages = flavour.collect(lambda: flavour.agent_loop("1 + 2?", AgentContext("", [], changed.tools()),
                                                                 CONFIG, None, cassette))
    assert messages[-1].text == "3"
    assert [str(d) for d in cassette.report().answers[0].differences] == [
        'tools.add.description: recorded "Add two integers.", now "Add two whole numbers."']
    with MCPServer.in_process(server_with("Add two integers.", extra=True)) as grown:
        with pytest.raises(CassetteMiss) as caught:
            flavour.collect(lambda: flavour.agent_loop("1 + 2?", AgentContext("", [], grown.tools()), CONFIG,
                                                       None, Cassette(path)))
    assert caught.value.difference is not None and caught.value.difference.path.startswith("tools.sub.")
