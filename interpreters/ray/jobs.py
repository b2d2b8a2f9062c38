"""Jobs and results: what :func:`interpreters.ray.run_many` is given and what it yields.

Plain data, pickled between the driver and the workers; nothing here imports Ray.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentcore import AgentContext, AgentMessage, Suspension

__all__ = ["JobLike", "Prompts", "RunJob", "RunResult", "RunStatus", "as_job", "transcript_name"]

Prompts = str | AgentMessage | Sequence[AgentMessage]
JobLike = Any  # RunJob | (prompts, context) | (id, prompts, context)


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


RunStatus = Literal["finished", "suspended", "error"]
"""What became of a run: it ended (``agent_end``), it suspended (it waits for decisions on tool
calls), or it could not be carried out (``RunResult.error``)."""


@dataclass(frozen=True, slots=True)
class RunResult:
    """What became of one job. ``messages`` are the messages the run added (as
    ``agent_loop(...).result()``); ``error`` is set when the run could not be carried out at all
    (a factory raised, its transcript no longer replays, its worker was lost more than
    ``max_retries`` times). A model or tool failure is not an ``error``: it is in the messages, as
    in any run.

    A run that *suspended* (tool calls wait for an approval or a result) has its
    :class:`~agentcore.Suspension` in ``suspension``, ``error`` ``None`` and ``ok`` false:
    ``status`` is ``"suspended"``, its transcript ends with the suspension, and
    :func:`interpreters.ray.resume_many` goes on with it."""

    job_id: str
    messages: tuple[AgentMessage, ...]
    transcript: str
    error: str | None = None
    resumed: bool = False
    """True when the run went on from an existing transcript (a retry after its worker or node
    was lost, or a re-run of ``run_many`` over the same directory; for ``resume_many``, a
    transcript that had recorded the decisions already), not from its prompts or its
    suspension."""
    worker_pid: int | None = None
    """The process that carried out the run (its last attempt)."""
    node_id: str | None = None
    """The Ray node the run's last attempt ran on, as that worker reports it."""
    seconds: float = 0.0
    """Wall time of the last attempt, inside the worker."""
    attempts: int = 1
    """How many workers the run was given to: 1, plus one per worker lost while it ran."""
    suspension: Suspension | None = None
    """The run's suspension when it suspended (``messages`` are then the messages so far)."""
    job: RunJob | None = field(default=None, repr=False, compare=False)
    """The job this is the result of (set by the driver; :func:`resume_many` builds the resumed
    run with the same factories from it)."""

    @property
    def ok(self) -> bool:
        """The run finished (``agent_end``) without an ``error``: false for a suspended run."""
        return self.error is None and self.suspension is None

    @property
    def suspended(self) -> bool:
        """The run suspended: ``suspension`` says on which calls; it is not an error."""
        return self.error is None and self.suspension is not None

    @property
    def status(self) -> RunStatus:
        """``"finished"``, ``"suspended"`` or ``"error"``."""
        if self.error is not None:
            return "error"
        return "suspended" if self.suspension is not None else "finished"


def as_job(value: JobLike, index: int) -> RunJob:
    """``value`` as a :class:`RunJob`; tuples without an id get ``run-<index>``."""
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
