"""The Ray interpreter (interpreters/ray.py) on a real local Ray cluster.

The cluster (2 CPUs, no dashboard) is started once for the module. Everything the workers
call (factories, tools, the clock) is module-level, in this file or in the shared helpers
(tests/support/clocks.py, tests/support/sample_tools.py), so it pickles by reference; the
repository is put on the workers' PYTHONPATH (it holds the library and the package ``tests``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from agentcore import AgentContext, AgentLoopConfig, AgentTool, Model  # noqa: E402
from interpreters import ScriptedModel, run_agent_loop, tool  # noqa: E402
from interpreters.ray import RunJob, RunResult, remote_tool, replay_many, resume_many, run_many  # noqa: E402
from interpreters.streams.scripted import Reply, ScriptedCall  # noqa: E402
from tests.support.clocks import clock  # noqa: E402
from tests.support.sample_tools import add_text  # noqa: E402

pytestmark = pytest.mark.ray

HERE = Path(__file__).resolve().parent
WORKER_PATH = [str(HERE.parents[1])]  # the repository: the library and the package tests


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        address="local",  # a cluster of its own, even when another one runs on this machine
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=150 * 1024 * 1024,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([*WORKER_PATH, os.environ.get("PYTHONPATH", "")])}},
    )
    yield
    ray.shutdown()


# --------------------------------------------------------------------------- a scripted scenario


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper() + "!"


def config_factory(job: Any) -> AgentLoopConfig:
    return AgentLoopConfig(model=Model(id=f"scripted-{job.data % 3 if isinstance(job.data, int) else 0}"))


def scenario_reply(n: int) -> Any:
    """Run ``n``: ``n % 5`` tool turns (some with two parallel calls), then a text reply."""

    def reply(ctx: Any, _index: int) -> Reply | str:
        k = sum(1 for m in ctx.messages if m.role == "assistant")
        if k < n % 5:
            calls = [ScriptedCall("add", {"a": n, "b": k}, f"r{n}-c{k}")]
            if (n + k) % 2:
                calls.append(ScriptedCall("shout", {"text": f"turn {k}"}, f"r{n}-s{k}"))
            return Reply(text=f"step {k}" if k % 2 else None, tool_calls=calls)
        return f"Run {n} is done after {k} tool turns."

    return reply


def stream_fn_factory(job: Any) -> ScriptedModel:
    return ScriptedModel(scenario_reply(job.data), chunk_size=5)


def scripted_jobs(count: int) -> list[RunJob]:
    return [RunJob(f"run-{n:04d}", f"Task {n}", AgentContext("You add.", [], [add_text, shout]), data=n)
            for n in range(count)]


def local_messages(job: RunJob) -> list[Any]:
    return run_agent_loop(job.prompts, job.context, config_factory(job), emit=lambda e: None,
                          stream_fn=stream_fn_factory(job), clock=clock)


@pytest.fixture(scope="module")
def scripted_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RunJob], list[RunResult]]:
    out = tmp_path_factory.mktemp("scripted")
    jobs = scripted_jobs(200)
    results = list(run_many(jobs, config_factory=config_factory, stream_fn_factory=stream_fn_factory,
                            clock=clock, transcripts_dir=out, max_concurrency_per_node=32, progress=False))
    return out, jobs, results


# --------------------------------------------------------------------------- tests


def test_importing_interpreters_does_not_import_ray() -> None:
    code = "import sys, interpreters, interpreters.aio; import interpreters.ray; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_200_scripted_runs_match_local_runs(scripted_runs: tuple[Path, list[RunJob], list[RunResult]]) -> None:
    out, jobs, results = scripted_runs
    assert len(results) == 200
    assert [r.error for r in results if not r.ok] == []
    assert sorted(r.job_id for r in results) == [j.id for j in jobs]
    by_id = {r.job_id: r for r in results}
    for job in jobs:
        result = by_id[job.id]
        assert list(result.messages) == local_messages(job), job.id
        assert Path(result.transcript) == out / f"{job.id}.jsonl"
        assert not result.resumed
    assert len(list(out.glob("*.jsonl"))) == 200
    assert len({r.worker_pid for r in results}) == 2  # one worker per CPU, both used


@dataclass(frozen=True)
class CassetteFactory:
    """Each job's model calls answered from its own recorded transcript (on the worker)."""

    folder: str

    def __call__(self, job: Any) -> Any:
        from interpreters import Cassette

        return Cassette(Path(self.folder) / f"{job.id}.jsonl")


