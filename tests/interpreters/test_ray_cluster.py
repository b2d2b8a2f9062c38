"""``interpreters.ray.run_many`` on a real multi-node Ray cluster (``ray.cluster_utils.Cluster``).

One cluster for the module: a head node with no CPU and worker nodes of one CPU each, every
node a real raylet on this machine, all sharing the transcripts directory (as NFS would). Each
run is a few tool calls of a tool that sleeps; the tool leaves marker files in a shared
directory (one file per execution, one while it runs), which is how the tests count executions
and see where and how many runs were running at once. Losing a node is done as a machine loss
looks: its raylet and every process it started are killed with SIGKILL at once.

The processes of the cluster carry a marker in their environment, so the last test can check
that none is left after shutdown.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")

from agentcore import AgentContext, AgentLoopConfig, AgentTool, Model  # noqa: E402
from interpreters import ScriptedModel, aio, tool  # noqa: E402
from interpreters.ray import RunJob, RunResult, replay_many, run_many  # noqa: E402
from interpreters.streams.scripted import Reply, ScriptedCall  # noqa: E402
from tests.support.clocks import clock  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
WORKER_PATH = [str(HERE.parents[1])]  # the repository: the library and the package tests
TAG = "AGENTCORE_TEST_RAY_CLUSTER"


# --------------------------------------------------------------------------- the cluster


def _processes_tagged(tag: str) -> list[int]:
    """Pids of the processes whose environment carries ``TAG=tag`` (Linux ``/proc``)."""
    needle = f"{TAG}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(int(entry.name))
    return found


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        if int(raw[raw.rindex(")") + 2:].split()[1]) == pid:
            out.append(int(entry.name))
    return out


class LocalCluster:
    """A head node with no CPU and ``workers`` nodes of one CPU each."""

    def __init__(self, workers: int) -> None:
        self.tag = uuid.uuid4().hex
        os.environ[TAG] = self.tag  # inherited by every process the cluster starts
        if ray.is_initialized():
            ray.shutdown()
        self.cluster = cluster_utils.Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "include_dashboard": False, "object_store_memory": 80 * 1024 * 1024})
        self.head_id: str = self.cluster.head_node.node_id
        self.workers: list[Any] = []
        self.lost: list[str] = []
        for _ in range(workers):
            self.add()
        self.up = True
        try:
            ray.init(address=self.cluster.address, log_to_driver=False, runtime_env={"env_vars": {
                "PYTHONPATH": os.pathsep.join([*WORKER_PATH, os.environ.get("PYTHONPATH", "")])}})
            self.cluster.wait_for_nodes()
        except BaseException:
            self.shutdown()
            raise

    def add(self) -> str:
        node = self.cluster.add_node(num_cpus=1, object_store_memory=80 * 1024 * 1024)
        self.workers.append(node)
        return str(node.node_id)

    @property
    def worker_ids(self) -> list[str]:
        return [str(n.node_id) for n in self.workers]

    def lose(self, node_id: str) -> None:
        """The node goes away as a machine does: its raylet and everything it started, SIGKILLed."""
        node = next(n for n in self.workers if n.node_id == node_id)
        raylet = node.all_processes["raylet"][0].process.pid
        started = _children(raylet)
        self.cluster.remove_node(node, allow_graceful=False)
        for pid in started:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.workers.remove(node)
        self.lost.append(node_id)

    def shutdown(self) -> None:
        if self.up:
            self.up = False
            ray.shutdown()
            self.cluster.shutdown()
            os.environ.pop(TAG, None)

    def leftovers(self, wait: float) -> list[int]:
        deadline = time.monotonic() + wait
        while (left := _processes_tagged(self.tag)) and time.monotonic() < deadline:
            time.sleep(0.1)
        return left


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    c = LocalCluster(workers=2)
    try:
        yield c
    finally:
        c.shutdown()


# --------------------------------------------------------------------------- the runs


def config_factory(job: Any) -> AgentLoopConfig:
    return AgentLoopConfig(model=Model(id="scripted"))


def stream_fn_factory(job: Any) -> ScriptedModel:
    steps = job.data["steps"]

    def reply(ctx: Any, _index: int) -> Reply | str:
        k = sum(1 for m in ctx.messages if m.role == "assistant")
        if k < steps:
            return Reply(text=f"Step {k}.", tool_calls=[ScriptedCall("work", {"job": job.id, "step": k}, f"c{k}")])
        return f"{job.id}: all {steps} steps are done."

    return ScriptedModel(reply, chunk_size=8)


def work_tool(markers: Path, delay: float) -> AgentTool:
    @tool
    def work(job: str, step: int) -> str:
        """Do one step of a job."""
        node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "local"
        key = f"{job}~{step}~{node}"
        (markers / f"start~{key}~{uuid.uuid4().hex}").touch()
        active = markers / "active" / node
        active.mkdir(parents=True, exist_ok=True)
        (active / job).touch()
        (markers / f"seen~{node}~{len(list(active.iterdir()))}~{uuid.uuid4().hex}").touch()
        time.sleep(delay)
        (active / job).unlink()
        (markers / f"done~{key}~{uuid.uuid4().hex}").touch()
        return f"{job} step {step} done"

    return work


def tools_factory(job: Any) -> list[AgentTool]:
    return [work_tool(Path(job.data["markers"]), job.data["delay"])]


def make_jobs(prefix: str, count: int, markers: Path, steps: int, delay: float) -> list[RunJob]:
    markers.mkdir(parents=True, exist_ok=True)
    data = {"markers": str(markers), "steps": steps, "delay": delay}
    return [RunJob(f"{prefix}-{i:03d}", f"Job {i}: do {steps} steps.", AgentContext("You work."), data=data)
            for i in range(count)]


def local_messages(job: RunJob, scratch: Path) -> list[Any]:
    """The messages of the same job run locally, uninterrupted, with the asyncio interpreter."""
    scratch.mkdir(parents=True, exist_ok=True)
    local = RunJob(job.id, job.prompts, job.context, {**job.data, "markers": str(scratch), "delay": 0.0})
    context = AgentContext(job.context.system_prompt, [], tools_factory(local))

    async def go() -> list[Any]:
        return await aio.agent_loop(job.prompts, context, config_factory(local),
                                    stream_fn=stream_fn_factory(local), clock=clock).result()

    return asyncio.run(go())


class Markers:
    """What the tool left in ``markers``: executions per (job, step) and where they ran."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _keys(self, kind: str) -> list[tuple[str, int, str]]:
        out = []
        for p in self.root.glob(f"{kind}~*"):
            job, step, node, _ = p.name.split("~")[1:]
            out.append((job, int(step), node))
        return out

    def starts(self) -> Counter[tuple[str, int]]:
        return Counter((job, step) for job, step, _ in self._keys("start"))

    def done(self) -> set[tuple[str, int, str]]:
        return set(self._keys("done"))

    def nodes_of(self, job: str) -> set[str]:
        return {node for j, _, node in self._keys("start") if j == job}

    def active(self, node: str) -> set[str]:
        folder = self.root / "active" / node
        return {p.name for p in folder.iterdir()} if folder.is_dir() else set()

    def most_at_once(self) -> dict[str, int]:
        """The most runs seen at once in a tool call, per node."""
        most: dict[str, int] = {}
        for p in self.root.glob("seen~*"):
            _, node, n, _ = p.name.split("~")
            most[node] = max(most.get(node, 0), int(n))
        return most


