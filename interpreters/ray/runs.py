"""The driver of :func:`run_many` and :func:`resume_many`: workers placed on the nodes, jobs
handed out within each node's limit, lost workers and nodes recovered from, nodes that join put
to work. (:func:`resume_many` checks every run's decisions first, then drives its runs, each
with its :class:`Resumption`, through the same loop.)

Theory of operation
-------------------

The driver is one loop in the caller's thread, over Ray object refs. It never blocks on a single
call: it waits (``ray.wait`` with a short timeout) on every run in flight and every probe at
once, and reads the cluster's membership from a :class:`NodeWatcher` thread, so a slow probe or
a slow GCS never holds back a result that is ready.

- **Placement.** Each node with CPUs gets ``workers_per_node`` worker actors, pinned to it by a
  *strict* node-affinity strategy (Ray ignores a soft one for actors that reserve no resources),
  sharing the node's ``max_concurrency_per_node``. A slot is one worker: its node, its
  share, the runs the driver gave it. A job goes to the least loaded slot with room, so a node
  never carries more than its limit and nothing waits in Ray's queues.
- **Elasticity.** When the watcher sees a new node with CPUs, it gets its workers and takes jobs
  at once; a node that Ray declares dead is dropped, and the runs it carried are handed out again.
- **A lost worker.** A run whose call fails because the worker went away (killed, its node lost)
  is *held* and its slot becomes *suspect*: no new job goes to it and it is probed (a
  ``status`` call, awaited with the rest). The probe settles it:

  ============================================  ===============================================
  the probe (or the watcher) says               the held runs
  ============================================  ===============================================
  the worker answers, still carrying the run    asked for again on it: they wait for the run in
                                                progress (a worker never runs a job twice)
  the worker answers, restarted (a new process) handed out again, to any slot
  the worker is gone for good, or its node dead handed out again, to any other slot
  still unreachable                             probed again a second later
  no answer after ``recovery_timeout``          the worker is killed, they are handed out again
  ============================================  ===============================================

  A run handed out again resumes from its transcript (:func:`interpreters.replay.aresume`), and
  counts one attempt; after ``max_retries`` of them it is an error result. Ray's own task retries
  are off (``max_task_retries=0``): they come back before Ray knows whether a node is dead, and a
  run is only given to another worker once the first one is known not to be running it.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentcore import AgentContext, AgentLoopConfig, AgentTool, Decision, Suspension
from agentcore.records import replace

from ..runtime.hooks import failure_text
from ..transcript import FlushMode
from .cluster import NodeInfo, NodeWatcher, ensure_ray, is_lost, is_unavailable, worker_nodes
from .jobs import JobLike, RunJob, RunResult, as_job, transcript_name
from .progress import Progress
from .suspensions import Resumption, decisions_problem
from .worker import RunWorker, WorkerSpec, WorkerStatus

__all__ = ["Attempt", "Driver", "Settings", "Slot", "SuspendedLike", "resume_many", "run_many"]

NODE_POLL_SECONDS = 1.0
"""How often the driver reads the cluster's membership (in its watcher thread)."""
PROBE_AGAIN_SECONDS = 1.0
"""How long after an unreachable answer a suspect worker is probed again."""
WAIT_SECONDS = 0.5
"""The longest the driver's loop waits before it looks at its timers and the membership again."""
STOP_WAIT_SECONDS = 10.0
"""How long the end of a call waits for Ray to confirm that the workers it killed are dead."""

