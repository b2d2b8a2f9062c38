"""LLM-only replay: the real interpreters run with the user's tools and hooks, the model's
replies played back from the transcript (:class:`~interpreters.streams.recorded.RecordedModel`),
and each step checked against the recording as it happens (:func:`replay_llm`,
:func:`areplay_llm`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from agentcore import (
    ABORTED_TEXT,
    AbortRequested,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    Effect,
    ExecuteTool,
    Input,
    ToolFailed,
    ToolFinished,
    ToolUpdated,
)
from agentcore.codec import to_json
from agentcore.inputs import Resumed
from agentcore.records import replace

from ..runtime.journal import Journal
from ..runtime.run import WAIT, AnswerOrder, Run
from ..secrets import known_secrets
from ..signal import AbortSignal
from ..streams.recorded import RecordedModel
from ..transcript import (
    Transcript,
    TranscriptError,
)
from .compare import Comparator, Divergence, ReplayDivergence, ReplayOptions, ReplayResult, Source, load


class _Stop(BaseException):
    """Unwinds a live run at its first divergence (a ``BaseException``, so that the interpreter's
    ``except Exception`` around model calls does not turn it into a failed stream)."""


class _LiveChecker(Journal):
    """A journal that checks each live step against the recording (first divergence sticks)."""

    def __init__(self, transcript: Transcript, options: ReplayOptions, secrets: Sequence[str]) -> None:
        self.transcript = transcript
        self.cmp = Comparator(transcript, options, secrets)
        self.index = 0
        self.failure: Divergence | None = None
        self.signal: AbortSignal | None = None
        """The live run's signal, fired where the recording has an abort next."""

    def past_end(self, n: int, recorded: int) -> _Stop:
        """What stops the run when it makes model call ``n`` and the recording has ``recorded``."""
        return self.fail(Divergence("out_of_recording", self.index + 1, self.cmp.turn, None, None, "",
                                    f"model call {n} was made, the recording has {recorded}"))

    def fail(self, report: Divergence) -> _Stop:
        if self.failure is None:
            self.failure = report
        return _Stop()

    def record(self, step: int, input: Input, effects: Sequence[Effect]) -> None:
        if self.failure is not None:
            raise _Stop()
        entries = self.transcript.entries
        if step > len(entries):
            raise self.fail(Divergence(
                "out_of_recording", step, self.cmp.turn, None, to_json(input, partials=False), "",
                f"the run went on past the {len(entries)} recorded steps (input {input.type})"))
        problem = self.cmp.check(step - 1, effects)
        if problem is not None:
            raise self.fail(problem)
        self.index = step
        if (step < len(entries) and type(entries[step].input) is AbortRequested and self.signal is not None
                and not any(type(e) is ExecuteTool for e in effects)):
            # The recorded abort came right after this step: fire it now, so the run feeds it
            # next. (After a step that starts tools, _RecordedOrder fires it: before a tool it
            # stopped from starting, or once the run waits for the tools that did start.)
            self.signal.abort()

    def clock(self) -> int:
        entries = self.transcript.entries
        if not entries:
            return 0
        return entries[min(self.index, len(entries) - 1)].input.at


_TOOL_ANSWERS = (ToolUpdated, ToolFinished, ToolFailed)