def finished_steps(transcript: Path) -> set[int]:
    """The steps whose tool result is recorded in a transcript."""
    steps = set()
    for line in transcript.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line torn by the loss
        inp = entry.get("input") or {}
        if inp.get("type") == "tool_finished":
            steps.add(int(inp["result"]["content"][0]["text"].split(" step ")[1].split()[0]))
    return steps


# --------------------------------------------------------------------------- tests


def test_jobs_spread_over_the_worker_nodes_within_their_limits_and_a_joining_node_gets_work(
        cluster: LocalCluster, tmp_path: Path) -> None:
    markers = Markers(tmp_path / "markers")
    jobs = make_jobs("spread", 40, markers.root, steps=2, delay=0.25)
    first = set(cluster.worker_ids)
    joined: list[str] = []
    results: list[RunResult] = []
    for result in run_many(jobs, config_factory=config_factory, stream_fn_factory=stream_fn_factory,
                           tools_factory=tools_factory, clock=clock, transcripts_dir=tmp_path / "runs",
                           max_concurrency_per_node=3, progress=False):
        results.append(result)
        if len(results) == 6:
            joined.append(cluster.add())  # a node joins while the call runs

    assert [r.error for r in results if not r.ok] == []
    assert sorted(r.job_id for r in results) == [j.id for j in jobs]
    workers = first | set(joined)
    per_node = Counter(r.node_id for r in results)
    assert set(per_node) <= workers and cluster.head_id not in per_node
    assert all(per_node[n] > 0 for n in workers), per_node  # both first nodes, and the one that joined
    for r in results:  # node_id is where the run ran (where its tool calls ran)
        assert markers.nodes_of(r.job_id) == {r.node_id}, r.job_id
    most = markers.most_at_once()
    assert cluster.head_id not in most
    assert {n: most[n] for n in first} == {n: 3 for n in first}  # the limit is reached, never passed
    assert most[joined[0]] <= 3
    assert all(r.attempts == 1 and not r.resumed for r in results)
    assert set(markers.starts().values()) == {1}


