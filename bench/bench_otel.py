"""Overhead of the OpenTelemetry observer (``interpreters.otel.TracingObserver``).

Run: ``python bench/bench_otel.py`` (``--quick`` for fewer repetitions). Needs the SDK
(``pip install opentelemetry-sdk``). Prints one table of medians.

Each case runs the same scripted run (in-process ``ScriptedModel``, trivial tool) without an
observer and with one, in these set-ups:

- ``sdk``: the OpenTelemetry SDK's ``TracerProvider`` with a ``SimpleSpanProcessor`` and an
  exporter that does nothing: every span is created, recorded, ended and handed to the exporter
  in the run's thread, which is the full in-process cost of tracing minus the I/O;
- ``sdk``, ``turn_spans=False``: the same without the per-turn span (two spans a turn, not three);
- ``sdk+content``: the same with ``capture_content=True`` (messages serialized to JSON);
- ``api``: the observer with the API's no-op provider (no SDK configured).

Two micro-measures explain the numbers: what ``record()`` costs on a stream-delta step (the only
work tracing adds per delta) and what the SDK itself charges for one span (start, 4 attributes,
end, through the processor), the floor under the per-turn overhead.

Repetitions alternate between the set-ups so that machine noise hits them alike. ``--clock cpu``
times the process's CPU time (all its threads) instead of the wall clock: steadier on a machine
that other work shares.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, agent_loop, aio, tool
from interpreters.otel import TracingObserver
from interpreters.streams.scripted import Reply

CONFIG = AgentLoopConfig(model=Model(id="bench"))


class NullExporter(SpanExporter):
    """Accepts every span and does nothing with it."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def sdk_provider() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(NullExporter()))
    return provider


@tool
def noop(n: int) -> str:
    """Do nothing."""
    return "ok"


@tool(name="anoop")
async def anoop(n: int) -> str:
    """Do nothing, asynchronously."""
    return "ok"


def tool_loop(turns: int, name: str) -> Callable[[Any], None]:
    script = [Reply(tool_calls=((name, {"n": i}),)) for i in range(turns)] + ["done"]
    tools = [noop, anoop]

    if name == "noop":
        def once(journal: Any) -> None:
            agent_loop("go", AgentContext("", [], tools), CONFIG, stream_fn=ScriptedModel(script, chunk_size=0),
                       journal=journal).result()
    else:
        def once(journal: Any) -> None:
            async def main() -> None:
                await aio.agent_loop("go", AgentContext("", [], tools), CONFIG,
                                     stream_fn=ScriptedModel(script, chunk_size=0), journal=journal).result()
            asyncio.run(main())
    return once


def stream(deltas: int, flavour: str) -> Callable[[Any], None]:
    text = "x" * deltas

    if flavour == "sync":
        def once(journal: Any) -> None:
            agent_loop("go", AgentContext(), CONFIG, stream_fn=ScriptedModel([text], chunk_size=1),
                       journal=journal).result()
    else:
        def once(journal: Any) -> None:
            async def main() -> None:
                await aio.agent_loop("go", AgentContext(), CONFIG, stream_fn=ScriptedModel([text], chunk_size=1),
                                     journal=journal).result()
            asyncio.run(main())
    return once


SDK = sdk_provider()
SETUPS: dict[str, Callable[[], Any]] = {
    "none": lambda: None,
    "sdk": lambda: TracingObserver(SDK),
    "sdk-noturn": lambda: TracingObserver(SDK, turn_spans=False),
    "sdk+content": lambda: TracingObserver(SDK, capture_content=True),
    "api": lambda: TracingObserver(trace.NoOpTracerProvider()),
}


CLOCK: Callable[[], float] = time.perf_counter


def measure(once: Callable[[Any], None], units: int, reps: int) -> dict[str, float]:
    """Median µs per unit for each set-up, repetitions interleaved."""
    samples: dict[str, list[float]] = {k: [] for k in SETUPS}
    for make in SETUPS.values():  # warm-up
        once(make())
    for _ in range(reps):
        for name, make in SETUPS.items():
            journal = make()
            gc.collect()
            t0 = CLOCK()
            once(journal)
            samples[name].append((CLOCK() - t0) / units * 1e6)
    return {k: statistics.median(v) for k, v in samples.items()}


def record_delta_ns(n: int, reps: int) -> float:
    """ns per ``record()`` call on a text-delta step."""
    from agentcore import Emit, MessageUpdateEvent, Started, StreamEventReceived, UserMessage
    from agentcore.llm import LlmContext

    observer = TracingObserver(SDK)
    observer.record(1, Started((UserMessage("go"),)), ())
    events = list(ScriptedModel(["xx"], chunk_size=1)(CONFIG.model, LlmContext("", []), None))
    ev: Any = next(e for e in events if e.type == "text_delta")
    inp = StreamEventReceived(1, ev)
    effects = (Emit(MessageUpdateEvent(ev.partial, ev)),)
    record = observer.record
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for i in range(n):
            record(i, inp, effects)
        samples.append((time.perf_counter_ns() - t0) / n)
    observer.close()
    return statistics.median(samples)


def sdk_span_us(n: int, reps: int) -> float:
    """µs for one SDK span: start with 4 attributes, end, through SimpleSpanProcessor."""
    tracer = SDK.get_tracer("bench")
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "noop",
                  "gen_ai.tool.call.id": "call_1", "gen_ai.tool.type": "function"}
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            tracer.start_span("execute_tool noop", None, trace.SpanKind.INTERNAL, attributes).end()
        samples.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    reps = 5 if args.quick else 15
    cases = [
        ("sync, 200-turn tool loop", "µs/turn", tool_loop(200, "noop"), 200),
        ("asyncio, 200-turn tool loop", "µs/turn", tool_loop(200, "anoop"), 200),
        ("sync, 10k-delta stream", "µs/delta", stream(10_000, "sync"), 10_000),
        ("asyncio, 10k-delta stream", "µs/delta", stream(10_000, "asyncio"), 10_000),
    ]
    header = ("case", "unit", "no observer", "sdk", "overhead", "no turn spans", "overhead",
              "sdk+content", "overhead", "api no-op", "overhead")
    rows: list[tuple[str, ...]] = [header]
    for label, unit, once, units in cases:
        m = measure(once, units, reps)
        base = m["none"]

        def pct(x: float) -> str:
            return f"{(x - base) / base * 100:+.1f} %"

        rows.append((label, unit, f"{base:.2f}", f"{m['sdk']:.2f}", pct(m["sdk"]),
                     f"{m['sdk-noturn']:.2f}", pct(m["sdk-noturn"]),
                     f"{m['sdk+content']:.2f}", pct(m["sdk+content"]), f"{m['api']:.2f}", pct(m["api"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for i, row in enumerate(rows):
        print("  ".join(c.ljust(w) if j < 2 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print()
    print(f"record() on a stream-delta step: {record_delta_ns(200_000, reps):.0f} ns")
    print(f"one SDK span (start + 4 attributes + end, SimpleSpanProcessor, null exporter): "
          f"{sdk_span_us(20_000, reps):.1f} µs")
    print(f"\n{args.clock} clock; medians of {reps} interleaved repetitions; "
          "sdk = TracerProvider + SimpleSpanProcessor + "
          "an exporter that does nothing")


if __name__ == "__main__":
    main()