def test_runs_on_ray_replay_through_cassettes_with_no_model(
        scripted_runs: tuple[Path, list[RunJob], list[RunResult]], tmp_path: Path) -> None:
    out, jobs, _ = scripted_runs
    chosen = jobs[:40]
    results = list(run_many(chosen, config_factory=config_factory, stream_fn_factory=CassetteFactory(str(out)),
                            clock=clock, transcripts_dir=tmp_path, progress=False))
    assert [r.error for r in results if not r.ok] == []  # a miss would be an error result
    by_id = {r.job_id: r for r in results}
    for job in chosen:
        assert list(by_id[job.id].messages) == local_messages(job), job.id


_MCP_SERVERS: dict[str, Any] = {}


def mcp_tools_factory(job: Any) -> list[Any]:
    """The probe MCP server's tools, the server opened once per worker process."""
    from interpreters.mcp import MCPServer
    from tests.support.mcp_probe import PROBE

    if "probe" not in _MCP_SERVERS:
        _MCP_SERVERS["probe"] = MCPServer.in_process(PROBE).__enter__()
    return _MCP_SERVERS["probe"].tools()


def mcp_stream_fn_factory(job: Any) -> ScriptedModel:
    return ScriptedModel([Reply(tool_calls=[ScriptedCall("add", {"a": job.data, "b": 1})]), "done"])


def test_mcp_tools_work_on_ray_workers(tmp_path: Path) -> None:
    jobs = [RunJob(f"mcp-{n}", "Add.", AgentContext("You add."), data=n) for n in range(6)]
    results = list(run_many(jobs, config_factory=config_factory, stream_fn_factory=mcp_stream_fn_factory,
                            tools_factory=mcp_tools_factory, clock=clock, transcripts_dir=tmp_path, progress=False))
    assert [r.error for r in results if not r.ok] == []
    assert sorted((r.job_id, r.messages[2].text) for r in results) == [(f"mcp-{n}", str(n + 1)) for n in range(6)]


def eval_agent(case: Any) -> Any:
    """The eval agent of the Ray eval test (module level: workers import it)."""
    from interpreters.evals import AgentSpec

    i = int(case.name.split("-")[1])
    model = ScriptedModel([Reply(tool_calls=[ScriptedCall("add", {"a": i, "b": 2})]), f"It is {i + 2}."])
    return AgentSpec(AgentContext("You add.", [], [add_text]), AgentLoopConfig(model=Model(id="m")), model)


def test_an_eval_on_ray_gives_the_report_of_a_local_eval(tmp_path: Path) -> None:
    from interpreters.evals import Case, Contains, Dataset, NoError, ToolCalled, evaluate

    dataset = Dataset([Case(f"sum-{i}", f"{i} + 2?", evaluators=[Contains(str(i + 2))]) for i in range(6)],
                      [NoError(), ToolCalled("add")])
    local = evaluate(dataset, eval_agent, repeat=2, transcripts=tmp_path / "local", mode="all")
    remote = evaluate(dataset, eval_agent, repeat=2, transcripts=tmp_path / "ray", mode="all", executor="ray")
    assert local.passed and remote.passed
    assert [(r.case, r.repeat, r.passed, r.scores, r.facts) for r in remote.runs] == [
        (r.case, r.repeat, r.passed, r.scores, r.facts) for r in local.runs]
    assert [c.verdict for c in remote.compare(local)] == ["same"] * 6
    assert sorted(p.relative_to(tmp_path / "ray").as_posix() for p in (tmp_path / "ray").glob("*/*.jsonl"))[:2] == [
        "sum-0/1.jsonl", "sum-0/2.jsonl"]
    offline = evaluate(dataset, eval_agent, repeat=2, transcripts=tmp_path / "ray", mode="none", executor="ray")
    assert [(r.case, r.facts) for r in offline.runs] == [(r.case, r.facts) for r in local.runs]


