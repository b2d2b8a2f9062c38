"""Resume: a run that died goes on from its transcript.

:func:`resume` (and :func:`aresume`, its asyncio twin) reads the transcript of a run that
stopped before its end (a crash, a killed worker), replays it strictly to the last recorded
state (:mod:`interpreters.replay`: any divergence stops it), works out which effects were still
waiting for an answer and goes on live from there, appending to the same transcript:

- a tool call that never finished is run again;
- a model call whose stream was cut is made again from the state before it, and the partial
  stream is marked superseded in the transcript (a ``resumed_from_step`` line);
- a run that had finished gives an event stream with no events.

The live part runs on the ordinary runners (:class:`interpreters.runtime.threads.SyncRun`,
:class:`interpreters.runtime.tasks.AsyncRun`), started from the recorded state with the outstanding
effects. See ``docs/replay.md``. (The module is not named ``resume``: importing it would then
shadow the function ``interpreters.resume``.)

A run that *suspended* (it waits for decisions on tool calls) is not resumed from here but with
``resume_suspended`` and its :class:`~agentcore.Suspension`; :func:`continue_transcript` gives
the recorder that goes on writing the transcript that recorded the suspension (what
``resume_suspended(..., transcript=path)`` records with), so that one file holds the whole run.
:func:`resume` of such a transcript gives a stream with no events whose ``suspension`` is set.

Both claim the transcript before they read it (:mod:`interpreters.transcript.writer`) and read
it through the claim, so that what they append follows exactly what they checked: a suspension
is resumed at most once per transcript (:class:`AlreadyResumed` for every later attempt, in any
thread or process), and a crash resume never appends to a run another writer still records.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from returns.result import Failure

from agentcore import (
    AgentLoopConfig,
    Approve,
    CallLlm,
    CancelLlm,
    Deny,
    DoneEvent,
    Effect,
    Emit,
    ErrorEvent,
    Input,
    LoopState,
    Resumed,
    RunEnded,
    StreamEventReceived,
    Suspension,
    ToolUpdated,
)
from agentcore.codec import to_json
from agentcore.effects import RunSuspended
from agentcore.records import replace
from agentcore.resumption import with_config_model
from agentcore.state import Finished, Suspended

from ..runtime.clock import now_ms
from ..runtime.journal import Journals, observers
from ..secrets import REDACTED
from ..signal import AbortSignal
from ..transcript import (
    EffectEncoder,
    FlushMode,
    Transcript,
    TranscriptBusy,
    TranscriptError,
    TranscriptFile,
    TranscriptRecorder,
    compact_json,
    parse_transcript,
    read_transcript,
)
from ..transcript.format import CALLER_SECRETS
from .compare import Comparator, Divergence, ReplayDivergence, ReplayOptions
from .strict import step_recorded

__all__ = ["AlreadyResumed", "aresume", "continue_transcript", "resume", "transcript_difference", "with_transcript"]


_R = TypeVar("_R")


class AlreadyResumed(TranscriptError):
    """A suspension is resumed at most once per transcript: the transcript records that this
    suspension was resumed already (the message names the step it was resumed at, and the
    decisions it got), or another writer holds the file (a resume of it going on). Nothing was
    run or written: the suspension's tools run in the one resumed run."""


@dataclass(slots=True)
class _Plan:
    state: LoopState
    outstanding: list[Effect]
    base_step: int
    encoder: EffectEncoder
    finished: bool
    suspended_at: list[tuple[int, LoopState]]
    """(index of the entry, the state after it) of each step at which the run suspended."""


def _answered(inp: Input) -> int | None:
    """The id of the effect ``inp`` closes (``None``: it closes none)."""
    if type(inp) is StreamEventReceived:
        return inp.id if isinstance(inp.event, (DoneEvent, ErrorEvent)) else None
    if type(inp) is ToolUpdated:
        return None
    value = getattr(inp, "id", None)
    return value if isinstance(value, int) else None


