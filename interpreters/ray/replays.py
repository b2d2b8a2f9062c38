"""Replay at scale: :func:`replay_many` replays a directory of transcripts in batches of Ray tasks
and returns a :class:`ReplaySummary` (which runs diverged, at which step, with the diff)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentcore import AgentLoopConfig

from ..replay import Divergence, ReplayDivergence, ReplayOptions, replay, replay_llm
from ..runtime.hooks import failure_text
from ..transcript import TranscriptError, read_transcript
from .cluster import ensure_ray
from .progress import Progress

__all__ = ["ReplayOutcome", "ReplaySummary", "replay_many"]


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
    ray = ensure_ray(address, init_options)
    if batch_size is None:
        cpus = max(1.0, float(ray.cluster_resources().get("CPU", 1.0)))
        batch_size = max(1, min(64, math.ceil(len(paths) / (cpus * 4))))
    fn = ray.remote(_replay_batch).options(num_cpus=num_cpus, max_retries=max_retries)
    pending = {fn.remote(paths[i:i + batch_size], mode, options, config_factory, tools_factory): paths[i:i + batch_size]
               for i in range(0, len(paths), batch_size)}
    display = Progress(f"replay_many ({mode})", len(paths), progress)
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
