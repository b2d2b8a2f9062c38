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

Multi-node rows: the same runs on a ``ray.cluster_utils.Cluster`` on this machine (a head node
with no CPU and 2, then 3, worker raylets of one CPU each), and a node loss: 256 runs that wait
(4 tool calls of 250 ms) on 2 worker nodes, one of which is taken away abruptly (its raylet and
workers SIGKILLed) 1.5 s in; printed: how many runs resumed, and the time from the loss to the
first and the last resumed result. ``--only local`` / ``--only multi-node`` runs one part.
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
from interpreters.streams.scripted import Reply, ScriptedCall
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


def start_cluster(worker_nodes: int) -> Any:
    """A ``ray.cluster_utils.Cluster`` on this machine: a head node with no CPU and
    ``worker_nodes`` raylets of one CPU each, with Ray connected to it."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "object_store_memory": 100 * 1024 * 1024})
    for _ in range(worker_nodes):
        cluster.add_node(num_cpus=1, object_store_memory=100 * 1024 * 1024)
    ray.init(address=cluster.address, log_to_driver=False)
    cluster.wait_for_nodes()
    return cluster


def lose_node(cluster: Any, node: Any) -> None:
    """Take ``node`` away as a lost machine goes: its raylet and every process it started, SIGKILLed."""
    import signal

    raylet = node.all_processes["raylet"][0].process.pid
    started = [pid for pid, parent in parents().items() if parent == raylet]
    cluster.remove_node(node, allow_graceful=False)
    for pid in started:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def parents() -> dict[int, int]:
    out: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "stat").read_text()
            except OSError:
                continue
            out[int(entry.name)] = int(raw[raw.rindex(")") + 2:].split()[1])
    return out


@tool
async def wait_a_moment(ms: int) -> str:
    """Wait, as a run waits on a model or a remote service."""
    await asyncio.sleep(ms / 1000)
    return "waited"


def waiting_stream_fn_factory(job: Any) -> ScriptedModel:
    turns, ms = job.data

    def reply(ctx: Any, _i: int) -> Reply | str:
        k = sum(1 for m in ctx.messages if m.role == "assistant")
        if k < turns - 1:
            return Reply(tool_calls=[ScriptedCall("wait_a_moment", {"ms": ms}, f"w{k}")])
        return "Done waiting."

    return ScriptedModel(reply, chunk_size=16)


def waiting_tools_factory(job: Any) -> list[Any]:
    return [wait_a_moment]


def node_loss(work: Path, runs: int, concurrency: int) -> dict[str, float]:
    """Two worker nodes, runs that wait (4 tool calls of 250 ms, 1 s a run); one node is lost
    abruptly 1.5 s in. Returns the times of the phase."""
    import ray

    from interpreters.ray import RunJob, run_many

    cluster = start_cluster(2)
    try:
        victim = next(iter(cluster.worker_nodes))
        waiting = [RunJob(f"wait-{i:05d}", f"Task {i}", AgentContext("You wait."), data=(5, 250)) for i in range(runs)]
        results = []
        lost_at: float | None = None
        t0 = time.perf_counter()
        for r in run_many(waiting, config_factory=config_factory, stream_fn_factory=waiting_stream_fn_factory,
                          tools_factory=waiting_tools_factory, transcripts_dir=work / "loss",
                          max_concurrency_per_node=concurrency, progress=False):
            results.append((time.perf_counter(), r))
            if lost_at is None and time.perf_counter() - t0 >= 1.5:
                lose_node(cluster, victim)
                lost_at = time.perf_counter()
        wall = time.perf_counter() - t0
        bad = [r.error for _, r in results if not r.ok]
        assert not bad, bad[:3]
        assert lost_at is not None
        resumed = [at for at, r in results if r.attempts > 1]
        assert resumed, "no run was on the lost node"
        return {"runs": len(results), "resumed": len(resumed), "wall": wall,
                "recovery": max(resumed) - lost_at, "first": min(resumed) - lost_at}
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--concurrency", type=int, default=64, help="per process (local) / per node (Ray)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 runs, 1 repetition")
    parser.add_argument("--only", choices=["local", "multi-node"], default=None,
                        help="only one machine's phases, or only the multi-node ones")
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
    notes: list[str] = []

    def ray_phase(subset: list[Any], workers: int | None, flush: FlushMode = "entry", label: str = "") -> Any:
        def phase(i: int) -> tuple[float, float]:
            c0, t0 = tree_cpu(), time.perf_counter()
            results = []
            stream = run_many(subset, config_factory=config_factory, stream_fn_factory=stream_fn_factory,
                              tools_factory=tools_factory, transcripts_dir=work / f"ray-{label}{workers}-{flush}-{i}",
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

    try:
        if args.only != "multi-node":
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

            one_wall, _ = ray_phase(all_jobs[:1], None)(0)
            if cpus > 1:
                rows.append(("Ray run_many, 1 worker, transcripts", *best(repeat, ray_phase(all_jobs, 1))))
            rows.append((f"Ray run_many, {cpus} workers, flush='turn'",
                         *best(repeat, ray_phase(all_jobs, None, "turn"))))
            rows.append((f"Ray run_many, {cpus} workers, transcripts", *best(repeat, ray_phase(all_jobs, None))))
            ray.shutdown()
            notes.append(f"ray.init (local, {cpus} CPUs): {startup:.2f} s; run_many of 1 job (starts its workers): "
                         f"{one_wall:.2f} s")
            notes.append(f"time of one run inside a Ray worker, last local phase (median / p99): "
                         f"{in_worker[len(in_worker) // 2] * 1e3:.1f} / "
                         f"{in_worker[int(len(in_worker) * 0.99)] * 1e3:.1f} ms")
        if args.only != "local":
            for nodes in (2, 3):
                t0 = time.perf_counter()
                cluster = start_cluster(nodes)
                started = time.perf_counter() - t0
                try:
                    rows.append((f"Ray, {nodes} worker nodes of 1 CPU, 0-CPU head",
                                 *best(repeat, ray_phase(all_jobs, None, label=f"nodes{nodes}-"))))
                finally:
                    ray.shutdown()
                    cluster.shutdown()
                notes.append(f"cluster of a 0-CPU head and {nodes} worker nodes started in {started:.1f} s")
            loss = node_loss(work, 256, args.concurrency)
            notes.append(f"node loss: {loss['runs']:.0f} waiting runs (4 tool calls of 250 ms each) on 2 worker nodes, "
                         f"{args.concurrency} per node; one node lost 1.5 s in: {loss['resumed']:.0f} runs resumed, "
                         f"first {loss['first']:.1f} s and last {loss['recovery']:.1f} s after the loss; "
                         f"wall {loss['wall']:.1f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    base_cpu = rows[1][2] / n if len(rows) > 1 and rows[1][0].startswith("asyncio") else None
    print(f"{n} scripted runs x {args.turns} model calls, concurrency {args.concurrency}, "
          f"{cpus} CPUs, Python {sys.version.split()[0]}, ray {ray.__version__}, best of {repeat}")
    print(f"{'':42} {'wall':>8} {'runs/s':>8} {'CPU/run':>9} {'overhead/run':>13}")
    for name, wall, cpu in rows:
        overhead = "" if name.startswith("asyncio") or base_cpu is None else f"{(cpu / n - base_cpu) * 1e3:+10.2f} ms"
        print(f"{name:42} {wall:7.2f}s {n / wall:8.0f} {cpu / n * 1e3:6.2f} ms {overhead:>13}")
    print()
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