def _plan(t: Transcript) -> _Plan:
    if not t.entries:
        raise TranscriptError("line 1: nothing to resume: the run crashed before its first step")
    state = t.initial_state
    cmp = Comparator(t, ReplayOptions())
    open_: dict[int, tuple[Effect, int]] = {}
    llm_snapshots: dict[int, tuple[LoopState, EffectEncoder]] = {}
    suspended_at: list[tuple[int, LoopState]] = []
    for index, entry in enumerate(t.entries):
        result = step_recorded(state, entry)
        if isinstance(result, Failure):
            raise ReplayDivergence(Divergence(
                "rejected", entry.step, cmp.turn, entry.input_json, None, "", str(result.failure())), t.version)
        state, effects = result.unwrap()
        problem = cmp.check(index, effects)
        if problem is not None:
            raise ReplayDivergence(problem, t.version)
        closed = _answered(entry.input)
        if closed is not None:
            open_.pop(closed, None)
        for e in effects:
            if type(e) is CancelLlm:
                open_.pop(e.id, None)
            elif type(e) is RunSuspended:
                suspended_at.append((index, state))
            elif type(e) is not Emit and type(e) is not RunEnded:
                open_[e.id] = (e, index)  # type: ignore[union-attr]
                if type(e) is CallLlm:
                    llm_snapshots[index] = (state, cmp.encoder.copy())
    if isinstance(state.phase, (Finished, Suspended)):  # a suspended run waits for resume_suspended
        return _Plan(state, [], t.steps, cmp.encoder, True, suspended_at)
    if not open_:
        raise TranscriptError(f"line {t.entries[-1].line}: cannot tell what the run was waiting for")
    for effect, index in open_.values():
        if type(effect) is CallLlm:
            # The stream was cut: discard its events and ask again from the state before them.
            state, encoder = llm_snapshots[index]
            return _Plan(state, [effect], index + 1, encoder, False, suspended_at)
    return _Plan(state, [e for e, _ in open_.values()], t.steps, cmp.encoder, False, suspended_at)


def transcript_difference(suspension: Suspension, state: LoopState, where: str = "the transcript") -> str | None:
    """How ``state``, read back from a transcript, is not the point of its run where
    ``suspension`` suspended (``None``: it is): :meth:`~agentcore.Suspension.difference`, but
    for text the recorder redacted. A transcript holds ``[REDACTED]`` where the suspension (kept
    in memory, or stored by the application) holds a secret a tool's result or the conversation
    quoted: such text matches whatever stands in the suspension where the marker stands."""
    found = suspension.difference(state, where)
    if found is None or not isinstance(state.phase, Suspended):
        return found
    recorded = to_json(state)
    if REDACTED in compact_json(recorded) and _same_but_redacted(recorded, to_json(suspension.state)) \
            and _same_but_redacted(to_json(state.phase.pending), to_json(suspension.pending)):
        return None
    return found


def _same_but_redacted(recorded: Any, value: Any) -> bool:
    """Whether the JSON ``value`` is ``recorded`` but where a string of ``recorded`` holds
    ``[REDACTED]``, which stands for any text (one character or more)."""
    if type(recorded) is str and type(value) is str:
        if recorded == value:
            return True
        if REDACTED not in recorded:
            return False
        pattern = ".+?".join(re.escape(part) for part in recorded.split(REDACTED))
        return re.fullmatch(pattern, value, re.S) is not None
    if isinstance(recorded, dict) and isinstance(value, dict):
        return recorded.keys() == value.keys() and all(_same_but_redacted(v, value[k]) for k, v in recorded.items())
    if isinstance(recorded, list) and isinstance(value, list):
        return len(recorded) == len(value) and all(_same_but_redacted(a, b) for a, b in zip(recorded, value))
    return bool(recorded == value) and type(recorded) is type(value)


def _decided(decision: Any) -> str:
    if type(decision) is Approve:
        return "approved" if decision.arguments is None else "approved with edited arguments"
    if type(decision) is Deny:
        return "denied"
    return "given its result"


def _resumed_text(path: str | os.PathLike[str], t: Transcript, plan: _Plan, suspension: Suspension) -> str | None:
    """Why ``suspension`` cannot be resumed into ``t``: it records that it was resumed already
    (``None``: it does not)."""
    for index, state in plan.suspended_at:
        if index + 1 < len(t.entries) and transcript_difference(suspension, state) is None:
            after = t.entries[index + 1]
            if type(after.input) is not Resumed:
                continue
            decided = ", ".join(f"{call_id} {_decided(d)}" for call_id, d in after.input.decisions)
            return (f"{path}: this suspension (step {t.entries[index].step}) was already resumed at step "
                    f"{after.step} ({decided}); a suspension is resumed at most once per transcript")
    return None


