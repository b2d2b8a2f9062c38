"""Every exception class the library defines survives pickling.

Errors travel between processes: ``concurrent.futures.ProcessPoolExecutor``, multiprocessing
and Ray ship an exception raised in a worker back to the caller by pickling it. An exception
whose ``__init__`` takes more than its message cannot be rebuilt from its pickle by default, and
the caller then gets a broken pool instead of the error. The test walks every module of both
packages, so that a new exception class without a sample below fails it.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

import pytest

import agentcore
import interpreters
from interpreters.transcript import TranscriptBusy, TranscriptFile


def _divergence() -> Any:
    from interpreters.replay import Divergence

    return Divergence("effect", 7, 2, {"type": "call_llm"}, {"type": "call_llm", "id": 3}, "- a\n+ b",
                      "the replayed effect differs")


def _samples() -> dict[str, Callable[[], BaseException]]:
    from agentcore.codec import CodecError
    from interpreters.agent import AgentBusyError
    from interpreters.cli.common import Interrupted, UsageError
    from interpreters.mcp import MCPServerError
    from interpreters.pytest_plugin import AgentRecordingDrift, AgentRecordingRefreshed
    from interpreters.ray.tools import RemoteToolError
    from interpreters.replay import ReplayDivergence
    from interpreters.replay.recovery import AlreadyResumed
    from interpreters.runtime.journal import InterpreterError
    from interpreters.signal import StopRun
    from interpreters.streams.cassette import CassetteMiss, Difference, Recording
    from interpreters.transcript import TranscriptError

    return {
        "agentcore.codec.CodecError": lambda: CodecError("$.run.turns is a str ('x'), not an int"),
        "agentcore.records._Probe": lambda: getattr(importlib.import_module("agentcore.records"), "_Probe")(),
        "interpreters.agent.AgentBusyError": lambda: AgentBusyError("Agent is already processing."),
        "interpreters.cli.common.Interrupted": lambda: Interrupted(),
        "interpreters.cli.common.UsageError": lambda: UsageError("no such file: x.jsonl"),
        "interpreters.runtime.journal.InterpreterError": lambda: InterpreterError("the core rejected an input"),
        "interpreters.pytest_plugin.AgentRecordingDrift": lambda: AgentRecordingDrift("model call 1: drifted"),
        "interpreters.pytest_plugin.AgentRecordingRefreshed": lambda: AgentRecordingRefreshed("a.candidate.jsonl"),
        "interpreters.signal.StopRun": lambda: StopRun("stop"),
        "interpreters.mcp.connection.MCPServerError": lambda: MCPServerError("MCP server x failed: closed"),
        "interpreters.streams.cassette.cassette.CassetteMiss": lambda: CassetteMiss(
            "model call 2 has no recording", 2, Recording("a.jsonl", 8, 2),
            Difference("messages.2.content.0.text", "5", "6", "key")),
        "interpreters.ray.tools.RemoteToolError": lambda: RemoteToolError("the tool raised"),
        "interpreters.replay.compare.ReplayDivergence": lambda: ReplayDivergence(_divergence(), 3),
        "interpreters.replay.live._Stop": lambda: getattr(importlib.import_module("interpreters.replay.live"),
                                                          "_Stop")(),
        "interpreters.replay.recovery.AlreadyResumed": lambda: AlreadyResumed("run.jsonl: this suspension was already "
                                                                       "resumed at step 10"),
        "interpreters.transcript.format.TranscriptError": lambda: TranscriptError(
            "line 3: damaged line", path=Path("run.jsonl"), line=3),
        "interpreters.transcript.writer.TranscriptBusy": lambda: TranscriptBusy(
            "run.jsonl: another process is writing this transcript", Path("run.jsonl"), "another process"),
    }


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in (agentcore, interpreters):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith(".__main__"):
                continue  # running the command line is what importing it does
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if (inspect.isclass(value) and issubclass(value, BaseException)
                        and value.__module__ == module.__name__):
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def _state(exc: BaseException) -> Any:
    return (type(exc), str(exc), exc.args, {k: v for k, v in vars(exc).items() if not k.startswith("__")})


def test_every_exception_class_has_a_sample() -> None:
    assert sorted(_exception_classes()) == sorted(_samples())


@pytest.mark.parametrize("name", sorted(_samples()))
def test_every_exception_pickles_and_unpickles(name: str) -> None:
    exc = _samples()[name]()
    assert f"{type(exc).__module__}.{type(exc).__qualname__}" == name
    back = pickle.loads(pickle.dumps(exc))
    assert _state(back) == _state(exc)


def _record_in_worker(path: str) -> str:
    from agentcore import AgentContext, AgentLoopConfig, Model
    from interpreters import ScriptedModel, agent_loop
    from interpreters.transcript import TranscriptRecorder

    ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    agent_loop("hi", ctx, cfg, stream_fn=ScriptedModel(["hello"]), journal=TranscriptRecorder(path, ctx, cfg)).result()
    return "recorded"


def test_a_transcript_busy_raised_in_a_worker_process_reaches_the_caller(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    held = TranscriptFile.claim(path, create=True)  # this process writes the transcript
    try:
        with ProcessPoolExecutor(1) as pool:
            with pytest.raises(TranscriptBusy) as info:
                pool.submit(_record_in_worker, str(path)).result(timeout=60)
    finally:
        held.close()
    assert info.value.path == path and info.value.writer == "another process"
    assert str(info.value) == (f"{path}: another process is writing this transcript (a second worker, or "
                               "pytest-xdist running the same test twice?); give each run its own path")