_RESERVED_OPTIONS = {
    "scheduling_strategy": "run_many pins its workers to their nodes itself",
    "max_concurrency": "set max_concurrency_per_node (and workers_per_node) instead",
    "max_restarts": "run_many restarts lost workers itself (see max_retries and recovery_timeout)",
    "max_task_retries": "set max_retries instead: run_many retries a lost run itself, from its transcript",
}


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
    recovery_timeout: float = 60.0,
    existing: Literal["resume", "overwrite"] = "resume",
    progress: bool = True,
    flush: FlushMode = "entry",
    fsync: bool = False,
    secrets: Sequence[str] = (),
    worker_options: Mapping[str, Any] | None = None,
    address: str | None = None,
    init_options: Mapping[str, Any] | None = None,
) -> Iterator[RunResult]:
    """Run many agent runs on a Ray cluster; yields a :class:`RunResult` per job as each finishes
    (or suspends: ``result.suspended``, go on with :func:`resume_many`).

    ``jobs``: :class:`RunJob` s (or ``(prompts, context)`` / ``(id, prompts, context)`` tuples);
    ids must be unique: ``<transcripts_dir>/<id>.jsonl`` is the run's transcript. On the
    worker, ``config_factory(job)`` gives the run's :class:`AgentLoopConfig`,
    ``stream_fn_factory(job)`` its stream function (default: the HTTP providers) and
    ``tools_factory(job)`` its tools (default: ``job.context.tools``). ``clock`` (a picklable
    ``() -> ms``) replaces the wall clock of the runs.

    Concurrency: at most ``max_concurrency_per_node`` runs at a time on each node with CPUs
    (nodes without, such as a head node kept free, get no workers unless no node has a CPU),
    spread over ``workers_per_node`` worker processes pinned to the node (default: its CPU
    count). Nodes that join while the call runs get workers too. Worker actors reserve
    ``worker_options`` resources (default none, so :func:`remote_tool` tasks get every CPU).

    Durability: a run whose worker is lost (the process killed, its node gone) resumes from its
    transcript on another worker, up to ``max_retries`` times. A worker that stops answering is
    waited for until Ray says it is back or gone (for a lost node, Ray's health check: about 15 s
    with Ray's defaults), at most ``recovery_timeout`` seconds; then it is killed and its runs
    resume elsewhere. ``existing="resume"`` (default) also resumes (or returns at once, when
    finished) runs whose transcript is already in the directory; ``"overwrite"`` deletes it first.

    Ray is started with ``ray.init(address=address, **init_options)`` unless it already is. The
    workers are killed when the iteration ends (or is abandoned). The transcripts directory must
    be visible to every node (shared storage) on a multi-node cluster.
    """
    options = _checked_options(max_concurrency_per_node, workers_per_node, max_retries, recovery_timeout,
                               worker_options)
    if existing not in ("resume", "overwrite"):
        raise ValueError(f"existing must be 'resume' or 'overwrite', not {existing!r}")
    total = len(jobs) if isinstance(jobs, Sized) else None
    spec = WorkerSpec(str(Path(transcripts_dir).resolve()), config_factory, stream_fn_factory, tools_factory,
                      clock, flush, fsync, tuple(secrets))
    return _drive(_new_attempts(jobs), total, spec, Settings(max_concurrency_per_node, workers_per_node, max_retries,
                                                             float(recovery_timeout), existing, options),
                  "run_many", progress, address, init_options)


