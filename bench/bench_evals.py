"""Eval benchmark: cases per second of a 200-case eval re-run offline (every model call answered
from the recorded transcripts through cassettes), against running the same cases through
pydantic-evals with a ``FunctionModel`` (no network either, but every call computed again).

Run: ``python bench/bench_evals.py`` (``--quick`` for fewer repetitions). The pydantic-evals column
needs its venv: ``bash bench/peers/setup.sh --evals`` (``.venv-bench-evals``); without it the
column is left out, saying so.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentcore import AgentContext, AgentLoopConfig, Model  # noqa: E402
from interpreters import ScriptedModel, tool  # noqa: E402
from interpreters.evals import AgentSpec, Case, Contains, Dataset, MaxToolCalls, evaluate  # noqa: E402
from interpreters.streams.scripted import tool_call  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIG = AgentLoopConfig(model=Model(id="m"))


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(case: Case) -> AgentSpec:
    i = int(case.name.split("-")[1])
    return AgentSpec(AgentContext("You add.", [], [add]), CONFIG,
                     ScriptedModel([tool_call("add", {"a": i, "b": 1}), f"It is {i + 1}."]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--peer-python", default=str(ROOT / ".venv-bench-evals" / "bin" / "python"))
    args = parser.parse_args()
    n, reps = 200, 3 if args.quick else 7
    dataset = Dataset([Case(f"sum-{i}", f"What is {i} + 1?") for i in range(n)],
                      [Contains("It is"), MaxToolCalls(3)])
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        first = evaluate(dataset, agent, transcripts=tmp, mode="once", progress=False)
        assert first.passed
        live = n / (time.perf_counter() - t0)
        rows.append((f"agentcore-fx, {n} cases recorded (scripted model, live)", f"{live:8.0f}"))
        rates = []
        for _ in range(reps):
            t0 = time.perf_counter()
            again = evaluate(dataset, agent, transcripts=tmp, mode="none", progress=False)
            rates.append(n / (time.perf_counter() - t0))
            assert again.passed
        ours = statistics.median(rates)
        rows.append((f"agentcore-fx, {n} cases re-run offline (mode='none', cassettes)", f"{ours:8.0f}"))
    peer = Path(args.peer_python)
    if peer.exists():
        out = subprocess.run([str(peer), str(ROOT / "bench" / "peers" / "lib_pydantic_evals.py"), str(n), str(reps)],
                             capture_output=True, text=True, check=True)
        theirs = json.loads(out.stdout.strip().splitlines()[-1])["cases_per_s"]
        rows.append((f"pydantic-evals 2.62, {n} cases, FunctionModel", f"{theirs:8.0f}"))
        rows.append(("  agentcore-fx offline / pydantic-evals", f"{ours / theirs:8.2f} x"))
    else:
        rows.append(("pydantic-evals", f"not run: no {peer} (bash bench/peers/setup.sh --evals)"))
    width = max(len(name) for name, _ in rows)
    print(f"{'benchmark':<{width}}  cases/s (median)")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
