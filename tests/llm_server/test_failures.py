"""What a run does when the server fails: abort, refused, killed, hanging, context overflow."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcore.messages import Model
from interpreters import AbortSignal
from interpreters.streams.http import HttpStreamer

from .helpers import Run, assert_replays, free_port, model_for, run_recorded


def abort_after(n_deltas: int, signal: AbortSignal, marks: dict[str, float]) -> Any:
    seen = [0]

    def on_event(event: Any) -> None:
        if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
            seen[0] += 1
            if seen[0] == n_deltas:
                marks["abort"] = time.perf_counter()
                signal.abort()
        elif event.type == "agent_end":
            marks["end"] = time.perf_counter()

    return on_event


@pytest.fixture(scope="module")
def aborted_run(never_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("abort")
    signal, marks = AbortSignal(), {}
    before = never_server.metrics()["llamacpp:tokens_predicted_total"]
    run = run_recorded(tmp, "Talk forever.", model_for(never_server, max_tokens=3500),
                       signal=signal, on_event=abort_after(20, signal, marks))
    run.abort_at, run.ended_at = marks["abort"], marks["end"]
    run.extra["idle_after"] = never_server.wait_idle(5.0)
    run.extra["predicted"] = never_server.metrics()["llamacpp:tokens_predicted_total"] - before
    return run


def test_abort_mid_stream_is_quick_and_stops_the_server(aborted_run: Run) -> None:
    reply = aborted_run.assistants[-1]
    assert reply.stop_reason == "aborted"
    assert len(aborted_run.deltas()) >= 20
    latency_ms = (aborted_run.ended_at - aborted_run.abort_at) * 1000
    assert latency_ms < 100, f"abort() to agent_end took {latency_ms:.1f} ms"
    # The connection was closed: the server stopped long before its 3,500 tokens.
    assert aborted_run.extra["idle_after"] < 2.0
    assert aborted_run.extra["predicted"] < 3500
    print(f"\nabort latency {latency_ms:.2f} ms; server idle {aborted_run.extra['idle_after'] * 1000:.0f} ms "
          f"later; it generated {aborted_run.extra['predicted']:.0f} of 3500 tokens")


def test_aborted_run_replays_strictly(aborted_run: Run) -> None:
    assert_replays(aborted_run)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_server_down_names_host_and_port(host: str, tmp_path: Path) -> None:
    port = free_port()
    model = Model(id="tiny", api="openai-completions", provider="llama.cpp",
                  base_url=f"http://{host}:{port}/v1")
    t0 = time.perf_counter()
    run = run_recorded(tmp_path, "hi", model)
    reply = run.assistants[-1]
    assert reply.stop_reason == "error"
    assert f"Could not connect to {host}:{port}" in (reply.error_message or "")
    assert time.perf_counter() - t0 < 5
    assert_replays(run)


def test_server_killed_mid_stream(server: Any, tmp_path: Path) -> None:
    srv = server()
    seen = [0]

    def on_event(event: Any) -> None:
        if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
            seen[0] += 1
            if seen[0] == 10:
                srv.kill()

    run = run_recorded(tmp_path, "Talk forever.", model_for(srv, max_tokens=3500), on_event=on_event)
    reply = run.assistants[-1]
    assert reply.stop_reason == "error"
    assert "Connection lost mid-stream" in (reply.error_message or ""), reply.error_message
    assert len(reply.text) >= 10  # what was streamed before the kill is kept
    assert_replays(run)


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts connections, reads the request and never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.1)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.settimeout(0.1)
            held.append(conn)
            try:
                conn.recv(65536)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    thread.join(2)
    for conn in held:
        conn.close()
    listener.close()


def test_hanging_server_read_timeout(silent_server: int, tmp_path: Path) -> None:
    model = Model(id="tiny", api="openai-completions", provider="llama.cpp",
                  base_url=f"http://127.0.0.1:{silent_server}/v1")
    streamer = HttpStreamer(read_timeout=0.5, max_retries=0)
    t0 = time.perf_counter()
    run = run_recorded(tmp_path, "hi", model, streamer=streamer)
    elapsed = time.perf_counter() - t0
    streamer.close()
    reply = run.assistants[-1]
    assert reply.stop_reason == "error"
    assert "did not respond within 0.5 s" in (reply.error_message or ""), reply.error_message
    assert 0.4 < elapsed < 3
    assert_replays(run)


def test_context_overflow_is_an_http_400(server: Any, tmp_path: Path) -> None:
    srv = server(None, ctx_size=128)
    run = run_recorded(tmp_path, "word " * 200, model_for(srv, max_tokens=16))
    reply = run.assistants[-1]
    assert reply.stop_reason == "error"
    message = reply.error_message or ""
    assert "400" in message, message
    assert "context" in message.lower(), message
    assert_replays(run)