def test_a_lost_node_loses_no_run(cluster: LocalCluster, tmp_path: Path) -> None:
    markers = Markers(tmp_path / "markers")
    transcripts = tmp_path / "runs"
    jobs = make_jobs("loss", 24, markers.root, steps=3, delay=0.5)
    victim = cluster.worker_ids[-1]
    at_loss: dict[str, Any] = {}
    finished = threading.Event()

    def lose_the_victim_mid_run() -> None:
        while not finished.is_set():
            active = markers.active(victim)
            done_here = {job for job, _, node in markers.done() if node == victim}
            if len(active) >= 2 and active & done_here:  # runs in a tool call, some with a step done
                break
            time.sleep(0.02)
        else:
            return
        cluster.lose(victim)
        at_loss["time"] = time.monotonic()
        at_loss["active"] = markers.active(victim)  # left by the calls the loss cut
        at_loss["recorded"] = {j.id: finished_steps(transcripts / f"{j.id}.jsonl") for j in jobs
                               if victim in markers.nodes_of(j.id)}

    thread = threading.Thread(target=lose_the_victim_mid_run, daemon=True)
    thread.start()
    results: dict[str, RunResult] = {}
    arrived: dict[str, float] = {}
    try:
        for result in run_many(jobs, config_factory=config_factory, stream_fn_factory=stream_fn_factory,
                               tools_factory=tools_factory, clock=clock, transcripts_dir=transcripts,
                               max_concurrency_per_node=3, progress=False):
            results[result.job_id] = result
            arrived[result.job_id] = time.monotonic()
            if "time" in at_loss and "fresh" not in at_loss:
                at_loss["fresh"] = cluster.add()  # a fresh node replaces it (nodes start in the main thread)
    finally:
        finished.set()
        thread.join(60)
    assert "time" in at_loss, "the victim node never had runs in a tool call"
    assert "fresh" in at_loss

    # Every run finished ok; those the lost node carried went on elsewhere, from their transcripts.
    assert {j: r.error for j, r in results.items() if not r.ok} == {}
    assert sorted(results) == [j.id for j in jobs]
    lost = {j for j, r in results.items() if r.attempts != 1}
    assert at_loss["active"] <= lost and 0 < len(lost) <= 3  # the node's limit is 3
    for job_id, r in results.items():
        if job_id in lost:
            assert r.attempts == 2 and r.node_id != victim and r.node_id in cluster.worker_ids, job_id
            assert markers.nodes_of(job_id) <= {victim, r.node_id}, job_id
            assert r.resumed or victim not in markers.nodes_of(job_id), job_id
        else:
            assert (r.resumed, r.attempts) == (False, 1), job_id
            assert markers.nodes_of(job_id) == {r.node_id}, job_id
    for job in jobs:
        assert list(results[job.id].messages) == local_messages(job, tmp_path / "local"), job.id

    # Tool side effects: a step whose result was recorded before the loss ran once; the call the
    # loss cut ran once more on resume; nothing ran three times.
    starts = markers.starts()
    assert set(starts) == {(j.id, k) for j in jobs for k in range(3)}
    for job in jobs:
        recorded = at_loss["recorded"].get(job.id, set()) if job.id in lost else {0, 1, 2}
        cut = min({0, 1, 2} - recorded, default=3)  # the first step without a recorded result
        for step in range(3):
            n = starts[(job.id, step)]
            if step in recorded or step > cut:
                assert n == 1, (job.id, step)
            elif job.id in at_loss["active"]:
                assert n == 2, (job.id, step)  # it was in that very call when the node went away
            else:
                assert n <= 2, (job.id, step)  # between calls, or done but not yet recorded
    for job_id in lost & set(at_loss["recorded"]):
        assert (transcripts / f"{job_id}.jsonl").read_text().count('"resumed_from_step"') == 1

    # Recovery is bounded: Ray declares the node dead (about 15 s with its defaults), then the
    # runs resume; recovery_timeout (60 s by default) bounds the wait whatever Ray does.
    # While the lost runs waited, the others' results kept coming.
    first_resumed = min(arrived[j] for j in lost)
    assert any(at_loss["time"] < arrived[j] < first_resumed for j in results if j not in lost)
    recovery = max(arrived[j] for j in lost) - at_loss["time"]
    assert recovery < 60 + 15, recovery

    summary = replay_many(transcripts, progress=False)
    assert summary.all_ok, summary.report()
    assert len(summary.outcomes) == 24


