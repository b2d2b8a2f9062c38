"""Cassette benchmarks: the cost of answering a model call from a cassette against the plain
playback of ``RecordedModel`` (which answers call n with recording n, no matching), on long
recorded runs, and the cost of loading a cassette as the recording grows.

Run: ``python bench/bench_cassette.py`` (``--quick`` for shorter runs). Prints one table of
medians. Each run is a tool run recorded for real (a ``ScriptedModel`` and a trivial tool behind a
``TranscriptRecorder``), then run again on the same code with each stream function.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import Cassette, ScriptedModel, agent_loop, tool
from interpreters.streams.recorded import RecordedModel
from interpreters.streams.scripted import Reply
from interpreters.transcript import TranscriptRecorder, read_transcript

CONFIG = AgentLoopConfig(model=Model(id="bench"))


@tool
def noop(n: int) -> str:
    """Do nothing."""
    return "ok"


CONTEXT = AgentContext("Be quick.", [], [noop])


def record(path: Path, turns: int) -> None:
    replies: list[Any] = [Reply(tool_calls=(("noop", {"n": i}),)) for i in range(turns - 1)] + ["done"]
    with TranscriptRecorder(path, CONTEXT, CONFIG) as recorder:
        agent_loop("go", CONTEXT, CONFIG, stream_fn=ScriptedModel(replies, chunk_size=0), journal=recorder).result()


def run_us(stream_fn: Any, turns: int) -> float:
    t0 = time.perf_counter()
    messages = agent_loop("go", CONTEXT, CONFIG, stream_fn=stream_fn).result()
    elapsed = time.perf_counter() - t0
    assert messages[-1].text == "done", messages[-1]
    return elapsed / turns * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reps = 3 if args.quick else 7
    turns = 1000
    sizes = (250, 500, 1000) if args.quick else (250, 500, 1000, 2000)
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.jsonl"
        record(path, turns)
        plain, cassette = [], []
        for _ in range(reps):  # interleaved, so that both see the same machine
            plain.append(run_us(RecordedModel(read_transcript(path)), turns))
            c = Cassette(path)
            cassette.append(run_us(c, turns))
            assert set(c.report().labels) == {"exact"}
        p, c_ = statistics.median(plain), statistics.median(cassette)
        rows.append((f"full loop per model call, {turns}-call run, RecordedModel", f"{p:8.1f} us"))
        rows.append((f"full loop per model call, {turns}-call run, Cassette", f"{c_:8.1f} us"))
        rows.append(("  Cassette / RecordedModel", f"{c_ / p:8.2f} x"))
        for n in sizes:
            file = Path(tmp) / f"load-{n}.jsonl"
            record(file, n)
            loads = []
            for _ in range(reps):
                t0 = time.perf_counter()
                Cassette(file)
                loads.append((time.perf_counter() - t0) / n * 1e6)
            rows.append((f"load per recorded call, {n}-call transcript", f"{statistics.median(loads):8.1f} us"))
    width = max(len(name) for name, _ in rows)
    print(f"{'benchmark':<{width}}  median")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