def _checked_options(per_node: Any, workers_per_node: Any, max_retries: Any, recovery_timeout: Any,
                     worker_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The worker options, once the options shared by :func:`run_many` and :func:`resume_many`
    are checked (``ValueError`` naming the first bad one)."""
    if not isinstance(per_node, int) or per_node < 1:
        raise ValueError(f"max_concurrency_per_node must be an int of at least 1, not {per_node!r}")
    if workers_per_node is not None and (not isinstance(workers_per_node, int) or workers_per_node < 1):
        raise ValueError("workers_per_node must be None (one per CPU) or an int of at least 1, "
                         f"not {workers_per_node!r}")
    if not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"max_retries must be an int of at least 0, not {max_retries!r}")
    if not isinstance(recovery_timeout, (int, float)) or not recovery_timeout > 0:
        raise ValueError(f"recovery_timeout must be a positive number of seconds, not {recovery_timeout!r}")
    options = dict(worker_options or {})
    for key, why in _RESERVED_OPTIONS.items():
        if key in options:
            raise ValueError(f"worker_options cannot set {key!r}: {why}")
    return options


SuspendedLike = Any  # RunResult (suspended) | (job id or RunJob, Suspension)


def resume_many(
    suspensions: Iterable[SuspendedLike],
    decisions: Mapping[str, Mapping[str, Decision]],
    *,
    config_factory: Callable[[RunJob], AgentLoopConfig],
    transcripts_dir: str | os.PathLike[str],
    stream_fn_factory: Callable[[RunJob], Any] | None = None,
    tools_factory: Callable[[RunJob], Sequence[AgentTool]] | None = None,
    clock: Callable[[], int] | None = None,
    max_concurrency_per_node: int = 64,
    workers_per_node: int | None = None,
    max_retries: int = 3,
    recovery_timeout: float = 60.0,
    progress: bool = True,
    flush: FlushMode = "entry",
    fsync: bool = False,
    secrets: Sequence[str] = (),
    worker_options: Mapping[str, Any] | None = None,
    address: str | None = None,
    init_options: Mapping[str, Any] | None = None,
) -> Iterator[RunResult]:
    """Go on with suspended runs on a Ray cluster; yields a :class:`RunResult` per run as each
    finishes, or suspends again, exactly as :func:`run_many` does.

    ``suspensions``: the suspended results of :func:`run_many` (or of an earlier
    ``resume_many``), or ``(job, suspension)`` pairs where ``job`` is the run's :class:`RunJob`
    or its id (a stored ``Suspension``: ``agentcore.codec.from_json``). ``decisions`` maps each
    job id to that run's decisions, tool call id → ``Approve()`` / ``Deny(reason)`` /
    ``ToolOutput(result)``, as for ``interpreters.resume_suspended``.

    Everything is checked before anything runs: a job id given twice, a result that did not
    suspend, a missing transcript, a job without decisions or decisions for a job that is not
    there, and each run's decisions as ``resume_suspended`` checks them (missing, unknown,
    repeated or wrong-kind, by tool call id). Every problem is in one ``ValueError`` naming the
    job ids and tool call ids; nothing is submitted and no transcript is touched.

    Each run goes on in a worker with the factories called on the job (the result's
    ``job``; a bare id gives ``RunJob(id, (), AgentContext())``, so its tools must come from
    ``tools_factory``), and is recorded at the end of its transcript,
    ``<transcripts_dir>/<job id>.jsonl``, the file that recorded it up to its suspension
    (``interpreters.replay.recovery.continue_transcript``). Placement, concurrency, lost workers and
    retries are those of :func:`run_many` (same options): a run whose worker is lost resumes from
    its transcript, past the decisions; calling ``resume_many`` again with the same arguments
    after the driver died finishes only what is unfinished (``result.resumed`` is then true).
    """
    options = _checked_options(max_concurrency_per_node, workers_per_node, max_retries, recovery_timeout,
                               worker_options)
    root = Path(transcripts_dir).resolve()
    attempts = _resumptions(suspensions, decisions, root)
    spec = WorkerSpec(str(root), config_factory, stream_fn_factory, tools_factory, clock, flush, fsync,
                      tuple(secrets))
    return _drive(iter(attempts), len(attempts), spec,
                  Settings(max_concurrency_per_node, workers_per_node, max_retries, float(recovery_timeout),
                           "resume", options),
                  "resume_many", progress, address, init_options)


def _suspended_item(item: Any) -> tuple[RunJob, Suspension | None, str | None]:
    """(job, suspension, why it cannot be resumed) of one item of ``resume_many(suspensions)``."""
    if isinstance(item, RunResult):
        job = item.job if item.job is not None else RunJob(item.job_id, (), AgentContext())
        if item.error is not None:
            return job, None, f"did not suspend: its run failed ({item.error})"
        if item.suspension is None:
            return job, None, "did not suspend: its run finished"
        return job, item.suspension, None
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], (str, RunJob)):
        job = item[0] if isinstance(item[0], RunJob) else RunJob(item[0], (), AgentContext())
        return job, item[1], None
    raise TypeError(f"resume_many() takes suspended RunResults or (job id or RunJob, Suspension) pairs, "
                    f"not {item!r:.100}")


def _resumptions(suspensions: Iterable[SuspendedLike], decisions: Mapping[str, Mapping[str, Decision]],
                 root: Path) -> list[Attempt]:
    """The attempts of :func:`resume_many`, once everything is checked (one ``ValueError``
    listing every problem, by job id)."""
    if not isinstance(decisions, Mapping):
        raise TypeError(f"resume_many() argument 'decisions' must be a mapping of job id to that run's decisions, "
                        f"not {type(decisions).__name__}")
    problems: list[str] = []
    attempts: list[Attempt] = []
    seen: dict[str, str] = {}
    for item in suspensions:
        job, suspension, why = _suspended_item(item)
        try:
            name = transcript_name(job.id)
        except ValueError as exc:
            problems.append(f"job {job.id!r}: {exc}")
            continue
        if name in seen:
            problems.append(f"job {job.id!r}: given twice" if seen[name] == job.id else
                            f"job {job.id!r}: writes the same transcript {name!r} as job {seen[name]!r}")
            continue
        seen[name] = job.id
        if why is not None:
            problems.append(f"job {job.id!r}: {why}")
            continue
        assert suspension is not None
        if job.id not in decisions:
            pending = getattr(suspension, "pending", ())
            problems.append(f"job {job.id!r}: no decisions for it (it waits on "
                            f"{', '.join(p.tool_call_id for p in pending)})")
            continue
        problem = decisions_problem(suspension, decisions[job.id])
        if problem is not None:
            problems.append(f"job {job.id!r}: {problem}")
        if not (root / name).is_file():
            problems.append(f"job {job.id!r}: no transcript {str(root / name)!r} to go on with")
        elif problem is None:
            attempts.append(Attempt(job, resumption=Resumption(suspension, dict(decisions[job.id]))))
    given = set(seen.values())
    for job_id in decisions:
        if job_id not in given:
            problems.append(f"job {job_id!r}: decisions given, but it is not among the suspensions")
    if problems:
        raise ValueError(f"resume_many: nothing was run; {len(problems)} problem{'s' if len(problems) > 1 else ''}:\n"
                         + "\n".join(f"  {p}" for p in problems))
    return attempts


@dataclass(frozen=True, slots=True)
class Settings:
    """The options of one :func:`run_many` call that the driver acts on."""

    per_node: int
    workers_per_node: int | None
    max_retries: int
    recovery_timeout: float
    existing: str
    worker_options: dict[str, Any]


def _split(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal positive shares (fewer parts if total is small).

    >>> _split(64, 3), _split(2, 4)
    ([22, 21, 21], [1, 1])
    """
    parts = max(1, min(parts, total))
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