class _RecordedOrder(AnswerOrder):
    """Feeds live tool answers in the order the recording has them (both interpreters).

    In an LLM-only replay the tools run live, so a parallel batch may finish in another order
    than when it was recorded. That order is not what the replay tests (the answers are), so an
    answer is held back until the recording expects it, and stamped with the recorded time when
    it is fed. When what the recording expects never comes (the code under test changed), the
    held answers are fed as they arrived and the checker reports the divergence.

    An abort the recording has while tools ran is fired when the run waits for them (tools
    never run inline here, so the run does wait), and answers are held until it is fed.
    """

    __slots__ = ("recorded", "held", "unstarted")

    runs_tools_inline = False

    def __init__(self, transcript: Transcript) -> None:
        self.recorded = [entry.input for entry in transcript.entries]
        self.held: list[Any] = []
        self.unstarted = {inp.id for inp in self.recorded if type(inp) is ToolFailed and inp.error == ABORTED_TEXT}
        """Tool calls a recorded abort stopped before they started (answered ``ABORTED_TEXT``)."""

    def tool_starting(self, run: Run, effect: ExecuteTool) -> None:
        """A tool the recorded abort stopped before it started: the abort comes first again."""
        if effect.id in self.unstarted:
            run.signal.abort()

    def _next(self, run: Run) -> Any:
        step = run.driver.steps
        return self.recorded[step] if step < len(self.recorded) else None

    def due(self, run: Run) -> Any:
        """A held answer to feed now (stamped with the run's clock: the recorded time), or WAIT."""
        want, held = self._next(run), self.held
        if type(want) is AbortRequested:
            run.signal.abort()  # its wake-up comes through the inbox (a no-op if it already fired)
            return WAIT
        if not isinstance(want, _TOOL_ANSWERS):
            return _stamped(run, held.pop(0)) if held else WAIT
        for i, item in enumerate(held):
            if type(item) is type(want) and item.id == want.id:
                return _stamped(run, held.pop(i))
        ended = sum(isinstance(h, (ToolFinished, ToolFailed)) for h in held)
        if held and ended >= len(run.running):
            return _stamped(run, held.pop(0))  # nothing else can come: feed in arrival order
        return WAIT

    def arrived(self, run: Run, item: Any) -> Any:
        """An item from the inbox: feed it now, or hold it (WAIT). A tool answer is held while
        the recording expects a tool answer (it may be another's) or an abort (first)."""
        if not isinstance(item, _TOOL_ANSWERS):
            return item
        want = self._next(run)
        if type(want) is not AbortRequested and not isinstance(want, _TOOL_ANSWERS):
            return _stamped(run, item)
        self.held.append(item)
        return self.due(run)


def _stamped(run: Run, item: Any) -> Any:
    return replace(item, at=run.clock())


def _stream_grace(t: Transcript, run: Run) -> float:
    """The live run's grace period for a stream after an abort: none when the recording's abort
    dropped the reply's stream at once (recorded without one, or by a library before it)."""
    for entry in t.entries:
        inp = entry.input
        if (type(inp) is AbortRequested and not inp.wait_for_stream
                and any(e.get("type") == "cancel_llm" for e in entry.effects_json)):
            return 0.0
    return run.stream_grace


def _llm_setup(source: Source, options: ReplayOptions, config: AgentLoopConfig,
               secrets: Sequence[str]) -> tuple[Transcript, _LiveChecker, RecordedModel]:
    t = load(source)
    if not t.entries:
        raise TranscriptError("line 1: the transcript has no steps to replay")
    checker = _LiveChecker(t, options, known_secrets(config, secrets))
    return t, checker, RecordedModel(t, checker.past_end)


def _llm_result(t: Transcript, checker: _LiveChecker, run: Any, events: list[AgentEvent],
                messages: list[AgentMessage]) -> ReplayResult:
    if checker.failure is not None:
        raise ReplayDivergence(checker.failure, t.version)
    if checker.index < t.steps:
        nxt = t.entries[checker.index]
        raise ReplayDivergence(Divergence(
            "left_over", nxt.step, checker.cmp.turn, nxt.input_json, None, "",
            f"the run ended after step {checker.index}; {t.steps - checker.index} recorded steps are left"), t.version)
    return ReplayResult(events, messages, run.driver.state, checker.index, run.finished)


def _recorded_resume(t: Transcript, run: Run) -> Resumed | None:
    """The recorded decisions that resumed the run here, when it suspended (else ``None``)."""
    step = run.driver.steps
    if run.suspension is None or step >= len(t.entries):
        return None
    inp = t.entries[step].input
    return inp if type(inp) is Resumed else None


