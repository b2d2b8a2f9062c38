"""The Ray interpreter: run and replay thousands of agent runs on a Ray cluster.

Theory of operation
-------------------

Nothing new happens to the loop here: every run is an ordinary asyncio run
(:func:`interpreters.aio.agent_loop`) recording its transcript (:class:`TranscriptRecorder`),
and every replay is an ordinary :func:`interpreters.replay.replay` / ``replay_llm``. This module
only decides *where* they run and what happens when a machine goes away.

- **Workers.** :func:`run_many` starts a few async Ray actors per node (``workers_per_node``,
  default: the node's CPU count) and gives each a share of ``max_concurrency_per_node``. A
  worker runs many agent runs concurrently in its event loop: agent runs wait on models and
  tools, so one process carries dozens of them. The driver hands out jobs itself, to the least
  loaded worker with room, so the per-node limit is exact and nothing queues inside Ray.
- **Code lives on the worker.** A job is data (an id, the prompts, an :class:`AgentContext`,
  and a free ``data`` payload). ``config_factory(job)``, ``stream_fn_factory(job)`` and
  ``tools_factory(job)`` are called *on the worker*, so HTTP clients, scripted models, locks and
  anything else that does not pickle is built where it is used. The factories themselves must
  pickle (module-level functions do).
- **Durability through the transcript.** Each run writes ``<transcripts_dir>/<job id>.jsonl``.
  When a worker process dies (SIGKILL, OOM killer, a node lost), Ray restarts the actor and
  retries its calls (``max_retries``); a retried run finds its transcript and *resumes* it
  (:func:`interpreters.replay.aresume`): finished tool calls are not run again, recorded model
  replies are not asked for (and paid for) again, and the final messages are those of an
  uninterrupted run. A transcript that ends with ``agent_end`` resumes to its recorded messages
  at once, so re-running :func:`run_many` after the *driver* died only does the unfinished work
  (``existing="resume"``, the default).
- **Tools with resources.** :func:`remote_tool` wraps an :class:`AgentTool` so that each call
  runs as its own Ray task with resource options (CPUs, GPUs, memory, custom resources); the
  loop awaits it like any ``async`` tool.
- **Replay at scale.** :func:`replay_many` replays a directory of transcripts in batches of Ray
  tasks and returns a :class:`ReplaySummary`: which runs diverged, at which step, with the diff.

``import interpreters`` does not import this module, and this module imports ``ray`` only when
one of its functions is called (``pip install 'agentcore-fx[ray]'``). See ``docs/scaling.md``.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentcore.records import replace
from agentcore import AgentContext, AgentLoopConfig, AgentMessage, AgentTool, AgentToolResult

from .clock import now_ms
from .driver import failure_text
from .replay import Divergence, ReplayDivergence, ReplayOptions, replay, replay_llm
from .resuming import aresume
from .signal import AbortSignal
from .transcript import FlushMode, TranscriptError, TranscriptRecorder, read_transcript

__all__ = [
    "RemoteToolError",
    "ReplayOutcome",
    "ReplaySummary",
    "RunJob",
    "RunResult",
    "remote_tool",
    "replay_many",
    "run_many",
    "transcript_name",
]

Prompts = str | AgentMessage | Sequence[AgentMessage]
JobLike = Any  # RunJob | (prompts, context) | (id, prompts, context)


def _ray() -> Any:
    """Import ray on first use (it is an optional dependency)."""
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "interpreters.ray needs Ray: pip install 'agentcore-fx[ray]' (or 'ray>=2.60')"
        ) from exc
    return ray


def _ensure_ray(address: str | None, init_options: Mapping[str, Any] | None) -> Any:
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address, **dict(init_options or {}))
    return ray


# --------------------------------------------------------------------------- jobs and results


@dataclass(frozen=True, slots=True)
class RunJob:
    """One agent run to do: its id (the transcript's file name), prompts and context.

    ``data`` is free for the factories (which scenario, which user, which model...). Everything
    in a job must pickle: tools in ``context.tools`` are shipped to the worker (use
    ``tools_factory`` for tools that do not pickle).
    """

    id: str
    prompts: Prompts
    context: AgentContext = field(default_factory=AgentContext)
    data: Any = None


@dataclass(frozen=True, slots=True)
class RunResult:
    """What became of one job. ``messages`` are the messages the run added (as
    ``agent_loop(...).result()``); ``error`` is set when the run could not be carried out at all
    (a factory raised, its transcript no longer replays, the worker died ``max_retries`` times).
    A model or tool failure is not an ``error``: it is in the messages, as in any run."""

    job_id: str
    messages: tuple[AgentMessage, ...]
    transcript: str
    error: str | None = None
    resumed: bool = False
    """True when the run went on from an existing transcript (a retry after a worker died, or a
    re-run of ``run_many`` over the same directory)."""
    worker_pid: int | None = None
    node_id: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def _as_job(value: JobLike, index: int) -> RunJob:
    if isinstance(value, RunJob):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        return RunJob(f"run-{index:06d}", value[0], value[1])
    if isinstance(value, tuple) and len(value) == 3:
        return RunJob(str(value[0]), value[1], value[2])
    raise TypeError(f"a job is a RunJob, (prompts, context) or (id, prompts, context), not {value!r}")


_SAFE = re.compile(r"[^A-Za-z0-9._=-]")


def transcript_name(job_id: str) -> str:
    """The transcript file name of a job: its id with characters other than letters, digits and
    ``._=-`` replaced by ``_``, plus ``.jsonl``.

    >>> transcript_name("user 42/task:7")
    'user_42_task_7.jsonl'
    """
    name = _SAFE.sub("_", job_id)
    if not name or name in (".", ".."):
        raise ValueError(f"job id {job_id!r} cannot name a file")
    return name + ".jsonl"


# --------------------------------------------------------------------------- the worker side


@dataclass(frozen=True, slots=True)
class _WorkerSpec:
    """Everything a worker needs besides the job (pickled once per worker)."""

    transcripts_dir: str
    config_factory: Callable[[RunJob], AgentLoopConfig]
    stream_fn_factory: Callable[[RunJob], Any] | None
    tools_factory: Callable[[RunJob], Sequence[AgentTool]] | None
    clock: Callable[[], int] | None
    flush: FlushMode
    fsync: bool
    secrets: tuple[str, ...]


def _resumable(path: Path) -> bool:
    """True when ``path`` holds a header and at least one complete step line; otherwise (no
    file, an empty one, a header alone or torn by a crash) the run starts afresh."""
    try:
        with open(path, "rb") as f:
            return f.readline().endswith(b"\n") and f.readline().endswith(b"\n")
    except FileNotFoundError:
        return False


async def _run_job(job: RunJob, spec: _WorkerSpec) -> RunResult:
    """Carry out one job in this process with the asyncio interpreter, resuming its transcript
    when one exists."""
    from . import aio

    started = time.perf_counter()
    path = Path(spec.transcripts_dir) / transcript_name(job.id)
    resumed = False
    messages: list[AgentMessage] = []
    error: str | None = None
    clock = spec.clock or now_ms
    try:
        config = spec.config_factory(job)
        stream_fn = spec.stream_fn_factory(job) if spec.stream_fn_factory is not None else None
        context = job.context
        if spec.tools_factory is not None:
            context = replace(context, tools=tuple(spec.tools_factory(job)))
        if _resumable(path):
            resumed = True
            stream = aresume(path, config, context.tools, stream_fn, clock=clock, secrets=spec.secrets,
                             flush=spec.flush, fsync=spec.fsync)
            messages = await stream.result()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            recorder = TranscriptRecorder(path, context, config, flush=spec.flush, fsync=spec.fsync,
                                          interpreter="asyncio", secrets=spec.secrets)
            try:
                messages = await aio.agent_loop(job.prompts, context, config, stream_fn=stream_fn,
                                                journal=recorder, clock=clock).result()
            finally:
                recorder.close()
    except Exception as exc:
        error = f"{type(exc).__name__}: {failure_text(exc)}"
    return RunResult(job.id, tuple(messages), str(path), error, resumed, os.getpid(), _node_id(),
                     time.perf_counter() - started)


_NODE_ID: list[str | None] = []


def _node_id() -> str | None:
    """The Ray node this process runs on (``None`` outside Ray), looked up once."""
    if not _NODE_ID:
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():
            return None
        _NODE_ID.append(ray.get_runtime_context().get_node_id())
    return _NODE_ID[0]


class _RunWorker:
    """The body of the async Ray actor that carries out runs (one process, many runs)."""

    def __init__(self, spec: _WorkerSpec, capacity: int) -> None:
        self.spec = spec
        self.capacity = capacity
        self.executor: ThreadPoolExecutor | None = None

    async def run(self, job: RunJob) -> RunResult:
        if self.executor is None:
            # Sync tools, hooks and stream functions run in the loop's default executor: size it
            # for the runs this worker carries, not for its CPUs.
            self.executor = ThreadPoolExecutor(max_workers=max(32, 2 * self.capacity),
                                               thread_name_prefix="agentcore-ray")
            asyncio.get_running_loop().set_default_executor(self.executor)
        return await _run_job(job, self.spec)

    def pid(self) -> int:
        return os.getpid()


# --------------------------------------------------------------------------- progress


class _Progress:
    """A progress display on stderr: a rich bar on a terminal (when rich is installed), else a
    plain ``label: n/total done`` line at most once a second and at the end."""

    def __init__(self, label: str, total: int | None, enabled: bool) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.failed = 0
        self.enabled = enabled
        self.last = 0.0
        self.rich: Any = None
        self.task: Any = None
        if enabled and sys.stderr.isatty():
            try:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            except ImportError:
                pass
            else:
                self.rich = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(),
                                     console=Console(stderr=True), transient=False)
                self.rich.start()
                self.task = self.rich.add_task(label, total=total, failed=0)

    def advance(self, ok: bool) -> None:
        self.done += 1
        if not ok:
            self.failed += 1
        if not self.enabled:
            return
        if self.rich is not None:
            self.rich.update(self.task, advance=1, failed=self.failed)
            return
        now = time.monotonic()
        if now - self.last >= 1.0:
            self.last = now
            self._line()

    def _line(self) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        print(f"{self.label}: {self.done}{of} done, {self.failed} failed", file=sys.stderr, flush=True)

    def close(self) -> None:
        if not self.enabled:
            return
        if self.rich is not None:
            self.rich.stop()
            self.rich = None
        elif self.done != 0 or self.total == 0:
            self._line()
        self.enabled = False


# --------------------------------------------------------------------------- run_many


def _alive_nodes(ray: Any) -> list[tuple[str, float]]:
    """(node id, CPUs) of the alive nodes; nodes with no CPU (a head node kept free) are left
    out unless every node has none."""
    nodes = [(n["NodeID"], float(n.get("Resources", {}).get("CPU", 0.0))) for n in ray.nodes() if n.get("Alive")]
    with_cpu = [n for n in nodes if n[1] > 0]
    return with_cpu or nodes


def _split(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal positive shares (fewer parts if total is small)."""
    parts = max(1, min(parts, total))
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


@dataclass(slots=True)
class _Slot:
    actor: Any
    capacity: int
    node_id: str
    inflight: int = 0
    dead: bool = False


def run_many(
    jobs: Iterable[JobLike],
    *,
    config_factory: Callable[[RunJob], AgentLoopConfig],
    transcripts_dir: str | os.PathLike[str],
    stream_fn_factory: Callable[[RunJob], Any] | None = None,
    tools_factory: Callable[[RunJob], Sequence[AgentTool]] | None = None,
    clock: Callable[[], int] | None = None,
    max_concurrency_per_node: int = 64,
    workers_per_node: int | None = None,
    max_retries: int = 3,
    existing: Literal["resume", "overwrite"] = "resume",
    progress: bool = True,
    flush: FlushMode = "entry",
    fsync: bool = False,
    secrets: Sequence[str] = (),
    worker_options: Mapping[str, Any] | None = None,
    address: str | None = None,
    init_options: Mapping[str, Any] | None = None,
) -> Iterator[RunResult]:
    """Run many agent runs on a Ray cluster; yields a :class:`RunResult` per job as each finishes.

    ``jobs``: :class:`RunJob` s (or ``(prompts, context)`` / ``(id, prompts, context)`` tuples);
    ids must be unique: ``<transcripts_dir>/<id>.jsonl`` is the run's transcript. On the
    worker, ``config_factory(job)`` gives the run's :class:`AgentLoopConfig`,
    ``stream_fn_factory(job)`` its stream function (default: the HTTP providers) and
    ``tools_factory(job)`` its tools (default: ``job.context.tools``). ``clock`` (a picklable
    ``() -> ms``) replaces the wall clock of the runs.

    Concurrency: at most ``max_concurrency_per_node`` runs at a time on each node, spread over
    ``workers_per_node`` worker processes (default: the node's CPU count). Worker actors reserve
    ``worker_options`` resources (default none, so :func:`remote_tool` tasks get every CPU).

    Durability: a worker that dies is restarted, and its runs are retried up to ``max_retries``
    times; each retry resumes from the transcript. ``existing="resume"`` (default) also resumes
    (or returns at once, when finished) runs whose transcript is already in the directory;
    ``"overwrite"`` deletes it first.

    Ray is started with ``ray.init(address=address, **init_options)`` unless it already is. The
    workers are killed when the iteration ends (or is abandoned). The transcripts directory must
    be visible to every node (shared storage) on a multi-node cluster.
    """
    if max_concurrency_per_node < 1:
        raise ValueError("max_concurrency_per_node must be at least 1")
    if existing not in ("resume", "overwrite"):
        raise ValueError(f"existing must be 'resume' or 'overwrite', not {existing!r}")
    total = len(jobs) if isinstance(jobs, Sized) else None
    return _run_many(
        jobs, total, _WorkerSpec(str(Path(transcripts_dir).resolve()), config_factory, stream_fn_factory,
                                 tools_factory, clock, flush, fsync, tuple(secrets)),
        max_concurrency_per_node, workers_per_node, max_retries, existing, progress,
        dict(worker_options or {}), address, init_options)


def _run_many(
    jobs: Iterable[JobLike], total: int | None, spec: _WorkerSpec, per_node: int, workers_per_node: int | None,
    max_retries: int, existing: str, progress: bool, worker_options: dict[str, Any], address: str | None,
    init_options: Mapping[str, Any] | None,
) -> Iterator[RunResult]:
    ray = _ensure_ray(address, init_options)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    Path(spec.transcripts_dir).mkdir(parents=True, exist_ok=True)
    worker_cls = ray.remote(_RunWorker)
    options: dict[str, Any] = {"num_cpus": 0, "max_restarts": -1, "max_task_retries": max_retries}
    options.update(worker_options)
    slots: list[_Slot] = []
    for node_id, cpus in _alive_nodes(ray):
        n_workers = workers_per_node if workers_per_node is not None else max(1, int(cpus))
        for share in _split(per_node, n_workers):
            actor = worker_cls.options(
                max_concurrency=share,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=True),
                **options,
            ).remote(spec, share)
            slots.append(_Slot(actor, share, node_id))
    display = _Progress("run_many", total, progress)
    source = iter(jobs)
    seen: set[str] = set()
    inflight: dict[Any, tuple[RunJob, _Slot]] = {}
    index = 0
    exhausted = False
    try:
        while True:
            while not exhausted:
                free = [s for s in slots if not s.dead and s.inflight < s.capacity]
                if not free:
                    break
                try:
                    raw = next(source)
                except StopIteration:
                    exhausted = True
                    break
                job = _as_job(raw, index)
                index += 1
                name = transcript_name(job.id)
                if name in seen:
                    raise ValueError(f"two jobs write the same transcript {name!r} (job id {job.id!r})")
                seen.add(name)
                if existing == "overwrite":
                    Path(spec.transcripts_dir, name).unlink(missing_ok=True)
                slot = min(free, key=lambda s: s.inflight / s.capacity)
                slot.inflight += 1
                inflight[slot.actor.run.remote(job)] = (job, slot)
            if not inflight:
                if not exhausted:  # every worker is dead: fail what is left
                    for raw in source:
                        job = _as_job(raw, index)
                        index += 1
                        result = RunResult(job.id, (), str(Path(spec.transcripts_dir, transcript_name(job.id))),
                                           "no live worker is left to run this job")
                        display.advance(False)
                        yield result
                break
            refs = list(inflight)
            ready, rest = ray.wait(refs, num_returns=1)
            if rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            for ref in ready:
                job, slot = inflight.pop(ref)
                slot.inflight -= 1
                try:
                    result = ray.get(ref)
                except Exception as exc:  # the worker died more than max_retries times
                    if isinstance(exc, ray.exceptions.RayActorError) and _actor_gone(ray, slot.actor):
                        slot.dead = True
                    result = RunResult(job.id, (), str(Path(spec.transcripts_dir, transcript_name(job.id))),
                                       f"{type(exc).__name__}: {failure_text(exc)}", node_id=slot.node_id)
                display.advance(result.ok)
                yield result
    finally:
        display.close()
        if ray.is_initialized():  # the caller may have shut Ray down already
            for ref in inflight:
                ray.cancel(ref, force=False)
            for slot in slots:
                ray.kill(slot.actor, no_restart=True)


