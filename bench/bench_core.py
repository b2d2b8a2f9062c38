"""Core benchmarks: step throughput, per-turn cost against history length, per-delta cost.

Run: ``python bench/bench_core.py`` (add ``--quick`` for fewer repetitions). Prints one table.
Each figure is the median of several repetitions; ratios compare the largest case to the smallest.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from agentcore import (
    AgentContext,
    AgentToolResult,
    AssistantMessage,
    LoopState,
    Model,
    PartialAssistantMessage,
    Started,
    StreamEventReceived,
    TextContent,
    ToolCall,
    ToolFinished,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
    initial_state,
    step,
)

TOOL = ToolSpec("noop", parameters={"type": "object", "properties": {"n": {"type": "integer"}}})
MODEL = Model(id="bench")
RESULT = AgentToolResult((TextContent("ok"),))


def tool_reply(i: int) -> Any:
    p = PartialAssistantMessage.begin(model="bench")
    ev = p.toolcall_start(f"c{i}", "noop")
    ev = ev.partial.toolcall_end(0, {"n": i})
    return ev.partial.done("toolUse")


def history(n: int) -> tuple[Any, ...]:
    out: list[Any] = []
    for i in range(n // 2):
        out.append(AssistantMessage((ToolCall(f"h{i}", "noop", {"n": i}),), stop_reason="toolUse"))
        out.append(ToolResultMessage(f"h{i}", "noop", (TextContent("ok"),)))
    return tuple(out) + (UserMessage("go"),)


def run_turns(state: LoopState, turns: int, replies: list[Any]) -> float:
    """Drive ``turns`` tool turns; returns seconds spent inside ``step``."""
    result = step(state, Started((), 0)).unwrap()
    s, effects = result
    call_id = effects[-1].id
    spent = 0.0
    clock = time.perf_counter
    for i in range(turns):
        t0 = clock()
        s, effects = step(s, StreamEventReceived(call_id, replies[i], i)).unwrap()
        exec_id = effects[-1].id
        s, effects = step(s, ToolFinished(exec_id, RESULT, i)).unwrap()
        call_id = effects[-1].id
        spent += clock() - t0
    return spent


def per_turn_us(history_len: int, turns: int, reps: int) -> float:
    replies = [tool_reply(i) for i in range(turns)]
    samples = []
    for _ in range(reps):
        state = initial_state(AgentContext("", history(history_len), [TOOL]), model=MODEL)
        samples.append(run_turns(state, turns, replies) / turns * 1e6)
    return statistics.median(samples)


def steps_per_second(turns: int, reps: int) -> float:
    replies = [tool_reply(i) for i in range(turns)]
    samples = []
    for _ in range(reps):
        state = initial_state(AgentContext("", (UserMessage("go"),), [TOOL]), model=MODEL)
        spent = run_turns(state, turns, replies)
        samples.append(2 * turns / spent)
    return statistics.median(samples)


def per_delta_us(prefill_bytes: int, deltas: int, reps: int) -> float:
    """Cost of one text delta through ``step`` after ``prefill_bytes`` of text were received."""
    samples = []
    chunk = "x" * 16
    for _ in range(reps):
        s, effects = step(initial_state(AgentContext(), model=MODEL), Started((UserMessage("go"),), 0)).unwrap()
        cid = effects[-1].id
        p = PartialAssistantMessage.begin(model="bench")
        s = step(s, StreamEventReceived(cid, _start(p), 0)).unwrap()[0]
        ev = p.text_start()
        s = step(s, StreamEventReceived(cid, ev, 0)).unwrap()[0]
        p = ev.partial
        filler = "y" * 1024
        for _ in range(prefill_bytes // 1024):
            ev = p.text_delta(0, filler)
            s = step(s, StreamEventReceived(cid, ev, 0)).unwrap()[0]
            p = ev.partial
        events = []
        for _ in range(deltas):
            ev = p.text_delta(0, chunk)
            events.append(StreamEventReceived(cid, ev, 0))
            p = ev.partial
        t0 = time.perf_counter()
        for inp in events:
            s = step(s, inp).unwrap()[0]
        samples.append((time.perf_counter() - t0) / deltas * 1e6)
    return statistics.median(samples)


def fold_delta_us(prefill_bytes: int, deltas: int, reps: int) -> float:
    """Cost of folding one delta into the partial message (what a stream function pays)."""
    samples = []
    for _ in range(reps):
        p = PartialAssistantMessage.begin(model="bench").text_start().partial
        for _ in range(prefill_bytes // 1024):
            p = p.text_delta(0, "y" * 1024).partial
        t0 = time.perf_counter()
        for _ in range(deltas):
            p = p.text_delta(0, "x" * 16).partial
        samples.append((time.perf_counter() - t0) / deltas * 1e6)
    return statistics.median(samples)


def _start(p: PartialAssistantMessage) -> Any:
    from agentcore import StartEvent

    return StartEvent(p)


def table(rows: list[tuple[str, str, str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = []
    for j, r in enumerate(rows):
        lines.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    reps = 3 if args.quick else 7
    rows: list[tuple[str, str, str]] = [("measure", "median", "ratio")]
    rows.append(("step throughput, tool loop (inputs/s)", f"{steps_per_second(2000, reps):,.0f}", ""))
    turn = {n: per_turn_us(n, 200, reps) for n in (10, 100, 1_000, 10_000)}
    for n, v in turn.items():
        rows.append((f"core cost per tool turn, history {n:>6,} msgs", f"{v:.2f} µs", f"{v / turn[10]:.2f}x"))
    d1 = per_delta_us(1024, 5000, reps)
    d200 = per_delta_us(200 * 1024, 5000, reps)
    rows.append(("step per text delta, 1 KB received", f"{d1:.2f} µs", "1.00x"))
    rows.append(("step per text delta, 200 KB received", f"{d200:.2f} µs", f"{d200 / d1:.2f}x"))
    f1 = fold_delta_us(1024, 20000, reps)
    f200 = fold_delta_us(200 * 1024, 20000, reps)
    rows.append(("partial fold per delta, 1 KB received", f"{f1:.2f} µs", "1.00x"))
    rows.append(("partial fold per delta, 200 KB received", f"{f200:.2f} µs", f"{f200 / f1:.2f}x"))
    print(table(rows))


if __name__ == "__main__":
    main()
