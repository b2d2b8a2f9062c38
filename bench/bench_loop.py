"""Interpreter benchmarks: full-loop cost per turn, many concurrent asyncio runs, abort latency.

Run: ``python bench/bench_loop.py`` (``--quick`` for fewer repetitions). Prints one table of
medians. The model is the in-process ``ScriptedModel``; the tool is trivial.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import threading
import time
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, AssistantMessage, Model, TextContent, ToolCall, ToolResultMessage
from interpreters import AbortSignal, ScriptedModel, agent_loop, aio, tool
from interpreters.streams.scripted import Reply

CONFIG = AgentLoopConfig(model=Model(id="bench"))


@tool
def noop(n: int) -> str:
    """Do nothing."""
    return "ok"


@tool(name="anoop")
async def anoop(n: int) -> str:
    """Do nothing, asynchronously."""
    return "ok"


def script(turns: int, name: str) -> list[Any]:
    return [Reply(tool_calls=((name, {"n": i}),)) for i in range(turns)] + ["done"]


def history(n: int) -> list[Any]:
    out: list[Any] = []
    for i in range(n // 2):
        out.append(AssistantMessage((ToolCall(f"h{i}", "noop", {"n": i}),), stop_reason="toolUse"))
        out.append(ToolResultMessage(f"h{i}", "noop", (TextContent("ok"),)))
    return out


def sync_turn_us(turns: int, hist: int, reps: int) -> float:
    samples = []
    for _ in range(reps):
        ctx = AgentContext("", history(hist), [noop])
        model = ScriptedModel(script(turns, "noop"), chunk_size=0)
        t0 = time.perf_counter()
        agent_loop("go", ctx, CONFIG, stream_fn=model).result()
        samples.append((time.perf_counter() - t0) / turns * 1e6)
    return statistics.median(samples)


def async_turn_us(turns: int, hist: int, reps: int, tool_name: str) -> float:
    samples = []
    for _ in range(reps):
        ctx = AgentContext("", history(hist), [noop, anoop])
        model = ScriptedModel(script(turns, tool_name), chunk_size=0)

        async def main() -> float:
            t0 = time.perf_counter()
            await aio.agent_loop("go", ctx, CONFIG, stream_fn=model).result()
            return time.perf_counter() - t0

        samples.append(asyncio.run(main()) / turns * 1e6)
    return statistics.median(samples)


def concurrent_runs(n: int, turns: int) -> tuple[float, float]:
    """Wall time and peak RSS growth per run for ``n`` concurrent 5-turn asyncio runs."""
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    async def main() -> float:
        t0 = time.perf_counter()
        runs = [
            aio.agent_loop("go", AgentContext("", [], [anoop]), CONFIG,
                           stream_fn=ScriptedModel(script(turns - 1, "anoop"), chunk_size=8)).result()
            for _ in range(n)
        ]
        await asyncio.gather(*runs)
        return time.perf_counter() - t0

    wall = asyncio.run(main())
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return wall, (after - before) / n  # ru_maxrss is in KB on Linux


def abort_latency_ms(reps: int) -> tuple[float, float]:
    """Median ms from abort() to agent_end: mid-stream and mid-tool (both honour the signal)."""

    def waits(signal: Any) -> str:
        signal.wait(5)
        raise RuntimeError("aborted")

    waiter = tool(name="waiter")(lambda signal: waits(signal))  # type: ignore[arg-type]
    stream_samples, tool_samples = [], []
    for _ in range(reps):
        for kind in ("stream", "tool"):
            signal = AbortSignal()
            if kind == "stream":
                model = ScriptedModel(["x" * 2000], chunk_size=1, delay=0.001)
            else:
                model = ScriptedModel([Reply(tool_calls=(("waiter", {}),)), "never"])
            stream = agent_loop("go", AgentContext("", [], [waiter]), CONFIG, signal, model)
            fired: list[float] = []

            def fire() -> None:
                fired.append(time.perf_counter())
                signal.abort()

            for event in stream:
                if kind == "stream" and event.type == "message_update" and not fired:
                    threading.Timer(0.02, fire).start()
                if kind == "tool" and event.type == "tool_execution_start":
                    threading.Timer(0.02, fire).start()
                if event.type == "agent_end":
                    end = time.perf_counter()
            (stream_samples if kind == "stream" else tool_samples).append((end - fired[0]) * 1000)
    return statistics.median(stream_samples), statistics.median(tool_samples)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    reps = 3 if args.quick else 5
    rows = [("measure", "median")]
    for hist in (10, 1_000):
        rows.append((f"sync loop per tool turn, history {hist:>5,}", f"{sync_turn_us(300, hist, reps):.1f} µs"))
    for hist in (10, 1_000):
        rows.append((f"asyncio loop per turn (async tool), history {hist:>5,}",
                     f"{async_turn_us(300, hist, reps, 'anoop'):.1f} µs"))
    rows.append(("asyncio loop per turn (sync tool in a thread), history 10",
                 f"{async_turn_us(300, 10, reps, 'noop'):.1f} µs"))
    wall, kb = concurrent_runs(1000, 5)
    rows.append(("1,000 concurrent 5-turn asyncio runs, wall", f"{wall * 1000:.0f} ms"))
    rows.append(("  peak RSS growth per run", f"{kb:.1f} KB"))
    s, t = abort_latency_ms(reps)
    rows.append(("abort() to agent_end, mid-stream", f"{s:.2f} ms"))
    rows.append(("abort() to agent_end, mid-tool", f"{t:.2f} ms"))
    width = max(len(r[0]) for r in rows)
    for i, (k, v) in enumerate(rows):
        print(f"{k.ljust(width)}  {v.rjust(12)}")
        if i == 0:
            print(f"{'-' * width}  {'-' * 12}")


if __name__ == "__main__":
    main()