@dataclass(slots=True)
class Attempt:
    """A job the driver has taken from the source, with the attempts it has used so far
    (``resumption``: the suspended run it goes on with, for :func:`resume_many`)."""

    job: RunJob
    attempts: int = 1
    last_error: str = ""
    resumption: Resumption | None = None


@dataclass(slots=True)
class Slot:
    """One worker actor as the driver sees it."""

    actor: Any
    node_id: str
    capacity: int
    state: Literal["up", "suspect", "dead"] = "up"
    inflight: int = 0
    held: list[Attempt] = field(default_factory=list)
    probe: Any = None  # the ref of the status call in flight
    probe_due: float = 0.0
    suspect_since: float = 0.0
    reason: str = ""


class Driver:
    """The state of one :func:`run_many` call (see the module docstring)."""

    def __init__(self, ray: Any, spec: WorkerSpec, settings: Settings) -> None:
        self.ray = ray
        self.spec = spec
        self.s = settings
        self.worker_cls = ray.remote(RunWorker)
        self.slots: list[Slot] = []
        self.nodes: set[str] = set()  # every node that was given workers, alive or not
        self.inflight: dict[Any, tuple[Attempt, Slot]] = {}
        self.probes: dict[Any, Slot] = {}
        self.retry: deque[Attempt] = deque()
        self.out: list[RunResult] = []

    # -- the cluster

    def sync_nodes(self, alive: tuple[NodeInfo, ...]) -> None:
        """Give workers to new nodes; drop the slots of nodes that are no longer alive."""
        alive_ids = {n.node_id for n in alive}
        for slot in self.slots:
            if slot.state != "dead" and slot.node_id not in alive_ids:
                self.drop(slot, f"its node {slot.node_id} was lost")
        for node in worker_nodes(alive):
            if node.node_id not in self.nodes:
                self.add_node(node)

    def add_node(self, node: NodeInfo) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.nodes.add(node.node_id)
        n_workers = self.s.workers_per_node if self.s.workers_per_node is not None else max(1, int(node.cpus))
        for share in _split(self.s.per_node, n_workers):
            actor = self.worker_cls.options(
                num_cpus=0, **self.s.worker_options,
                max_concurrency=2 * share + 2,  # room for a run asked for again, and for probes
                max_restarts=-1, max_task_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
            ).remote(self.spec, share)
            self.slots.append(Slot(actor, node.node_id, share))

    def live(self) -> bool:
        return any(s.state != "dead" for s in self.slots)

    # -- handing out jobs

    def free_slot(self) -> Slot | None:
        free = [s for s in self.slots if s.state == "up" and s.inflight < s.capacity]
        return min(free, key=lambda s: s.inflight / s.capacity) if free else None

    def submit(self, attempt: Attempt, slot: Slot) -> None:
        slot.inflight += 1
        if attempt.resumption is None:
            ref = slot.actor.run.remote(attempt.job)
        else:
            ref = slot.actor.run.remote(attempt.job, attempt.resumption)
        self.inflight[ref] = (attempt, slot)

    def again(self, attempt: Attempt, why: str) -> None:
        """Hand ``attempt`` out again (it resumes from its transcript), or fail it when its
        attempts are used up."""
        attempt.last_error = why
        if attempt.attempts > self.s.max_retries:
            self.out.append(self.failed(attempt.job, f"{why} (the run lost its worker {attempt.attempts} times; "
                                                     f"max_retries={self.s.max_retries})", attempts=attempt.attempts))
            return
        attempt.attempts += 1
        self.retry.append(attempt)

    def failed(self, job: RunJob, error: str, node_id: str | None = None, attempts: int = 1) -> RunResult:
        return RunResult(job.id, (), str(Path(self.spec.transcripts_dir, transcript_name(job.id))), error,
                         node_id=node_id, attempts=attempts, job=job)

    # -- workers that went away

    def suspect(self, slot: Slot, now: float) -> None:
        if slot.state == "up":
            slot.state = "suspect"
            slot.suspect_since = now
            self.send_probe(slot)

    def send_probe(self, slot: Slot) -> None:
        slot.probe = slot.actor.status.remote()
        self.probes[slot.probe] = slot

    def drop(self, slot: Slot, why: str) -> None:
        """The worker is gone for good: kill it (in case it still runs somewhere) and hand its
        runs out again."""
        if slot.state == "dead":
            return
        slot.state, slot.reason = "dead", why
        if slot.probe is not None:
            self.probes.pop(slot.probe, None)
            slot.probe = None
        try:
            self.ray.kill(slot.actor, no_restart=True)
        except Exception:
            pass
        lost = [ref for ref, (_, s) in self.inflight.items() if s is slot]
        for ref in lost:
            attempt, _ = self.inflight.pop(ref)
            try:
                self.ray.cancel(ref)
            except Exception:
                pass
            self.again(attempt, why)
        slot.inflight = 0
        held, slot.held = slot.held, []
        for attempt in held:
            self.again(attempt, why)

    def check_timers(self, now: float) -> None:
        for slot in self.slots:
            if slot.state != "suspect":
                continue
            if now - slot.suspect_since >= self.s.recovery_timeout:
                self.drop(slot, f"its worker on node {slot.node_id} did not answer for "
                                f"{self.s.recovery_timeout:g} s")
            elif slot.probe is None and now >= slot.probe_due:
                self.send_probe(slot)

    def next_timer(self, now: float) -> float:
        """Seconds until the next probe or recovery deadline is due."""
        due = [now + WAIT_SECONDS]
        for slot in self.slots:
            if slot.state == "suspect":
                due.append(slot.suspect_since + self.s.recovery_timeout)
                if slot.probe is None:
                    due.append(slot.probe_due)
        return max(0.0, min(due) - now)

    # -- answers

    def on_run(self, ref: Any, now: float) -> None:
        entry = self.inflight.pop(ref, None)
        if entry is None:  # a run of a dropped worker, already handed out again
            return
        attempt, slot = entry
        slot.inflight -= 1
        try:
            result: RunResult = self.ray.get(ref)
        except Exception as exc:
            text = f"{type(exc).__name__}: {failure_text(exc)}"
            if is_lost(self.ray, exc):
                attempt.last_error = text
                slot.held.append(attempt)
                self.suspect(slot, now)
                return
            self.out.append(self.failed(attempt.job, text, slot.node_id, attempt.attempts))
            return
        self.out.append(replace(result, attempts=attempt.attempts, job=attempt.job))

    def on_probe(self, ref: Any, now: float) -> None:
        slot = self.probes.pop(ref, None)
        if slot is None or slot.state != "suspect":
            return
        slot.probe = None
        try:
            status: WorkerStatus = self.ray.get(ref)
        except Exception as exc:
            if is_unavailable(self.ray, exc):
                slot.probe_due = now + PROBE_AGAIN_SECONDS
            else:
                self.drop(slot, f"its worker on node {slot.node_id} is gone "
                                f"({type(exc).__name__}: {failure_text(exc)})")
            return
        slot.state = "up"
        running = set(status.running)
        held, slot.held = slot.held, []
        for attempt in held:
            if attempt.job.id in running:  # the same process, still on it: wait for it there
                self.submit(attempt, slot)
            else:
                self.again(attempt, attempt.last_error)

    def stop(self) -> None:
        if not self.ray.is_initialized():  # the caller may have shut Ray down already
            return
        for ref in self.inflight:
            try:
                self.ray.cancel(ref, force=False)
            except Exception:
                pass
        killed = []
        for slot in self.slots:
            if slot.state != "dead":
                try:
                    self.ray.kill(slot.actor, no_restart=True)
                    killed.append(slot.actor.status.remote())
                except Exception:
                    pass
        # Wait (a little) until Ray has the workers dead, so that a run_many started right after
        # over the same directory does not resume a transcript that a killed worker still writes.
        if killed:
            try:
                self.ray.wait(killed, num_returns=len(killed), timeout=STOP_WAIT_SECONDS)
            except Exception:
                pass


