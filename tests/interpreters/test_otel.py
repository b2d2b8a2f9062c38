"""interpreters.otel: OpenTelemetry spans of a run, checked with the SDK's in-memory exporter.

Every scenario runs under both interpreters (sync and asyncio) and compares the span tree, the
GenAI attributes and the statuses.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentcore import (
    AfterToolCallResult,
    AgentContext,
    AgentLoopConfig,
    AgentToolResult,
    AssistantMessage,
    Cost,
    Model,
    TextContent,
    Usage,
)
from interpreters import AbortSignal, ScriptedModel, agent_loop, tool
from interpreters.otel import TracingObserver, provider_name
from interpreters.streams.scripted import Reply, error
from interpreters.transcript import TranscriptRecorder, read_transcript
from tests.support.flavours import ASYNCIO, SYNC, Flavour
from tests.support.sample_tools import add

MODEL = Model(id="gpt-test", provider="openai", base_url="https://api.example.com/v1")
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                "gen_ai.tool.definitions", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


# --------------------------------------------------------------------------- fixtures and helpers


@pytest.fixture
def otel() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def outline(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> list[str]:
    """The span tree, one line per span, indented by depth; siblings in start order (then by
    tool call id, so parallel tools started in one step have a stable order)."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    ids = {s.context.span_id for s in spans}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(s)
    lines: list[str] = []

    def key(s: ReadableSpan) -> tuple[int, str]:
        return (s.start_time or 0, str((s.attributes or {}).get("gen_ai.tool.call.id", s.name)))

    def walk(parent: int | None, depth: int) -> None:
        for s in sorted(by_parent.get(parent, []), key=key):
            label = s.name
            call_id = (s.attributes or {}).get("gen_ai.tool.call.id")
            if call_id:
                label += f" [{call_id}]"
            if s.status.status_code is StatusCode.ERROR:
                label += " !"
            lines.append("  " * depth + label)
            walk(s.context.span_id, depth + 1)

    walk(None, 0)
    return lines


def named(spans: Any, name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def one(spans: Any, name: str) -> ReadableSpan:
    found = named(spans, name)
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


@tool(name="aadd")
async def aadd(a: int, b: int) -> int:
    """Add two integers, asynchronously."""
    await asyncio.sleep(0)
    return a + b


@tool
def explode(reason: str) -> str:
    """Raise."""
    raise RuntimeError(f"kaput: {reason}")


def two_adds(name: str = "add") -> list[Any]:
    usage = Usage(input=100, output=20, cache_read=30, cache_write=5, total_tokens=155, cost=Cost(total=0.25))
    return [Reply(tool_calls=[(name, {"a": 1, "b": 2}), (name, {"a": 3, "b": 4})], usage=usage), "3 and 7"]


# --------------------------------------------------------------------------- the span tree


@pytest.mark.parametrize(("flavour", "tool_name"), [(SYNC, "add"), (ASYNCIO, "add"), (ASYNCIO, "aadd")], ids=str)
def test_parallel_tool_run_gives_the_span_tree_and_genai_attributes(flavour: Flavour, tool_name: str,
                                                                   otel: Any) -> None:
    provider, exporter = otel
    config = AgentLoopConfig(model=MODEL, temperature=0.3, max_tokens=512, api_key="sk-test-000000000000000000000000")
    tracer = TracingObserver(provider, agent_name="calc", agent_id="agent-1", config=config)
    _, messages = flavour.run("1+2 and 3+4?", AgentContext("You add.", [], [add, aadd]), config,
                              ScriptedModel(two_adds(tool_name)), journal=tracer)
    spans = exporter.get_finished_spans()
    assert outline(spans) == [
        "invoke_agent calc",
        "  turn 1",
        "    chat gpt-test",
        f"    execute_tool {tool_name} [call_1]",
        f"    execute_tool {tool_name} [call_2]",
        "  turn 2",
        "    chat gpt-test",
    ]
    assert len({s.context.trace_id for s in spans}) == 1

    root = one(spans, "invoke_agent calc")
    assert root.kind is SpanKind.INTERNAL and root.parent is None
    assert root.status.status_code is StatusCode.UNSET
    last = messages[-1]
    assert isinstance(last, AssistantMessage)
    assert attrs(root) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "calc",
        "gen_ai.agent.id": "agent-1",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.usage.input_tokens": 135 + last.usage.input + last.usage.cache_read + last.usage.cache_write,
        "gen_ai.usage.output_tokens": 20 + last.usage.output,
        "gen_ai.usage.cache_read.input_tokens": 30,
        "gen_ai.usage.cache_creation.input_tokens": 5,
        "agentcore.usage.cost_usd": 0.25,
        "agentcore.run.turns": 2,
    }

    first_chat, second_chat = sorted(named(spans, "chat gpt-test"), key=lambda s: s.start_time or 0)
    assert first_chat.kind is SpanKind.CLIENT
    assert attrs(first_chat) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.request.temperature": 0.3,
        "gen_ai.request.max_tokens": 512,
        "server.address": "api.example.com",
        "server.port": 443,
        "gen_ai.response.model": "gpt-test",
        "gen_ai.response.finish_reasons": ("tool_call",),
        "gen_ai.usage.input_tokens": 135,  # input + cache read + cache write, as the conventions count
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.usage.cache_read.input_tokens": 30,
        "gen_ai.usage.cache_creation.input_tokens": 5,
        "agentcore.usage.cost_usd": 0.25,
    }
    assert attrs(second_chat)["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs(second_chat)["gen_ai.usage.output_tokens"] == last.usage.output

    tools = sorted(named(spans, f"execute_tool {tool_name}"), key=lambda s: attrs(s)["gen_ai.tool.call.id"])
    for span, call_id in zip(tools, ["call_1", "call_2"]):
        assert span.kind is SpanKind.INTERNAL
        assert span.status.status_code is StatusCode.UNSET
        assert attrs(span) == {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool_name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.description": ("Add two integers." if tool_name == "add"
                                        else "Add two integers, asynchronously."),
        }
    # The parallel batch starts in one step; each tool span ends when its own result arrives.
    assert tools[0].start_time == tools[1].start_time
    for span in spans:
        assert span.start_time is not None and span.end_time is not None and span.start_time <= span.end_time
    turn1 = one(spans, "turn 1")
    assert turn1.kind is SpanKind.INTERNAL
    assert attrs(turn1) == {"agentcore.turn.number": 1, "agentcore.turn.tool_results": 2}