def test_a_failing_factory_is_an_error_result(tmp_path: Path) -> None:
    results = list(run_many([("hi", AgentContext())], config_factory=broken_config, transcripts_dir=tmp_path,
                            progress=False))
    assert len(results) == 1
    assert results[0].error == "RuntimeError: no config today"
    assert results[0].messages == ()


def broken_config(job: Any) -> AgentLoopConfig:
    raise RuntimeError("no config today")


@pytest.mark.parametrize(("options", "message"), [
    ({"worker_options": {"scheduling_strategy": "SPREAD"}},
     "worker_options cannot set 'scheduling_strategy': run_many pins its workers to their nodes itself"),
    ({"worker_options": {"max_task_retries": 5}},
     "worker_options cannot set 'max_task_retries': set max_retries instead"),
    ({"recovery_timeout": 0}, "recovery_timeout must be a positive number of seconds, not 0"),
    ({"max_retries": -1}, "max_retries must be an int of at least 0, not -1"),
    ({"workers_per_node": 0}, "workers_per_node must be None (one per CPU) or an int of at least 1, not 0"),
    ({"max_concurrency_per_node": 0}, "max_concurrency_per_node must be an int of at least 1, not 0"),
])
def test_bad_options_are_refused_before_anything_runs(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        run_many([("hi", AgentContext())], config_factory=config_factory, transcripts_dir=tmp_path, **options)
    assert str(info.value).startswith(message)
    assert list(tmp_path.iterdir()) == []


# -- a run that kills its worker every time


def suicide_tools(job: Any) -> list[AgentTool]:
    markers = Path(job.data)

    @tool
    def crash() -> str:
        """Take the process down."""
        (markers / f"crash-{uuid.uuid4().hex}").touch()
        os.kill(os.getpid(), signal.SIGKILL)
        return "unreachable"

    return [crash]


def crash_stream_fn(job: Any) -> ScriptedModel:
    return ScriptedModel([Reply(tool_calls=[ScriptedCall("crash", {}, "x1")]), "Survived."])


def test_a_run_that_keeps_losing_its_worker_fails_after_max_retries(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    [result] = list(run_many([RunJob("crasher", "Crash.", AgentContext(), data=str(markers))],
                             config_factory=config_factory, stream_fn_factory=crash_stream_fn,
                             tools_factory=suicide_tools, clock=clock, transcripts_dir=tmp_path / "runs",
                             max_retries=1, progress=False))
    assert not result.ok and result.attempts == 2
    assert result.error is not None
    assert result.error.startswith("ActorUnavailableError: ") or result.error.startswith("ActorDiedError: ")
    assert result.error.endswith("(the run lost its worker 2 times; max_retries=1)")
    assert len(list(markers.iterdir())) == 2  # the first attempt and one retry, resumed at the tool call


# -- a worker killed in a tool call


KILL_REPLIES = [
    Reply(text="First a.", tool_calls=[ScriptedCall("work", {"name": "a"}, "k1")]),
    Reply(tool_calls=[ScriptedCall("work", {"name": "b"}, "k2")]),
    Reply(text="a and b are done."),
]


def kill_stream_fn(job: Any) -> ScriptedModel:
    return ScriptedModel(lambda ctx, i: KILL_REPLIES[sum(1 for m in ctx.messages if m.role == "assistant")],
                         chunk_size=4)


def work_tool(markers: Path, job_id: str, victim: bool) -> AgentTool:
    @tool
    def work(name: str) -> str:
        """Do some work."""
        (markers / f"exec-{job_id}-{name}-{uuid.uuid4().hex}").write_text(str(os.getpid()))
        if victim and name == "b" and not (markers / "killed").exists():
            tmp = markers / "pid.tmp"
            tmp.write_text(str(os.getpid()))
            tmp.rename(markers / "pid")
            time.sleep(120)
        return f"{name} worked"

    return work


def kill_tools(job: Any) -> list[AgentTool]:
    return [work_tool(Path(job.data["markers"]), job.id, job.data["victim"])]


def executions(markers: Path, job_id: str, name: str) -> int:
    return len(list(markers.glob(f"exec-{job_id}-{name}-*")))


def test_a_killed_worker_resumes_its_runs_from_their_transcripts(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    transcripts = tmp_path / "transcripts"
    jobs = [RunJob(f"kill-{i}", "Do a, then b.", AgentContext("You work."),
                   data={"markers": str(markers), "victim": i == 0}) for i in range(4)]
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 60
        while not (markers / "pid").exists():
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        pid = int((markers / "pid").read_text())
        (markers / "killed").write_text("yes")
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    results = {r.job_id: r for r in run_many(jobs, config_factory=config_factory, stream_fn_factory=kill_stream_fn,
                                             tools_factory=kill_tools, clock=clock, transcripts_dir=transcripts,
                                             progress=False)}
    thread.join(5)
    assert killed, "the victim never reached its tool call"
    victim = results["kill-0"]
    assert victim.error is None
    assert victim.resumed
    assert victim.worker_pid != killed[0]

    # Every run ends as an uninterrupted one does.
    ref_markers = tmp_path / "reference"
    ref_markers.mkdir()
    for job in jobs:
        ref_job = RunJob(job.id, job.prompts, job.context, {"markers": str(ref_markers), "victim": False})
        expected = run_agent_loop(job.prompts, AgentContext("You work.", [], kill_tools(ref_job)),
                                  config_factory(job), emit=lambda e: None, stream_fn=kill_stream_fn(job),
                                  clock=clock)
        assert list(results[job.id].messages) == expected, job.id
        assert results[job.id].ok

    # a had finished before the kill: it was not run again; b was cut and ran again.
    assert executions(markers, "kill-0", "a") == 1
    assert executions(markers, "kill-0", "b") == 2
    text = (transcripts / "kill-0.jsonl").read_text()
    assert '"resumed_from_step"' in text
    assert text.count('"type":"call_llm"') == 3  # no model reply asked for twice

    # Running the same jobs again over the same directory resumes finished runs: nothing runs.
    before = len(list(markers.glob("exec-*")))
    again = {r.job_id: r for r in run_many(jobs, config_factory=config_factory, stream_fn_factory=kill_stream_fn,
                                           tools_factory=kill_tools, clock=clock, transcripts_dir=transcripts,
                                           progress=False)}
    assert len(list(markers.glob("exec-*"))) == before
    assert all(r.resumed and r.messages == results[r.job_id].messages for r in again.values())


# -- replay_many


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))


def test_replay_many_reports_the_modified_transcripts_at_their_steps(
        scripted_runs: tuple[Path, list[RunJob], list[RunResult]], tmp_path: Path) -> None:
    source, jobs, _ = scripted_runs
    for job in jobs[:100]:
        shutil.copy(source / f"{job.id}.jsonl", tmp_path / f"{job.id}.jsonl")
    expected: dict[str, int] = {}

    # 1. a tool result changed in the input of a step (a tool that now answers differently)
    p = tmp_path / "run-0003.jsonl"
    lines = _lines(p)
    i = next(i for i, x in enumerate(lines) if x.get("input", {}).get("type") == "tool_finished")
    lines[i]["input"]["result"]["content"][0]["text"] = "tampered"
    _write(p, lines)
    expected[str(p)] = lines[i]["step"]

    # 2. a recorded effect changed (the core used to ask for other arguments)
    p = tmp_path / "run-0014.jsonl"
    lines = _lines(p)
    i = [i for i, x in enumerate(lines) if any(e.get("type") == "execute_tool" for e in x.get("effects", []))][-1]
    for e in lines[i]["effects"]:
        if e.get("type") == "execute_tool":
            e["args"] = {"a": -1, "b": -1}
    _write(p, lines)
    expected[str(p)] = lines[i]["step"]

    # 3. the final messages changed in the last step
    p = tmp_path / "run-0057.jsonl"
    lines = _lines(p)
    last = lines[-1]
    run_ended = next(e for e in last["effects"] if e.get("type") == "run_ended")
    assert run_ended["messages"], "the run ended with messages"
    run_ended["messages"] = run_ended["messages"][:-1]
    _write(p, lines)
    expected[str(p)] = last["step"]

    summary = replay_many(tmp_path, mode="strict", progress=False)
    assert len(summary.outcomes) == 100
    assert summary.errors == ()
    assert {o.path: o.step for o in summary.diverged} == expected
    assert len(summary.ok) == 97
    report = summary.report()
    assert "3 diverged" in report
    assert "run-0003.jsonl: step" in report and "tampered" in report

    # LLM-only replay of untouched transcripts: the recorded replies against today's tools.
    untouched = [tmp_path / f"{job.id}.jsonl" for job in jobs[20:40]]
    llm = replay_many(untouched, mode="llm", config_factory=replay_config, tools_factory=replay_tools,
                      progress=False)
    assert llm.all_ok, llm.report()
    assert [Path(o.path).name for o in llm.outcomes] == sorted(p.name for p in untouched)


def replay_config(path: Path) -> AgentLoopConfig:
    n = int(path.stem.split("-")[1])
    return AgentLoopConfig(model=Model(id=f"scripted-{n % 3}"))


def replay_tools(path: Path) -> list[AgentTool]:
    return [add_text, shout]


# -- tools that ask for cluster resources


@tool
def where() -> str:
    """Where am I running."""
    ctx = ray.get_runtime_context()
    return json.dumps({"pid": os.getpid(), "resources": ctx.get_assigned_resources(),
                       "task": ctx.get_task_id(), "actor": ctx.get_actor_id()})


@tool
def worker_pid() -> str:
    """The pid of the worker running the agent loop."""
    return str(os.getpid())


@tool
def explode() -> str:
    """Always fails."""
    raise ValueError("boom")


def remote_tools(job: Any) -> list[AgentTool]:
    return [remote_tool(where, num_cpus=1, memory=50 * 1024 * 1024), worker_pid, remote_tool(explode, num_cpus=0.5)]


def remote_stream_fn(job: Any) -> ScriptedModel:
    return ScriptedModel([
        Reply(tool_calls=[ScriptedCall("where", {}, "w1"), ScriptedCall("worker_pid", {}, "w2"),
                          ScriptedCall("explode", {}, "w3")]),
        "Done.",
    ])


def test_a_resource_requesting_tool_runs_as_its_own_task(tmp_path: Path) -> None:
    [result] = list(run_many([RunJob("remote", "Where?", AgentContext())], config_factory=config_factory,
                             stream_fn_factory=remote_stream_fn, tools_factory=remote_tools, clock=clock,
                             transcripts_dir=tmp_path, progress=False))
    assert result.ok, result.error
    results = {m.tool_call_id: m for m in result.messages if m.role == "toolResult"}
    info = json.loads(results["w1"].content[0].text)
    loop_pid = int(results["w2"].content[0].text)
    assert loop_pid == result.worker_pid
    assert info["pid"] != loop_pid
    assert info["actor"] is None and info["task"]
    assert info["resources"].get("CPU") == 1.0
    assert results["w3"].is_error and results["w3"].content[0].text == "boom"
    assert result.messages[-1].text == "Done."


# -- suspended runs: run_many reports them, resume_many goes on with them


@tool(requires_approval=True)
def remove(path: str) -> str:
    """Remove a file."""
    return f"removed {path}"


@tool(deferred=True)
def ask(question: str) -> str:
    """Ask a person."""
    raise AssertionError("a deferred tool is never called")


def approval_reply(n: int) -> Any:
    """Run ``n``: one batch (an add; a removal that needs an approval when ``n`` is odd; a
    question for a person when ``n % 4 == 3``); run 5 asks for a second removal after the
    first; then a text that quotes every tool result."""

    def reply(ctx: Any, _index: int) -> Reply | str:
        k = sum(1 for m in ctx.messages if m.role == "assistant")
        if k == 0:
            calls = [ScriptedCall("add", {"a": n, "b": 1}, f"a{n}")]
            if n % 2:
                calls.append(ScriptedCall("remove", {"path": f"f{n}.txt"}, f"r{n}"))
            if n % 4 == 3:
                calls.append(ScriptedCall("ask", {"question": f"why {n}?"}, f"q{n}"))
            return Reply(tool_calls=calls)
        if k == 1 and n == 5:
            return Reply(tool_calls=[ScriptedCall("remove", {"path": "g5.txt"}, "r5b")])
        seen = [f"{m.tool_call_id}={m.content[0].text}{'!' if m.is_error else ''}"
                for m in ctx.messages if m.role == "toolResult"]
        return f"Run {n}: " + ", ".join(seen)

    return reply


def approval_stream_fn(job: Any) -> ScriptedModel:
    return ScriptedModel(approval_reply(job.data), chunk_size=6)


def approval_jobs(count: int) -> list[RunJob]:
    return [RunJob(f"ok-{n}", f"Task {n}", AgentContext("You tidy.", [], [add_text, remove, ask]), data=n)
            for n in range(count)]


def local_through(job: RunJob, rounds: list[dict[str, Any]]) -> list[Any]:
    """The messages of ``job`` run here (sync), given each round of decisions at once when it
    suspends, with ``resume_suspended``."""
    from interpreters import agent_loop, resume_suspended

    stream = agent_loop(job.prompts, job.context, config_factory(job), stream_fn=approval_stream_fn(job),
                        clock=clock)
    messages = stream.result()
    for decisions in rounds:
        assert stream.suspension is not None, job.id
        stream = resume_suspended(stream.suspension, decisions, context=job.context, config=config_factory(job),
                                  stream_fn=approval_stream_fn(job), clock=clock)
        messages = stream.result()
    assert stream.suspension is None, job.id
    return messages


@pytest.fixture(scope="module")
def approval_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[RunJob], dict[str, RunResult]]:
    out = tmp_path_factory.mktemp("approvals")
    jobs = approval_jobs(8)
    results = {r.job_id: r for r in run_many(jobs, config_factory=config_factory, stream_fn_factory=approval_stream_fn,
                                            clock=clock, transcripts_dir=out, progress=False)}
    return out, jobs, results


