"""Running an eval: every case, ``repeat`` times, recorded to ``DIR/<case>/<repeat>.jsonl``, on the
asyncio interpreter, ``concurrency`` runs at a time; then scored from the trajectories.

``mode`` has the pytest plugin's meaning: ``none`` answers every model call from the recorded
transcripts through a cassette and never calls a model (a missing transcript is a failed run);
``once`` does that where a transcript exists and runs live (and records) where not; ``all`` runs
everything live and records it again; ``refresh`` runs live into ``<repeat>.candidate.jsonl``
beside each transcript, never overwriting one. A run that raises, outlives ``timeout`` seconds or
suspends is a failed run with its reason, never a crashed eval.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from ..streams.cassette import Cassette, CassetteMiss
from ..transcript import TranscriptRecorder
from .dataset import AgentSpec, Case, Dataset
from .evaluators import Evaluator, Trajectory
from .report import CaseRun, EvalReport, score_run

__all__ = ["AgentSpec", "MODES", "evaluate", "aevaluate"]

MODES: Final = ("none", "once", "all", "refresh")


def _spec_of(agent: AgentSpec | Callable[[Case], AgentSpec], case: Case) -> AgentSpec:
    spec = agent if isinstance(agent, AgentSpec) else agent(case)
    if not isinstance(spec, AgentSpec):
        raise TypeError(f"the agent factory returned {type(spec).__name__} for case {case.name}, not an AgentSpec")
    return spec


async def _one(case: Case, repeat: int, agent: Any, root: Path, mode: str, match: str, live: Any,
               timeout: float | None, evaluators: Sequence[Evaluator]) -> CaseRun:
    from .. import aio

    spec = _spec_of(agent, case)
    path = root / case.name / f"{repeat}.jsonl"
    recorded = path.exists()
    if mode == "none" and not recorded:
        missing = Trajectory([], case, error=f"no recorded transcript at {path} (mode 'none')", transcript=path)
        return score_run(case, repeat, missing, path, evaluators)
    replaying = mode in ("none", "once") and recorded
    target = path.with_name(f"{repeat}.candidate.jsonl") if mode == "refresh" else path
    stream_fn = Cassette(path, match=match) if replaying else (live or spec.stream_fn)
    started = time.perf_counter()
    error: str | None = None
    messages: list[Any] = []
    recorder = None
    try:
        if not replaying:
            target.parent.mkdir(parents=True, exist_ok=True)
            recorder = TranscriptRecorder(target, spec.context, spec.config, overwrite=True)
        stream = aio.agent_loop(case.prompts(), spec.context, spec.config, stream_fn=stream_fn, journal=recorder)

        async def drain() -> list[Any]:
            async for _ in stream:
                pass
            return await stream.result()

        messages = await asyncio.wait_for(drain(), timeout)
        if stream.suspension is not None:
            error = "the run suspended: tool calls wait for decisions (an eval's agent must not ask)"
    except asyncio.TimeoutError:
        error = f"the run took longer than {timeout:g} s"
    except CassetteMiss as miss:
        error = f"the run left its recording: {miss}"
    except Exception as exc:
        error = f"the run raised {type(exc).__name__}: {exc}"
    finally:
        if recorder is not None:
            recorder.close()
    run = Trajectory(messages, case, error=error, duration_ms=(time.perf_counter() - started) * 1e3,
                     transcript=target)
    # In a thread: an evaluator may call a model (LLMJudge) with the sync interpreter.
    return await asyncio.to_thread(score_run, case, repeat, run, target, evaluators)


async def aevaluate(dataset: Dataset, agent: AgentSpec | Callable[[Case], AgentSpec], *, repeat: int = 1,
                    concurrency: int = 8, transcripts: str | os.PathLike[str] = "eval-transcripts",
                    mode: str = "once", match: str = "forgiving", live: Callable[..., Any] | None = None,
                    timeout: float | None = 300.0, progress: bool | None = None) -> EvalReport:
    """:func:`evaluate` for asyncio code."""
    _check_options(mode, repeat, concurrency)
    root = Path(transcripts)
    gate = asyncio.Semaphore(concurrency)
    total = len(dataset.cases) * repeat
    done = 0
    show = progress if progress is not None else (total >= 20 and sys.stderr.isatty())

    async def guarded(case: Case, n: int) -> CaseRun:
        nonlocal done
        async with gate:
            result = await _one(case, n, agent, root, mode, match, live, timeout,
                                [*dataset.evaluators, *case.evaluators])
        done += 1
        if show:
            print(f"\reval: {done}/{total} runs", end="" if done < total else "\n", file=sys.stderr, flush=True)
        return result

    runs = await asyncio.gather(*(guarded(case, n) for case in dataset.cases for n in range(1, repeat + 1)))
    return EvalReport(list(runs), mode=mode)


def evaluate(dataset: Dataset, agent: AgentSpec | Callable[[Case], AgentSpec], *, repeat: int = 1,
             concurrency: int = 8, transcripts: str | os.PathLike[str] = "eval-transcripts", mode: str = "once",
             match: str = "forgiving", live: Callable[..., Any] | None = None, timeout: float | None = 300.0,
             progress: bool | None = None, executor: str | None = None, address: str | None = None) -> EvalReport:
    """Run every case of ``dataset`` ``repeat`` times with ``agent`` (an :class:`AgentSpec`, or a
    function of the case giving one), record each run, score it, and return the report. See the
    module doc for ``mode``; ``match`` is the cassettes' policy, ``live`` the stream function of
    live runs (default: the agent's), ``timeout`` each run's limit in seconds. ``executor="ray"``
    runs the cases on a Ray cluster (``address``; the agent factory must be importable there)."""
    if executor is not None:
        if executor != "ray":
            raise ValueError(f"executor must be None (asyncio, here) or 'ray', not {executor!r}")
        _check_options(mode, repeat, concurrency)
        from .on_ray import evaluate_on_ray

        return evaluate_on_ray(dataset, agent, repeat=repeat, transcripts=transcripts, mode=mode, match=match,
                               address=address)
    return asyncio.run(aevaluate(dataset, agent, repeat=repeat, concurrency=concurrency, transcripts=transcripts,
                                 mode=mode, match=match, live=live, timeout=timeout, progress=progress))


def _check_options(mode: str, repeat: int, concurrency: int) -> None:
    """Refuse bad options before anything runs, naming them."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, not {mode!r}")
    if type(repeat) is not int or repeat < 1:
        raise ValueError(f"repeat must be an int of at least 1, not {repeat!r}")
    if type(concurrency) is not int or concurrency < 1:
        raise ValueError(f"concurrency must be an int of at least 1, not {concurrency!r}")