def test_run_span_is_a_child_of_the_callers_current_span(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    with provider.get_tracer("app").start_as_current_span("http request"):
        flavour.run("hi", AgentContext(), AgentLoopConfig(model=MODEL), ScriptedModel(["hello"]),
                    journal=TracingObserver(provider))
    assert outline(exporter.get_finished_spans()) == [
        "http request",
        "  invoke_agent",
        "    turn 1",
        "      chat gpt-test",
    ]


# --------------------------------------------------------------------------- failures


def test_error_reply_marks_chat_turn_and_run_as_errors(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    flavour.run("hi", AgentContext(), AgentLoopConfig(model=MODEL), ScriptedModel([error("rate limited (429)")]),
                journal=TracingObserver(provider))
    spans = exporter.get_finished_spans()
    assert outline(spans) == ["invoke_agent !", "  turn 1 !", "    chat gpt-test !"]
    chat = one(spans, "chat gpt-test")
    assert chat.status.description == "rate limited (429)"
    assert attrs(chat)["error.type"] == "model_error"
    assert attrs(chat)["gen_ai.response.finish_reasons"] == ("error",)
    root = one(spans, "invoke_agent")
    assert root.status.description == "rate limited (429)" and attrs(root)["error.type"] == "model_error"


def test_stream_function_that_raises_is_a_stream_failure(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel

    def broken(model: Any, context: Any, options: Any) -> Any:
        raise ConnectionError("connection reset")

    flavour.run("hi", AgentContext(), AgentLoopConfig(model=MODEL), broken, journal=TracingObserver(provider))
    chat = one(exporter.get_finished_spans(), "chat gpt-test")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.status.description == "connection reset"
    assert attrs(chat)["error.type"] == "stream_failed"


def test_abort_while_streaming_ends_every_span_with_an_error(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    signal = AbortSignal()

    def on_event(event: Any) -> None:
        if event.type == "message_update":
            signal.abort()

    flavour.run("hi", AgentContext(), AgentLoopConfig(model=MODEL),
                ScriptedModel(["a long reply " * 20], chunk_size=4), journal=TracingObserver(provider),
                signal=signal, on_event=on_event)
    spans = exporter.get_finished_spans()
    assert outline(spans) == ["invoke_agent !", "  turn 1 !", "    chat gpt-test !"]
    for span in spans:
        assert attrs(span).get("error.type", "aborted") == "aborted"
        assert span.status.description == "Request was aborted"
    assert [e.name for e in one(spans, "invoke_agent").events] == ["agentcore.abort_requested"]


def test_abort_from_a_tool_ends_the_run_span_as_aborted(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    signal = AbortSignal()

    @tool
    def stop(reason: str) -> str:
        """Abort the run."""
        signal.abort()
        return "stopping"

    flavour.run("go", AgentContext("", [], [stop]), AgentLoopConfig(model=MODEL),
                ScriptedModel([Reply(tool_calls=[("stop", {"reason": "enough"})]), "never"]),
                journal=TracingObserver(provider), signal=signal)
    spans = exporter.get_finished_spans()
    assert outline(spans) == ["invoke_agent !", "  turn 1", "    chat gpt-test", "    execute_tool stop [call_1]"]
    root = one(spans, "invoke_agent")
    assert attrs(root)["error.type"] == "aborted"
    assert root.status.description == "Operation aborted"


def test_tool_that_raises_gives_an_error_span_with_the_exception(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    flavour.run("go", AgentContext("", [], [explode, add]), AgentLoopConfig(model=MODEL),
                ScriptedModel([Reply(tool_calls=[("explode", {"reason": "why"}), ("add", {"a": 1, "b": 1})]), "ok"]),
                journal=TracingObserver(provider))
    spans = exporter.get_finished_spans()
    assert outline(spans) == [
        "invoke_agent",
        "  turn 1",
        "    chat gpt-test",
        "    execute_tool explode [call_1] !",
        "    execute_tool add [call_2]",
        "  turn 2",
        "    chat gpt-test",
    ]
    failed = one(spans, "execute_tool explode")
    assert failed.status.description == "kaput: why"
    assert attrs(failed)["error.type"] == "tool_exception"
    # tool_scope saw the exception in the tool's own thread or task.
    [exception] = failed.events
    assert exception.name == "exception"
    assert (exception.attributes or {})["exception.type"] == "RuntimeError"
    # The model got the error result and answered: the run itself did not fail.
    assert one(spans, "invoke_agent").status.status_code is StatusCode.UNSET


def test_error_result_from_after_tool_call_marks_the_tool_span(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    config = AgentLoopConfig(model=MODEL, after_tool_call=lambda ctx, signal: AfterToolCallResult(
        content=(TextContent("over budget"),), is_error=True))
    flavour.run("go", AgentContext("", [], [add]), config,
                ScriptedModel([Reply(tool_calls=[("add", {"a": 1, "b": 1})]), "ok"]), journal=TracingObserver(provider))
    span = one(exporter.get_finished_spans(), "execute_tool add")
    assert span.status.status_code is StatusCode.ERROR
    assert attrs(span)["error.type"] == "tool_error"
    assert span.status.description == "the tool returned an error result"  # content is not captured


def test_calls_that_never_execute_get_no_tool_span_but_an_event(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    flavour.run("go", AgentContext("", [], [add]), AgentLoopConfig(model=MODEL),
                ScriptedModel([Reply(tool_calls=[("nope", {}), ("add", {"a": "x"})]), "ok"]),
                journal=TracingObserver(provider))
    spans = exporter.get_finished_spans()
    assert not [s for s in spans if s.name.startswith("execute_tool")]
    turn = one(spans, "turn 1")
    assert [(e.name, dict(e.attributes or {})) for e in turn.events] == [
        ("agentcore.tool_call.not_executed", {"gen_ai.tool.name": "nope", "gen_ai.tool.call.id": "call_1"}),
        ("agentcore.tool_call.not_executed", {"gen_ai.tool.name": "add", "gen_ai.tool.call.id": "call_2"}),
    ]


def test_failing_loop_hook_ends_the_run_span_with_an_error(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel

    def transform(messages: Any, signal: Any) -> Any:
        raise ValueError("bad context")

    flavour.run("go", AgentContext(), AgentLoopConfig(model=MODEL, transform_context=transform),
                ScriptedModel(["never"]), journal=TracingObserver(provider))
    spans = exporter.get_finished_spans()
    assert outline(spans) == ["invoke_agent !", "  turn 1 !"]
    root = one(spans, "invoke_agent")
    assert attrs(root)["error.type"] == "hook_failed"
    assert "bad context" in (root.status.description or "")


def test_secrets_never_reach_the_spans(otel: Any) -> None:
    provider, exporter = otel
    key = "sk-live-abcdefghijklmnopqrstuvwxyz0123"
    config = AgentLoopConfig(model=MODEL, api_key=key, headers={"X-Api-Token": "tok-1234567890abcdef"})
    SYNC.run("hi", AgentContext(), config,
             ScriptedModel([error(f"401: invalid key {key} / tok-1234567890abcdef")]),
             journal=TracingObserver(provider, config=config, capture_content=True))
    dump = json.dumps([[s.name, attrs(s), s.status.description] for s in exporter.get_finished_spans()], default=str)
    assert key not in dump and "tok-1234567890abcdef" not in dump
    assert "[REDACTED]" in dump


# --------------------------------------------------------------------------- content capture


def test_content_is_not_captured_by_default(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    flavour.run("secret prompt", AgentContext("secret system", [], [add]), AgentLoopConfig(model=MODEL),
                ScriptedModel(two_adds()), journal=TracingObserver(provider))
    spans = exporter.get_finished_spans()
    assert len(spans) == 7
    dump = json.dumps([attrs(s) for s in spans], default=str)
    for key in CONTENT_KEYS:
        assert key not in dump
    assert "secret" not in dump and "3 and 7" not in dump


def test_content_capture_records_messages_as_the_conventions_say(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    flavour.run("1+2 and 3+4?", AgentContext("You add.", [], [add]), AgentLoopConfig(model=MODEL),
                ScriptedModel(two_adds()), journal=TracingObserver(provider, capture_content=True))
    spans = exporter.get_finished_spans()
    first_chat, second_chat = sorted(named(spans, "chat gpt-test"), key=lambda s: s.start_time or 0)
    a1 = attrs(first_chat)
    assert json.loads(a1["gen_ai.system_instructions"]) == [{"type": "text", "content": "You add."}]
    assert json.loads(a1["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "1+2 and 3+4?"}]}]
    assert json.loads(a1["gen_ai.output.messages"]) == [{"role": "assistant", "finish_reason": "tool_call", "parts": [
        {"type": "tool_call", "id": "call_1", "name": "add", "arguments": {"a": 1, "b": 2}},
        {"type": "tool_call", "id": "call_2", "name": "add", "arguments": {"a": 3, "b": 4}}]}]
    [definition] = json.loads(a1["gen_ai.tool.definitions"])
    assert definition["type"] == "function" and definition["name"] == "add"
    assert definition["parameters"]["required"] == ["a", "b"]
    history = json.loads(attrs(second_chat)["gen_ai.input.messages"])
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "tool"]
    assert history[2]["parts"] == [{"type": "tool_call_response", "id": "call_1", "response": "3"}]
    assert json.loads(attrs(second_chat)["gen_ai.output.messages"]) == [
        {"role": "assistant", "finish_reason": "stop", "parts": [{"type": "text", "content": "3 and 7"}]}]
    t1 = [s for s in named(spans, "execute_tool add") if attrs(s)["gen_ai.tool.call.id"] == "call_1"][0]
    assert json.loads(attrs(t1)["gen_ai.tool.call.arguments"]) == {"a": 1, "b": 2}
    assert attrs(t1)["gen_ai.tool.call.result"] == "3"
    root = attrs(one(spans, "invoke_agent"))
    assert json.loads(root["gen_ai.input.messages"]) == json.loads(a1["gen_ai.input.messages"])
    assert json.loads(root["gen_ai.output.messages"])[0]["parts"] == [{"type": "text", "content": "3 and 7"}]
    assert json.loads(root["gen_ai.system_instructions"]) == [{"type": "text", "content": "You add."}]


# --------------------------------------------------------------------------- no observer, no spans


def test_nothing_is_recorded_without_the_observer(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    flavour.run("go", AgentContext("", [], [add]), AgentLoopConfig(model=MODEL), ScriptedModel(two_adds()))
    assert exporter.get_finished_spans() == ()


def test_import_interpreters_does_not_import_opentelemetry() -> None:
    code = ("import sys, interpreters, interpreters.aio; "
            "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'loaded'; "
            "import interpreters.otel; assert 'opentelemetry.trace' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_an_sdk_the_observer_is_harmless() -> None:
    # The API's default provider is a no-op: spans are non-recording, the run is unchanged.
    tracer = TracingObserver(trace.NoOpTracerProvider(), capture_content=True)
    _, messages = SYNC.run("go", AgentContext("", [], [add]), AgentLoopConfig(model=MODEL),
                           ScriptedModel(two_adds()), journal=tracer)
    assert messages[-1].text == "3 and 7"


# --------------------------------------------------------------------------- a tool's own spans


def inner_span_tool(provider: TracerProvider, name: str, threads: set[str]) -> Any:
    tracer = provider.get_tracer("tool-lib")

    @tool(name=name)
    def work(n: int) -> str:
        """Work, with a span of its own."""
        threads.add(threading.current_thread().name)
        with tracer.start_as_current_span(f"inner {n}"):
            return "done"

    return work


def async_inner_span_tool(provider: TracerProvider, name: str) -> Any:
    tracer = provider.get_tracer("tool-lib")

    @tool(name=name)
    async def work(n: int) -> str:
        """Work, asynchronously, with a span of its own."""
        with tracer.start_as_current_span(f"inner {n}"):
            await asyncio.sleep(0.001)
            return "done"

    return work


def assert_inner_spans_nest(spans: Any, tool_name: str, ns: list[int]) -> None:
    tool_spans = {attrs(s)["gen_ai.tool.call.id"]: s for s in named(spans, f"execute_tool {tool_name}")}
    assert len(tool_spans) == len(ns)
    for i, n in enumerate(ns, start=1):
        inner = one(spans, f"inner {n}")
        outer = tool_spans[f"call_{i}"]
        assert inner.parent is not None and inner.parent.span_id == outer.context.span_id
        assert inner.context.trace_id == outer.context.trace_id


@pytest.mark.parametrize("calls", [1, 3], ids=["inline", "parallel"])
def test_a_sync_tools_own_spans_nest_under_execute_tool(flavour: Flavour, calls: int, otel: Any) -> None:
    provider, exporter = otel
    threads: set[str] = set()
    work = inner_span_tool(provider, "work", threads)
    ns = list(range(calls))
    flavour.run("go", AgentContext("", [], [work]), AgentLoopConfig(model=MODEL),
                ScriptedModel([Reply(tool_calls=[("work", {"n": n}) for n in ns]), "ok"]),
                journal=TracingObserver(provider))
    assert_inner_spans_nest(exporter.get_finished_spans(), "work", ns)
    if flavour.name == "sync" and calls == 1:
        assert threads == {threading.current_thread().name}  # ran inline, in the caller's thread
    else:
        assert threading.current_thread().name not in threads  # worker threads


@pytest.mark.parametrize("calls", [1, 3], ids=["inline", "tasks"])
def test_an_async_tools_own_spans_nest_under_execute_tool(calls: int, otel: Any) -> None:
    provider, exporter = otel
    work = async_inner_span_tool(provider, "awork")
    ns = list(range(calls))
    ASYNCIO.run("go", AgentContext("", [], [work]), AgentLoopConfig(model=MODEL),
                ScriptedModel([Reply(tool_calls=[("awork", {"n": n}) for n in ns]), "ok"]),
                journal=TracingObserver(provider))
    assert_inner_spans_nest(exporter.get_finished_spans(), "awork", ns)


def test_tool_scope_leaves_the_callers_context_unchanged(otel: Any) -> None:
    provider, exporter = otel
    before = trace.get_current_span()
    SYNC.run("go", AgentContext("", [], [add]), AgentLoopConfig(model=MODEL),
             ScriptedModel([Reply(tool_calls=[("add", {"a": 1, "b": 2})]), "3"]), journal=TracingObserver(provider))
    assert trace.get_current_span() is before


# --------------------------------------------------------------------------- with the recorder, reuse


def test_recorder_and_tracer_observe_the_same_run(flavour: Flavour, otel: Any, tmp_path: Path) -> None:
    provider, exporter = otel
    context = AgentContext("You add.", [], [add])
    config = AgentLoopConfig(model=MODEL)
    path = tmp_path / "run.jsonl"
    recorder = TranscriptRecorder(path, context, config)
    tracer = TracingObserver(provider, config=config)
    flavour.run("1+2 and 3+4?", context, config, ScriptedModel(two_adds()), journal=[recorder, tracer])
    recorder.close()
    transcript = read_transcript(path)
    assert transcript.steps > 0
    assert len(exporter.get_finished_spans()) == 7
    assert outline(exporter.get_finished_spans())[0] == "invoke_agent"


def test_one_observer_serves_consecutive_runs(otel: Any) -> None:
    provider, exporter = otel
    tracer = TracingObserver(provider)
    for _ in range(2):
        SYNC.run("hi", AgentContext(), AgentLoopConfig(model=MODEL), ScriptedModel(["hello"]), journal=tracer)
    spans = exporter.get_finished_spans()
    roots = named(spans, "invoke_agent")
    assert len(roots) == 2 and roots[0].context.trace_id != roots[1].context.trace_id
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)


def test_close_ends_the_spans_of_an_abandoned_run(otel: Any) -> None:
    provider, exporter = otel
    tracer = TracingObserver(provider)
    stream = agent_loop("hi", AgentContext(), AgentLoopConfig(model=MODEL), stream_fn=ScriptedModel(["hello there"]),
                        journal=tracer)
    for event in stream:
        if event.type == "message_update":
            break
    stream.close()
    assert exporter.get_finished_spans() == ()
    tracer.close()
    spans = exporter.get_finished_spans()
    assert outline(spans) == ["invoke_agent !", "  turn 1", "    chat gpt-test !"]
    assert attrs(one(spans, "invoke_agent"))["error.type"] == "not_finished"


def test_provider_names_follow_the_conventions() -> None:
    assert [provider_name(p) for p in ["openai", "anthropic", "google", "ollama", ""]] == [
        "openai", "anthropic", "gcp.gemini", "ollama", "_OTHER"]


def test_tool_results_with_is_error_but_no_exception(otel: Any) -> None:
    provider, exporter = otel

    @tool
    def refuse(x: int) -> AgentToolResult:
        """Refuse."""
        return AgentToolResult((TextContent("no"),))

    config = AgentLoopConfig(model=MODEL, after_tool_call=lambda ctx, signal: AfterToolCallResult(is_error=True))
    SYNC.run("go", AgentContext("", [], [refuse]), config,
             ScriptedModel([Reply(tool_calls=[("refuse", {"x": 1})]), "ok"]),
             journal=TracingObserver(provider, capture_content=True))
    span = one(exporter.get_finished_spans(), "execute_tool refuse")
    assert span.status.description == "no"  # with content capture the result text is the description
    assert attrs(span)["gen_ai.tool.call.result"] == "no"


def test_a_sampled_out_run_records_nothing_and_takes_its_tools_spans_along(flavour: Flavour) -> None:
    from opentelemetry.sdk.trace.sampling import Decision, ParentBased, Sampler, SamplingResult

    class DropAgentRuns(Sampler):
        """Samples every root span except the agent runs."""

        def should_sample(self, parent_context: Any, trace_id: int, name: str, *args: Any,
                          **kwargs: Any) -> SamplingResult:
            drop = name.startswith("invoke_agent")
            return SamplingResult(Decision.DROP if drop else Decision.RECORD_AND_SAMPLE)

        def get_description(self) -> str:
            return "DropAgentRuns"

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ParentBased(DropAgentRuns()))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("probe").start_as_current_span("probe"):
        pass
    assert [s.name for s in exporter.get_finished_spans()] == ["probe"]  # other roots are sampled
    exporter.clear()
    work = inner_span_tool(provider, "work", set())
    flavour.run("go", AgentContext("", [], [work]), AgentLoopConfig(model=MODEL),
                ScriptedModel([Reply(tool_calls=[("work", {"n": 1}), ("work", {"n": 2})]), "ok"]),
                journal=TracingObserver(provider, capture_content=True))
    # The tool's own spans had the unsampled run as parent, so ParentBased dropped them too.
    assert exporter.get_finished_spans() == ()


def test_without_turn_spans_calls_hang_under_the_run(flavour: Flavour, otel: Any) -> None:
    provider, exporter = otel
    flavour.run("go", AgentContext("", [], [add]), AgentLoopConfig(model=MODEL), ScriptedModel(two_adds()),
                journal=TracingObserver(provider, turn_spans=False, agent_name="calc"))
    spans = exporter.get_finished_spans()
    assert outline(spans) == [
        "invoke_agent calc",
        "  chat gpt-test",
        "  execute_tool add [call_1]",
        "  execute_tool add [call_2]",
        "  chat gpt-test",
    ]
    assert attrs(one(spans, "invoke_agent calc"))["agentcore.run.turns"] == 2


def test_the_observer_keeps_its_public_path() -> None:
    import interpreters.otel

    assert interpreters.otel.TracingObserver is TracingObserver
    assert sorted(interpreters.otel.__all__) == ["SCHEMA_URL", "SEMCONV_VERSION", "TracingObserver",
                                                 "input_messages", "output_messages", "provider_name"]
    assert all(hasattr(interpreters.otel, name) for name in interpreters.otel.__all__)