def resume_options(out: Path) -> dict[str, Any]:
    return dict(config_factory=config_factory, stream_fn_factory=approval_stream_fn, clock=clock,
                transcripts_dir=out, progress=False, workers_per_node=1)


def test_run_many_reports_suspended_runs_with_their_pending_calls(
        approval_runs: tuple[Path, list[RunJob], dict[str, RunResult]]) -> None:
    out, jobs, results = approval_runs
    assert {r.job_id: r.status for r in results.values()} == {
        j.id: "suspended" if j.data % 2 else "finished" for j in jobs}
    for r in results.values():
        assert r.error is None and r.ok == (not r.suspended) and r.job is not None
        if r.suspended:
            assert r.suspension is not None
            n = r.job.data
            assert [(p.tool_call_id, p.waits_for) for p in r.suspension.pending] == [
                (f"r{n}", "approval"), *([(f"q{n}", "result")] if n % 4 == 3 else [])]
            # the messages so far, and the suspension, are those of the same run suspending here
            from interpreters import agent_loop

            local = agent_loop(r.job.prompts, r.job.context, config_factory(r.job),
                               stream_fn=approval_stream_fn(r.job), clock=clock)
            assert list(r.messages) == local.result() and r.suspension == local.suspension
            last = (out / f"{r.job_id}.jsonl").read_text().splitlines()[-1]
            assert '"type":"run_suspended"' in last
        else:
            assert r.suspension is None and r.messages[-1].text == f"Run {r.job.data}: a{r.job.data}={r.job.data + 1}"

    # run_many over the same directory again: the suspended runs come back suspended, nothing runs
    again = {r.job_id: r for r in run_many(jobs, config_factory=config_factory, stream_fn_factory=approval_stream_fn,
                                          clock=clock, transcripts_dir=out, progress=False)}
    assert {k: (r.status, r.resumed, r.messages) for k, r in again.items()} == {
        k: (r.status, True, r.messages) for k, r in results.items()}
    assert all(again[k].suspension == results[k].suspension for k in results)


