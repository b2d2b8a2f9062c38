"""``agentcore run`` against a real HTTP server on loopback that speaks OpenAI Chat Completions
(``tests/support/http_script_server.py``), playing back a recorded provider conversation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.corpus import load, requires_corpus
from tests.support.http_script_server import Reply, ScriptServer, reply_from

from .cli_helpers import clean_env, run_cli

TOOLS = '''
from interpreters import tool

@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b

TOOLS = [multiply]
'''


@pytest.fixture
def server() -> Iterator[ScriptServer]:
    with ScriptServer(seed=7) as srv:
        yield srv


def sse_text(text: str) -> bytes:
    """An OpenAI Chat Completions stream answering ``text``."""
    chunks: list[dict[str, object]] = [
        {"id": "c1", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    chunks += [{"id": "c1", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": {"content": text[i:i + 5]}}]} for i in range(0, len(text), 5)]
    chunks.append({"id": "c1", "object": "chat.completion.chunk", "model": "m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append({"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [],
                   "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}})
    return ("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n").encode()


@requires_corpus
def test_run_with_tools_against_a_recorded_stream(server: ScriptServer, tmp_path: Path) -> None:
    server.add(*(reply_from(it) for it in load("openai_chat/llm__test_tool_use_basic.yaml")))
    tools = tmp_path / "my_tools.py"
    tools.write_text(TOOLS)
    record = tmp_path / "run.jsonl"
    proc = run_cli("run", "What is 1231 * 2331?", "--model", "openai/gpt-4o-mini",
                   "--base-url", server.url + "/v1", "--api-key-env", "TEST_LLM_KEY",
                   "--tools", f"{tools}:TOOLS", "--record", str(record),
                   env=clean_env(TEST_LLM_KEY="sk-test-secret-123456789"))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "multiply" in out and "2869461" in out
    assert "The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\)." in out
    assert f"Transcript: {record}" in out
    requests = server.requests
    assert [r.path for r in requests] == ["/v1/chat/completions"] * 2
    assert requests[0].headers["authorization"] == "Bearer sk-test-secret-123456789"
    assert "2869461" in requests[1].body.decode()  # our tool's result went back to the model
    assert "sk-test-secret" not in record.read_text()
    assert run_cli("transcript", "replay", str(record)).returncode == 0
    show = run_cli("transcript", "show", str(record))
    assert show.returncode == 0
    total = show.stdout.split("Total:")[1]
    assert "turn 2" in show.stdout and "141 in / 46 out tokens, $0.0000" in total  # catalog prices


def test_run_json_prints_one_event_per_line(server: ScriptServer) -> None:
    server.add(Reply(body=sse_text("Hello from the loopback server!")))
    proc = run_cli("run", "Say hello", "--model", "local/test-model", "--base-url", server.url + "/v1",
                   "--json", "--system", "Be nice.")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    events = [json.loads(line) for line in lines]  # every line parses on its own
    types = [e["type"] for e in events]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    assert "turn_start" in types and "message_end" in types
    updates = [e for e in events if e["type"] == "message_update"]
    assert updates and all(set(e) == {"type", "assistant_message_event"} for e in updates)
    deltas = "".join(e["assistant_message_event"].get("delta", "") for e in updates
                     if e["assistant_message_event"]["type"] == "text_delta")
    assert deltas == "Hello from the loopback server!"
    final = events[-1]["messages"][-1]
    assert final["content"][0]["text"] == "Hello from the loopback server!"
    body = server.requests[0].json
    assert body["model"] == "test-model" and body["messages"][0]["content"] == "Be nice."
    assert "authorization" not in server.requests[0].headers  # a custom server needs no key


def test_run_that_fails_exits_1_with_one_line(server: ScriptServer) -> None:
    server.add(Reply(status=401, body=b'{"error": {"message": "bad key", "type": "invalid_request_error"}}',
                     content_type="application/json"))
    proc = run_cli("run", "hi", "--model", "local/test-model", "--base-url", server.url + "/v1")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("agentcore: the run failed: ")
    assert "401" in proc.stderr and "Traceback" not in proc.stderr


def test_run_with_the_offline_demo_model(tmp_path: Path) -> None:
    proc = run_cli("run", "How long is the trip?", "--model", "demo", "--record", str(tmp_path / "r.jsonl"),
                   env=clean_env(AGENTCORE_DEMO_DELAY="0"))
    assert proc.returncode == 0, proc.stderr
    assert "The trip takes" in proc.stdout


def test_max_turns_stops_a_run(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    proc = run_cli("run", "How long is the trip?", "--model", "demo", "--record", str(path),
                   "--max-turns", "1", "--max-tokens", "77", "--json", env=clean_env(AGENTCORE_DEMO_DELAY="0"))
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [e["type"] for e in events].count("turn_end") == 1 and events[-1]["type"] == "agent_end"
    bad = run_cli("run", "x", "--model", "demo", "--max-turns", "0")
    assert bad.returncode == 2 and "expected a whole number of 1 or more, got '0'" in bad.stderr


def test_ctrl_c_aborts_the_run_finishes_the_transcript_and_prints_the_partial_reply(tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    from interpreters.replay import replay

    from .cli_helpers import COMMAND

    path = tmp_path / "r.jsonl"
    proc = subprocess.Popen([*COMMAND, "run", "How long is the trip?", "--model", "demo", "--record", str(path),
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env(AGENTCORE_DEMO_DELAY="0.05"))
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"type":"message_update"' in line:
            break  # the reply is streaming
    time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert "the run was aborted" in err
    assert out.splitlines()[-1].startswith('{"type":"agent_end"')
    result = replay(path)  # the transcript was finished, not closed mid-write
    assert result.finished and result.messages[-1].stop_reason == "aborted"
