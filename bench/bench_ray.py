"""Many scripted runs: one asyncio process vs ``interpreters.ray.run_many`` on a local Ray cluster.

Run: ``python bench/bench_ray.py`` (``--runs 2000 --turns 5 --concurrency 64``; ``--quick`` for
200 runs). Every run is ``turns`` model calls (``turns - 1`` tool turns and a final text) of the
in-process ``ScriptedModel`` with a trivial tool, so what is measured is the loop, the transcript
and the distribution, not a model. Prints one table:

- wall time and runs per second;
- CPU per run: CPU time of this process and its descendants (with Ray: the driver, GCS,
  raylet and workers; read from ``/proc``) during the phase, divided by the runs;
- overhead per run: a Ray line's CPU per run minus the local line's with transcripts.

Each phase is run ``--repeat`` times (default 3) and the fastest is reported: other load on the
machine only ever slows a phase down.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, aio, tool
from interpreters.scripted import Reply, ScriptedCall
from interpreters.transcript import FlushMode, TranscriptRecorder

TURNS = 5


@tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def config_factory(job: Any) -> AgentLoopConfig:
    return AgentLoopConfig(model=Model(id="bench"))


def stream_fn_factory(job: Any) -> ScriptedModel:
    turns = job.data

    def reply(ctx: Any, _i: int) -> Reply | str:
        k = sum(1 for m in ctx.messages if m.role == "assistant")
        if k < turns - 1:
            return Reply(text=f"Step {k}.", tool_calls=[ScriptedCall("add", {"a": k, "b": 1}, f"c{k}")])
        return "All steps are done, the answer is in the tool results above."

    return ScriptedModel(reply, chunk_size=16)


def tree_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of this process and each of its live descendants, by pid
    (Linux ``/proc``): the driver, and with a local Ray cluster its GCS, raylet and workers.
    Other processes on the machine are not counted."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2:].split()
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    me = os.getpid()
    out: dict[int, float] = {}
    for pid, seconds in cpu.items():
        p = pid
        while p > 1 and p != me:
            p = parents.get(p, 0)
        if p == me:
            out[pid] = seconds
    return out


def cpu_since(before: dict[int, float]) -> float:
    """CPU seconds the process tree used since ``before`` (processes that ended in between are
    not counted: measure before stopping the ones you care about)."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in tree_cpu().items())


def tools_factory(job: Any) -> list[Any]:
    return [add]


def jobs(n: int, turns: int) -> list[Any]:
    """The jobs carry no tools: ``tools_factory`` builds them on the worker (a ``@tool`` is a
    closure, so shipping it in every job would pickle it by value every time)."""
    from interpreters.ray import RunJob

    return [RunJob(f"run-{i:05d}", f"Task {i}", AgentContext("You add."), data=turns) for i in range(n)]


async def local(all_jobs: list[Any], concurrency: int, out: Path | None) -> int:
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Any) -> int:
        async with gate:
            config = config_factory(job)
            context = AgentContext(job.context.system_prompt, job.context.messages, tools_factory(job))
            recorder = None
            if out is not None:
                recorder = TranscriptRecorder(out / f"{job.id}.jsonl", context, config)
            messages = await aio.agent_loop(job.prompts, context, config, stream_fn=stream_fn_factory(job),
                                            journal=recorder).result()
            if recorder is not None:
                recorder.close()
            return len(messages)

    counts = await asyncio.gather(*(one(j) for j in all_jobs))
    return sum(counts)


def best(repeat: int, phase: Any) -> tuple[float, float]:
    """(wall, CPU) of the fastest of ``repeat`` runs of ``phase(i)``, which returns them."""
    samples: list[tuple[float, float]] = [phase(i) for i in range(repeat)]
    return min(samples, key=lambda x: x[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--concurrency", type=int, default=64, help="per process (local) / per node (Ray)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 runs, 1 repetition")
    args = parser.parse_args()
    n = 200 if args.quick else args.runs
    repeat = 1 if args.quick else args.repeat
    work = Path(tempfile.mkdtemp(prefix="bench_ray_"))
    rows: list[tuple[str, float, float]] = []
    import ray

    from interpreters.ray import run_many

    all_jobs = jobs(n, args.turns)
    cpus = os.cpu_count() or 1
    in_worker: list[float] = []
    try:
        def local_phase(transcripts: bool) -> Any:
            def phase(i: int) -> tuple[float, float]:
                out = work / f"local-{int(transcripts)}-{i}"
                out.mkdir()
                c0, t0 = tree_cpu(), time.perf_counter()
                asyncio.run(local(all_jobs, args.concurrency, out if transcripts else None))
                return time.perf_counter() - t0, cpu_since(c0)
            return phase

        rows.append(("asyncio, 1 process, no transcripts", *best(repeat, local_phase(False))))
        rows.append(("asyncio, 1 process, transcripts", *best(repeat, local_phase(True))))

        t0 = time.perf_counter()
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                 object_store_memory=200 * 1024 * 1024)
        startup = time.perf_counter() - t0

        def ray_phase(subset: list[Any], workers: int | None, flush: FlushMode = "entry") -> Any:
            def phase(i: int) -> tuple[float, float]:
                c0, t0 = tree_cpu(), time.perf_counter()
                results = []
                stream = run_many(subset, config_factory=config_factory, stream_fn_factory=stream_fn_factory,
                                  tools_factory=tools_factory, transcripts_dir=work / f"ray-{workers}-{flush}-{i}",
                                  max_concurrency_per_node=args.concurrency, workers_per_node=workers,
                                  flush=flush, progress=False)
                for r in stream:
                    results.append(r)
                    if len(results) == len(subset):  # measure before the workers are stopped
                        wall, cpu = time.perf_counter() - t0, cpu_since(c0)
                bad = [r.error for r in results if not r.ok]
                assert not bad, bad[:3]
                in_worker[:] = sorted(r.seconds for r in results)
                return wall, cpu
            return phase

        one_wall, _ = ray_phase(all_jobs[:1], None)(0)
        if cpus > 1:
            rows.append(("Ray run_many, 1 worker, transcripts", *best(repeat, ray_phase(all_jobs, 1))))
        rows.append((f"Ray run_many, {cpus} workers, flush='turn'", *best(repeat, ray_phase(all_jobs, None, "turn"))))
        rows.append((f"Ray run_many, {cpus} workers, transcripts", *best(repeat, ray_phase(all_jobs, None))))
        ray.shutdown()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    base_cpu = rows[1][2] / n
    print(f"{n} scripted runs x {args.turns} model calls, concurrency {args.concurrency}, "
          f"{cpus} CPUs, Python {sys.version.split()[0]}, ray {ray.__version__}, best of {repeat}")
    print(f"{'':42} {'wall':>8} {'runs/s':>8} {'CPU/run':>9} {'overhead/run':>13}")
    for name, wall, cpu in rows:
        overhead = "" if name.startswith("asyncio") else f"{(cpu / n - base_cpu) * 1e3:+10.2f} ms"
        print(f"{name:42} {wall:7.2f}s {n / wall:8.0f} {cpu / n * 1e3:6.2f} ms {overhead:>13}")
    print(f"\nray.init (local, {cpus} CPUs): {startup:.2f} s; run_many of 1 job (starts its workers): "
          f"{one_wall:.2f} s")
    print(f"time of one run inside a Ray worker, last phase (median / p99): "
          f"{in_worker[len(in_worker) // 2] * 1e3:.1f} / {in_worker[int(len(in_worker) * 0.99)] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