def _claim(path: str | os.PathLike[str]) -> tuple[TranscriptFile, Transcript, bytes]:
    """Claim the transcript at ``path`` (no other writer goes on with it), then read it through
    the claim: what is appended to is what was read (also given, as bytes)."""
    claimed = TranscriptFile.claim(path, create=False)
    try:
        data = claimed.read()
        return claimed, parse_transcript(data, Path(path)), data
    except BaseException:
        claimed.close()
        raise


def _count(value: Any, where: str, path: str | os.PathLike[str]) -> int:
    if type(value) is not int or value < 0:
        raise TranscriptError(f"{where}: {CALLER_SECRETS} is {value!r}, not a count", path=path)
    return value


def _secrets_recorded(path: str | os.PathLike[str], t: Transcript, data: bytes) -> int:
    """How many secrets of their callers (``secrets=``) the recorders of ``t`` were given, at
    most: the header's count, and each resume line's (``data``: the file's bytes)."""
    most = _count(t.header.get(CALLER_SECRETS, 0), "line 1", path)
    if b'"' + CALLER_SECRETS.encode() + b'"' in data:
        for number, line in enumerate(data.split(b"\n")[1:], start=2):
            if line.startswith(b'{"resumed_'):
                try:
                    marker = json.loads(line)
                except ValueError:
                    continue  # (a torn last line; the reader has warned)
                if isinstance(marker, dict):
                    most = max(most, _count(marker.get(CALLER_SECRETS, 0), f"line {number}", path))
    return most


def _check_secrets(path: str | os.PathLike[str], t: Transcript, data: bytes, secrets: Sequence[str],
                   fn: str) -> int:
    """Refuse to go on with ``t`` given fewer secrets than its recorders were given (they must
    never be written, and the transcript does not hold them); the number given, each once."""
    given = len(set(s for s in secrets if s))
    needed = _secrets_recorded(path, t, data)
    if given < needed:
        them = "it" if needed == 1 else "them"
        raise ValueError(
            f"{path}: its recorder was given {needed} secret{'' if needed == 1 else 's'} to keep out of it "
            f"(secrets=), which the transcript does not hold: give {them} again, {fn}(..., secrets=[...]) "
            f"({given} given), so that the run that goes on in it never writes {them} either")
    return given


def _marker(marker: dict[str, Any], given: int) -> dict[str, Any]:
    return {**marker, CALLER_SECRETS: given} if given else marker


def _start_resume(path: str | os.PathLike[str], config: AgentLoopConfig, secrets: Sequence[str],
                  flush: FlushMode, fsync: bool, fn: str) -> tuple[_Plan, TranscriptRecorder | None]:
    try:
        claimed, t, data = _claim(path)
    except TranscriptBusy as busy:
        # Another writer holds it: a run that is over (finished, or suspended) is only read.
        try:
            over = _plan(read_transcript(path))
        except Exception:
            raise busy from None
        if over.finished:
            return over, None
        raise
    try:
        plan = _plan(t)
        if plan.finished:
            claimed.close()
            return plan, None
        # Live from here, with the config's model: the transcript's has its secret headers redacted.
        plan.state = with_config_model(plan.state, config, fn)
        model = plan.state.run.model
        plan.outstanding = [replace(e, model=model) if type(e) is CallLlm else e for e in plan.outstanding]
        scrubbed = sorted({e.type for e in plan.outstanding if REDACTED in compact_json(to_json(e, partials=False))})
        if scrubbed:
            warnings.warn(f"{path}: what the run goes on with holds text the recorder redacted "
                          f"({', '.join(scrubbed)}): it is sent as {REDACTED}", RuntimeWarning, stacklevel=4)
        given = _check_secrets(path, t, data, secrets, fn)
        if t.torn:
            claimed.truncate(t.size)  # drop the torn line before appending
        marker = _marker({"resumed_from_step": plan.base_step, "at": now_ms()}, given)
        recorder = TranscriptRecorder.appending(path, config, base_step=plan.base_step, encoder=plan.encoder,
                                                 marker=marker, version=t.version, flush=flush, fsync=fsync,
                                                 secrets=secrets, claimed=claimed)
    except BaseException:
        claimed.close()
        raise
    return plan, recorder