def _actor_gone(ray: Any, actor: Any) -> bool:
    """True when the actor will not come back (its restarts are used up)."""
    try:
        ray.get(actor.pid.remote(), timeout=30)
    except Exception:
        return True
    return False


# --------------------------------------------------------------------------- remote tools


class RemoteToolError(RuntimeError):
    """A remote tool raised: the message is the tool's own error text (no Ray traceback), so
    the tool result the model sees is the same as when the tool runs in the worker."""


def _execute_remotely(tool: AgentTool, tool_call_id: str, args: Any) -> tuple[bool, Any]:
    """The body of a remote tool's Ray task: (True, value) or (False, error text)."""
    signal = AbortSignal()
    try:
        value = tool.execute(tool_call_id, args, signal, lambda partial: None)
        if inspect.isawaitable(value):
            async def wait() -> Any:
                return await value

            value = asyncio.run(wait())
    except Exception as exc:
        return False, failure_text(exc)
    return True, value


_REMOTE_FN: Any = None


def _remote_fn() -> Any:
    global _REMOTE_FN
    if _REMOTE_FN is None:
        _REMOTE_FN = _ray().remote(_execute_remotely)
    return _REMOTE_FN


def remote_tool(
    tool: AgentTool,
    *,
    num_cpus: float = 1,
    num_gpus: float = 0,
    memory: int | None = None,
    resources: Mapping[str, float] | None = None,
    max_retries: int = 0,
    **ray_options: Any,
) -> AgentTool:
    """``tool``, with each call run as its own Ray task that reserves the given resources.

    The loop sees an ordinary ``async`` tool: ``execute`` submits the task and awaits its
    result (under any interpreter in a process connected to Ray: a :func:`run_many` worker, or
    your own driver). ``memory`` is in bytes; ``resources`` are custom resources; other keyword
    arguments go to ``ray.remote(...).options`` (``runtime_env``, ``scheduling_strategy``...).
    ``max_retries`` (default 0: tools have side effects) retries a call whose process died.

    The tool must pickle. Its progress updates (``on_update``) are not forwarded; an abort
    cancels the task. An exception in the tool becomes an error result with its text, as locally.
    """
    options: dict[str, Any] = {"num_cpus": num_cpus, "num_gpus": num_gpus, "max_retries": max_retries}
    if memory is not None:
        options["memory"] = memory
    if resources:
        options["resources"] = dict(resources)
    options.update(ray_options)

    async def execute(tool_call_id: str, args: Any, signal: AbortSignal | None = None,
                      on_update: Callable[[Any], None] | None = None) -> Any:
        ray = _ray()
        ref = _remote_fn().options(**options).remote(tool, tool_call_id, args)
        if signal is not None:
            signal.add_callback(lambda: ray.cancel(ref))
        try:
            ok, value = await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
        if not ok:
            raise RemoteToolError(value)
        if not isinstance(value, (AgentToolResult, str)):
            raise TypeError(f"tool {tool.name} returned {type(value).__name__}, expected AgentToolResult")
        return value

    setattr(execute, "reports_progress", False)
    setattr(execute, "ray_options", dict(options))
    return replace(tool, execute=execute)