def test_bad_decisions_are_refused_before_anything_runs(
        approval_runs: tuple[Path, list[RunJob], dict[str, RunResult]]) -> None:
    from agentcore import Approve, ToolOutput

    out, _, results = approval_runs
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    suspended = sorted((r for r in results.values() if r.suspended), key=lambda r: r.job_id)
    decisions: dict[str, Any] = {
        "ok-1": {"r1": Approve(), "r9": Approve()},             # an unknown call
        "ok-3": {"r3": ToolOutput("gone"), "q3": ToolOutput("because")},  # the wrong kind
        # ok-5 has no decisions
        "ok-7": {"r7": Approve()},                               # q7 is missing
        "ok-0": {"r0": Approve()},                               # not among the suspensions
    }
    with pytest.raises(ValueError) as info:
        resume_many([*suspended, results["ok-2"]], decisions, **resume_options(out))
    assert str(info.value) == (
        "resume_many: nothing was run; 6 problems:\n"
        "  job 'ok-1': Cannot resume: no pending tool call r9\n"
        "  job 'ok-3': Cannot resume: tool call r3 waits for an approval (Approve or Deny), not ToolOutput\n"
        "  job 'ok-5': no decisions for it (it waits on r5)\n"
        "  job 'ok-7': Cannot resume: no decision for pending tool call q7\n"
        "  job 'ok-2': did not suspend: its run finished\n"
        "  job 'ok-0': decisions given, but it is not among the suspensions")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_resume_many_finishes_suspended_runs_as_local_runs_given_the_same_decisions(
        approval_runs: tuple[Path, list[RunJob], dict[str, RunResult]], tmp_path: Path) -> None:
    from agentcore import Approve, Deny, ToolOutput
    from agentcore.codec import from_json, to_json

    source, jobs, first = approval_runs
    out = tmp_path / "runs"
    shutil.copytree(source, out)
    rounds: dict[str, list[dict[str, Any]]] = {
        "ok-1": [{"r1": Approve()}],
        "ok-3": [{"r3": Deny("keep it"), "q3": ToolOutput("because")}],
        "ok-5": [{"r5": Approve(arguments={"path": "F5.txt"})}, {"r5b": Approve()}],
        "ok-7": [{"r7": Approve(), "q7": Deny("nobody knows")}],
    }
    suspended = [r for r in first.values() if r.suspended]
    second = {r.job_id: r for r in resume_many(suspended, {k: v[0] for k, v in rounds.items()},
                                               **resume_options(out))}
    assert {k: r.status for k, r in second.items()} == {
        "ok-1": "finished", "ok-3": "finished", "ok-5": "suspended", "ok-7": "finished"}
    assert second["ok-5"].suspension is not None
    assert [p.tool_call_id for p in second["ok-5"].suspension.pending] == ["r5b"]
    # The second round: a stored suspension (JSON), given as a (job id, suspension) pair.
    stored = json.dumps(to_json(second["ok-5"].suspension))
    [third] = list(resume_many([(jobs[5], from_json(json.loads(stored)))], {"ok-5": rounds["ok-5"][1]},
                               **resume_options(out)))
    final = {**second, "ok-5": third}
    for job in jobs:
        if job.id not in rounds:
            continue
        result = final[job.id]
        assert result.ok and not result.resumed and result.attempts == 1, (job.id, result.error)
        assert list(result.messages) == local_through(job, rounds[job.id]), job.id
    # The model saw the denials as error results.
    assert final["ok-3"].messages[-1].text == "Run 3: a3=4, r3=keep it!, q3=because"
    assert final["ok-7"].messages[-1].text == "Run 7: a7=8, r7=removed f7.txt, q7=nobody knows!"
    assert final["ok-5"].messages[-1].text == "Run 5: a5=6, r5=removed F5.txt, r5b=removed g5.txt"
    # One transcript per run, continued through each suspension; strict replay of all is identical.
    assert sorted(p.name for p in out.glob("*.jsonl")) == sorted(f"{j.id}.jsonl" for j in jobs)
    assert (out / "ok-5.jsonl").read_text().count('"resumed_suspension"') == 2
    summary = replay_many(out, mode="strict", progress=False)
    assert summary.all_ok and len(summary.outcomes) == 8, summary.report()
    assert all(o.finished for o in summary.outcomes)

    # resume_many again with the same arguments (as after a lost driver): the runs are finished.
    again = list(resume_many(suspended, {k: v[0] for k, v in rounds.items()}, **resume_options(out)))
    assert {r.job_id: (r.status, r.resumed) for r in again} == {
        "ok-1": ("finished", True), "ok-3": ("finished", True), "ok-5": ("finished", True),
        "ok-7": ("finished", True)}
    assert {r.job_id: r.messages for r in again} == {k: final[k].messages for k in rounds}