def _resumed_run(kind: Any, run: Run, resumed: Resumed, tools: Sequence[Any], config: AgentLoopConfig,
                 signal: AbortSignal | None, model: RecordedModel, checker: _LiveChecker,
                 order: _RecordedOrder) -> Any:
    """The live run that goes on from a recorded suspension with the recorded decisions (its
    steps numbered on from the suspended run's, as the recording has them)."""
    nxt = kind(run.driver.state, tools, config, resumed, signal, model, checker, checker.clock, order=order)
    nxt.driver.steps = run.driver.steps
    nxt.stream_grace = run.stream_grace
    return nxt


class _LiveReplay:
    """One LLM-only replay but for how its runs are carried out: what both twins share.

    :meth:`runs` gives the live runs one after the other (the first, then one per recorded
    resume of a suspension); the twin carries each out on its runner and hands back what it
    gave (:meth:`ran`), inside :meth:`stopping` (a divergence unwinds the run and is reported);
    :meth:`result` is the replay's result."""

    def __init__(self, kind: Any, source: Source, config: AgentLoopConfig, tools: Sequence[Any],
                 options: ReplayOptions, signal: AbortSignal | None, secrets: Sequence[str]) -> None:
        self.t, self.checker, self.model = _llm_setup(source, options, config, secrets)
        self.order = _RecordedOrder(self.t)
        self.kind, self.tools, self.config, self.signal = kind, tools, config, signal
        self.run: Any = kind(self.t.initial_state, tools, config, self.t.entries[0].input, signal, self.model,
                             self.checker, self.checker.clock, order=self.order)
        self.run.stream_grace = _stream_grace(self.t, self.run)
        self.events: list[AgentEvent] = []
        self.messages: list[AgentMessage] = []

    def runs(self) -> Iterator[Any]:
        while True:
            self.checker.signal = self.run.signal
            yield self.run
            resumed = _recorded_resume(self.t, self.run)
            if resumed is None:
                return
            self.run = _resumed_run(self.kind, self.run, resumed, self.tools, self.config, self.signal, self.model,
                                    self.checker, self.order)

    def ran(self, events: list[AgentEvent], messages: list[AgentMessage]) -> None:
        self.events.extend(events)
        self.messages = messages

    @contextmanager
    def stopping(self) -> Iterator[None]:
        try:
            yield
        except _Stop:
            checker = self.checker
            assert checker.failure is not None
            raise ReplayDivergence(checker.failure, checker.transcript.version) from None

    def result(self) -> ReplayResult:
        return _llm_result(self.t, self.checker, self.run, self.events, self.messages)


def replay_llm(source: Source, config: AgentLoopConfig, tools: Sequence[Any] = (), *,
               options: ReplayOptions = ReplayOptions(), signal: AbortSignal | None = None,
               secrets: Sequence[str] = ()) -> ReplayResult:
    """Replay with recorded model replies and live tools and hooks (the sync interpreter).

    Raises :class:`ReplayDivergence` at the first step whose effects differ from the recording,
    when the run asks for more than the recording has, or when it ends before the recording.
    The effects are compared scrubbed of secrets as the recorder scrubbed the recording's: the
    config's keys and headers, and ``secrets`` (give the recorder's ``secrets=``).
    """
    from ..runtime.threads import AgentEventStream, SyncRun

    replay = _LiveReplay(SyncRun, source, config, tools, options, signal, secrets)
    with replay.stopping():
        for run in replay.runs():
            stream = AgentEventStream(run)
            replay.ran(list(stream), stream.result())
    return replay.result()


async def areplay_llm(source: Source, config: AgentLoopConfig, tools: Sequence[Any] = (), *,
                      options: ReplayOptions = ReplayOptions(), signal: AbortSignal | None = None,
                      secrets: Sequence[str] = ()) -> ReplayResult:
    """:func:`replay_llm` on the asyncio interpreter (``async def`` tools and hooks awaited)."""
    from ..runtime.tasks import AgentEventStream, AsyncRun

    replay = _LiveReplay(AsyncRun, source, config, tools, options, signal, secrets)
    with replay.stopping():
        for run in replay.runs():
            stream = AgentEventStream(run)
            replay.ran([event async for event in stream], await stream.result())
    return replay.result()