def continue_transcript(
    path: str | os.PathLike[str],
    suspension: Suspension,
    config: AgentLoopConfig | None,
    *,
    secrets: Sequence[str] = (),
    flush: FlushMode = "entry",
    fsync: bool = False,
    fn: str = "continue_transcript",
) -> TranscriptRecorder:
    """The recorder that records the resumed run of ``suspension`` at the end of ``path``, the
    transcript that recorded the run up to its suspension.

    A suspension is resumed at most once per transcript. The recorder claims the file first (no
    other writer, in this process or another, goes on with it meanwhile: see
    :mod:`interpreters.transcript.writer`), then reads it through the claim and replays it
    strictly (any divergence stops it). If the transcript records that this suspension was
    resumed already, or another writer holds it (a resume of it going on), it raises
    :class:`AlreadyResumed`, naming the step the suspension was resumed at; if it does not end
    with this suspension, ``TranscriptError`` (say, another run's file). Nothing is written
    then. The resumed run's steps follow the suspended step, after a
    ``{"resumed_suspension": <step>, "at": ...}`` line (readers skip it): a strict replay of
    the file replays the suspension and the resumed run as one run.

    ``secrets``: as for the recorder, strings never to be written, besides the config's keys.
    A transcript holds how many secrets its recorder was given (never the secrets): fewer given
    here is refused with a ``ValueError`` before anything is written (``fn`` names the caller
    in it), since the resumed run would write them in clear.
    """
    try:
        claimed, t, data = _claim(path)
    except TranscriptBusy as busy:
        raise AlreadyResumed(_busy_text(path, suspension, busy)) from busy
    try:
        plan = _plan(t)
        state = plan.state
        resumed = _resumed_text(path, t, plan, suspension)
        if resumed is not None:
            raise AlreadyResumed(resumed)
        if not isinstance(state.phase, Suspended):
            raise TranscriptError(f"{path}: the run it records is not suspended (phase {state.phase.name}): "
                                  "there is nothing to resume into it")
        difference = transcript_difference(suspension, state)  # in JSON form, as the transcript holds it
        if difference is not None:
            raise TranscriptError(f"{path}: the run it records {difference}: not this suspension")
        given = _check_secrets(path, t, data, secrets, fn)
        if t.torn:
            claimed.truncate(t.size)
        marker = _marker({"resumed_suspension": t.steps, "at": now_ms()}, given)
        return TranscriptRecorder.appending(path, config, base_step=t.steps, encoder=plan.encoder, marker=marker,
                                            version=t.version, flush=flush, fsync=fsync, secrets=secrets,
                                            claimed=claimed)
    except BaseException:
        claimed.close()
        raise