def _new_attempts(jobs: Iterable[JobLike]) -> Iterator[Attempt]:
    """The jobs of :func:`run_many` as attempts, checked one by one as the driver takes them."""
    seen: set[str] = set()
    for index, raw in enumerate(jobs):
        job = as_job(raw, index)
        name = transcript_name(job.id)
        if name in seen:
            raise ValueError(f"two jobs write the same transcript {name!r} (job id {job.id!r}): "
                             "give every job its own id")
        seen.add(name)
        yield Attempt(job)


def _drive(source: Iterator[Attempt], total: int | None, spec: WorkerSpec, settings: Settings, label: str,
           progress: bool, address: str | None, init_options: Mapping[str, Any] | None) -> Iterator[RunResult]:
    ray = ensure_ray(address, init_options)
    Path(spec.transcripts_dir).mkdir(parents=True, exist_ok=True)
    driver = Driver(ray, spec, settings)
    watcher = NodeWatcher(ray, NODE_POLL_SECONDS)
    watcher.start()
    display = Progress(label, total, progress)
    exhausted = False
    no_worker_since: float | None = None
    try:
        while True:
            now = time.monotonic()
            driver.sync_nodes(watcher.latest)
            driver.check_timers(now)
            while (slot := driver.free_slot()) is not None:
                if driver.retry:
                    driver.submit(driver.retry.popleft(), slot)
                    continue
                if exhausted:
                    break
                try:
                    attempt = next(source)
                except StopIteration:
                    exhausted = True
                    break
                if settings.existing == "overwrite":
                    Path(spec.transcripts_dir, transcript_name(attempt.job.id)).unlink(missing_ok=True)
                driver.submit(attempt, slot)
            for result in driver.out:
                display.advance(result.ok, result.suspended)
                yield result
            driver.out.clear()
            waiting = driver.retry or not exhausted
            if not driver.inflight and not driver.probes and not any(s.held for s in driver.slots) and not waiting:
                break
            if not driver.live() and waiting:
                # Every worker is gone: wait for a node to join, then give up on what is left.
                no_worker_since = now if no_worker_since is None else no_worker_since
                if now - no_worker_since >= settings.recovery_timeout:
                    why = (f"no live worker is left to run this job: no node with CPUs was alive for "
                           f"{settings.recovery_timeout:g} s")
                    rest = [a.job for a in driver.retry] + [a.job for a in source]
                    driver.retry.clear()
                    exhausted = True
                    for job in rest:
                        result = driver.failed(job, why)
                        display.advance(False)
                        yield result
                    continue
            else:
                no_worker_since = None
            refs = [*driver.inflight, *driver.probes]
            timeout = driver.next_timer(now)
            if not refs:
                time.sleep(timeout)
                continue
            ready, rest = ray.wait(refs, num_returns=1, timeout=timeout)
            if ready and rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            now = time.monotonic()
            for ref in ready:
                if ref in driver.probes:
                    driver.on_probe(ref, now)
                else:
                    driver.on_run(ref, now)
    finally:
        watcher.stop()
        display.close()
        driver.stop()
