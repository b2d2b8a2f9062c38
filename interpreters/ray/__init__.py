"""The Ray interpreter: run and replay thousands of agent runs on a Ray cluster.

Theory of operation
-------------------

Nothing new happens to the loop here: every run is an ordinary asyncio run
(:func:`interpreters.aio.agent_loop`) recording its transcript (:class:`TranscriptRecorder`),
and every replay is an ordinary :func:`interpreters.replay.replay` / ``replay_llm``. This package
only decides *where* they run and what happens when a machine goes away.

- **Workers** (:mod:`.worker`). :func:`run_many` starts a few async Ray actors on each node with
  CPUs (``workers_per_node``, default: the node's CPU count), pinned to it, and gives each a share
  of ``max_concurrency_per_node``. A worker runs many agent runs concurrently in its event loop:
  agent runs wait on models and tools, so one process carries dozens of them.
- **The driver** (:mod:`.runs`) hands out jobs itself, to the least loaded worker with room, so
  the per-node limit is exact and nothing queues inside Ray; it gives workers to nodes that join
  and drops the nodes that leave, and never waits on one slow call while results are ready.
- **Code lives on the worker.** A job (:mod:`.jobs`) is data (an id, the prompts, an
  :class:`AgentContext`, and a free ``data`` payload). ``config_factory(job)``,
  ``stream_fn_factory(job)`` and ``tools_factory(job)`` are called *on the worker*, so HTTP
  clients, scripted models, locks and anything else that does not pickle is built where it is
  used. The factories themselves must pickle (module-level functions do).
- **Durability through the transcript.** Each run writes ``<transcripts_dir>/<job id>.jsonl``.
  When a worker process dies (SIGKILL, OOM killer) or its node is lost, the driver waits until
  Ray knows the worker is not running the job any more, then gives the job to a worker again; it
  finds its transcript and *resumes* it (:func:`interpreters.replay.aresume`): finished tool
  calls are not run again, recorded model replies are not asked for (and paid for) again, and
  the final messages are those of an uninterrupted run. A transcript that ends with
  ``agent_end`` resumes to its recorded messages at once, so re-running :func:`run_many` after
  the *driver* died only does the unfinished work (``existing="resume"``, the default).
- **Suspended runs** (:mod:`.suspensions`). A run that suspends (tool calls wait for an
  approval or a result) comes back as a :class:`RunResult` with its :class:`~agentcore.Suspension`
  (``result.suspended``); its transcript ends suspended. :func:`resume_many` checks every run's
  decisions with the core's own rule before it submits anything, then goes on with each run on
  a worker (``resume_suspended`` recording at the end of the same transcript), through the same
  driver as :func:`run_many`: a worker lost during a resumed run resumes it from its transcript.
- **Tools with resources** (:mod:`.tools`). :func:`remote_tool` wraps an :class:`AgentTool` so
  that each call runs as its own Ray task with resource options (CPUs, GPUs, memory, custom
  resources); the loop awaits it like any ``async`` tool.
- **Replay at scale** (:mod:`.replays`). :func:`replay_many` replays a directory of transcripts
  in batches of Ray tasks and returns a :class:`ReplaySummary`: which runs diverged, at which
  step, with the diff.

``import interpreters`` does not import this package, and this package imports ``ray`` only when
one of its functions is called (``pip install 'agentcore-fx[ray]'``). See ``docs/scaling.md``.
"""

from __future__ import annotations

from .jobs import RunJob, RunResult, RunStatus, transcript_name
from .replays import ReplayOutcome, ReplaySummary, replay_many
from .runs import resume_many, run_many
from .tools import RemoteToolError, remote_tool

__all__ = [
    "RemoteToolError",
    "ReplayOutcome",
    "ReplaySummary",
    "RunJob",
    "RunResult",
    "RunStatus",
    "remote_tool",
    "replay_many",
    "resume_many",
    "run_many",
    "transcript_name",
]
