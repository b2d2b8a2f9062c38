"""The worker side of :func:`interpreters.ray.run_many` and :func:`interpreters.ray.resume_many`:
one async Ray actor per worker process, carrying many runs at once in its event loop, each an
ordinary asyncio run recording its transcript (or resuming it, when one exists, or going on with
a suspended run's decisions at the end of its transcript).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, AgentMessage, AgentTool, Suspension
from agentcore.records import replace

from ..replay.recovery import aresume, continue_transcript, transcript_difference
from ..runtime.clock import now_ms
from ..runtime.hooks import failure_text
from ..transcript import FlushMode, TranscriptError, TranscriptRecorder
from .jobs import RunJob, RunResult, transcript_name
from .suspensions import Resumption, decisions_problem, records_decisions_on

__all__ = ["RunWorker", "WorkerSpec", "WorkerStatus", "current_node_id", "resumable", "run_job"]


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """Everything a worker needs besides the job (pickled once per worker)."""

    transcripts_dir: str
    config_factory: Callable[[RunJob], AgentLoopConfig]
    stream_fn_factory: Callable[[RunJob], Any] | None
    tools_factory: Callable[[RunJob], Sequence[AgentTool]] | None
    clock: Callable[[], int] | None
    flush: FlushMode
    fsync: bool
    secrets: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WorkerStatus:
    """A worker's answer to the driver's probe: which process, on which node, carrying which runs."""

    pid: int
    node_id: str | None
    running: tuple[str, ...]


def resumable(path: Path) -> bool:
    """True when ``path`` holds a header and at least one complete step line; otherwise (no
    file, an empty one, a header alone or torn by a crash) the run starts afresh."""
    try:
        with open(path, "rb") as f:
            return f.readline().endswith(b"\n") and f.readline().endswith(b"\n")
    except FileNotFoundError:
        return False


async def run_job(job: RunJob, spec: WorkerSpec, resumption: Resumption | None = None) -> RunResult:
    """Carry out one job in this process with the asyncio interpreter, resuming its transcript
    when one exists; with ``resumption``, go on with the suspended run it records."""
    started = time.perf_counter()
    path = Path(spec.transcripts_dir) / transcript_name(job.id)
    resumed = False
    messages: list[AgentMessage] = []
    suspension: Suspension | None = None
    error: str | None = None
    clock = spec.clock or now_ms
    try:
        config = spec.config_factory(job)
        stream_fn = spec.stream_fn_factory(job) if spec.stream_fn_factory is not None else None
        context = job.context
        if spec.tools_factory is not None:
            context = replace(context, tools=tuple(spec.tools_factory(job)))
        if resumption is not None:
            messages, suspension, resumed = await _go_on(path, resumption, context, config, stream_fn, clock, spec)
        elif resumable(path):
            resumed = True
            stream = aresume(path, config, context.tools, stream_fn, clock=clock, secrets=spec.secrets,
                             flush=spec.flush, fsync=spec.fsync)
            messages = await stream.result()
            suspension = stream.suspension
        else:
            from .. import aio

            path.parent.mkdir(parents=True, exist_ok=True)
            recorder = TranscriptRecorder(path, context, config, flush=spec.flush, fsync=spec.fsync,
                                          interpreter="asyncio", secrets=spec.secrets)
            try:
                stream = aio.agent_loop(job.prompts, context, config, stream_fn=stream_fn, journal=recorder,
                                        clock=clock)
                messages = await stream.result()
                suspension = stream.suspension
            finally:
                recorder.close()
    except Exception as exc:
        error = f"{type(exc).__name__}: {failure_text(exc)}"
        suspension = None
    return RunResult(job.id, tuple(messages), str(path), error, resumed, os.getpid(), current_node_id(),
                     time.perf_counter() - started, suspension=suspension)


async def _go_on(path: Path, resumption: Resumption, context: AgentContext, config: AgentLoopConfig,
                 stream_fn: Any, clock: Callable[[], int],
                 spec: WorkerSpec) -> tuple[list[AgentMessage], Suspension | None, bool]:
    """Go on with the suspended run that ``path`` records: (messages, suspension, resumed).

    The transcript says where the run is. If it still ends with ``resumption.suspension``, the
    decisions are taken and the run goes on at the end of the same file
    (``resume_suspended(..., journal=continue_transcript(...))``). If it went on from there
    already (this job's worker was lost during the resumed run, or the driver died and
    ``resume_many`` was called again), it is resumed from the transcript like any run
    (``aresume``): to its end, or to where it suspended again.
    """
    from .. import aio

    wanted = resumption.suspension
    stream = aresume(path, config, context.tools, stream_fn, clock=clock, secrets=spec.secrets,
                     flush=spec.flush, fsync=spec.fsync)
    messages: list[AgentMessage] = await stream.result()
    now: Suspension | None = stream.suspension
    difference = transcript_difference(wanted, now.state) if now is not None else None  # in JSON form
    if now is None or difference is not None:
        if not records_decisions_on(path, wanted):
            where = (f"ends at another suspension (the run it records {difference})" if now is not None
                     else "records a run that is not suspended")
            raise TranscriptError(f"{path} {where}, and no decisions on "
                                  f"{', '.join(p.tool_call_id for p in wanted.pending)}: not this suspension's run")
        return messages, now, True
    problem = decisions_problem(wanted, resumption.decisions)
    if problem is not None:  # checked by the driver already; never write a resume that cannot happen
        raise ValueError(problem)
    recorder = continue_transcript(path, wanted, config, secrets=spec.secrets, flush=spec.flush, fsync=spec.fsync)
    try:
        resumed = aio.resume_suspended(wanted, resumption.decisions, context=context, config=config,
                                       stream_fn=stream_fn, journal=recorder, clock=clock)
        messages = await resumed.result()
        return messages, resumed.suspension, False
    finally:
        recorder.close()


_NODE_ID: list[str | None] = []


def current_node_id() -> str | None:
    """The Ray node this process runs on (``None`` outside Ray), looked up once."""
    if not _NODE_ID:
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():
            return None
        _NODE_ID.append(ray.get_runtime_context().get_node_id())
    return _NODE_ID[0]


class RunWorker:
    """The body of the async Ray actor that carries out runs (one process, many runs).

    A job is run once per process however many times it is asked for: a second ``run`` of a job
    that is still running waits for the first one. (The driver asks again when it lost sight of
    the worker for a moment and finds it, on the same process, still carrying the job.)
    """

    def __init__(self, spec: WorkerSpec, capacity: int) -> None:
        self.spec = spec
        self.capacity = capacity
        self.executor: ThreadPoolExecutor | None = None
        self.running: dict[str, asyncio.Task[RunResult]] = {}

    async def run(self, job: RunJob, resumption: Resumption | None = None) -> RunResult:
        if self.executor is None:
            # Sync tools, hooks and stream functions run in the loop's default executor: size it
            # for the runs this worker carries, not for its CPUs.
            self.executor = ThreadPoolExecutor(max_workers=max(32, 2 * self.capacity),
                                               thread_name_prefix="agentcore-ray")
            asyncio.get_running_loop().set_default_executor(self.executor)
        task = self.running.get(job.id)
        if task is None:
            task = asyncio.ensure_future(run_job(job, self.spec, resumption))
            self.running[job.id] = task
            task.add_done_callback(lambda _: self.running.pop(job.id, None))
        return await asyncio.shield(task)

    async def status(self) -> WorkerStatus:
        return WorkerStatus(os.getpid(), current_node_id(), tuple(self.running))