def test_a_driver_stopped_halfway_and_restarted_runs_only_the_unfinished_work(
        cluster: LocalCluster, tmp_path: Path) -> None:
    markers = Markers(tmp_path / "markers")
    transcripts = tmp_path / "runs"
    jobs = make_jobs("restart", 16, markers.root, steps=2, delay=0.2)
    kwargs: dict[str, Any] = dict(config_factory=config_factory, stream_fn_factory=stream_fn_factory,
                                  tools_factory=tools_factory, clock=clock, transcripts_dir=transcripts,
                                  max_concurrency_per_node=2, progress=False)
    first: dict[str, RunResult] = {}
    stream = run_many(jobs, **kwargs)
    for result in stream:
        first[result.job_id] = result
        if len(first) == 8:
            break
    stream.close()  # the driver goes away: its workers are stopped, mid-run for some
    assert all(r.ok for r in first.values())
    before = markers.starts()

    again = {r.job_id: r for r in run_many(jobs, **kwargs)}
    assert sorted(again) == [j.id for j in jobs]
    assert {j: r.error for j, r in again.items() if not r.ok} == {}
    after = markers.starts()
    for job_id, r in first.items():  # finished runs come back from their transcripts: nothing ran
        assert again[job_id].resumed and again[job_id].messages == r.messages
        assert {k: after[(job_id, k)] for k in range(2)} == {k: before[(job_id, k)] for k in range(2)} \
            == {0: 1, 1: 1}
    for job in jobs:
        assert list(again[job.id].messages) == local_messages(job, tmp_path / "local"), job.id
        assert all(1 <= after[(job.id, k)] <= 2 for k in range(2)), job.id
    summary = replay_many(transcripts, progress=False)
    assert summary.all_ok, summary.report()
    assert len(summary.outcomes) == 16


def test_no_ray_process_is_left_after_shutdown(cluster: LocalCluster) -> None:
    assert cluster.leftovers(wait=0) != []  # the check sees the cluster while it runs
    cluster.shutdown()
    assert cluster.leftovers(wait=15) == []
