"""The driver of ``run_many`` (interpreters/ray/runs.py) as a state machine, over a fake Ray.

Each answer Ray can give (a result, a worker lost, a probe that finds the worker carrying the
run, restarted, gone or unreachable, a node that leaves or joins) is fed to :class:`Driver` by
hand, and what it does next is checked exactly: which worker gets which job, how many attempts
a run has used, what is killed and cancelled. No Ray process is started; Ray's exception types
are the real ones. The worker side's promise that a job runs once per process, however often it
is asked for, is checked on :class:`RunWorker` itself, in this process.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from agentcore import AgentContext, AgentLoopConfig, Model  # noqa: E402
from interpreters import ScriptedModel  # noqa: E402
from interpreters.ray import RunJob, RunResult  # noqa: E402
from interpreters.ray.cluster import NodeInfo  # noqa: E402
from interpreters.ray.runs import Driver, Settings  # noqa: E402
from interpreters.ray.worker import RunWorker, WorkerSpec, WorkerStatus  # noqa: E402
from tests.support.clocks import clock  # noqa: E402

pytestmark = pytest.mark.ray

_ids = itertools.count()


class Ref:
    def __init__(self, actor: Actor, method: str, args: tuple[Any, ...]) -> None:
        self.actor, self.method, self.args, self.n = actor, method, args, next(_ids)

    def __repr__(self) -> str:
        return f"Ref({self.actor.name}.{self.method}#{self.n})"


class Method:
    def __init__(self, actor: Actor, name: str) -> None:
        self.actor, self.name = actor, name

    def remote(self, *args: Any) -> Ref:
        ref = Ref(self.actor, self.name, args)
        self.actor.calls.append(ref)
        return ref


class Actor:
    def __init__(self, name: str, options: dict[str, Any], share: int) -> None:
        self.name, self.options, self.share = name, options, share
        self.calls: list[Ref] = []
        self.run = Method(self, "run")
        self.status = Method(self, "status")

    def jobs(self) -> list[str]:
        return [ref.args[0].id for ref in self.calls if ref.method == "run"]


class ActorClass:
    def __init__(self) -> None:
        self.actors: list[Actor] = []
        self._options: dict[str, Any] = {}

    def options(self, **options: Any) -> ActorClass:
        self._options = options
        return self

    def remote(self, spec: WorkerSpec, share: int) -> Actor:
        node = name_of(self._options["scheduling_strategy"].node_id)
        actor = Actor(f"{node}/{sum(1 for a in self.actors if a.name.startswith(node + '/'))}", self._options, share)
        self.actors.append(actor)
        return actor


class FakeRay:
    exceptions = ray.exceptions

    def __init__(self) -> None:
        self.cls = ActorClass()
        self.answers: dict[Ref, Any] = {}
        self.killed: list[str] = []
        self.cancelled: list[Ref] = []

    def remote(self, cls: type) -> ActorClass:
        assert cls is RunWorker
        return self.cls

    def get(self, ref: Ref) -> Any:
        answer = self.answers.pop(ref)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def kill(self, actor: Actor, no_restart: bool) -> None:
        assert no_restart
        self.killed.append(actor.name)

    def cancel(self, ref: Ref, force: bool = False) -> None:
        self.cancelled.append(ref)

    def is_initialized(self) -> bool:
        return True


SPEC = WorkerSpec("runs", lambda job: AgentLoopConfig(model=Model(id="x")), None, None, None, "entry", False, ())
def node_id(name: str) -> str:
    """A valid Ray node id (56 hex digits) that ``name_of`` reads back as ``name``."""
    return name.encode().hex().ljust(56, "0")


def name_of(node: str) -> str:
    return bytes.fromhex(node.rstrip("0") + ("0" if len(node.rstrip("0")) % 2 else "")).decode()


HEAD, A, B, C = NodeInfo(node_id("head"), 0.0), NodeInfo(node_id("A"), 2.0), NodeInfo(node_id("B"), 1.0), \
    NodeInfo(node_id("C"), 1.0)


def unavailable() -> Exception:
    return ray.exceptions.ActorUnavailableError("Socket closed", None)


def make(per_node: int = 3, max_retries: int = 3, recovery_timeout: float = 60.0,
         nodes: tuple[NodeInfo, ...] = (HEAD, A, B)) -> tuple[Driver, FakeRay]:
    fake = FakeRay()
    driver = Driver(fake, SPEC, Settings(per_node, None, max_retries, recovery_timeout, "resume", {}))
    driver.sync_nodes(nodes)
    return driver, fake


def fill(driver: Driver, count: int, start: int = 0) -> list[RunJob]:
    """Hand out ``count`` jobs as run_many does: each to the least loaded slot with room."""
    from interpreters.ray.runs import Attempt

    jobs = [RunJob(f"job-{i}", "go") for i in range(start, start + count)]
    for job in jobs:
        slot = driver.free_slot()
        assert slot is not None
        driver.submit(Attempt(job), slot)
    return jobs


def ref_of(driver: Driver, job_id: str) -> Ref:
    [ref] = [r for r, (attempt, _) in driver.inflight.items() if attempt.job.id == job_id]
    return ref


def result(job_id: str, node: str) -> RunResult:
    return RunResult(job_id, (), f"runs/{job_id}.jsonl", worker_pid=7, node_id=node)


def test_workers_are_pinned_to_each_node_with_cpus_and_share_its_limit() -> None:
    driver, fake = make(per_node=5)
    assert [(a.name, a.share) for a in fake.cls.actors] == [("A/0", 3), ("A/1", 2), ("B/0", 5)]
    for actor in fake.cls.actors:
        strategy = actor.options["scheduling_strategy"]
        assert (name_of(strategy.node_id), strategy.soft) == (actor.name.split("/")[0], False)
        options = actor.options
        assert (options["num_cpus"], options["max_restarts"], options["max_task_retries"]) == (0, -1, 0)
        assert actor.options["max_concurrency"] == 2 * actor.share + 2
    fill(driver, 10)
    assert driver.free_slot() is None  # 5 on A, 5 on B: both nodes are full
    assert {a.name: len(a.jobs()) for a in fake.cls.actors} == {"A/0": 3, "A/1": 2, "B/0": 5}


def test_with_no_node_with_cpus_every_node_gets_workers() -> None:
    _, fake = make(nodes=(HEAD, NodeInfo(node_id("other"), 0.0)))
    assert [a.name for a in fake.cls.actors] == ["head/0", "other/0"]


def test_a_result_comes_back_with_the_node_its_worker_reports() -> None:
    driver, fake = make()
    fill(driver, 1)
    ref = ref_of(driver, "job-0")
    fake.answers[ref] = result("job-0", A.node_id)
    driver.on_run(ref, now=0.0)
    assert driver.out == [result("job-0", A.node_id)]
    assert driver.inflight == {}


def test_a_call_that_fails_for_itself_is_an_error_result_not_a_retry() -> None:
    driver, fake = make()
    fill(driver, 1)
    ref = ref_of(driver, "job-0")
    fake.answers[ref] = ray.exceptions.RaySystemError("cannot unpickle the job")
    driver.on_run(ref, now=0.0)
    assert [(r.job_id, r.error, r.node_id) for r in driver.out] == [
        ("job-0", "RaySystemError: System error: cannot unpickle the job", A.node_id)]
    assert not driver.retry and all(s.state == "up" for s in driver.slots)


def test_a_lost_run_waits_for_the_probe_and_goes_on_where_the_worker_still_carries_it() -> None:
    driver, fake = make()
    fill(driver, 2)  # job-0 on A/0, job-1 on A/1
    actor = fake.cls.actors[0]
    ref = ref_of(driver, "job-0")
    fake.answers[ref] = unavailable()
    driver.on_run(ref, now=10.0)
    slot = driver.slots[0]
    assert (slot.state, [a.job.id for a in slot.held], slot.inflight) == ("suspect", ["job-0"], 0)
    [probe] = list(driver.probes)
    assert (probe.actor, probe.method) == (actor, "status")
    assert driver.free_slot() is not slot  # no new job for a suspect worker
    fake.answers[probe] = WorkerStatus(pid=7, node_id=A.node_id, running=("job-0",))
    driver.on_probe(probe, now=11.0)
    assert slot.state == "up" and slot.held == []
    assert actor.jobs() == ["job-0", "job-0"]  # asked again on the same worker: it waits for the run there
    assert driver.inflight[ref_of(driver, "job-0")][0].attempts == 1
    assert not driver.retry and driver.out == []


def test_a_run_on_a_restarted_worker_is_handed_out_again_and_counts_an_attempt() -> None:
    driver, fake = make()
    fill(driver, 1)
    ref = ref_of(driver, "job-0")
    fake.answers[ref] = ray.exceptions.ActorDiedError()
    driver.on_run(ref, now=0.0)
    [probe] = list(driver.probes)
    fake.answers[probe] = WorkerStatus(pid=8, node_id=A.node_id, running=())
    driver.on_probe(probe, now=1.0)
    assert driver.slots[0].state == "up"
    assert [(a.job.id, a.attempts) for a in driver.retry] == [("job-0", 2)]
    assert driver.retry[0].last_error.startswith("ActorDiedError: ")


def test_a_resumed_run_goes_to_its_worker_with_its_decisions_and_keeps_them_when_handed_out_again() -> None:
    from agentcore import Approve
    from interpreters import agent_loop, tool
    from interpreters.ray.runs import Attempt
    from interpreters.ray.suspensions import Resumption
    from interpreters.streams.scripted import tool_call

    @tool(requires_approval=True)
    def rm(path: str) -> str:
        """Remove a file."""
        return "removed"

    stream = agent_loop("go", AgentContext(tools=[rm]), AgentLoopConfig(model=Model(id="x")),
                        stream_fn=ScriptedModel([tool_call("rm", {"path": "a"}, "c1")]), clock=clock)
    stream.result()
    assert stream.suspension is not None
    driver, fake = make()
    job = RunJob("job-0", "go")
    resumption = Resumption(stream.suspension, {"c1": Approve()})
    driver.submit(Attempt(job, resumption=resumption), driver.slots[0])
    ref = ref_of(driver, "job-0")
    assert ref.args == (job, resumption)
    fake.answers[ref] = ray.exceptions.ActorDiedError()
    driver.on_run(ref, now=0.0)
    [probe] = list(driver.probes)
    fake.answers[probe] = WorkerStatus(pid=8, node_id=A.node_id, running=())
    driver.on_probe(probe, now=1.0)
    [attempt] = driver.retry
    assert (attempt.attempts, attempt.resumption) == (2, resumption)
    driver.submit(driver.retry.popleft(), driver.slots[1])
    again = ref_of(driver, "job-0")
    assert again.args == (job, resumption)
    fake.answers[again] = result("job-0", A.node_id)
    driver.on_run(again, now=2.0)
    [out] = driver.out
    assert (out.attempts, out.job) == (2, job)


def test_an_unreachable_worker_is_probed_every_second_then_given_up_after_recovery_timeout() -> None:
    driver, fake = make(recovery_timeout=5.0)
    fill(driver, 2)
    ref = ref_of(driver, "job-0")
    fake.answers[ref] = unavailable()
    driver.on_run(ref, now=100.0)
    slot, actor = driver.slots[0], fake.cls.actors[0]
    for second in range(4):
        [probe] = list(driver.probes)
        fake.answers[probe] = unavailable()
        driver.on_probe(probe, now=100.2 + second)
        assert driver.probes == {} and slot.probe_due == pytest.approx(101.2 + second)
        assert driver.next_timer(100.5 + second) == pytest.approx(0.5)
        driver.check_timers(101.2 + second)  # the next probe is due
    assert [r.method for r in actor.calls] == ["run", "status", "status", "status", "status", "status"]
    driver.check_timers(105.0)  # recovery_timeout after the first failure
    assert slot.state == "dead" and fake.killed == ["A/0"] and driver.probes == {}
    assert [(a.job.id, a.attempts) for a in driver.retry] == [("job-0", 2)]
    assert driver.retry[0].last_error == f"its worker on node {A.node_id} did not answer for 5 s"
    assert driver.free_slot() is not slot


def test_a_worker_gone_for_good_hands_its_runs_out_again() -> None:
    driver, fake = make()
    fill(driver, 1)
    ref = ref_of(driver, "job-0")
    fake.answers[ref] = unavailable()
    driver.on_run(ref, now=0.0)
    [probe] = list(driver.probes)
    fake.answers[probe] = ray.exceptions.ActorUnschedulableError("the node is gone")
    driver.on_probe(probe, now=1.0)
    assert driver.slots[0].state == "dead" and fake.killed == ["A/0"]
    assert [(a.job.id, a.attempts) for a in driver.retry] == [("job-0", 2)]


def test_a_node_that_leaves_is_dropped_and_one_that_joins_gets_workers() -> None:
    driver, fake = make()
    jobs = fill(driver, 6)
    on_b = [j.id for j in jobs if ref_of(driver, j.id).actor.name == "B/0"]
    assert len(on_b) == 3
    b_refs = [ref_of(driver, j) for j in on_b]
    driver.sync_nodes((HEAD, A, C))  # B is declared dead, C joined
    assert fake.killed == ["B/0"] and fake.cancelled == b_refs
    assert sorted((a.job.id, a.attempts) for a in driver.retry) == [(j, 2) for j in sorted(on_b)]
    assert [a.name for a in fake.cls.actors] == ["A/0", "A/1", "B/0", "C/0"]
    assert driver.free_slot() is driver.slots[-1]  # the new node takes the work
    late = b_refs[0]
    fake.answers[late] = unavailable()
    driver.on_run(late, now=0.0)  # a late answer of the dropped worker changes nothing
    assert len(driver.retry) == 3 and driver.out == []


def test_a_run_lost_more_than_max_retries_times_is_an_error() -> None:
    driver, fake = make(max_retries=1)
    fill(driver, 1)
    for attempt in (1, 2):
        if attempt == 2:
            slot = driver.free_slot()
            assert slot is not None
            driver.submit(driver.retry.popleft(), slot)
        ref = ref_of(driver, "job-0")
        fake.answers[ref] = unavailable()
        driver.on_run(ref, now=0.0)
        [probe] = list(driver.probes)
        fake.answers[probe] = WorkerStatus(pid=attempt + 10, node_id=A.node_id, running=())
        driver.on_probe(probe, now=1.0)
    assert not driver.retry
    [failed] = driver.out
    assert failed.attempts == 2 and failed.error is not None
    assert failed.error.startswith("ActorUnavailableError: The actor None is unavailable: Socket closed.")
    assert failed.error.endswith("(the run lost its worker 2 times; max_retries=1)")


# -- the worker side


def slow_stream_fn(job: Any) -> ScriptedModel:
    return ScriptedModel(["Done."], chunk_size=1)


def test_a_worker_runs_a_job_once_however_often_it_is_asked_for(tmp_path: Path) -> None:
    spec = WorkerSpec(str(tmp_path), lambda job: AgentLoopConfig(model=Model(id="x")), slow_stream_fn, None, clock,
                      "entry", False, ())
    worker = RunWorker(spec, 4)
    job = RunJob("once", "hi", AgentContext())

    async def go() -> tuple[RunResult, RunResult, WorkerStatus, WorkerStatus]:
        first = asyncio.ensure_future(worker.run(job))
        await asyncio.sleep(0)
        during = await worker.status()
        second = await worker.run(job)
        return await first, second, during, await worker.status()

    first, second, during, after = asyncio.run(go())
    assert first == second and first.ok and not first.resumed
    assert (during.running, after.running) == (("once",), ())
    assert (tmp_path / "once.jsonl").read_text().count('"type":"agent_start"') == 1