# --------------------------------------------------------------------------- replay_many


@dataclass(frozen=True, slots=True)
class ReplayOutcome:
    """The replay of one transcript: ``ok``, or the :class:`Divergence` it stopped at, or the
    ``error`` that kept it from being replayed (an unreadable file, a factory that raised)."""

    path: str
    steps: int = 0
    finished: bool = False
    divergence: Divergence | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.divergence is None and self.error is None

    @property
    def step(self) -> int | None:
        """The step the replay diverged at."""
        return self.divergence.step if self.divergence is not None else None


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    """The outcome of :func:`replay_many`, one :class:`ReplayOutcome` per transcript (sorted by
    path). ``str(summary)`` / :meth:`report` is the readable report."""

    mode: str
    outcomes: tuple[ReplayOutcome, ...]
    seconds: float = 0.0

    @property
    def ok(self) -> tuple[ReplayOutcome, ...]:
        return tuple(o for o in self.outcomes if o.ok)

    @property
    def diverged(self) -> tuple[ReplayOutcome, ...]:
        return tuple(o for o in self.outcomes if o.divergence is not None)

    @property
    def errors(self) -> tuple[ReplayOutcome, ...]:
        return tuple(o for o in self.outcomes if o.error is not None)

    @property
    def all_ok(self) -> bool:
        return len(self.ok) == len(self.outcomes)

    def report(self, *, diffs: bool = True) -> str:
        lines = [f"replay_many ({self.mode}): {len(self.outcomes)} transcripts, {len(self.ok)} ok, "
                 f"{len(self.diverged)} diverged, {len(self.errors)} errors ({self.seconds:.1f} s)"]
        for o in self.diverged:
            d = o.divergence
            assert d is not None
            lines.append(f"  DIVERGED {Path(o.path).name}: step {d.step} (turn {d.turn}), {d.kind}: {d.detail}")
        for o in self.errors:
            lines.append(f"  ERROR    {Path(o.path).name}: {o.error}")
        if diffs:
            for o in self.diverged:
                lines += ["", f"== {o.path}", str(o.divergence)]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()


