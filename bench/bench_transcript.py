"""Transcript overhead: a scripted run with and without a recorder, and replay speed.

    python bench/bench_transcript.py

Prints a table: time of a plain scripted run, the same run recorded (flush="entry" and
flush="turn"), the overhead in percent, the transcript size (medians of 15 interleaved runs), then
strict replay and read time of a 1,000-turn tool-loop transcript.

Scenarios: "streamed turns" is shaped like a real agent run (each reply streams ~1.2 KB of text
in 4-character deltas, the way providers stream tokens, then a tool call whose arguments stream
too; each tool returns ~600 characters). The tool loops (one short tool call per reply, a
one-character result) are the worst case for a recorder: almost no work per turn to compare
with. "one reply, 10k deltas" isolates the per-delta cost.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, run_agent_loop, tool
from interpreters.replay import replay
from interpreters.streams.scripted import Reply, ScriptedCall, tool_call
from interpreters.transcript import TranscriptRecorder, read_transcript


@tool
def echo(x: int) -> str:
    """Echo."""
    return str(x)


@tool
def lookup(query: str, limit: int) -> str:
    """Look something up."""
    return f"Results for {query!r}: " + "; ".join(f"item {i}: a line of found text" for i in range(limit))


PROSE = "Let me check that. The answer depends on a few things worth looking up first. "


def streamed_turns(turns: int) -> list[Any]:
    text = PROSE * 16
    calls = [Reply(text=text, tool_calls=[ScriptedCall("lookup", {"query": f"the question, part {i}", "limit": 18})])
             for i in range(turns - 1)]
    return calls + [Reply(text=text)]


def tool_loop(turns: int) -> list[Any]:
    return [tool_call("echo", {"x": i}) for i in range(turns - 1)] + ["done"]


def run(replies: list[Any], chunk: int | None, journal_path: Path | None, flush: str = "entry") -> float:
    ctx = AgentContext("You echo.", [], [echo, lookup])
    cfg = AgentLoopConfig(model=Model(id="bench"), tool_execution="sequential")
    if journal_path is not None:
        journal_path.unlink(missing_ok=True)  # a new file, as for a new run (not timed)
    journal = TranscriptRecorder(journal_path, ctx, cfg, flush=flush) if journal_path else None  # type: ignore[arg-type]
    model = ScriptedModel(replies, chunk_size=chunk)
    t0 = time.perf_counter()
    run_agent_loop("go", ctx, cfg, emit=lambda e: None, stream_fn=model, journal=journal, clock=lambda: 0)
    if journal is not None:
        journal.close()  # timed: whatever the recorder still held is written here
    return time.perf_counter() - t0


ROUNDS = 15


def medians(fns: list[Any], rounds: int = ROUNDS) -> list[float]:
    """The median time of each of ``fns``, run in interleaved rounds (drift hits them alike)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, out in zip(fns, times):
            out.append(fn())
    return [statistics.median(t) for t in times]


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    rows = []
    scenarios = {  # name: (replies, chunk size, units, unit)
        "streamed turns, 50 turns": (streamed_turns(50), 4, 50, "turn"),
        "tool loop, 200 turns": (tool_loop(200), 8, 200, "turn"),
        "tool loop, 1000 turns": (tool_loop(1000), 8, 1000, "turn"),
        "one reply, 10k deltas": ([(PROSE * 1000)[:80_000]], 8, 10_000, "delta"),
    }
    for name, (replies, chunk, units, unit) in scenarios.items():
        plain, entry, turn = medians([
            lambda: run(replies, chunk, None),
            lambda: run(replies, chunk, tmp / "e.jsonl", "entry"),
            lambda: run(replies, chunk, tmp / "t.jsonl", "turn"),
        ])
        size = (tmp / "e.jsonl").stat().st_size
        rows.append((name, plain, entry, turn, size, (entry - plain) / units, unit))
    print(f"medians of {ROUNDS} interleaved runs (added: what flush=\"entry\" adds per turn or delta)")
    print(f"{'scenario':26} {'plain':>9} {'entry':>9} {'ovh':>6} {'turn':>9} {'ovh':>6} {'size':>9} {'added':>14}")
    for name, plain, entry, turn, size, added, unit in rows:
        print(f"{name:26} {plain * 1e3:7.1f}ms {entry * 1e3:7.1f}ms {100 * (entry / plain - 1):5.0f}% "
              f"{turn * 1e3:7.1f}ms {100 * (turn / plain - 1):5.0f}% {size / 1e6:7.2f}MB "
              f"{added * 1e6:6.1f} µs/{unit}")
    path = tmp / "1000.jsonl"
    run(tool_loop(1000), 8, path)
    t0 = time.perf_counter()
    t = read_transcript(path)
    read_s = time.perf_counter() - t0
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        result = replay(t)
        times.append(time.perf_counter() - t0)
    assert result.finished
    print(f"\n1,000-turn transcript: {t.steps} steps, {path.stat().st_size / 1e6:.2f} MB; "
          f"read {read_s * 1e3:.0f} ms, strict replay {statistics.median(times) * 1e3:.0f} ms "
          f"({statistics.median(times) / 1000 * 1e6:.0f} µs/turn)")


if __name__ == "__main__":
    main()
