"""Every API key a run used, of any shape, is scrubbed from what the run writes: transcript
lines (split across stream deltas too) and OpenTelemetry attributes. Keys reach a run through
``get_api_key()`` or the provider's environment variable, not only ``config.api_key``."""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, tool
from interpreters.replay import replay
from interpreters.streams.scripted import Reply
from tests.support.flavours import SYNC, Flavour

RANDOM_KEY = "".join(random.Random(7).choices(string.ascii_letters + string.digits, k=40))

# (how the key reaches the run, provider, key): shapes no pattern knows.
CASES = [
    ("get_api_key", "xai", "xai-" + "Q7m2" * 10),
    ("environment", "groq", "gsk_" + "b3Zr" * 12),
    ("environment", "mistral", RANDOM_KEY),
    ("get_api_key", "openai", RANDOM_KEY[::-1]),
]


def leaky(key: str) -> Any:
    @tool
    def lookup(name: str) -> str:
        """Look a name up."""
        raise PermissionError(f"the service refused key {key} for {name}")

    return lookup


@pytest.mark.parametrize(("how", "provider", "key"), CASES)
def test_a_key_the_run_used_is_never_written(flavour: Flavour, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             how: str, provider: str, key: str) -> None:
    from agentcore.providers.catalog import ENV_KEYS

    for name in ENV_KEYS.values():
        monkeypatch.delenv(name, raising=False)
    options: dict[str, Any] = {}
    if how == "environment":
        monkeypatch.setenv(ENV_KEYS[provider], key)
    else:
        options["get_api_key"] = lambda p: key
    seen: list[str | None] = []
    scripted = ScriptedModel([Reply(tool_calls=(("lookup", {"name": "x"}),)),
                              f"I was called with {key}, sorry."], chunk_size=3)

    def stream_fn(model: Any, context: Any, opts: Any) -> Any:
        seen.append(opts.api_key)
        return scripted(model, context, opts)

    path = tmp_path / "run.jsonl"
    ctx = AgentContext("", [], [leaky(key)])
    cfg = AgentLoopConfig(model=Model(id="m", provider=provider), **options)
    _, messages = flavour.record(path, "go", ctx, cfg, stream_fn)
    assert key in messages[2].content[0].text and key in messages[-1].text  # the run itself keeps them
    text = path.read_text()
    assert key not in text and "[REDACTED]" in text
    assert seen == ([key, key] if how == "get_api_key" else [None, None])
    assert replay(path).finished  # a scrubbed transcript still replays


def test_a_key_is_scrubbed_from_opentelemetry_attributes(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from interpreters.otel import TracingObserver

    key = "xai-" + "Q7m2" * 10
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    cfg = AgentLoopConfig(model=Model(id="m", provider="xai"), get_api_key=lambda p: key)
    tracer = TracingObserver(provider, capture_content=True, config=cfg)
    scripted = ScriptedModel([Reply(tool_calls=(("lookup", {"name": "x"}),)), f"key {key}"])
    SYNC.run("go", AgentContext("", [], [leaky(key)]), cfg, scripted, journal=tracer)
    provider.shutdown()
    attributes = [str(v) for span in exporter.get_finished_spans() for v in (span.attributes or {}).values()]
    events = [str(v) for span in exporter.get_finished_spans() for e in span.events
              for v in (e.attributes or {}).values()]
    assert attributes and not any(key in a for a in attributes + events)