def _replay_one(path: str, mode: str, options: ReplayOptions,
                config_factory: Callable[[Path], AgentLoopConfig] | None,
                tools_factory: Callable[[Path], Sequence[Any]] | None) -> ReplayOutcome:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a torn last line: reported by its absence
            transcript = read_transcript(path)
        if mode == "strict":
            result = replay(transcript, options=options)
        else:
            assert config_factory is not None
            p = Path(path)
            tools = tools_factory(p) if tools_factory is not None else ()
            result = replay_llm(transcript, config_factory(p), tools, options=options)
    except ReplayDivergence as exc:
        return ReplayOutcome(path, exc.report.step - 1, False, exc.report)
    except (TranscriptError, OSError) as exc:
        return ReplayOutcome(path, error=f"{type(exc).__name__}: {exc}")
    except Exception as exc:
        return ReplayOutcome(path, error=f"{type(exc).__name__}: {failure_text(exc)}")
    return ReplayOutcome(path, result.steps, result.finished)


def _replay_batch(paths: list[str], mode: str, options: ReplayOptions,
                  config_factory: Callable[[Path], AgentLoopConfig] | None,
                  tools_factory: Callable[[Path], Sequence[Any]] | None) -> list[ReplayOutcome]:
    return [_replay_one(p, mode, options, config_factory, tools_factory) for p in paths]


