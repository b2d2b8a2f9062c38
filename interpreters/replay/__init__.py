"""The replay interpreter: re-run the pure core over a transcript, and compare.

Theory of operation
-------------------

A transcript holds the initial state and every input fed to the core, so the core can be run
again, step by step, with no model, no tools and no clock: that is :func:`replay` (strict mode).
After each step the effects the core asks for now are compared with the recorded ones; the first
difference stops the replay with a :class:`ReplayDivergence` whose ``report`` (a
:class:`Divergence`) names the step, the turn, the expected and actual effect and a diff.

:func:`replay_llm` (LLM-only mode) runs the real sync interpreter with the user's tools and
hooks, but its stream function plays back the recorded model replies, and a journal checks the
effects of each step against the recording as they happen: the mode to test a code change
against a recorded conversation.

:func:`resume` (in :mod:`interpreters.replay.recovery`, and importable from here) reads the transcript
of a run that died, replays it strictly to the last recorded state, and goes on live from there.
The package, by job: :mod:`~interpreters.replay.compare` (what a replay compares and how it
reports a difference), :mod:`~interpreters.replay.strict` (strict replay, ``state_at``, ``fork``),
:mod:`~interpreters.replay.live` (LLM-only replay) and :mod:`~interpreters.replay.recovery`
(crash resume and the continuation of a suspended run's transcript). The recorded model replies
are a stream function, :class:`~interpreters.streams.recorded.RecordedModel`. See
``docs/replay.md``.
"""

from ..streams.recorded import RecordedModel
from .compare import Comparator, Divergence, ReplayDivergence, ReplayOptions, ReplayResult
from .live import areplay_llm, replay_llm
from .strict import fork, llm_request_at, llm_request_step, replay, state_at, step_recorded

__all__ = [
    "Comparator",
    "Divergence",
    "RecordedModel",
    "ReplayDivergence",
    "ReplayOptions",
    "ReplayResult",
    "fork",
    "llm_request_at",
    "llm_request_step",
    "replay",
    "replay_llm",
    "areplay_llm",
    "state_at",
    "step_recorded",
]


def __getattr__(name: str) -> object:
    """``interpreters.replay.resume`` and ``aresume``, which live in :mod:`interpreters.replay.recovery`
    (imported when first asked for: that module is built on this one)."""
    if name in ("resume", "aresume"):
        from . import recovery

        return getattr(recovery, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
