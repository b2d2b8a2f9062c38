"""``agentcore run|chat --mcp "COMMAND ARGS" --mcp-url URL``: MCP servers' tools on the command line."""

from __future__ import annotations

import shlex
from pathlib import Path

from interpreters.transcript import read_transcript
from tests.support.mcp_servers import everything_command, free_port, probe_command, start_everything_http

from .cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[3]


def test_run_takes_the_tools_of_mcp_servers(tmp_path: Path) -> None:
    record = tmp_path / "run.jsonl"
    port = free_port()
    proc = start_everything_http(port)
    try:
        done = run_cli("run", "--model", "demo", "--mcp", shlex.join(probe_command()),
                       "--mcp-url", f"http://127.0.0.1:{port}/mcp", "--record", str(record),
                       "How long is my trip of 120 km at 55 km/h?", cwd=ROOT)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert done.returncode == 0, done.stderr
    header = read_transcript(record).header
    names = [t["name"] for t in header["tools"]]
    assert names[:2] == ["calculator", "convert_units"] and {"add", "pid", "echo", "get-sum"} <= set(names)
    origins = header["tool_origins"]
    assert (origins["add"]["mcp_server"], origins["add"]["transport"]) == (shlex.join(probe_command()), "stdio")
    assert (origins["echo"]["name"], origins["echo"]["transport"]) == ("mcp-servers/everything", "http")


def test_a_server_that_does_not_start_is_a_usage_error() -> None:
    done = run_cli("run", "--model", "demo", "--mcp", shlex.join(probe_command("--fail-at-start")), "hi", cwd=ROOT)
    assert done.returncode == 2
    # The server's own stderr comes first (a server's log is the user's to see), then the error.
    assert done.stderr.splitlines() == [
        "the probe was told not to start",
        f"agentcore: MCP server {shlex.join(probe_command('--fail-at-start'))} could not be started: "
        "MCPError: Connection closed"]


def test_two_servers_with_the_same_tool_names_are_refused_naming_them() -> None:
    command = shlex.join(everything_command())
    done = run_cli("run", "--model", "demo", "--mcp", command, "--mcp", command + " stdio", "hi", cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"agentcore: the MCP servers {command} and {command} stdio both have a tool named 'echo': "
        "tool names must be unique")