def _transcript_paths(source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if p.is_dir():
            return sorted(str(x.resolve()) for x in p.glob("*.jsonl"))
        return [str(p.resolve())]
    return sorted({str(Path(x).resolve()) for x in source})


def replay_many(
    transcripts: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    mode: Literal["strict", "llm"] = "strict",
    config_factory: Callable[[Path], AgentLoopConfig] | None = None,
    *,
    tools_factory: Callable[[Path], Sequence[Any]] | None = None,
    options: ReplayOptions = ReplayOptions(),
    batch_size: int | None = None,
    num_cpus: float = 1,
    max_retries: int = 3,
    progress: bool = True,
    address: str | None = None,
    init_options: Mapping[str, Any] | None = None,
) -> ReplaySummary:
    """Replay every transcript of a directory (``*.jsonl``) or a list, across the cluster.

    ``mode="strict"`` (:func:`interpreters.replay.replay`: no model, no tools) checks that the
    current core reproduces each recording; ``mode="llm"`` (:func:`interpreters.replay.replay_llm`)
    plays the recorded model replies to your current tools and hooks: ``config_factory(path)``
    gives the config and ``tools_factory(path)`` the tools, on the worker. Transcripts are
    replayed in batches of ``batch_size`` per Ray task (default: about four tasks per CPU).
    Returns a :class:`ReplaySummary`; nothing raises for a divergence.
    """
    if mode not in ("strict", "llm"):
        raise ValueError(f"mode must be 'strict' or 'llm', not {mode!r}")
    if mode == "llm" and config_factory is None:
        raise ValueError("replay_many(mode='llm') needs a config_factory (the tools and hooks run live)")
    started = time.perf_counter()
    paths = _transcript_paths(transcripts)
    if not paths:
        return ReplaySummary(mode, (), 0.0)
    ray = _ensure_ray(address, init_options)
    if batch_size is None:
        cpus = max(1.0, float(ray.cluster_resources().get("CPU", 1.0)))
        batch_size = max(1, min(64, math.ceil(len(paths) / (cpus * 4))))
    fn = ray.remote(_replay_batch).options(num_cpus=num_cpus, max_retries=max_retries)
    pending = {fn.remote(paths[i:i + batch_size], mode, options, config_factory, tools_factory): paths[i:i + batch_size]
               for i in range(0, len(paths), batch_size)}
    display = _Progress(f"replay_many ({mode})", len(paths), progress)
    outcomes: dict[str, ReplayOutcome] = {}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                batch = pending.pop(ref)
                try:
                    results: list[ReplayOutcome] = ray.get(ref)
                except Exception as exc:
                    results = [ReplayOutcome(p, error=f"{type(exc).__name__}: {failure_text(exc)}") for p in batch]
                for o in results:
                    outcomes[o.path] = o
                    display.advance(o.ok)
    finally:
        display.close()
        for ref in pending:
            ray.cancel(ref)
    return ReplaySummary(mode, tuple(outcomes[p] for p in paths), time.perf_counter() - started)