# -- a worker killed during a resumed run


def crash_once_tools(job: Any) -> list[AgentTool]:
    markers = Path(job.data)

    @tool(requires_approval=True)
    def wipe(disk: str) -> str:
        """Wipe a disk (kills its worker the first time)."""
        (markers / f"exec-{uuid.uuid4().hex}").touch()
        if not (markers / "crashed").exists():
            (markers / "crashed").touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return f"wiped {disk}"

    return [wipe, add_text]


def crash_once_stream_fn(job: Any) -> ScriptedModel:
    def reply(ctx: Any, _index: int) -> Reply | str:
        k = sum(1 for m in ctx.messages if m.role == "assistant")
        if k == 0:
            return Reply(tool_calls=[ScriptedCall("wipe", {"disk": "d1"}, "w1")])
        if k == 1:
            return Reply(tool_calls=[ScriptedCall("add", {"a": 2, "b": 3}, "s1")])
        return "Done: " + ", ".join(m.content[0].text for m in ctx.messages if m.role == "toolResult")

    return ScriptedModel(reply)


def test_a_worker_lost_during_a_resumed_run_resumes_it_from_its_transcript(tmp_path: Path) -> None:
    from agentcore import Approve
    from interpreters import agent_loop, resume_suspended

    markers = tmp_path / "markers"
    markers.mkdir()
    job = RunJob("wiper", "Wipe d1.", AgentContext("You wipe."), data=str(markers))
    options: dict[str, Any] = dict(config_factory=config_factory, stream_fn_factory=crash_once_stream_fn,
                                   tools_factory=crash_once_tools, clock=clock, transcripts_dir=tmp_path / "runs",
                                   progress=False, workers_per_node=1)
    [suspended] = list(run_many([job], **options))
    assert suspended.suspended and list(markers.iterdir()) == []
    [result] = list(resume_many([suspended], {"wiper": {"w1": Approve()}}, **options))
    assert result.ok, result.error
    assert result.attempts == 2 and result.resumed
    assert len(list(markers.glob("exec-*"))) == 2  # cut by the kill, run again on resume
    assert result.messages[-1].text == "Done: wiped d1, 5"

    ref = tmp_path / "reference"
    ref.mkdir()
    (ref / "crashed").touch()
    tools = crash_once_tools(RunJob("", "", data=str(ref)))
    ref_job = RunJob(job.id, job.prompts, AgentContext("You wipe.", [], tools),
                     data=str(ref))
    stream = agent_loop(ref_job.prompts, ref_job.context, config_factory(ref_job),
                        stream_fn=crash_once_stream_fn(ref_job), clock=clock)
    stream.result()
    assert stream.suspension is not None
    expected = resume_suspended(stream.suspension, {"w1": Approve()}, context=ref_job.context,
                                config=config_factory(ref_job), stream_fn=crash_once_stream_fn(ref_job),
                                clock=clock).result()
    assert list(result.messages) == expected
    text = (tmp_path / "runs" / "wiper.jsonl").read_text()
    assert '"resumed_suspension"' in text and '"resumed_from_step"' in text
    assert replay_many(tmp_path / "runs", progress=False).all_ok