def _busy_text(path: str | os.PathLike[str], suspension: Suspension, busy: TranscriptBusy) -> str:
    """Why ``suspension`` cannot be resumed into ``path``, which another writer holds: read as
    it stands, the file may already say where that writer resumed it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a line being written reads as torn
            t = read_transcript(path)
            found = _resumed_text(path, t, _plan(t), suspension)
    except Exception:
        found = None
    if found is not None:
        return f"{found} (by {busy.writer}, still writing it)"
    return (f"{path}: {busy.writer} is writing this transcript (a resume of this suspension, or its run still "
            "being recorded); a suspension is resumed at most once per transcript: read the transcript once that "
            "writer is done")


def resume(
    path: str | os.PathLike[str],
    config: AgentLoopConfig,
    tools: Sequence[Any] = (),
    stream_fn: Callable[..., Any] | None = None,
    signal: AbortSignal | None = None,
    *,
    clock: Callable[[], int] = now_ms,
    secrets: Sequence[str] = (),
    flush: FlushMode = "entry",
    fsync: bool = False,
) -> Any:
    """Resume the run recorded in ``path`` (sync). Returns an ``AgentEventStream`` of the events
    that come after the crash; its ``result()`` is every message the run added, before and after.

    ``config`` and ``tools`` must be the run's (the transcript holds no code); the run goes on
    with ``config.model`` (the transcript's model has its secret headers redacted). The
    transcript is appended to (``flush``, ``fsync``, ``secrets``: as for the recorder); a
    finished run returns a stream with no events.
    """
    from ..runtime.threads import AgentEventStream, SyncRun

    return AgentEventStream(_live_run(SyncRun, path, config, tools, stream_fn, signal, clock, secrets, flush, fsync,
                                      "resume"))


def aresume(
    path: str | os.PathLike[str],
    config: AgentLoopConfig,
    tools: Sequence[Any] = (),
    stream_fn: Callable[..., Any] | None = None,
    signal: AbortSignal | None = None,
    *,
    clock: Callable[[], int] = now_ms,
    secrets: Sequence[str] = (),
    flush: FlushMode = "entry",
    fsync: bool = False,
) -> Any:
    """:func:`resume` for asyncio: returns an ``interpreters.aio.AgentEventStream``."""
    from ..runtime.tasks import AgentEventStream, AsyncRun

    return AgentEventStream(_live_run(AsyncRun, path, config, tools, stream_fn, signal, clock, secrets, flush, fsync,
                                      "aresume"))


def _live_run(kind: Callable[..., _R], path: str | os.PathLike[str], config: AgentLoopConfig, tools: Sequence[Any],
              stream_fn: Callable[..., Any] | None, signal: AbortSignal | None, clock: Callable[[], int],
              secrets: Sequence[str], flush: FlushMode, fsync: bool, fn: str) -> _R:
    """The run of :func:`resume` / :func:`aresume` (``fn``) on the runner ``kind``: the transcript
    claimed and planned, the live part started from the recorded state with its outstanding
    effects, recorded at the end of the same file."""
    plan, recorder = _start_resume(path, config, secrets, flush, fsync, fn)
    return kind(plan.state, tools, config, None, signal, stream_fn, recorder, clock, outstanding=plan.outstanding)



def with_transcript(journal: Journals, transcript: Any, suspension: Suspension, config: AgentLoopConfig,
                    secrets: Sequence[str], start: Callable[[Journals], _R]) -> _R:
    """``start(journals)``: the run of a resumed suspension, given ``journal=`` and the recorder
    that continues ``transcript`` (a path, or ``None``: none) and never writes ``secrets``. That
    recorder claims the file before it reads it (:func:`interpreters.replay.recovery.continue_transcript`:
    a suspension is resumed at most once per transcript), and lets go of it if the run cannot
    start."""
    if isinstance(secrets, str):
        raise TypeError("resume_suspended() argument 'secrets' must be a list of strings, not a str")
    if transcript is None:
        if secrets:
            raise ValueError("resume_suspended(): secrets= is for the transcript the run goes on in "
                             "(transcript=path), and none was given: give a journal's recorder its own secrets=")
        return _going_on(journal, suspension, start)
    journals = observers(journal)
    for journal_ in journals:
        if isinstance(journal_, TranscriptRecorder) and journal_.continues(transcript):
            journal_.add_secrets(secrets)  # the journal that recorded the suspension goes on in the file
            return _going_on(journal, suspension, start)
    recorder = continue_transcript(transcript, suspension, config, secrets=secrets, fn="resume_suspended")
    try:
        return _going_on((*journals, recorder), suspension, start)
    except BaseException:
        recorder.close()
        raise


def _going_on(journal: Journals, suspension: Suspension, start: Callable[[Journals], _R]) -> _R:
    """``start(journal)``, each recorder of ``journal`` that recorded the run up to
    ``suspension`` going on at the end of its file first (claimed, checked: at most once)."""
    went_on = []
    try:
        for journal_ in observers(journal):
            if isinstance(journal_, TranscriptRecorder) and journal_.recorded_suspension():
                journal_.go_on(continue_transcript(journal_.path, suspension, **journal_.continuation_options()))
                went_on.append(journal_)
        return start(journal)
    except BaseException:
        for recorder in went_on:
            recorder.close()
        raise
